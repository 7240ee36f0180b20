package solvers

import "gonum.org/v1/gonum/mat"

// Operator is a symmetric positive-definite n×n matrix H, known by what it
// can do rather than by its entries (as in GPyTorch's linear_operator). The
// kernel operator H_θ = K_θ(X,X) + σ²I of package gpnb/kernel and the CUDA
// backend implement it; tests use DenseOperator.
//
// Batches of columns are n×m row-major *mat.Dense values. Implementations
// must be deterministic: the same inputs give the same bits whatever the
// number of cores.
type Operator interface {
	// Size returns n.
	Size() int
	// MulTo sets dst = H·V, where V and dst are n×m.
	MulTo(dst, v *mat.Dense)
	// RowsMulTo sets dst = H[idx,:]·V, where V is n×m and dst is len(idx)×m.
	RowsMulTo(dst *mat.Dense, idx []int, v *mat.Dense)
	// ColsMulTo sets dst = H[:,idx]·D, where D is len(idx)×m and dst is n×m.
	// Alternating projections use it to update the full residual after a
	// block solve at a cost of n·len(idx) kernel evaluations per column.
	ColsMulTo(dst *mat.Dense, idx []int, d *mat.Dense)
	// BlockTo sets dst = H[idx,idx], a len(idx)×len(idx) symmetric block.
	BlockTo(dst *mat.SymDense, idx []int)
	// DiagTo sets dst[i] = H_ii for i < n.
	DiagTo(dst []float64)
}
