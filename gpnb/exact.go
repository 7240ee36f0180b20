package gpnb

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/par"
)

// ErrNotPositiveDefinite is returned (wrapped) when the Cholesky factorisation
// of H = K + σ²I fails in float64.
var ErrNotPositiveDefinite = errors.New("not positive definite: increase the noise or add jitter")

// ErrTooLarge is returned (wrapped) when n exceeds DefaultMaxExactN (or
// Config.MaxExactN).
var ErrTooLarge = errors.New("too many points for an exact (Cholesky) computation")

// Exact is the exact Gaussian-process baseline: a Cholesky factorisation of
// H = K(X,X) + σ²I, giving the log marginal likelihood (eq. 3), its exact
// gradient (eq. 4) and the exact posterior predictive distribution.
type Exact struct {
	x     *mat.Dense
	y     []float64
	k     kernel.Kernel
	n, d  int
	chol  mat.Cholesky
	alpha *mat.VecDense // H⁻¹y
}

// NewExact factorises H = K(X,X) + σ²I for inputs X (n×d), targets y (length
// n) and kernel k. It returns an error, never a panic, for empty or
// mismatched inputs, non-finite values, invalid hyperparameters, n larger
// than DefaultMaxExactN (Exact stores H and its factor, and for Gradient H⁻¹,
// 8·n² bytes each: 20000 points already need about 10 GB), or an H that is
// not positive definite in float64.
func NewExact(X *mat.Dense, y []float64, k kernel.Kernel) (*Exact, error) {
	return newExact(X, y, k, DefaultMaxExactN)
}

// newExact is NewExact with the limit maxN on n (Config.MaxExactN).
func newExact(X *mat.Dense, y []float64, k kernel.Kernel, maxN int) (*Exact, error) {
	if X == nil || X.IsEmpty() {
		return nil, errors.New("gpnb: exact: no training inputs: X is empty")
	}
	n, d := X.Dims()
	if len(y) != n {
		return nil, fmt.Errorf("gpnb: exact: X has %d rows but y has %d values: give one target per row", n, len(y))
	}
	if n > maxN {
		return nil, fmt.Errorf("gpnb: exact: %w: n = %d > MaxExactN = %d (needs ~%.1f GB): use an iterative solver or a subset", ErrTooLarge, n, maxN, 3*8*float64(n)*float64(n)/1e9)
	}
	if !k.Family.Valid() {
		return nil, fmt.Errorf("gpnb: exact: unknown kernel family %v: use kernel.Matern32, Matern12, Matern52 or RBF", k.Family)
	}
	if err := k.Hyper.Validate(d); err != nil {
		return nil, fmt.Errorf("gpnb: exact: %w", err)
	}
	if err := checkFinite(X, y); err != nil {
		return nil, fmt.Errorf("gpnb: exact: %w", err)
	}
	e := &Exact{x: X, y: append([]float64(nil), y...), k: kernel.Kernel{Family: k.Family, Hyper: k.Hyper.Clone()}, n: n, d: d}
	h := mat.NewSymDense(n, nil)
	denseGram(h, X, e.k)
	s2 := e.k.Hyper.Noise * e.k.Hyper.Noise
	for i := 0; i < n; i++ {
		h.SetSym(i, i, h.At(i, i)+s2)
	}
	if ok := e.chol.Factorize(h); !ok {
		return nil, fmt.Errorf("gpnb: exact: H = K + σ²I (n = %d, σ = %g) is %w", n, e.k.Hyper.Noise, ErrNotPositiveDefinite)
	}
	e.alpha = mat.NewVecDense(n, nil)
	if err := e.chol.SolveVecTo(e.alpha, mat.NewVecDense(n, e.y)); err != nil {
		return nil, fmt.Errorf("gpnb: exact: H = K + σ²I is ill-conditioned (%v): %w", err, ErrNotPositiveDefinite)
	}
	return e, nil
}

// checkFinite reports the first NaN or Inf in X or y.
func checkFinite(X *mat.Dense, y []float64) error {
	n, d := X.Dims()
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			if v := X.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("input X[%d,%d] is %v: remove or impute non-finite values", i, j, v)
			}
		}
	}
	for i, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("target y[%d] is %v: remove or impute non-finite values", i, v)
		}
	}
	return nil
}

