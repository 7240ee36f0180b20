package kernel

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

func gomaxprocs() int { return runtime.GOMAXPROCS(0) }

// Options configure an Operator. The zero value is ready to use: automatic
// mode, half the physical memory for the dense cache, float64 storage, one
// worker per GOMAXPROCS.
type Options struct {
	// Mode forces dense or matrix-free storage; ModeAuto chooses dense when
	// the n×n cache fits MemoryBudget.
	Mode Mode `json:"mode"`
	// MemoryBudget is the number of bytes the dense cache may use; 0 means
	// DefaultMemoryBudget() (half of physical memory).
	MemoryBudget int64 `json:"memory_budget,omitempty" resume:"change"`
	// Float32 stores the dense cache as float32 (half the memory);
	// products still accumulate in float64. Ignored in matrix-free mode.
	Float32 bool `json:"float32,omitempty"`
	// Workers is the number of goroutines; 0 means GOMAXPROCS. Results do
	// not depend on it.
	Workers int `json:"workers,omitempty" resume:"change"`
}

// Work counts what an Operator has done since it was made. Plain data.
type Work struct {
	// Products is the number of right-hand-side columns multiplied by the
	// full H (MulTo) or by K(Xs,X) (CrossMulTo), summed over calls.
	Products int64
	// RowsEvaluated is the number of rows of H (or of K(Xs,X)) used, summed
	// over calls and columns batches: n per MulTo, len(idx) per RowsMulTo,
	// ColsMulTo and BlockTo, n per Reduce.
	RowsEvaluated int64
	// KernelEvals is the number of kernel values k(x_a,x_b) computed (not
	// read from the dense cache), including those inside Reduce.
	KernelEvals int64
}

// GramOperator is the kernel operator H_θ = K_θ(X,X) + σ²I as the solvers and
// the optimiser see it. *Operator (CPU) implements it; a GPU backend can too.
// Its first six methods are exactly those of solvers.Operator.
type GramOperator interface {
	// Size returns n.
	Size() int
	// MulTo sets dst = H·V for n×m V and dst.
	MulTo(dst, v *mat.Dense)
	// RowsMulTo sets dst = H[idx,:]·V.
	RowsMulTo(dst *mat.Dense, idx []int, v *mat.Dense)
	// ColsMulTo sets dst = H[:,idx]·D.
	ColsMulTo(dst *mat.Dense, idx []int, d *mat.Dense)
	// BlockTo sets dst = H[idx,idx].
	BlockTo(dst *mat.SymDense, idx []int)
	// DiagTo sets dst[i] = H_ii.
	DiagTo(dst []float64)

	// Reduce sets dst[k] = Σ_ab W_ab ∂H_ab/∂θ_k for W = A·Bᵀ, θ = (ℓ, s, σ).
	Reduce(dst []float64, a, b *mat.Dense)
	// ReduceDense is Reduce with an explicit n×n W.
	ReduceDense(dst []float64, w *mat.Dense)
	// CrossMulTo sets dst = K(Xs, X)·V (no noise term).
	CrossMulTo(dst, xs, v *mat.Dense)
	// Kernel returns the family and hyperparameters H was built with.
	Kernel() Kernel
}

// Rekerneler is implemented by operators that can be rebuilt in place for new
// hyperparameters, reusing their storage (the dense cache is n² values; an
// optimiser changes θ every step).
type Rekerneler interface {
	SetKernel(k Kernel) error
}

// Operator is the CPU kernel operator H_θ = K_θ(X,X) + σ²I. It keeps either a
// dense cache of K (ModeDense) or only the scaled inputs (ModeMatrixFree).
// Every method is deterministic: the same inputs give the same bits whatever
// the number of workers. An Operator is not safe for concurrent use; its
// methods parallelise internally.
type Operator struct {
	k    Kernel
	mode Mode
	opt  Options
	x    *mat.Dense
	n, d int

	mean []float64 // column means of X: centring reduces cancellation
	z    []float64 // (X−mean)/ℓ, n×d row-major
	zt   []float64 // z transposed, d×n
	sq   []float64 // |z_a|²
	iota []int     // 0..n−1

	k64 []float64 // dense cache, n×n row-major (ModeDense, float64)
	k32 []float32 // dense cache (ModeDense, Float32)

	scratch []*scratch
	partial []float64 // Reduce: one (d+1)-vector per row tile
	vt      []float64 // the right-hand sides transposed, m×n
	lbuf    []float64 // Reduce: [A B]
	pbuf    []float64 // mulFreeSym: the products K_IJ·V_J of one step

	products, rows, evals atomic.Int64
}

