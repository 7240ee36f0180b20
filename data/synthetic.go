package data

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// SyntheticNoise is the standard deviation of the noise added to Synthetic's
// targets, on a signal whose standard deviation is about 1.
const SyntheticNoise = 0.1

// syntheticFeatures is the number of random sinusoids in Synthetic's function.
const syntheticFeatures = 8

// maxSyntheticValues bounds (n+test)·(d+1) so a typo cannot exhaust memory.
const maxSyntheticValues = 1 << 30

// Synthetic generates a regression problem with n training points in d
// dimensions and, by default, n/5 test points (TestSize changes that).
// Inputs are uniform in the box [-1, 1]^d; the target is the smooth function
//
//	f(x) = Σ_k a_k sin(w_k·x + b_k) / √(K/2),  K = 8,
//
// whose frequencies w_kj are normal with a scale that falls with j (input 1
// matters most, so learnt length scales differ), plus Gaussian noise of
// standard deviation SyntheticNoise. The same (n, d, seed) gives the same
// bits whatever the machine; the training points do not depend on TestSize.
// Only math/rand/v2's PCG generator is used. Name is "synthetic". Inputs and
// target are z-scored unless Normalise(false); Subset and SubsetSeed apply.
func Synthetic(n, d int, seed uint64, opts ...Option) (*Dataset, error) {
	c, err := newConfig(loaderSynthetic, opts)
	if err != nil {
		return nil, err
	}
	if n < 2 || d < 1 {
		return nil, fmt.Errorf("%w: Synthetic(n=%d, d=%d): need n ≥ 2 training points and d ≥ 1 inputs", ErrOption, n, d)
	}
	m := n / 5
	if c.set["TestSize"] {
		m = c.testSize
	}
	if float64(n+m)*float64(d+1) > maxSyntheticValues {
		return nil, fmt.Errorf("%w: Synthetic(n=%d, d=%d) with %d test points is too large (more than %d values)", ErrOption, n, d, m, maxSyntheticValues)
	}
	rng := rand.New(rand.NewPCG(seed, 0x6770_6e62)) // "gpnb"
	// The function first, then the training points, then the test points.
	w := make([]float64, syntheticFeatures*d)
	a := make([]float64, syntheticFeatures)
	b := make([]float64, syntheticFeatures)
	for k := 0; k < syntheticFeatures; k++ {
		for j := 0; j < d; j++ {
			w[k*d+j] = rng.NormFloat64() * 3 / (1 + float64(j)/2)
		}
		a[k] = rng.NormFloat64()
		b[k] = 2 * math.Pi * rng.Float64()
	}
	norm := 1 / math.Sqrt(syntheticFeatures/2)
	f := func(x []float64) float64 {
		var s float64
		for k := 0; k < syntheticFeatures; k++ {
			var z float64
			for j, xj := range x {
				z += w[k*d+j] * xj
			}
			s += a[k] * math.Sin(z+b[k])
		}
		return s * norm
	}
	p := &parts{name: "synthetic", source: SyntheticName(n, d, seed), place: goPlace{d: d}}
	p.x[0], p.y[0] = mat.NewDense(n, d, nil), make([]float64, n)
	if m > 0 {
		p.x[1], p.y[1] = mat.NewDense(m, d, nil), make([]float64, m)
	}
	for i := 0; i < n+m; i++ {
		x, y, k := p.x[0], p.y[0], i
		if i >= n {
			x, y, k = p.x[1], p.y[1], i-n
		}
		r := x.RawRowView(k)
		for j := range r {
			r[j] = 2*rng.Float64() - 1
		}
		y[k] = f(r) + SyntheticNoise*rng.NormFloat64()
	}
	return finish(p, c)
}