// tileRows is the number of rows per unit of parallel work. The partition
// into tiles depends only on n, never on GOMAXPROCS, so every parallel loop
// here gives the same bits on any number of cores.
const tileRows = 64

// parallelTiles calls fn(t, lo, hi) for the row tiles [lo, hi) of 0..n−1
// on up to GOMAXPROCS goroutines. fn must write only to its own tile's
// outputs.
func parallelTiles(n int, fn func(t, lo, hi int)) {
	par.ForTiles(par.Tiles(n, tileRows), 0, func(_, t int) {
		lo, hi := par.Span(t, n, tileRows)
		fn(t, lo, hi)
	})
}

// denseGram sets dst = K(X,X) (no noise). Each entry is computed on its
// own, so the parallel loop is deterministic.
func denseGram(dst *mat.SymDense, X *mat.Dense, k kernel.Kernel) {
	n, _ := X.Dims()
	raw := dst.RawSymmetric()
	parallelTiles(n, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			xi := X.RawRowView(i)
			row := raw.Data[i*raw.Stride:]
			for j := i; j < n; j++ { // upper triangle, as SymDense stores it
				row[j] = k.At(xi, X.RawRowView(j))
			}
		}
	})
}

// N returns the number of training points.
func (e *Exact) N() int { return e.n }

// Kernel returns the kernel (with its hyperparameters) that H was built from.
func (e *Exact) Kernel() kernel.Kernel {
	return kernel.Kernel{Family: e.k.Family, Hyper: e.k.Hyper.Clone()}
}

// Alpha returns a copy of H⁻¹y.
func (e *Exact) Alpha() []float64 {
	return append([]float64(nil), e.alpha.RawVector().Data...)
}

// MLL returns the log marginal likelihood of eq. 3,
// −½ yᵀH⁻¹y − ½ log det H − (n/2) log 2π.
func (e *Exact) MLL() float64 {
	quad := mat.Dot(mat.NewVecDense(e.n, e.y), e.alpha)
	return -0.5*quad - 0.5*e.chol.LogDet() - 0.5*float64(e.n)*math.Log(2*math.Pi)
}

// Gradient writes ∇L (eq. 4) with respect to the constrained θ =
// (ℓ_1..ℓ_d, s, σ) into dst, which must have length d+2. It forms
// W = ½ααᵀ − ½H⁻¹ (α = H⁻¹y) and sums W_ab ∂H_ab/∂θ over all pairs, so it
// costs O(n³) time and an extra n² of memory.
func (e *Exact) Gradient(dst []float64) error {
	if len(dst) != e.d+2 {
		return fmt.Errorf("gpnb: exact: gradient destination has length %d, want d+2 = %d", len(dst), e.d+2)
	}
	w := mat.NewSymDense(e.n, nil)
	if err := e.chol.InverseTo(w); err != nil {
		return fmt.Errorf("gpnb: exact: inverting H: %v: %w", err, ErrNotPositiveDefinite)
	}
	// W = ½ααᵀ − ½H⁻¹, in place.
	w.ScaleSym(-0.5, w)
	w.SymRankOne(w, 0.5, e.alpha)
	reduceDense(dst, e.x, e.k, w)
	return nil
}

// reduceDense sets dst_k = Σ_ab W_ab ∂H_ab/∂θ_k for θ = (ℓ_1..ℓ_d, s, σ),
// with ∂H/∂σ = 2σI. Row tiles accumulate their own partial sums, which are
// then added in tile order, so the result does not depend on GOMAXPROCS.
func reduceDense(dst []float64, X *mat.Dense, k kernel.Kernel, w *mat.SymDense) {
	n, d := X.Dims()
	tiles := (n + tileRows - 1) / tileRows
	partial := make([]float64, tiles*(d+2))
	raw := w.RawSymmetric()
	parallelTiles(n, func(t, lo, hi int) {
		part := partial[t*(d+2) : (t+1)*(d+2)]
		g := make([]float64, d+1)
		acc := make([]float64, d+1)
		for a := lo; a < hi; a++ {
			xa := X.RawRowView(a)
			wrow := raw.Data[a*raw.Stride:]
			for i := range acc {
				acc[i] = 0
			}
			for b := a + 1; b < n; b++ { // upper triangle
				wab := wrow[b]
				k.GradAt(g, xa, X.RawRowView(b))
				for i, gi := range g {
					acc[i] += wab * gi
				}
			}
			// Off-diagonal pairs count twice (W and ∂H symmetric).
			for i := range acc {
				part[i] += 2 * acc[i]
			}
			waa := wrow[a]
			part[d+1] += waa
			k.GradAt(g, xa, xa)
			for i, gi := range g {
				part[i] += waa * gi
			}
		}
	})
	for i := range dst {
		dst[i] = 0
	}
	for t := 0; t < tiles; t++ {
		for i, v := range partial[t*(d+2) : (t+1)*(d+2)] {
			dst[i] += v
		}
	}
	dst[d+1] *= 2 * k.Hyper.Noise // tr(W)·2σ
}