// NewOperator validates X and k and builds H_θ for them. In ModeDense (or
// ModeAuto when it fits) this computes all n² kernel values once.
func NewOperator(x *mat.Dense, k Kernel, opt Options) (*Operator, error) {
	if x == nil || x.IsEmpty() {
		return nil, fmt.Errorf("kernel: NewOperator: X is empty: give at least one row of inputs")
	}
	n, d := x.Dims()
	if n == 0 || d == 0 {
		return nil, fmt.Errorf("kernel: NewOperator: X is %d×%d: it needs at least one row and one column", n, d)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			if v := x.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("kernel: NewOperator: X[%d,%d] is %v: inputs must be finite (drop or impute missing values)", i, j, v)
			}
		}
	}
	if err := checkKernel(k, d); err != nil {
		return nil, err
	}
	if opt.Workers < 0 {
		return nil, fmt.Errorf("kernel: NewOperator: Workers is %d: use 0 for GOMAXPROCS or a positive count", opt.Workers)
	}
	if opt.MemoryBudget < 0 {
		return nil, fmt.Errorf("kernel: NewOperator: MemoryBudget is %d: use 0 for the default or a positive number of bytes", opt.MemoryBudget)
	}
	budget := opt.MemoryBudget
	if budget == 0 {
		budget = DefaultMemoryBudget()
	}
	elem := 8.0
	if opt.Float32 {
		elem = 4
	}
	need := float64(n) * float64(n) * elem
	mode := opt.Mode
	switch mode {
	case ModeAuto:
		if need <= float64(budget) {
			mode = ModeDense
		} else {
			mode = ModeMatrixFree
		}
	case ModeDense:
		if need > float64(budget) {
			return nil, fmt.Errorf("kernel: NewOperator: the dense cache for n=%d needs %.3g GB but the memory budget is %.3g GB: use ModeMatrixFree or ModeAuto, set Float32, or raise Options.MemoryBudget", n, need/1e9, float64(budget)/1e9)
		}
	case ModeMatrixFree:
	default:
		return nil, fmt.Errorf("kernel: NewOperator: unknown mode %v: use ModeAuto, ModeDense or ModeMatrixFree", mode)
	}

	o := &Operator{mode: mode, opt: opt, x: mat.DenseCopyOf(x), n: n, d: d}
	o.mean = make([]float64, d)
	for j := 0; j < d; j++ {
		var s float64
		for i := 0; i < n; i++ {
			s += x.At(i, j)
		}
		o.mean[j] = s / float64(n)
	}
	o.z = make([]float64, n*d)
	o.zt = make([]float64, d*n)
	o.sq = make([]float64, n)
	o.iota = make([]int, n)
	for i := range o.iota {
		o.iota[i] = i
	}
	if mode == ModeDense {
		if opt.Float32 {
			o.k32 = make([]float32, n*n)
		} else {
			o.k64 = make([]float64, n*n)
		}
	}
	o.setKernel(k)
	return o, nil
}

func checkKernel(k Kernel, d int) error {
	if !k.Family.Valid() {
		return fmt.Errorf("kernel: unknown family %v: use Matern12, Matern32, Matern52 or RBF", k.Family)
	}
	return k.Hyper.Validate(d)
}

// SetKernel rebuilds H for new hyperparameters (same X, same mode), reusing
// the dense cache's memory. On error the operator is unchanged.
func (o *Operator) SetKernel(k Kernel) error {
	if err := checkKernel(k, o.d); err != nil {
		return err
	}
	o.setKernel(k)
	return nil
}

func (o *Operator) setKernel(k Kernel) {
	k.Hyper = k.Hyper.Clone()
	o.k = k
	n, d := o.n, o.d
	raw := o.x.RawMatrix()
	for i := 0; i < n; i++ {
		row := raw.Data[i*raw.Stride : i*raw.Stride+d]
		zi := o.z[i*d : (i+1)*d]
		var s float64
		for j, v := range row {
			t := (v - o.mean[j]) / k.Hyper.Lengthscales[j]
			zi[j] = t
			o.zt[j*n+i] = t
			s += t * t
		}
		o.sq[i] = s
	}
	if o.mode == ModeDense {
		o.build()
	}
}

