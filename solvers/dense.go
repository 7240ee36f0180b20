package solvers

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// DenseOperator is an Operator over an explicit symmetric matrix, for tests,
// teaching notebooks and small problems. It keeps a full row-major copy of
// the matrix, so it needs 8n² bytes.
type DenseOperator struct {
	n    int
	full blas64.General // n×n, both triangles
}

// NewDenseOperator returns an operator for h. h is copied; it must be
// non-empty with finite entries. Positive definiteness is not checked here:
// the solvers report it (ErrNotPositiveDefinite).
func NewDenseOperator(h *mat.SymDense) (*DenseOperator, error) {
	if h == nil || h.IsEmpty() {
		return nil, fmt.Errorf("%w: NewDenseOperator: the matrix is empty", ErrShape)
	}
	n := h.SymmetricDim()
	full := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			v := h.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w: NewDenseOperator: entry (%d,%d) is %v: the matrix must be finite", ErrNotFinite, i, j, v)
			}
			full[i*n+j] = v
			full[j*n+i] = v
		}
	}
	return &DenseOperator{n: n, full: blas64.General{Rows: n, Cols: n, Stride: n, Data: full}}, nil
}

// Size returns n.
func (d *DenseOperator) Size() int { return d.n }

// MulTo sets dst = H·V.
func (d *DenseOperator) MulTo(dst, v *mat.Dense) {
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, d.full, v.RawMatrix(), 0, dst.RawMatrix())
}

// RowsMulTo sets dst = H[idx,:]·V.
func (d *DenseOperator) RowsMulTo(dst *mat.Dense, idx []int, v *mat.Dense) {
	vr := v.RawMatrix()
	dr := dst.RawMatrix()
	for r, i := range idx {
		row := blas64.Vector{N: d.n, Inc: 1, Data: d.full.Data[i*d.n : (i+1)*d.n]}
		out := blas64.Vector{N: dr.Cols, Inc: 1, Data: dr.Data[r*dr.Stride : r*dr.Stride+dr.Cols]}
		blas64.Gemv(blas.Trans, 1, vr, row, 0, out)
	}
}

// ColsMulTo sets dst = H[:,idx]·D.
func (d *DenseOperator) ColsMulTo(dst *mat.Dense, idx []int, dm *mat.Dense) {
	dr := dst.RawMatrix()
	for i := 0; i < dr.Rows; i++ {
		row := dr.Data[i*dr.Stride : i*dr.Stride+dr.Cols]
		for j := range row {
			row[j] = 0
		}
	}
	ddr := dm.RawMatrix()
	for k, i := range idx {
		// H[:,i] = H[i,:]ᵀ by symmetry.
		col := blas64.Vector{N: d.n, Inc: 1, Data: d.full.Data[i*d.n : (i+1)*d.n]}
		drow := blas64.Vector{N: ddr.Cols, Inc: 1, Data: ddr.Data[k*ddr.Stride : k*ddr.Stride+ddr.Cols]}
		blas64.Ger(1, col, drow, dr)
	}
}

// ColumnTo sets dst[:n] to column j of H (row j, by symmetry).
func (d *DenseOperator) ColumnTo(dst []float64, j int) {
	copy(dst[:d.n], d.full.Data[j*d.n:(j+1)*d.n])
}

// BlockTo sets dst = H[idx,idx].
func (d *DenseOperator) BlockTo(dst *mat.SymDense, idx []int) {
	for a, i := range idx {
		for b := a; b < len(idx); b++ {
			dst.SetSym(a, b, d.full.Data[i*d.n+idx[b]])
		}
	}
}

// DiagTo sets dst[i] = H_ii.
func (d *DenseOperator) DiagTo(dst []float64) {
	for i := 0; i < d.n; i++ {
		dst[i] = d.full.Data[i*d.n+i]
	}
}