// Predict returns the posterior predictive mean and variance at the rows of
// Xs. The variance includes the observation noise σ², so it is the
// predictive distribution of a new noisy target.
func (e *Exact) Predict(Xs *mat.Dense) (mean, variance []float64, err error) {
	mean, variance, err = e.predictLatent(Xs)
	noise2 := e.k.Hyper.Noise * e.k.Hyper.Noise
	for j := range variance {
		variance[j] += noise2
	}
	return mean, variance, err
}

// predictLatent is Predict with the variance of f(x*), without the noise.
func (e *Exact) predictLatent(Xs *mat.Dense) (mean, variance []float64, err error) {
	if Xs == nil || Xs.IsEmpty() {
		return nil, nil, errors.New("gpnb: exact: predict: no test inputs")
	}
	m, d := Xs.Dims()
	if d != e.d {
		return nil, nil, fmt.Errorf("gpnb: exact: predict: test inputs have %d columns, training inputs %d: use the same features", d, e.d)
	}
	if err := checkFinite(Xs, nil); err != nil {
		return nil, nil, fmt.Errorf("gpnb: exact: predict: %w", err)
	}
	// Kst = K(X, Xs), n×m.
	kst := mat.NewDense(e.n, m, nil)
	parallelTiles(e.n, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			xi := e.x.RawRowView(i)
			row := kst.RawRowView(i)
			for j := 0; j < m; j++ {
				row[j] = e.k.At(xi, Xs.RawRowView(j))
			}
		}
	})
	mean = make([]float64, m)
	mv := mat.NewVecDense(m, mean)
	mv.MulVec(kst.T(), e.alpha)
	// Variance: k(x*,x*) − ‖L⁻¹k*‖² + σ².
	var l mat.TriDense
	e.chol.LTo(&l)
	sol := mat.NewDense(e.n, m, nil)
	if err := sol.Solve(&l, kst); err != nil {
		return nil, nil, fmt.Errorf("gpnb: exact: predict: %v: %w", err, ErrNotPositiveDefinite)
	}
	variance = make([]float64, m)
	s2 := e.k.Hyper.Signal * e.k.Hyper.Signal
	for j := range variance {
		variance[j] = s2
	}
	for i := 0; i < e.n; i++ {
		row := sol.RawRowView(i)
		for j, v := range row {
			variance[j] -= v * v
		}
	}
	for j := range variance {
		// Round-off can push the latent variance a hair below zero.
		variance[j] = math.Max(variance[j], 0)
	}
	return mean, variance, nil
}

// TestRMSE returns the root-mean-square error of predictions mean against y.
// It returns NaN when the lengths differ or are zero.
func TestRMSE(mean, y []float64) float64 {
	if len(mean) != len(y) || len(y) == 0 {
		return math.NaN()
	}
	var s float64
	for i, m := range mean {
		r := y[i] - m
		s += r * r
	}
	return math.Sqrt(s / float64(len(y)))
}

// TestLLH returns the mean Gaussian log density of y under the predictive
// distributions N(mean_i, variance_i), where the variance includes the noise.
// It returns NaN when the lengths differ or are zero.
func TestLLH(mean, variance, y []float64) float64 {
	if len(mean) != len(y) || len(variance) != len(y) || len(y) == 0 {
		return math.NaN()
	}
	var s float64
	for i, m := range mean {
		r := y[i] - m
		s += -0.5*math.Log(2*math.Pi*variance[i]) - 0.5*r*r/variance[i]
	}
	return s / float64(len(y))
}