// build fills the dense cache. Row tile I computes columns j ≥ i of its rows
// and mirrors them, so K is exactly symmetric and each value is computed once.
func (o *Operator) build() {
	n, d := o.n, o.d
	s2 := o.k.Hyper.Signal * o.k.Hyper.Signal
	o.run(tiles(n, rowTile), func(s *scratch, t int) {
		i0, i1 := t*rowTile, min(n, (t+1)*rowTile)
		nr := i1 - i0
		zr, qr := o.z[i0*d:i1*d], o.sq[i0:i1]
		for j0 := i0; j0 < n; j0 += colChunk {
			j1 := min(n, j0+colChunk)
			nc := j1 - j0
			s.t = grow(s.t, nr*nc)
			buf := s.t
			sqdist(buf, zr, qr, o.ztCols(j0, j1), o.sq[j0:j1], d)
			fillK(o.k.Family, s2, buf)
			// Upper part row by row, then the mirror column by column, so
			// both sets of writes are contiguous in K.
			for a := 0; a < nr; a++ {
				ga := i0 + a
				b0 := max(0, ga-j0)
				src := buf[a*nc+b0 : (a+1)*nc]
				if o.k64 != nil {
					copy(o.k64[ga*n+j0+b0:ga*n+j1], src)
				} else {
					dst := o.k32[ga*n+j0+b0 : ga*n+j1]
					for b, v := range src {
						dst[b] = float32(v)
					}
				}
			}
			for b := 0; b < nc; b++ {
				gb := j0 + b
				na := min(nr, gb-i0+1) // rows a with i0+a ≤ gb
				if o.k64 != nil {
					dst := o.k64[gb*n+i0 : gb*n+i0+na]
					for a := range dst {
						dst[a] = buf[a*nc+b]
					}
				} else {
					dst := o.k32[gb*n+i0 : gb*n+i0+na]
					for a := range dst {
						dst[a] = float32(buf[a*nc+b])
					}
				}
			}
		}
	})
	o.evals.Add(int64(n) * int64(n+1) / 2)
}

// ztCols returns columns [j0, j1) of Zᵀ.
func (o *Operator) ztCols(j0, j1 int) blas64.General {
	return blas64.General{Rows: o.d, Cols: j1 - j0, Stride: o.n, Data: o.zt[j0:]}
}

// Size returns n.
func (o *Operator) Size() int { return o.n }

// Mode returns ModeDense or ModeMatrixFree, whichever was chosen.
func (o *Operator) Mode() Mode { return o.mode }

// Storage describes how K is held, for records and logs: "dense float64",
// "dense float32" or "matrix-free".
func (o *Operator) Storage() string {
	switch {
	case o.mode == ModeMatrixFree:
		return "matrix-free"
	case o.k32 != nil:
		return "dense float32"
	}
	return "dense float64"
}

// Describe returns op's Storage() when it has one (the CPU and GPU
// operators do), else its Go type.
func Describe(op GramOperator) string {
	if s, ok := op.(interface{ Storage() string }); ok {
		return s.Storage()
	}
	return fmt.Sprintf("%T", op)
}

// Kernel returns the family and hyperparameters (a copy).
func (o *Operator) Kernel() Kernel {
	k := o.k
	k.Hyper = k.Hyper.Clone()
	return k
}

// X returns the inputs (the operator's own copy; do not modify it).
func (o *Operator) X() *mat.Dense { return o.x }

// Work returns the counters accumulated so far.
func (o *Operator) Work() Work {
	return Work{Products: o.products.Load(), RowsEvaluated: o.rows.Load(), KernelEvals: o.evals.Load()}
}

// noise2 returns σ².
func (o *Operator) noise2() float64 { return o.k.Hyper.Noise * o.k.Hyper.Noise }

