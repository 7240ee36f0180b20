package solvers

import "fmt"

// Space is where a solve keeps its vectors and does all of its O(n·m) work:
// blocks of columns that live next to the operator H (in host memory for
// HostSpace, in device memory for a GPU backend). The methods CG, AP and
// SGD are written once against it; only scalars cross between a solver and
// its space per iteration: column dots going out, coefficients and SGD's
// batch indices going in. Vectors cross when a solve starts or resumes
// (Upload) and when its State is asked for (Download).
//
// Blocks are opaque r×c matrices allocated by NewBlock; each operation says
// which shapes it takes (n is Size()). Blocks are created by the solver at
// Start and Resume, not per iteration, and an implementation should not
// allocate in the other methods either. cols selects columns: nil means all
// of them, otherwise a strictly increasing list of column indices, the same
// for every block of the call; per-column coefficients (alpha, beta) and
// results (Dots) follow its order. Index lists (rows) are distinct row
// indices, also increasing in every call the solvers make. A Space must not
// keep the slices it is passed (cols, coefficients, indices, host data)
// after the call returns: the solvers reuse them at once, so an
// asynchronous implementation copies them first.
//
// The arithmetic of each operation is exactly the expression given, element
// by element, and Dots sums in a fixed order, so a Space is deterministic:
// the same calls give the same bits. HostSpace gives the bits of the
// solvers as they were before Space existed (a golden test pins them); a
// device implementation may round differently (a parallel reduction order,
// fused multiply-adds) but must be deterministic too.
//
// Errors. The solvers never pass mismatched shapes or out-of-range indices;
// an implementation may panic on them, as on any other programming error.
// Failures of the space itself (a device error, out of memory) are returned
// by the methods that return an error; an implementation that runs the
// others asynchronously records their first failure and returns it from the
// next method that returns an error (Dots, Download, Factorize, Close...).
//
// A Space is used by one solver at a time and need not be safe for
// concurrent use.
type Space interface {
	// Size returns n, the order of H.
	Size() int
	// NewBlock returns an r×c block of zeros (r, c ≥ 1).
	NewBlock(r, c int) (Block, error)
	// NewIndex returns an index list holding a copy of idx (len ≥ 1).
	NewIndex(idx []int) (Index, error)
	// SetIndex overwrites ix with idx, which has ix's length.
	SetIndex(ix Index, idx []int) error
	// Upload copies the row-major r×c matrix src into b.
	Upload(b Block, src []float64) error
	// Download copies b into the row-major r×c matrix dst.
	Download(dst []float64, b Block) error
	// Close releases every block and index list of the space; none can be
	// used afterwards. It returns the first failure not yet returned.
	Close() error

	// Mul sets dst[:,c] = H·src[:,c] for n×w dst and src.
	Mul(dst, src Block, cols []int)
	// MulRows sets dst[:,c] = H[rows,:]·src[:,c] for k×w dst, n×w src and
	// k = rows.Len() (SGD's mini-batch gradient).
	MulRows(dst Block, rows Index, src Block, cols []int)
	// MulCols sets dst[:,c] = H[:,rows]·src[:,c] for n×w dst and k×w src
	// (AP's residual update).
	MulCols(dst Block, rows Index, src Block, cols []int)
	// Principal sets the upper triangle of the k×k block dst (dst[a,b] for
	// a ≤ b) to that of H[rows,rows]; its strict lower triangle becomes
	// unspecified (Factorize reads only the upper one).
	Principal(dst Block, rows Index)

	// Factorize replaces the k×k block a, symmetric and given by its upper
	// triangle, by its Cholesky factor, in a layout of the space's choice:
	// afterwards a is an argument of Solve only, until Principal or Upload
	// overwrites it. It returns an error wrapping ErrNotFinite if the upper
	// triangle has a NaN or Inf, ErrNotPositiveDefinite if the
	// factorisation fails (a is then unspecified).
	Factorize(a Block) error
	// Solve sets dst[:,c] = A⁻¹·src[:,c] for the factorised k×k a and k×w
	// dst and src; dst may be src.
	Solve(dst, a, src Block, cols []int)
	// MulT sets dst[:,c] = xᵀ·y[:,c] for r×w dst, n×r x and n×w y.
	MulT(dst, x, y Block, cols []int)
	// MulAdd sets y[:,c] = y[:,c] + alpha·x·u[:,c] for n×w y, n×r x and r×w u.
	MulAdd(y Block, alpha float64, x, u Block, cols []int)

	// Dots sets dst[s·k+a] = Σ_i x[i,c_a]·y[i,c_a] over the rows i of
	// segment s, summed in increasing i, where k is the number of selected
	// columns and segment s is rows segs[s]..segs[s+1]−1; segs nil means
	// one segment of all rows. x and y have the same shape and may be the
	// same block. This is the only way numbers leave the space per
	// iteration: CG's pᵀHp and rᵀz, every residual norm, AP's block scores.
	Dots(dst []float64, x, y Block, cols, segs []int) error
	// Axpy sets y[:,c_a] = y[:,c_a] + alpha[a]·x[:,c_a].
	Axpy(y Block, alpha []float64, x Block, cols []int)
	// Xpby sets y[:,c_a] = x[:,c_a] + beta[a]·y[:,c_a].
	Xpby(y Block, x Block, beta []float64, cols []int)
	// Scale sets y[:,c_a] = alpha[a]·y[:,c_a], and to +0 exactly where
	// alpha[a] is 0 (whatever y held, NaN included).
	Scale(y Block, alpha []float64, cols []int)
	// Copy sets y[:,c] = x[:,c].
	Copy(y, x Block, cols []int)
	// GatherRows sets dst[a,c] = src[rows[a],c] for k×w dst.
	GatherRows(dst Block, rows Index, src Block, cols []int)
	// ScatterRows sets y[rows[a],c] = x[a,c] for k×w x.
	ScatterRows(y Block, rows Index, x Block, cols []int)
	// AxpyRows sets y[rows[a],c_b] = y[rows[a],c_b] + alpha[b]·x[a,c_b] for
	// k×w x.
	AxpyRows(y Block, rows Index, alpha []float64, x Block, cols []int)
	// ScaleRows sets y[i,c] = y[i,c]·d[i] for r×w y and r×1 d.
	ScaleRows(y, d Block, cols []int)
}

