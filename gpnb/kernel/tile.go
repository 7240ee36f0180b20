package kernel

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/gpnb/gpnb/internal/par"
)

// Fixed work partition. Every product, reduction and cache build is cut into
// tiles of rowTile rows of the output, each accumulated over column chunks of
// colChunk in ascending order. The partition depends on n only, never on the
// number of workers, so results are bitwise reproducible whatever GOMAXPROCS
// or Options.Workers is.
//
// They are variables only so tests can shrink them to exercise many tiles.
var (
	rowTile  = 128
	colChunk = 512
	symTile  = 256 // square blocks of the symmetric matrix-free product
)

// nearTau decides when the gemm-shaped expansion r² = |z_a|²+|z_b|²−2z_a·z_b
// is not trusted: its absolute rounding error is about c·ε·(|z_a|²+|z_b|²),
// so when r² ≤ nearTau·(|z_a|²+|z_b|²) the pair is recomputed from direct
// differences Σ(z_ak−z_bk)². That bounds the relative error of r² from the
// expansion by about c·ε/nearTau ≈ 1e-12 and makes r = 0 exact for
// duplicate points (the diagonal in particular).
const nearTau = 1.0 / 1024

// scratch is one worker's buffers; grown on demand, reused across calls.
type scratch struct {
	t      []float64 // rowTile×colChunk: r², then K values or G
	w      []float64 // rowTile×colChunk: gathered K or W tile
	c      []float64 // m×rowTile: a product tile, transposed (ColsMulTo)
	w32    []float32 // w for float32 products
	c32    []float32 // c for float32 products
	o32    []float32 // rowTile×m: a float32 product tile before conversion
	m, dm  []float64 // colChunk: m(r), m'(r)/r of one row
	zr, zc []float64 // gathered rows of Z
	qr, qc []float64 // gathered |z|²
	gx     []float64 // rowTile×d: G·Z accumulated over column chunks
	rowsum []float64 // rowTile
	colsum []float64 // colChunk
	near   []int     // colChunk: a row's near pairs (Reduce)
	nearG  []float64 // colChunk: their G_ab
}

func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// growAs grows *p64 (T float64) or *p32 (T float32) to n and returns it:
// a buffer of the precision's own type.
func growAs[T float](p64 *[]float64, p32 *[]float32, n int) []T {
	if p, ok := any(p64).(*[]T); ok {
		*p = grow(*p, n)
		return *p
	}
	p := any(p32).(*[]T)
	*p = grow(*p, n)
	return *p
}

// contiguous reports whether idx is idx[0], idx[0]+1, ….
func contiguous(idx []int) bool {
	if len(idx) == 0 {
		return true
	}
	i0 := idx[0]
	for i, v := range idx {
		if v != i0+i {
			return false
		}
	}
	return true
}

// gatherRows returns the rows idx of the row-major n×d matrix z, as a view
// when idx is contiguous and as a copy in *buf otherwise.
func gatherRows(buf *[]float64, z []float64, d int, idx []int) []float64 {
	if contiguous(idx) {
		if len(idx) == 0 {
			return z[:0]
		}
		return z[idx[0]*d : (idx[0]+len(idx))*d]
	}
	*buf = grow(*buf, len(idx)*d)
	out := *buf
	for i, r := range idx {
		copy(out[i*d:(i+1)*d], z[r*d:(r+1)*d])
	}
	return out
}

// sqdist sets dst (len(qr)×len(qc), row-major) to the squared distances
// between the rows of zr (row-major, d columns) and the columns of zct (zc
// transposed: d×len(qc), any stride), whose squared norms are qr and qc. The
// cross term is a gemm in the Z_r·(Zᵀ)_c form, whose inner loops are long
// axpys over the columns rather than d-long dot products. See nearTau for
// the precision rule.
//
// With vec, the second pass is vectorised (the same bits): it leaves the
// pairs to compute directly as NaN, and when there are any (on the diagonal
// blocks, or for duplicate inputs) this pass finds and fills them.
func sqdist(dst, zr, qr []float64, zct blas64.General, qc []float64, d int, vec bool) {
	nr, nc := len(qr), len(qc)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, -2,
		blas64.General{Rows: nr, Cols: d, Stride: d, Data: zr},
		zct, 0, blas64.General{Rows: nr, Cols: nc, Stride: nc, Data: dst})
	if vec {
		if sqdistFixVec(dst[:nr*nc], qr, qc) == 0 {
			return
		}
		for i, r2 := range dst[:nr*nc] {
			if r2 != r2 { // NaN: a pair to compute directly
				dst[i] = directSqT(zr[(i/nc)*d:(i/nc+1)*d], zct, i%nc)
			}
		}
		return
	}
	for a := 0; a < nr; a++ {
		row := dst[a*nc : (a+1)*nc]
		qa := qr[a]
		for b, g := range row {
			s := qa + qc[b]
			r2 := s + g
			if r2 <= nearTau*s {
				r2 = directSqT(zr[a*d:(a+1)*d], zct, b)
			}
			row[b] = r2
		}
	}
}