// kTile returns K[rows, cols] as a row-major block with leading dimension ld:
// a view of the float64 cache when rows and cols are contiguous, otherwise
// gathered (or computed, in matrix-free mode) into s.w.
func (o *Operator) kTile(s *scratch, rows, cols []int) (buf []float64, ld int) {
	n, d := o.n, o.d
	nr, nc := len(rows), len(cols)
	if o.k64 != nil && contiguous(rows) && contiguous(cols) {
		return o.k64[rows[0]*n+cols[0]:], n
	}
	s.w = grow(s.w, nr*nc)
	buf = s.w
	switch {
	case o.k64 != nil || o.k32 != nil:
		o.gatherK(buf, nc, rows, cols)
	default:
		zr := gatherRows(&s.zr, o.z, d, rows)
		zct := gatherCols(&s.zc, o.zt, n, o.z, d, cols)
		qr := gatherRows(&s.qr, o.sq, 1, rows)
		qc := gatherRows(&s.qc, o.sq, 1, cols)
		sqdist(buf, zr, qr, zct, qc, d)
		s2 := o.k.Hyper.Signal * o.k.Hyper.Signal
		fillK(o.k.Family, s2, buf)
		o.evals.Add(int64(nr) * int64(nc))
	}
	return buf, nc
}

// gatherK sets buf (len(rows)×len(cols), leading dimension ld) to
// K[rows, cols] read from the dense cache (float32 converted to float64).
// Row segments of contiguous cols are straight copies.
func (o *Operator) gatherK(buf []float64, ld int, rows, cols []int) {
	n, nc := o.n, len(cols)
	if nc == 0 {
		return
	}
	if cols[nc-1] == cols[0]+nc-1 && contiguous(cols) {
		o.gatherKRange(buf, ld, rows, cols[0], cols[0]+nc)
		return
	}
	for a, r := range rows {
		dst := buf[a*ld : a*ld+nc]
		if o.k64 != nil {
			src := o.k64[r*n : (r+1)*n]
			for b, c := range cols {
				dst[b] = src[c]
			}
		} else {
			src := o.k32[r*n : (r+1)*n]
			for b, c := range cols {
				dst[b] = float64(src[c])
			}
		}
	}
}

// gatherKRange is gatherK for the columns [c0, c1).
func (o *Operator) gatherKRange(buf []float64, ld int, rows []int, c0, c1 int) {
	n, nc := o.n, c1-c0
	for a, r := range rows {
		dst := buf[a*ld : a*ld+nc]
		if o.k64 != nil {
			copy(dst, o.k64[r*n+c0:r*n+c1])
		} else {
			for b, x := range o.k32[r*n+c0 : r*n+c1] {
				dst[b] = float64(x)
			}
		}
	}
}

// transpose returns Vᵀ (m×r) in o.vt. Products take the right-hand sides
// transposed so that gemm runs as long dot products (K row · Vᵀ row), which
// gonum's kernels do about twice as fast as short axpys on n×17 blocks.
func (o *Operator) transpose(v blas64.General) blas64.General {
	r, m := v.Rows, v.Cols
	o.vt = grow(o.vt, r*m)
	for i := 0; i < r; i++ {
		row := v.Data[i*v.Stride : i*v.Stride+m]
		for j, x := range row {
			o.vt[j*r+i] = x
		}
	}
	return blas64.General{Rows: m, Cols: r, Stride: r, Data: o.vt}
}

// colsOf returns columns [j0, j1) of g.
func colsOf(g blas64.General, j0, j1 int) blas64.General {
	return blas64.General{Rows: g.Rows, Cols: j1 - j0, Stride: g.Stride, Data: g.Data[j0:]}
}

// rowsMul sets dst[a,:] = Σ_j K[rows_a, cols_j]·vt[:,j] for the given rows,
// where vt holds the right-hand sides transposed (m×len(cols)); cols are
// walked in chunks in ascending order. The chunking depends only on the
// index lists, never on the schedule.
func (o *Operator) rowsMul(s *scratch, dst blas64.General, rows, cols []int, vt blas64.General) {
	// A contiguous block of the float64 cache is multiplied in place, as
	// one gemm over whole rows. Anything else (scattered or repeated rows,
	// float32 storage, matrix-free) goes by column chunks of colChunk:
	// K[rows, chunk] is gathered (or computed) into a rowTile×colChunk
	// buffer, whose product with the chunk of Vᵀ then runs from cache.
	ch := colChunk
	if o.k64 != nil && contiguous(rows) && contiguous(cols) {
		ch = max(1, len(cols))
	}
	for j0 := 0; j0 < len(cols); j0 += ch {
		j1 := min(len(cols), j0+ch)
		buf, ld := o.kTile(s, rows, cols[j0:j1])
		beta := 1.0
		if j0 == 0 {
			beta = 0
		}
		blas64.Gemm(blas.NoTrans, blas.Trans, 1,
			blas64.General{Rows: len(rows), Cols: j1 - j0, Stride: ld, Data: buf},
			colsOf(vt, j0, j1), beta, dst)
	}
}