// CGStepper is implemented by a Space that runs the arithmetic of an
// unpreconditioned CG iteration itself, so that a device computes α and β
// without a round trip per coefficient: with Q = H·P already in q, for each
// a and j = cols[a] (all columns when cols is nil; k of them),
//
//	pq[a] = Dots(p, q)[a],  α = rzOld[a]/pq[a],
//	v[:,j] = v[:,j] + α·p[:,j],  r[:,j] = r[:,j] + (−α)·q[:,j],
//	rz[a] = Dots(r, r)[a],  β = rz[a]/rzOld[a],  p[:,j] = r[:,j] + β·p[:,j],
//
// each with the arithmetic of the Space method named, so that CG gives the
// bits of the separate calls. len(pq) = len(rz) = len(rzOld) = k. When some
// pq[a] is not a finite positive number, v, r and p are unspecified
// afterwards (CG then fails). Errors are those of Dots.
type CGStepper interface {
	CGStep(pq, rz []float64, v, r, p, q Block, rzOld []float64, cols []int) error
}

// Block is a matrix held by a Space.
type Block interface {
	// Dims returns the number of rows and columns.
	Dims() (r, c int)
}

// Index is a list of row indices held by a Space.
type Index interface {
	// Len returns the number of indices.
	Len() int
}

// SpaceOperator is an Operator that keeps the solvers' vectors in its own
// Space, such as a GPU backend holding them in device memory. A solver
// started or resumed on it calls NewSpace once and does all its vector work
// there; on any other Operator it uses HostSpace.
type SpaceOperator interface {
	Operator
	// NewSpace returns a new, empty Space for H. The solver that asked
	// for it closes it (Solver.Close).
	NewSpace() (Space, error)
}

// spaceFor returns the space a solver on op works in.
func spaceFor(op Operator) (Space, error) {
	if so, ok := op.(SpaceOperator); ok {
		sp, err := so.NewSpace()
		if err != nil {
			return nil, err
		}
		if sp.Size() != op.Size() {
			_ = sp.Close()
			return nil, fmt.Errorf("%w: the operator's Space has size %d but the operator %d", ErrShape, sp.Size(), op.Size())
		}
		return sp, nil
	}
	return HostSpace(op), nil
}