// directSqT returns Σ_k (x_k − zct[k,b])².
func directSqT(x []float64, zct blas64.General, b int) float64 {
	var s float64
	for k, v := range x {
		t := v - zct.Data[k*zct.Stride+b]
		s += t * t
	}
	return s
}

// gatherCols returns the rows idx of the row-major n×d matrix z transposed
// (d×len(idx)): a view of zt (z transposed, d×n) when idx is contiguous, a
// copy in *buf otherwise.
func gatherCols(buf *[]float64, zt []float64, n int, z []float64, d int, idx []int) blas64.General {
	nc := len(idx)
	if contiguous(idx) && nc > 0 {
		return blas64.General{Rows: d, Cols: nc, Stride: n, Data: zt[idx[0]:]}
	}
	*buf = grow(*buf, d*nc)
	out := *buf
	for b, r := range idx {
		for k := 0; k < d; k++ {
			out[k*nc+b] = z[r*d+k]
		}
	}
	return blas64.General{Rows: d, Cols: nc, Stride: max(nc, 1), Data: out}
}

// fillK overwrites squared distances r2 with s2·m(r).
func fillK(f Family, s2 float64, r2 []float64) {
	switch f {
	case Matern12:
		for i, v := range r2 {
			r2[i] = s2 * math.Exp(-math.Sqrt(v))
		}
	case Matern32:
		for i, v := range r2 {
			u := math.Sqrt(3 * v)
			r2[i] = s2 * (1 + u) * math.Exp(-u)
		}
	case Matern52:
		for i, v := range r2 {
			u := math.Sqrt(5 * v)
			r2[i] = s2 * (1 + u + u*u/3) * math.Exp(-u)
		}
	case RBF:
		for i, v := range r2 {
			r2[i] = s2 * math.Exp(-0.5*v)
		}
	default:
		for i := range r2 {
			r2[i] = math.NaN()
		}
	}
}

// fillMD sets m[i] = m(r_i) and dm[i] = m'(r_i)/r_i from squared distances
// (0 at r = 0 for Matern12, as EvalDeriv).
func fillMD(f Family, r2, m, dm []float64) {
	switch f {
	case Matern12:
		for i, v := range r2 {
			r := math.Sqrt(v)
			e := math.Exp(-r)
			m[i] = e
			if r == 0 {
				dm[i] = 0
			} else {
				dm[i] = -e / r
			}
		}
	case Matern32:
		for i, v := range r2 {
			u := math.Sqrt(3 * v)
			e := math.Exp(-u)
			m[i] = (1 + u) * e
			dm[i] = -3 * e
		}
	case Matern52:
		for i, v := range r2 {
			u := math.Sqrt(5 * v)
			e := math.Exp(-u)
			m[i] = (1 + u + u*u/3) * e
			dm[i] = -5.0 / 3.0 * (1 + u) * e
		}
	case RBF:
		for i, v := range r2 {
			e := math.Exp(-0.5 * v)
			m[i] = e
			dm[i] = -e
		}
	default:
		for i := range r2 {
			m[i], dm[i] = math.NaN(), math.NaN()
		}
	}
}

// workers returns how many goroutines to use for ntiles tiles.
func (o *Operator) workers(ntiles int) int {
	w := o.opt.Workers
	if w <= 0 {
		w = gomaxprocs()
	}
	return max(1, min(w, ntiles))
}

// run calls fn(s, t) for every tile t < ntiles, spread over the workers,
// each with its own scratch. fn must fully determine tile t's output from
// its inputs (never from what an earlier tile left in s), which is what
// makes the result independent of the schedule.
func (o *Operator) run(ntiles int, fn func(s *scratch, t int)) {
	w := o.workers(ntiles)
	for len(o.scratch) < w {
		o.scratch = append(o.scratch, new(scratch))
	}
	par.ForTiles(ntiles, w, func(i, t int) { fn(o.scratch[i], t) })
}