// checkDims panics unless dst is r×c; an empty dst (the zero value, or
// after Reset) is resized, as gonum's methods do.
func checkDims(method string, dst *mat.Dense, r, c int) {
	if dst.IsEmpty() && r > 0 && c > 0 {
		dst.ReuseAs(r, c)
		return
	}
	if dr, dc := dst.Dims(); dr != r || dc != c {
		panic(fmt.Sprintf("kernel: %s: dst is %d×%d, want %d×%d", method, dr, dc, r, c))
	}
}

func checkIdx(method string, idx []int, n int) {
	for _, i := range idx {
		if i < 0 || i >= n {
			panic(fmt.Sprintf("kernel: %s: index %d out of range [0,%d)", method, i, n))
		}
	}
}

func sub(g blas64.General, r0, r1 int) blas64.General {
	if r0 == r1 {
		return blas64.General{Rows: 0, Cols: g.Cols, Stride: g.Stride}
	}
	return blas64.General{Rows: r1 - r0, Cols: g.Cols, Stride: g.Stride, Data: g.Data[r0*g.Stride:]}
}

// MulTo sets dst = H·V = K·V + σ²V, where V and dst are n×m. dst must be
// n×m or empty (then it is resized) and must not share memory with V.
func (o *Operator) MulTo(dst, v *mat.Dense) {
	n := o.n
	vr, vc := v.Dims()
	if vr != n {
		panic(fmt.Sprintf("kernel: MulTo: V has %d rows, want %d", vr, n))
	}
	checkDims("MulTo", dst, n, vc)
	if dst == v {
		panic("kernel: MulTo: dst and V are the same matrix")
	}
	if vc == 0 {
		return
	}
	V, D := v.RawMatrix(), dst.RawMatrix()
	vt := o.transpose(V)
	s2 := o.noise2()
	if o.mode == ModeMatrixFree {
		o.mulFreeSym(D, vt)
		for a := 0; a < n; a++ {
			blas64.Implementation().Daxpy(vc, s2, V.Data[a*V.Stride:], 1, D.Data[a*D.Stride:], 1)
		}
	} else {
		o.run(tiles(n, rowTile), func(s *scratch, t int) {
			i0, i1 := t*rowTile, min(n, (t+1)*rowTile)
			dt := sub(D, i0, i1)
			o.rowsMul(s, dt, o.iota[i0:i1], o.iota, vt)
			for a := i0; a < i1; a++ {
				blas64.Implementation().Daxpy(vc, s2, V.Data[a*V.Stride:], 1, D.Data[a*D.Stride:], 1)
			}
		})
	}
	o.products.Add(int64(vc))
	o.rows.Add(int64(n))
}

