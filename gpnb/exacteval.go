package gpnb

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/par"
)

// exactEvaluator computes the exact log marginal likelihood and its
// gradient, as Exact does, for the exact path's many evaluations on one
// data set. Its matrix-free kernel.Operator builds H and reduces the
// gradient with the tiled kernel code (Operator.BlockTo and ReduceDense),
// and the factorisation and inverse are blocked and parallel (choleskyUpper,
// invertUpper), so on 2 cores an evaluation costs a third of Exact's. It
// holds two n×n buffers, reused from one evaluation to the next: H, its
// factor U and then H⁻¹ in one, U⁻¹ and then W in the other. Like the rest of
// the package it gives the same bits whatever the number of cores.
type exactEvaluator struct {
	op    *kernel.Operator
	y     []float64
	a, b  []float64 // n×n, row-major
	idx   []int
	alpha []float64 // H⁻¹y at the last value's kernel; nil before one, and once its gradient is taken
}

// newExactEvaluator returns an evaluator for inputs X and targets y, with
// the operator options opt (its Mode and Precision are set to matrix-free
// float64).
func newExactEvaluator(X *mat.Dense, y []float64, k kernel.Kernel, opt kernel.Options) (*exactEvaluator, error) {
	opt.Mode, opt.Precision = kernel.ModeMatrixFree, kernel.Float64
	op, err := kernel.NewOperator(X, k, opt)
	if err != nil {
		return nil, fmt.Errorf("gpnb: exact: %w", err)
	}
	if err := checkFinite(X, y); err != nil {
		return nil, fmt.Errorf("gpnb: exact: %w", err)
	}
	n := len(y)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return &exactEvaluator{op: op, y: append([]float64(nil), y...), a: make([]float64, n*n), b: make([]float64, n*n), idx: idx}, nil
}

// value returns L at the kernel k: one factorisation of H, kept for
// gradient. An H that is not positive definite in float64 is an error
// wrapping ErrNotPositiveDefinite.
func (e *exactEvaluator) value(k kernel.Kernel) (float64, error) {
	e.alpha = nil
	if err := e.op.SetKernel(k); err != nil {
		return 0, fmt.Errorf("gpnb: exact: %w", err)
	}
	n := len(e.y)
	clear(e.a)
	h := mat.NewSymDense(n, e.a)
	e.op.BlockTo(h, e.idx) // upper triangle of H = K + σ²I
	_, alpha, mll, err := factorMLL(h.RawSymmetric(), e.y, k.Hyper.Noise, "gpnb: exact")
	if err != nil {
		return 0, err
	}
	e.alpha = alpha
	return mll, nil
}

// gradient writes ∇L with respect to θ = (ℓ_1..ℓ_d, s, σ) into grad
// (length d+2) at the kernel of the last successful value, from its
// factorisation: the inverse and the reduction, two thirds of an
// evaluation's arithmetic, which a line search that rejects the value
// does not need. It may be called once per value.
func (e *exactEvaluator) gradient(grad []float64) error {
	if e.alpha == nil {
		return errors.New("gpnb: exact: gradient without a value to take it at")
	}
	if len(grad) != e.op.Kernel().Hyper.Len() {
		return fmt.Errorf("gpnb: exact: gradient destination has length %d, want d+2 = %d", len(grad), e.op.Kernel().Hyper.Len())
	}
	n, alpha := len(e.y), e.alpha
	e.alpha = nil
	invertUpper(e.a, e.b, n) // e.a: H⁻¹ (upper triangle)
	// W = ½ααᵀ − ½H⁻¹, both triangles, into e.b.
	parallelTiles(n, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			for j := i; j < n; j++ {
				v := 0.5*alpha[i]*alpha[j] - 0.5*e.a[i*n+j]
				e.b[i*n+j], e.b[j*n+i] = v, v
			}
		}
	})
	e.op.ReduceDense(grad, mat.NewDense(n, n, e.b))
	return nil
}

// invBlock is invertUpper's block size.
const invBlock = 128

// invertUpper sets the upper triangle of a to H⁻¹ = U⁻¹U⁻ᵀ, where a holds
// the upper Cholesky factor U of H = UᵀU (n×n, row-major, as choleskyUpper
// leaves it), using b (n×n) as work space. First V = U⁻¹ goes into b, one
// task per block column j (U[0:j1, 0:j1]·V[0:j1, j] = I[0:j1, j], a
// triangular solve that only reads U); then each block (i, j ≥ i) of
// V·Vᵀ, Σ_{k ≥ j} V[i, k]·V[j, k]ᵀ, is one gemm. Each task's arithmetic is
// fixed whichever goroutine runs it, so the bits do not depend on the number
// of cores.
func invertUpper(a, b []float64, n int) {
	nb := par.Tiles(n, invBlock)
	span := func(j int) (int, int) { return par.Span(j, n, invBlock) }
	u := blas64.Triangular{N: n, Stride: n, Uplo: blas.Upper, Diag: blas.NonUnit, Data: a}
	clear(b)
	par.ForTiles(nb, 0, func(_, t int) {
		j0, j1 := span(nb - 1 - t) // the largest first
		for c := j0; c < j1; c++ {
			b[c*n+c] = 1
		}
		x := blas64.General{Rows: j1, Cols: j1 - j0, Stride: n, Data: b[j0:]}
		blas64.Trsm(blas.Left, blas.NoTrans, 1, blas64.Triangular{N: j1, Stride: n, Uplo: blas.Upper, Diag: blas.NonUnit, Data: u.Data}, x)
	})
	// Blocks (i, j), i ≤ j, of V·Vᵀ, numbered row by row.
	type pair struct{ i, j int }
	var pairs []pair
	for i := 0; i < nb; i++ {
		for j := i; j < nb; j++ {
			pairs = append(pairs, pair{i, j})
		}
	}
	par.ForTiles(len(pairs), 0, func(_, t int) {
		p := pairs[t]
		i0, i1 := span(p.i)
		j0, j1 := span(p.j)
		vi := blas64.General{Rows: i1 - i0, Cols: n - j0, Stride: n, Data: b[i0*n+j0:]}
		vj := blas64.General{Rows: j1 - j0, Cols: n - j0, Stride: n, Data: b[j0*n+j0:]}
		c := blas64.General{Rows: i1 - i0, Cols: j1 - j0, Stride: n, Data: a[i0*n+j0:]}
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, vi, vj, 0, c)
	})
}
