package kernel

// NoiseVariance returns σ², the noise variance on H's diagonal. It makes
// *Operator a solvers.NoiseVariancer, so solvers.CG can build its
// preconditioner without being told σ (CG.PrecondNoise = 0) while σ is
// being optimised.
func (o *Operator) NoiseVariance() float64 { return o.noise2() }