// mulFreeSym sets D = K·V in matrix-free mode computing each kernel value
// once: block K_IJ (I ≤ J, symTile×symTile) serves both D_I += K_IJ·V_J and
// D_J += K_IJᵀ·V_I. Steps I = 0, 1, … run in order; within step I the
// blocks J ≥ I run in parallel, each writing its own P_IJ = K_IJ·V_J and
// adding K_IJᵀ·V_I into D_J (a different J per block, so no races); after
// the step D_I += Σ_J P_IJ in J order. Every element of D thus receives its
// terms in a fixed order (I' < J, then J' ≥ J) whatever the schedule.
func (o *Operator) mulFreeSym(D, vt blas64.General) {
	n, d, m := o.n, o.d, vt.Rows
	bs := symTile
	nt := tiles(n, bs)
	for a := 0; a < n; a++ {
		clear(D.Data[a*D.Stride : a*D.Stride+m])
	}
	o.pbuf = grow(o.pbuf, nt*bs*m)
	s2 := o.k.Hyper.Signal * o.k.Hyper.Signal
	var evals int64
	for I := 0; I < nt; I++ {
		i0, i1 := I*bs, min(n, (I+1)*bs)
		nr := i1 - i0
		o.run(nt-I, func(s *scratch, q int) {
			J := I + q
			j0, j1 := J*bs, min(n, (J+1)*bs)
			nc := j1 - j0
			s.t = grow(s.t, nr*nc)
			kt := s.t
			sqdist(kt, o.z[i0*d:i1*d], o.sq[i0:i1], o.ztCols(j0, j1), o.sq[j0:j1], d)
			fillK(o.k.Family, s2, kt)
			blas64.Gemm(blas.NoTrans, blas.Trans, 1,
				blas64.General{Rows: nr, Cols: nc, Stride: nc, Data: kt},
				colsOf(vt, j0, j1), 0,
				blas64.General{Rows: nr, Cols: m, Stride: m, Data: o.pbuf[q*bs*m:]})
			if J == I {
				return
			}
			// (K_IJᵀ·V_I)ᵀ = V_Iᵀ·K_IJ: m long axpys per row, no transpose
			// of the block; then D_J += its transpose.
			s.w = grow(s.w, m*nc)
			qt := s.w
			blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, colsOf(vt, i0, i1),
				blas64.General{Rows: nr, Cols: nc, Stride: nc, Data: kt},
				0, blas64.General{Rows: m, Cols: nc, Stride: nc, Data: qt})
			for b := 0; b < nc; b++ {
				row := D.Data[(j0+b)*D.Stride : (j0+b)*D.Stride+m]
				for c := range row {
					row[c] += qt[c*nc+b]
				}
			}
		})
		for q := 0; q < nt-I; q++ {
			p := o.pbuf[q*bs*m:]
			for a := 0; a < nr; a++ {
				row := D.Data[(i0+a)*D.Stride : (i0+a)*D.Stride+m]
				for c, x := range p[a*m : (a+1)*m] {
					row[c] += x
				}
			}
		}
		evals += int64(nr) * int64(n-i0)
	}
	o.evals.Add(evals)
}

// RowsMulTo sets dst = H[idx,:]·V, where V is n×m and dst is len(idx)×m.
func (o *Operator) RowsMulTo(dst *mat.Dense, idx []int, v *mat.Dense) {
	n := o.n
	vr, vc := v.Dims()
	if vr != n {
		panic(fmt.Sprintf("kernel: RowsMulTo: V has %d rows, want %d", vr, n))
	}
	checkIdx("RowsMulTo", idx, n)
	if len(idx) == 0 {
		return
	}
	checkDims("RowsMulTo", dst, len(idx), vc)
	if vc == 0 {
		return
	}
	V, D := v.RawMatrix(), dst.RawMatrix()
	vt := o.transpose(V)
	s2 := o.noise2()
	o.run(tiles(len(idx), rowTile), func(s *scratch, t int) {
		i0, i1 := t*rowTile, min(len(idx), (t+1)*rowTile)
		dt := sub(D, i0, i1)
		o.rowsMul(s, dt, idx[i0:i1], o.iota, vt)
		for a := i0; a < i1; a++ {
			blas64.Implementation().Daxpy(vc, s2, V.Data[idx[a]*V.Stride:], 1, D.Data[a*D.Stride:], 1)
		}
	})
	o.rows.Add(int64(len(idx)))
}

