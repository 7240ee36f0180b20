package solvers

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// HostSpace returns the Space that keeps blocks in host memory, row-major,
// and multiplies by H through op's methods. It is what every solver uses
// on an Operator that is not a SpaceOperator; its arithmetic is that of the
// solvers before Space existed, bit for bit. A GPU backend's tests can run
// it next to their own Space to compare them operation by operation.
func HostSpace(op Operator) Space {
	return &hostSpace{op: op, n: op.Size()}
}

type hostSpace struct {
	op     Operator
	n      int
	s1, s2 []float64 // scratch for gathered columns, grown on first use
	iota   []int     // 0, 1, 2, ...: the selection "all columns"
}

// hostBlock is a row-major r×c matrix. After Factorize, data holds the
// upper Cholesky factor (LAPACK's potrf, in place).
type hostBlock struct {
	r, c     int
	data     []float64
	factored bool
}

func (b *hostBlock) Dims() (int, int) { return b.r, b.c }

type hostIndex struct{ idx []int }

func (ix *hostIndex) Len() int { return len(ix.idx) }

func (s *hostSpace) Size() int { return s.n }

func (s *hostSpace) NewBlock(r, c int) (Block, error) {
	if r < 1 || c < 1 {
		return nil, fmt.Errorf("%w: NewBlock(%d, %d): both dimensions must be ≥ 1", ErrShape, r, c)
	}
	return &hostBlock{r: r, c: c, data: make([]float64, r*c)}, nil
}

// wrap returns a block whose storage is data (row-major r×c), so that a
// solver on the host space updates its State's slices in place.
func (s *hostSpace) wrap(data []float64, r, c int) *hostBlock {
	if len(data) != r*c {
		panic(fmt.Sprintf("solvers: wrap: %d values for %d×%d", len(data), r, c))
	}
	return &hostBlock{r: r, c: c, data: data}
}

func (s *hostSpace) NewIndex(idx []int) (Index, error) {
	if len(idx) == 0 {
		return nil, fmt.Errorf("%w: NewIndex: empty index list", ErrShape)
	}
	ix := &hostIndex{idx: make([]int, len(idx))}
	return ix, s.SetIndex(ix, idx)
}

func (s *hostSpace) SetIndex(ix Index, idx []int) error {
	h := ix.(*hostIndex)
	if len(idx) != len(h.idx) {
		panic(fmt.Sprintf("solvers: SetIndex: %d indices for a list of %d", len(idx), len(h.idx)))
	}
	for _, i := range idx {
		if i < 0 || i >= s.n {
			panic(fmt.Sprintf("solvers: SetIndex: index %d out of range [0,%d)", i, s.n))
		}
	}
	copy(h.idx, idx)
	return nil
}

func (s *hostSpace) Upload(b Block, src []float64) error {
	h := b.(*hostBlock)
	if len(src) != h.r*h.c {
		panic(fmt.Sprintf("solvers: Upload: %d values for a %d×%d block", len(src), h.r, h.c))
	}
	h.factored = false
	if !aliases(h.data, src) {
		copy(h.data, src)
	}
	return nil
}

func (s *hostSpace) Download(dst []float64, b Block) error {
	h := b.(*hostBlock)
	if len(dst) != h.r*h.c {
		panic(fmt.Sprintf("solvers: Download: %d values for a %d×%d block", len(dst), h.r, h.c))
	}
	if !aliases(dst, h.data) {
		copy(dst, h.data)
	}
	return nil
}

// aliases reports whether a and b are the same slice.
func aliases(a, b []float64) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

func (s *hostSpace) Close() error { return nil }

// hb returns b as the host space's block.
func hb(b Block) *hostBlock { return b.(*hostBlock) }

// sel returns the number of selected columns of a block with c columns and
// whether the selection is all of them, in order (then no gather is needed:
// the data are the same either way, so are the bits).
func sel(cols []int, c int) (k int, all bool) {
	if cols == nil {
		return c, true
	}
	if len(cols) == c {
		for a, j := range cols {
			if a != j {
				return c, false
			}
		}
		return c, true
	}
	return len(cols), false
}

// scratch returns the two gather buffers with at least n1 and n2 values.
func (s *hostSpace) scratch(n1, n2 int) ([]float64, []float64) {
	if len(s.s1) < n1 {
		s.s1 = make([]float64, n1)
	}
	if len(s.s2) < n2 {
		s.s2 = make([]float64, n2)
	}
	return s.s1[:n1], s.s2[:n2]
}

func checkCols(what string, want int, bs ...*hostBlock) {
	for _, b := range bs {
		if b.c != want {
			panic(fmt.Sprintf("solvers: %s: blocks have %d and %d columns", what, want, b.c))
		}
	}
}

