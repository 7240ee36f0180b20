package gpnb

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"

	"github.com/gpnb/gpnb/internal/par"
)

// cholBlock is the block size of choleskyUpper: its trailing updates are
// gemms of cholBlock columns and depth, large enough to run at a BLAS's
// single-core rate.
const cholBlock = 256

// choleskyUpper factorises the symmetric positive definite matrix a (its
// upper triangle, row-major) in place as a = UᵀU, and reports false when a
// is not positive definite (or holds a NaN). It is the right-looking blocked
// algorithm: for each block row k, the diagonal block is factorised
// (lapack64.Potrf), the blocks to its right are solved with Uₖₖᵀ, and the
// trailing upper triangle is updated, one task per block column. The tasks
// of a stage run on GOMAXPROCS goroutines, but each does the same
// arithmetic whichever goroutine runs it, so the bits do not depend on the
// number of cores (with a BLAS that is itself single-threaded, as the
// openblas build pins it). lapack64.Potrf runs on one core: for protein's
// n = 41157 that is about 20 minutes on a 2-core machine and 13 on the GPU
// machine's host; this one uses every core.
func choleskyUpper(a blas64.Symmetric) (blas64.Triangular, bool) {
	n, lda := a.N, a.Stride
	u := blas64.Triangular{N: n, Stride: lda, Uplo: blas.Upper, Diag: blas.NonUnit, Data: a.Data}
	if n <= cholBlock {
		return lapack64.Potrf(a)
	}
	blocks := par.Tiles(n, cholBlock)
	span := func(j int) (int, int) { return par.Span(j, n, cholBlock) }
	for k := 0; k < blocks; k++ {
		k0, k1 := span(k)
		ukk, ok := lapack64.Potrf(blas64.Symmetric{N: k1 - k0, Stride: lda, Uplo: blas.Upper, Data: a.Data[k0*lda+k0:]})
		if !ok {
			return u, false
		}
		if k1 == n {
			break
		}
		// Block row k to the right of the diagonal: X = Uₖₖ⁻ᵀ A[k, j].
		rest := blocks - k - 1
		par.ForTiles(rest, 0, func(_, t int) {
			j0, j1 := span(blocks - 1 - t)
			x := blas64.General{Rows: k1 - k0, Cols: j1 - j0, Stride: lda, Data: a.Data[k0*lda+j0:]}
			blas64.Trsm(blas.Left, blas.Trans, 1, ukk, x)
		})
		// Trailing update A[i, j] -= Xᵢᵀ Xⱼ for k < i ≤ j, one task per
		// block column j (the largest first).
		par.ForTiles(rest, 0, func(_, t int) {
			j0, j1 := span(blocks - 1 - t)
			xj := blas64.General{Rows: k1 - k0, Cols: j1 - j0, Stride: lda, Data: a.Data[k0*lda+j0:]}
			blas64.Syrk(blas.Trans, -1, xj, 1, blas64.Symmetric{N: j1 - j0, Stride: lda, Uplo: blas.Upper, Data: a.Data[j0*lda+j0:]})
			if j0 > k1 {
				xi := blas64.General{Rows: k1 - k0, Cols: j0 - k1, Stride: lda, Data: a.Data[k0*lda+k1:]}
				c := blas64.General{Rows: j0 - k1, Cols: j1 - j0, Stride: lda, Data: a.Data[k1*lda+j0:]}
				blas64.Gemm(blas.Trans, blas.NoTrans, -1, xi, xj, 1, c)
			}
		})
	}
	return u, true
}