// ColsMulTo sets dst = H[:,idx]·D, where D is len(idx)×m and dst is n×m.
func (o *Operator) ColsMulTo(dst *mat.Dense, idx []int, d *mat.Dense) {
	n := o.n
	dr, dc := d.Dims()
	if dr != len(idx) {
		panic(fmt.Sprintf("kernel: ColsMulTo: D has %d rows, want len(idx) = %d", dr, len(idx)))
	}
	checkIdx("ColsMulTo", idx, n)
	checkDims("ColsMulTo", dst, n, dc)
	if dst == d {
		panic("kernel: ColsMulTo: dst and D are the same matrix")
	}
	if dc == 0 {
		return
	}
	Dm, out := d.RawMatrix(), dst.RawMatrix()
	if len(idx) == 0 {
		dst.Zero()
		return
	}
	if o.mode == ModeMatrixFree || contiguous(idx) {
		// Row tile I of the output is K[I, idx]·D. Matrix-free, only these
		// n×len(idx) kernel values are computed. For a contiguous idx,
		// K[I, idx] is a block of the float64 cache, multiplied in place
		// (one gemm per tile, long dot products against Dᵀ), or of the
		// float32 cache, converted in colChunk pieces of its rows.
		dt := o.transpose(Dm)
		o.run(tiles(n, rowTile), func(s *scratch, t int) {
			i0, i1 := t*rowTile, min(n, (t+1)*rowTile)
			o.rowsMul(s, sub(out, i0, i1), o.iota[i0:i1], idx, dt)
		})
	} else {
		// Scattered or repeated: K[I, idx] would be a scattered read of
		// every row of the cache, so use K[I, idx] = K[idx, I]ᵀ instead,
		// len(idx) contiguous row segments.
		o.run(tiles(n, rowTile), func(s *scratch, t int) {
			o.colsMulDense(s, out, t*rowTile, min(n, (t+1)*rowTile), idx, Dm)
		})
	}
	s2 := o.noise2()
	for j, i := range idx {
		src := Dm.Data[j*Dm.Stride : j*Dm.Stride+dc]
		row := out.Data[i*out.Stride : i*out.Stride+dc]
		for c, x := range src {
			row[c] += s2 * x
		}
	}
	o.rows.Add(int64(len(idx)))
}

// colsMulDense sets rows [i0, i1) of out to K[i0:i1, idx]·D from the dense
// cache for a scattered idx. K is symmetric, so K[i0:i1, idx] =
// K[idx, i0:i1]ᵀ: rows idx of the cache, each read along one contiguous
// segment. They are gathered (converted from float32) colChunk at a time
// and the tile is computed transposed, Dᵀ·K[idx, i0:i1] (m×(i1−i0)), as
// the gemm Aᵀ·B with A = D, whose inner loops are axpys as long as the
// tile is wide, accumulating the chunks in ascending order; then it is
// transposed into out.
func (o *Operator) colsMulDense(s *scratch, out blas64.General, i0, i1 int, idx []int, d blas64.General) {
	nc, m := i1-i0, d.Cols
	s.c = grow(s.c, m*nc)
	ct := blas64.General{Rows: m, Cols: nc, Stride: nc, Data: s.c}
	for j0 := 0; j0 < len(idx); j0 += colChunk {
		j1 := min(len(idx), j0+colChunk)
		s.w = grow(s.w, (j1-j0)*nc)
		o.gatherKRange(s.w, nc, idx[j0:j1], i0, i1)
		beta := 1.0
		if j0 == 0 {
			beta = 0
		}
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, sub(d, j0, j1),
			blas64.General{Rows: j1 - j0, Cols: nc, Stride: nc, Data: s.w},
			beta, ct)
	}
	for b := 0; b < nc; b++ {
		row := out.Data[(i0+b)*out.Stride : (i0+b)*out.Stride+m]
		for c := range row {
			row[c] = ct.Data[c*nc+b]
		}
	}
}