func checkRows(what string, b *hostBlock, want int) {
	if b.r != want {
		panic(fmt.Sprintf("solvers: %s: block has %d rows, want %d", what, b.r, want))
	}
}

// shapes checks that dst has dstRows rows, src srcRows rows and both the
// same columns, and returns the selection of cols in them (see sel).
func shapes(what string, dst *hostBlock, dstRows int, src *hostBlock, srcRows int, cols []int) (k int, all bool) {
	checkRows(what, dst, dstRows)
	checkRows(what, src, srcRows)
	checkCols(what, dst.c, src)
	return sel(cols, dst.c)
}

func (s *hostSpace) Mul(dst, src Block, cols []int) {
	d, x := hb(dst), hb(src)
	k, all := shapes("Mul", d, s.n, x, s.n, cols)
	if k == 0 {
		return
	}
	s.onCols(d, x, cols, all, func(out, in []float64) {
		s.op.MulTo(mat.NewDense(s.n, k, out), mat.NewDense(s.n, k, in))
	})
}

func (s *hostSpace) MulRows(dst Block, rows Index, src Block, cols []int) {
	d, x, idx := hb(dst), hb(src), rows.(*hostIndex).idx
	k, all := shapes("MulRows", d, len(idx), x, s.n, cols)
	if k == 0 {
		return
	}
	s.onCols(d, x, cols, all, func(out, in []float64) {
		s.op.RowsMulTo(mat.NewDense(d.r, k, out), idx, mat.NewDense(s.n, k, in))
	})
}

func (s *hostSpace) MulCols(dst Block, rows Index, src Block, cols []int) {
	d, x, idx := hb(dst), hb(src), rows.(*hostIndex).idx
	k, all := shapes("MulCols", d, s.n, x, len(idx), cols)
	if k == 0 {
		return
	}
	s.onCols(d, x, cols, all, func(out, in []float64) {
		s.op.ColsMulTo(mat.NewDense(s.n, k, out), idx, mat.NewDense(x.r, k, in))
	})
}

func (s *hostSpace) Principal(dst Block, rows Index) {
	d, idx := hb(dst), rows.(*hostIndex).idx
	k := len(idx)
	if d.r != k || d.c != k {
		panic(fmt.Sprintf("solvers: Principal: %d×%d block for %d indices", d.r, d.c, k))
	}
	d.factored = false
	s.op.BlockTo(mat.NewSymDense(k, d.data), idx)
}

func (s *hostSpace) Factorize(a Block) error {
	h := hb(a)
	k := h.r
	if h.c != k {
		panic(fmt.Sprintf("solvers: Factorize: %d×%d block is not square", h.r, h.c))
	}
	for i := 0; i < k; i++ {
		for j, v := range h.data[i*k+i : (i+1)*k] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%w: entry (%d,%d) is %v", ErrNotFinite, i, i+j, v)
			}
		}
	}
	// LAPACK's potrf on the upper triangle, as mat.Cholesky.Factorize does
	// (same bits), but in place and without the condition estimate.
	_, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: k, Stride: k, Data: h.data})
	if !ok {
		h.factored = false
		return fmt.Errorf("%w: Cholesky factorisation failed", ErrNotPositiveDefinite)
	}
	h.factored = true
	return nil
}

func (s *hostSpace) Solve(dst, a, src Block, cols []int) {
	d, f, x := hb(dst), hb(a), hb(src)
	if !f.factored {
		panic("solvers: Solve: the block is not factorised")
	}
	k, all := shapes("Solve", d, f.r, x, f.r, cols)
	if k == 0 {
		return
	}
	tri := blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: f.r, Stride: f.r, Data: f.data}
	if all {
		if d != x {
			copy(d.data, x.data)
		}
		lapack64.Potrs(tri, blas64.General{Rows: d.r, Cols: k, Stride: k, Data: d.data})
		return
	}
	b, _ := s.scratch(d.r*k, 0)
	gatherCols(b, x.data, x.r, x.c, cols)
	lapack64.Potrs(tri, blas64.General{Rows: d.r, Cols: k, Stride: k, Data: b})
	scatterCols(d.data, b, d.r, d.c, cols)
}

func (s *hostSpace) MulT(dst, x, y Block, cols []int) {
	d, xb, yb := hb(dst), hb(x), hb(y)
	k, all := shapes("MulT", d, xb.c, yb, xb.r, cols)
	if k == 0 {
		return
	}
	xg := blas64.General{Rows: xb.r, Cols: xb.c, Stride: xb.c, Data: xb.data}
	s.onCols(d, yb, cols, all, func(out, in []float64) {
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, xg,
			blas64.General{Rows: yb.r, Cols: k, Stride: k, Data: in}, 0,
			blas64.General{Rows: d.r, Cols: k, Stride: k, Data: out})
	})
}

