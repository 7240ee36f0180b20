package gpnb

import (
	"math"

	"github.com/gpnb/gpnb/gpnb/kernel"
)

// MixedNoiseRatio is how far σ² must stay above the rounding of a Mixed K
// for a step to use it: a step at θ on n points multiplies with K stored in
// float32 only while
//
//	σ² ≥ MixedNoiseRatio · 2⁻²⁴ · √n · s²,
//
// and with a float64 K otherwise (StepRecord.Precision says which). Storing
// K in float32 adds E to it, |E_ij| ≤ 2⁻²⁴ s²; rounding errors of random
// sign give ‖E‖₂ ≈ 2⁻²⁴ s² √n, so below the bound the solver's H = K + E +
// σ²I differs from the true one by more than 1% in the directions of its
// smallest eigenvalues, which the gradient weighs most, and far below it H
// is no longer positive definite (CG breaks down as σ → 0 on a
// near-noiseless target). The test depends on θ alone, so a resumed run
// switches where the straight run does. Float32 is not switched: its
// products round every time, and it is kept as the paper's experiment.
const MixedNoiseRatio = 100

// stepPrecision returns the precision a step at h on n points stores K in,
// for the configured precision p: p, but Float64 for Mixed below
// MixedNoiseRatio's bound.
func stepPrecision(p kernel.Precision, h kernel.Hyper, n int) kernel.Precision {
	if p != kernel.Mixed {
		return p
	}
	const u32 = 0x1p-24
	if h.Noise*h.Noise < MixedNoiseRatio*u32*math.Sqrt(float64(n))*h.Signal*h.Signal {
		return kernel.Float64
	}
	return p
}
