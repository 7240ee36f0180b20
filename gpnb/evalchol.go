package gpnb

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
)

// predictInPlace computes the exact predictive mean and latent variance
// (of f(x*), without the noise σ²) at xs, and the exact log marginal likelihood, from a single
// in-place Cholesky factorisation H = UᵀU: it holds one n×n matrix
// (8·n² bytes) where Exact holds two or three, so it serves Evaluate beyond
// MaxExactN (protein and keggdirected at full size) when that matrix fits
// the memory budget.
func predictInPlace(x *mat.Dense, y []float64, xs *mat.Dense, k kernel.Kernel) (mean, variance []float64, mll float64, err error) {
	n, _ := x.Dims()
	m, _ := xs.Dims()
	h := mat.NewSymDense(n, nil)
	denseGram(h, x, k)
	s2n := k.Hyper.Noise * k.Hyper.Noise
	raw := h.RawSymmetric()
	for i := 0; i < n; i++ {
		raw.Data[i*raw.Stride+i] += s2n
	}
	u, alpha, mll, err := factorMLL(raw, y, k.Hyper.Noise, "exact evaluation")
	if err != nil {
		return nil, nil, 0, err
	}

	mean = make([]float64, m)
	variance = make([]float64, m)
	s2 := k.Hyper.Signal * k.Hyper.Signal
	// Test points go by parallelTiles' fixed tiles (their triangular
	// solves are independent), so the bits do not depend on GOMAXPROCS.
	parallelTiles(m, func(_, lo, hi int) {
		cols := hi - lo
		g := blas64.General{Rows: n, Cols: cols, Stride: cols, Data: make([]float64, n*cols)}
		for i := 0; i < n; i++ {
			xi := x.RawRowView(i)
			row := g.Data[i*cols : (i+1)*cols]
			for j := range row {
				row[j] = k.At(xi, xs.RawRowView(lo+j))
			}
		}
		for j := 0; j < cols; j++ {
			var s float64
			for i := 0; i < n; i++ {
				s += g.Data[i*cols+j] * alpha[i]
			}
			mean[lo+j] = s
		}
		// W = U⁻ᵀ K(X, x*): ‖W_j‖² = k*ᵀ H⁻¹ k*.
		blas64.Trsm(blas.Left, blas.Trans, 1, u, g)
		q := make([]float64, cols)
		for i := 0; i < n; i++ {
			for j, v := range g.Data[i*cols : (i+1)*cols] {
				q[j] += v * v
			}
		}
		for j := range q {
			// Round-off can push the latent variance a hair below zero.
			variance[lo+j] = math.Max(s2-q[j], 0)
		}
	})
	return mean, variance, mll, nil
}

// factorMLL factorises H = UᵀU in place (its upper triangle in raw, on
// every core: choleskyUpper) and returns U, α = H⁻¹y and the log marginal
// likelihood −½yᵀα − ½log det H − (n/2) log 2π. An H that is not positive
// definite in float64, or a non-finite L, is an error wrapping
// ErrNotPositiveDefinite that begins with what and names σ = noise.
func factorMLL(raw blas64.Symmetric, y []float64, noise float64, what string) (u blas64.Triangular, alpha []float64, mll float64, err error) {
	n := raw.N
	u, ok := choleskyUpper(raw)
	if !ok {
		return u, nil, 0, fmt.Errorf("%s: H = K + σ²I (n = %d, σ = %g) is %w", what, n, noise, ErrNotPositiveDefinite)
	}
	logdet := 0.0
	for i := 0; i < n; i++ {
		logdet += 2 * math.Log(u.Data[i*u.Stride+i])
	}
	alpha = append([]float64(nil), y...)
	lapack64.Potrs(u, blas64.General{Rows: n, Cols: 1, Stride: 1, Data: alpha})
	quad := 0.0
	for i, v := range y {
		quad += v * alpha[i]
	}
	mll = -0.5*quad - 0.5*logdet - 0.5*float64(n)*math.Log(2*math.Pi)
	if math.IsNaN(mll) || math.IsInf(mll, 0) {
		return u, nil, 0, fmt.Errorf("%s: H = K + σ²I is ill-conditioned (log marginal likelihood %v): %w", what, mll, ErrNotPositiveDefinite)
	}
	return u, alpha, mll, nil
}

// inPlaceFits reports whether predictInPlace's n×n matrix fits budget
// bytes (0: kernel.DefaultMemoryBudget).
func inPlaceFits(n int, budget int64) bool {
	if budget <= 0 {
		budget = kernel.DefaultMemoryBudget()
	}
	return 8*float64(n)*float64(n) <= float64(budget)
}

// freeMemory returns the memory of released n×n matrices to the runtime
// before another one is allocated.
func freeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}