func (s *hostSpace) MulAdd(y Block, alpha float64, x, u Block, cols []int) {
	yb, xb, ub := hb(y), hb(x), hb(u)
	k, all := shapes("MulAdd", yb, xb.r, ub, xb.c, cols)
	if k == 0 {
		return
	}
	xg := blas64.General{Rows: xb.r, Cols: xb.c, Stride: xb.c, Data: xb.data}
	if all {
		blas64.Gemm(blas.NoTrans, blas.NoTrans, alpha, xg,
			blas64.General{Rows: ub.r, Cols: k, Stride: k, Data: ub.data}, 1,
			blas64.General{Rows: yb.r, Cols: k, Stride: k, Data: yb.data})
		return
	}
	yg, ug := s.scratch(yb.r*k, ub.r*k)
	gatherCols(yg, yb.data, yb.r, yb.c, cols)
	gatherCols(ug, ub.data, ub.r, ub.c, cols)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, alpha, xg,
		blas64.General{Rows: ub.r, Cols: k, Stride: k, Data: ug}, 1,
		blas64.General{Rows: yb.r, Cols: k, Stride: k, Data: yg})
	scatterCols(yb.data, yg, yb.r, yb.c, cols)
}

func (s *hostSpace) Dots(dst []float64, x, y Block, cols, segs []int) error {
	xb, yb := hb(x), hb(y)
	if xb.r != yb.r || xb.c != yb.c {
		panic(fmt.Sprintf("solvers: Dots: %d×%d and %d×%d blocks", xb.r, xb.c, yb.r, yb.c))
	}
	m := xb.c
	k, all := sel(cols, m)
	nseg := 1
	if segs != nil {
		nseg = len(segs) - 1
	}
	if len(dst) != nseg*k {
		panic(fmt.Sprintf("solvers: Dots: %d results for %d segments × %d columns", len(dst), nseg, k))
	}
	for sg := 0; sg < nseg; sg++ {
		lo, hi := 0, xb.r
		if segs != nil {
			lo, hi = segs[sg], segs[sg+1]
		}
		out := dst[sg*k : (sg+1)*k]
		for a := range out {
			out[a] = 0
		}
		// Rows in increasing order, one accumulator per column.
		for i := lo; i < hi; i++ {
			xr, yr := xb.data[i*m:(i+1)*m], yb.data[i*m:(i+1)*m]
			if all {
				for j, v := range xr {
					out[j] += v * yr[j]
				}
				continue
			}
			for a, j := range cols {
				out[a] += xr[j] * yr[j]
			}
		}
	}
	return nil
}

func (s *hostSpace) Axpy(y Block, alpha []float64, x Block, cols []int) {
	yb, xb := hb(y), hb(x)
	checkSame("Axpy", yb, xb)
	cols = s.cols(cols, yb.c)
	pairRows(yb.r, yb, nil, xb, nil, func(yr, xr []float64) {
		for a, j := range cols {
			yr[j] += alpha[a] * xr[j]
		}
	})
}

func (s *hostSpace) Xpby(y Block, x Block, beta []float64, cols []int) {
	yb, xb := hb(y), hb(x)
	checkSame("Xpby", yb, xb)
	cols = s.cols(cols, yb.c)
	pairRows(yb.r, yb, nil, xb, nil, func(yr, xr []float64) {
		for a, j := range cols {
			yr[j] = xr[j] + beta[a]*yr[j]
		}
	})
}

func (s *hostSpace) Scale(y Block, alpha []float64, cols []int) {
	yb := hb(y)
	m := yb.c
	cols = s.cols(cols, m)
	for i := 0; i < yb.r; i++ {
		yr := yb.data[i*m : (i+1)*m]
		for a, j := range cols {
			if alpha[a] == 0 {
				yr[j] = 0
			} else {
				yr[j] *= alpha[a]
			}
		}
	}
}

func (s *hostSpace) Copy(y, x Block, cols []int) {
	yb, xb := hb(y), hb(x)
	checkSame("Copy", yb, xb)
	if _, all := sel(cols, yb.c); all {
		copy(yb.data, xb.data)
		return
	}
	pairRows(yb.r, yb, nil, xb, nil, copyCols(cols))
}

func (s *hostSpace) GatherRows(dst Block, rows Index, src Block, cols []int) {
	d, x, idx := hb(dst), hb(src), rows.(*hostIndex).idx
	checkRows("GatherRows", d, len(idx))
	checkCols("GatherRows", d.c, x)
	pairRows(len(idx), d, nil, x, idx, copyCols(s.cols(cols, d.c)))
}