// BlockTo sets dst = H[idx,idx]. An empty dst is resized to len(idx).
func (o *Operator) BlockTo(dst *mat.SymDense, idx []int) {
	checkIdx("BlockTo", idx, o.n)
	if len(idx) == 0 && dst.IsEmpty() {
		return // gonum cannot represent a 0×0 SymDense; nothing to do
	}
	if dst.IsEmpty() {
		dst.ReuseAsSym(len(idx))
	}
	if m := dst.SymmetricDim(); m != len(idx) {
		panic(fmt.Sprintf("kernel: BlockTo: dst is %d×%d, want %d×%d", m, m, len(idx), len(idx)))
	}
	if len(idx) == 0 {
		return
	}
	S := dst.RawSymmetric()
	m := len(idx)
	s2 := o.noise2()
	if o.mode == ModeDense {
		// Straight from the cache into the upper triangle, row by row: a
		// copy of each row's segment when idx is contiguous, a gather
		// otherwise; no intermediate tile.
		cont := contiguous(idx)
		o.run(tiles(m, rowTile), func(_ *scratch, t int) {
			for a := t * rowTile; a < min(m, (t+1)*rowTile); a++ {
				ia := idx[a]
				row := S.Data[a*S.Stride+a : a*S.Stride+m]
				if cont {
					o.gatherKRange(row, 0, idx[a:a+1], ia, ia+m-a)
					row[0] += s2
					continue
				}
				o.gatherK(row, 0, idx[a:a+1], idx[a:])
				for b, ib := range idx[a:] {
					if ib == ia { // the diagonal, or a repeated index
						row[b] += s2
					}
				}
			}
		})
		o.rows.Add(int64(m))
		return
	}
	o.run(tiles(m, rowTile), func(s *scratch, t int) {
		i0, i1 := t*rowTile, min(m, (t+1)*rowTile)
		for j0 := i0; j0 < m; j0 += colChunk {
			j1 := min(m, j0+colChunk)
			buf, ld := o.kTile(s, idx[i0:i1], idx[j0:j1])
			for a := i0; a < i1; a++ {
				for b := max(a, j0); b < j1; b++ {
					v := buf[(a-i0)*ld+b-j0]
					if idx[a] == idx[b] { // the diagonal, or a repeated index
						v += s2
					}
					S.Data[a*S.Stride+b] = v
				}
			}
		}
	})
	o.rows.Add(int64(m))
}

// DiagTo sets dst[i] = H_ii = s² + σ² for i < n; len(dst) must be ≥ n.
func (o *Operator) DiagTo(dst []float64) {
	if len(dst) < o.n {
		panic(fmt.Sprintf("kernel: DiagTo: len(dst) = %d, want ≥ %d", len(dst), o.n))
	}
	v := o.k.Hyper.Signal*o.k.Hyper.Signal + o.noise2()
	for i := range dst[:o.n] {
		dst[i] = v
	}
}

// CrossMulTo sets dst = K(Xs, X)·V, where Xs is ns×d, V is n×m and dst is
// ns×m: the predictive mean at test inputs Xs when V = H⁻¹y. There is no
// noise term. Rows of Xs that are not finite give non-finite rows of dst;
// validate test inputs first (a wrong number of columns panics).
func (o *Operator) CrossMulTo(dst, xs, v *mat.Dense) {
	n, d := o.n, o.d
	ns, xd := xs.Dims()
	if xd != d {
		panic(fmt.Sprintf("kernel: CrossMulTo: Xs has %d columns, want %d", xd, d))
	}
	vr, vc := v.Dims()
	if vr != n {
		panic(fmt.Sprintf("kernel: CrossMulTo: V has %d rows, want %d", vr, n))
	}
	checkDims("CrossMulTo", dst, ns, vc)
	if vc == 0 || ns == 0 {
		return
	}
	zs := make([]float64, ns*d)
	qs := make([]float64, ns)
	for i := 0; i < ns; i++ {
		var q float64
		for j := 0; j < d; j++ {
			t := (xs.At(i, j) - o.mean[j]) / o.k.Hyper.Lengthscales[j]
			zs[i*d+j] = t
			q += t * t
		}
		qs[i] = q
	}
	V, D := v.RawMatrix(), dst.RawMatrix()
	vt := o.transpose(V)
	s2 := o.k.Hyper.Signal * o.k.Hyper.Signal
	o.run(tiles(ns, rowTile), func(s *scratch, t int) {
		i0, i1 := t*rowTile, min(ns, (t+1)*rowTile)
		nr := i1 - i0
		dt := sub(D, i0, i1)
		for j0 := 0; j0 < n; j0 += colChunk {
			j1 := min(n, j0+colChunk)
			nc := j1 - j0
			s.w = grow(s.w, nr*nc)
			sqdist(s.w, zs[i0*d:i1*d], qs[i0:i1], o.ztCols(j0, j1), o.sq[j0:j1], d)
			fillK(o.k.Family, s2, s.w)
			beta := 1.0
			if j0 == 0 {
				beta = 0
			}
			blas64.Gemm(blas.NoTrans, blas.Trans, 1,
				blas64.General{Rows: nr, Cols: nc, Stride: nc, Data: s.w},
				colsOf(vt, j0, j1), beta, dt)
		}
	})
	o.products.Add(int64(vc))
	o.rows.Add(int64(ns))
	o.evals.Add(int64(ns) * int64(n))
}