func (s *hostSpace) ScatterRows(y Block, rows Index, x Block, cols []int) {
	yb, xb, idx := hb(y), hb(x), rows.(*hostIndex).idx
	checkRows("ScatterRows", xb, len(idx))
	checkCols("ScatterRows", yb.c, xb)
	pairRows(len(idx), yb, idx, xb, nil, copyCols(s.cols(cols, yb.c)))
}

func (s *hostSpace) AxpyRows(y Block, rows Index, alpha []float64, x Block, cols []int) {
	yb, xb, idx := hb(y), hb(x), rows.(*hostIndex).idx
	checkRows("AxpyRows", xb, len(idx))
	checkCols("AxpyRows", yb.c, xb)
	cols = s.cols(cols, yb.c)
	pairRows(len(idx), yb, idx, xb, nil, func(yr, xr []float64) {
		for b, j := range cols {
			yr[j] += alpha[b] * xr[j]
		}
	})
}

func (s *hostSpace) ScaleRows(y, d Block, cols []int) {
	yb, db := hb(y), hb(d)
	checkRows("ScaleRows", db, yb.r)
	if db.c != 1 {
		panic(fmt.Sprintf("solvers: ScaleRows: d is %d×%d, want a column", db.r, db.c))
	}
	cols = s.cols(cols, yb.c)
	pairRows(yb.r, yb, nil, db, nil, func(yr, dr []float64) {
		for _, j := range cols {
			yr[j] *= dr[0]
		}
	})
}

// onCols runs f(out, in) on the selected columns of dst and src: on the
// blocks' own data when the selection is all columns in order, otherwise on
// scratch copies, src's selected columns gathered into in and out's
// scattered into dst's. f must fill all of out.
func (s *hostSpace) onCols(dst, src *hostBlock, cols []int, all bool, f func(out, in []float64)) {
	if all {
		f(dst.data, src.data)
		return
	}
	k := len(cols)
	in, out := s.scratch(src.r*k, dst.r*k)
	gatherCols(in, src.data, src.r, src.c, cols)
	f(out, in)
	scatterCols(dst.data, out, dst.r, dst.c, cols)
}

// row returns row i of b.
func (b *hostBlock) row(i int) []float64 { return b.data[i*b.c : (i+1)*b.c] }

// pairRows calls fn(yr, xr) for n pairs of rows, in order: row a of y with
// row a of x, or row yRows[a] of y (a scatter) or row xRows[a] of x (a
// gather) where those are not nil.
func pairRows(n int, y *hostBlock, yRows []int, x *hostBlock, xRows []int, fn func(yr, xr []float64)) {
	for a := 0; a < n; a++ {
		i, j := a, a
		if yRows != nil {
			i = yRows[a]
		}
		if xRows != nil {
			j = xRows[a]
		}
		fn(y.row(i), x.row(j))
	}
}

// copyCols returns the row operation yr[j] = xr[j] for j in cols.
func copyCols(cols []int) func(yr, xr []float64) {
	return func(yr, xr []float64) {
		for _, j := range cols {
			yr[j] = xr[j]
		}
	}
}

// cols returns cols, or 0..m−1 when it is nil.
func (s *hostSpace) cols(cols []int, m int) []int {
	if cols != nil {
		return cols
	}
	for len(s.iota) < m {
		s.iota = append(s.iota, len(s.iota))
	}
	return s.iota[:m]
}

func checkSame(what string, a, b *hostBlock) {
	if a.r != b.r || a.c != b.c {
		panic(fmt.Sprintf("solvers: %s: %d×%d and %d×%d blocks", what, a.r, a.c, b.r, b.c))
	}
}

// gatherCols copies columns cols of row-major n×m src into contiguous
// row-major n×len(cols) dst.
func gatherCols(dst, src []float64, n, m int, cols []int) {
	k := len(cols)
	for i := 0; i < n; i++ {
		s := src[i*m : (i+1)*m]
		d := dst[i*k : (i+1)*k]
		for a, j := range cols {
			d[a] = s[j]
		}
	}
}

// scatterCols copies contiguous row-major n×len(cols) src into columns
// cols of row-major n×m dst (the inverse of gatherCols).
func scatterCols(dst, src []float64, n, m int, cols []int) {
	k := len(cols)
	for i := 0; i < n; i++ {
		d := dst[i*m : (i+1)*m]
		s := src[i*k : (i+1)*k]
		for a, j := range cols {
			d[j] = s[a]
		}
	}
}
