package kernel

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/internal/par"
)

func gomaxprocs() int { return runtime.GOMAXPROCS(0) }

// Options configure an Operator. The zero value is ready to use: automatic
// mode, half the physical memory for the dense cache, float64, one worker
// per GOMAXPROCS, vectorised kernel evaluation where it is built in.
type Options struct {
	// Mode forces dense or matrix-free storage; ModeAuto chooses dense when
	// the n×n cache fits MemoryBudget.
	Mode Mode `json:"mode"`
	// MemoryBudget is the number of bytes the dense cache may use; 0 means
	// DefaultMemoryBudget() (half of physical memory).
	MemoryBudget int64 `json:"memory_budget,omitempty" resume:"change"`
	// Precision is Float64 (the default), Float32 (K stored and multiplied
	// in single precision) or Mixed (K stored in single precision, products
	// summed in double); see their docs. In ModeMatrixFree with Float32 the
	// kernel values are computed in float64 and rounded, and the products
	// are float32 too, but computing K dominates there, so Float32 saves
	// little time; Mixed computes there as Float64. The gradient reductions
	// and CrossMulTo stay in float64.
	Precision Precision `json:"precision,omitempty"`
	// Workers is the number of goroutines; 0 means GOMAXPROCS. Results do
	// not depend on it.
	Workers int `json:"workers,omitempty" resume:"change"`
	// ScalarKernel evaluates kernel values with the portable Go code even
	// where a vectorised evaluation is built in (VectorKernel() != ""). Both
	// give the same bits (the vectorised one ports math.Exp lane by lane),
	// so it changes only the speed; it is for comparisons and benchmarks.
	ScalarKernel bool `json:"scalar_kernel,omitempty" resume:"change"`
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

	// BuildSeconds is the wall time spent building H for a θ (NewOperator
	// and SetKernel: the scaled inputs and, in ModeDense, the cache).
	BuildSeconds float64
	// ProductSeconds is the wall time spent in products: MulTo, RowsMulTo,
	// ColsMulTo, BlockTo and CrossMulTo.
	ProductSeconds float64
	// ReduceSeconds is the wall time spent in the gradient reductions
	// Reduce and ReduceDense.
	ReduceSeconds float64
}

// Sub returns w − before: the work done between two readings.
func (w Work) Sub(before Work) Work {
	return Work{
		Products:       w.Products - before.Products,
		RowsEvaluated:  w.RowsEvaluated - before.RowsEvaluated,
		KernelEvals:    w.KernelEvals - before.KernelEvals,
		BuildSeconds:   w.BuildSeconds - before.BuildSeconds,
		ProductSeconds: w.ProductSeconds - before.ProductSeconds,
		ReduceSeconds:  w.ReduceSeconds - before.ReduceSeconds,
	}
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
// dense cache of K (ModeDense) or only the scaled inputs (ModeMatrixFree),
// in float64, float32 or mixed (Options.Precision).
// Every method is deterministic: the same inputs give the same bits whatever
// the number of workers. An Operator is not safe for concurrent use; its
// methods parallelise internally.
type Operator struct {
	k    Kernel
	mode Mode
	opt  Options
	vec  bool // kernel values by the vectorised evaluation
	x    *mat.Dense
	n, d int

	mean []float64 // column means of X: centring reduces cancellation
	z    []float64 // (X−mean)/ℓ, n×d row-major
	zt   []float64 // z transposed, d×n
	sq   []float64 // |z_a|²
	iota []int     // 0..n−1

	k64 []float64 // dense cache, n×n row-major (ModeDense, Float64)
	k32 []float32 // dense cache (ModeDense, Float32 or Mixed)

	scratch []*scratch
	partial []float64 // Reduce: one (d+1)-vector per row tile
	vt      []float64 // the right-hand sides transposed, m×n
	vt32    []float32 // vt for float32 products
	dv32    []float32 // ColsMulTo's D in float32
	lbuf    []float64 // Reduce: [A B]
	pbuf    []float64 // mulFreeSym: the products K_IJ·V_J of one step
	pbuf32  []float32 // pbuf for float32 products

	products, rows, evals        atomic.Int64
	buildNs, productNs, reduceNs atomic.Int64
}

// NewOperator validates X and k and builds H_θ for them. In ModeDense (or
// ModeAuto when it fits) this computes all n² kernel values once.
func NewOperator(x *mat.Dense, k Kernel, opt Options) (*Operator, error) {
	t0 := time.Now()
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
	if !opt.Precision.Valid() {
		return nil, fmt.Errorf("kernel: NewOperator: unknown precision %v: use Float64, Float32 or Mixed", opt.Precision)
	}
	budget := opt.MemoryBudget
	if budget == 0 {
		budget = DefaultMemoryBudget()
	}
	elem := 8.0
	if opt.Precision.Stores32() {
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
			return nil, fmt.Errorf("kernel: NewOperator: the dense cache for n=%d needs %.3g GB but the memory budget is %.3g GB: use ModeMatrixFree or ModeAuto, Precision Float32 or Mixed, or raise Options.MemoryBudget", n, need/1e9, float64(budget)/1e9)
		}
	case ModeMatrixFree:
	default:
		return nil, fmt.Errorf("kernel: NewOperator: unknown mode %v: use ModeAuto, ModeDense or ModeMatrixFree", mode)
	}

	o := &Operator{mode: mode, opt: opt, vec: vectorKernel != "" && !opt.ScalarKernel, x: mat.DenseCopyOf(x), n: n, d: d}
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
		if opt.Precision.Stores32() {
			o.k32 = make([]float32, n*n)
		} else {
			o.k64 = make([]float64, n*n)
		}
	}
	o.setKernel(k)
	o.buildNs.Add(int64(time.Since(t0)))
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
	defer o.timed(&o.buildNs)()
	o.setKernel(k)
	return nil
}

// timed returns a function that adds the time since now to *ns: the Work
// timers, as `defer o.timed(&o.productNs)()`.
func (o *Operator) timed(ns *atomic.Int64) func() {
	t0 := time.Now()
	return func() { ns.Add(int64(time.Since(t0))) }
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
	switch {
	case o.k64 != nil:
		build(o, o.k64)
	case o.k32 != nil:
		build(o, o.k32)
	}
}

// build fills the dense cache k (o.k64 or o.k32). Row tile I computes
// columns j ≥ i of its rows in float64 and mirrors them (rounded to T), so
// K is exactly symmetric and each value is computed once.
func build[T float](o *Operator, k []T) {
	n, d := o.n, o.d
	o.run(par.Tiles(n, rowTile), func(s *scratch, t int) {
		i0, i1 := par.Span(t, n, rowTile)
		nr := i1 - i0
		zr, qr := o.z[i0*d:i1*d], o.sq[i0:i1]
		for j0 := i0; j0 < n; j0 += colChunk {
			j1 := min(n, j0+colChunk)
			nc := j1 - j0
			s.t = grow(s.t, nr*nc)
			buf := s.t
			sqdist(buf, zr, qr, o.ztCols(j0, j1), o.sq[j0:j1], d, o.vec)
			o.fillK(buf)
			if o.vec {
				storeTileVec(k, n, buf, nr, nc, i0, j0)
				continue
			}
			// Upper part row by row, then the mirror column by column, so
			// both sets of writes are contiguous in K.
			for a := 0; a < nr; a++ {
				ga := i0 + a
				b0 := max(0, ga-j0)
				dst, src := k[ga*n+j0+b0:ga*n+j1], buf[a*nc+b0:(a+1)*nc]
				if d, ok := asT[float64](dst); ok {
					copy(d, src)
					continue
				}
				for b, v := range src {
					dst[b] = T(v)
				}
			}
			// The mirror K[j0+b, i0+a] = buf[a, b] for i0+a ≤ j0+b, eight
			// columns b at a time: one cache line of buf per row a, and
			// eight sequential write streams. (Column by column, the reads
			// would stride by whole rows of buf, all in one L1 set.)
			off := j0 - i0
			for b0 := 0; b0 < nc; b0 += 8 {
				b1 := min(nc, b0+8)
				for a := 0; a < min(nr, b1+off); a++ {
					src := buf[a*nc : a*nc+b1]
					for b := max(b0, a-off); b < b1; b++ {
						k[(j0+b)*n+i0+a] = T(src[b])
					}
				}
			}
		}
	})
	o.evals.Add(int64(n) * int64(n+1) / 2)
}

// fillK overwrites squared distances r2 with kernel values s²·m(r), by the
// vectorised evaluation when the operator uses it.
func (o *Operator) fillK(r2 []float64) {
	s2 := o.k.Hyper.Signal * o.k.Hyper.Signal
	if o.vec {
		fillKVec(o.k.Family, s2, r2)
		return
	}
	fillK(o.k.Family, s2, r2)
}

// fillMD sets m(r) and m'(r)/r from squared distances, by the vectorised
// evaluation when the operator uses it.
func (o *Operator) fillMD(r2, m, dm []float64) {
	if o.vec {
		fillMDVec(o.k.Family, r2, m, dm)
		return
	}
	fillMD(o.k.Family, r2, m, dm)
}

// ztCols returns columns [j0, j1) of Zᵀ.
func (o *Operator) ztCols(j0, j1 int) blas64.General {
	return blas64.General{Rows: o.d, Cols: j1 - j0, Stride: o.n, Data: o.zt[j0:]}
}

// Size returns n.
func (o *Operator) Size() int { return o.n }

// Mode returns ModeDense or ModeMatrixFree, whichever was chosen.
func (o *Operator) Mode() Mode { return o.mode }

// Precision returns the precision K is stored and multiplied in: the
// accuracy of its products (see Float32).
func (o *Operator) Precision() Precision { return o.opt.Precision }

// Storage describes how K is held, for records and logs: "dense float64",
// "dense float32", "dense mixed" (float32 values, float64 sums),
// "matrix-free" (float64, and Mixed) or "matrix-free float32".
func (o *Operator) Storage() string {
	switch {
	case o.mode == ModeMatrixFree && o.opt.Precision == Float32:
		return "matrix-free float32"
	case o.mode == ModeMatrixFree:
		return "matrix-free"
	case o.opt.Precision == Mixed:
		return "dense mixed"
	case o.k32 != nil:
		return "dense float32"
	}
	return "dense float64"
}

// GPUStoragePrefix begins the Storage description of every GPU operator
// (package cuda: "gpu dense float64", ...); readers of step records tell the
// backend that ran a step by it.
const GPUStoragePrefix = "gpu "

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
	return Work{
		Products: o.products.Load(), RowsEvaluated: o.rows.Load(), KernelEvals: o.evals.Load(),
		BuildSeconds:   time.Duration(o.buildNs.Load()).Seconds(),
		ProductSeconds: time.Duration(o.productNs.Load()).Seconds(),
		ReduceSeconds:  time.Duration(o.reduceNs.Load()).Seconds(),
	}
}

// noise2 returns σ².
func (o *Operator) noise2() float64 { return o.k.Hyper.Noise * o.k.Hyper.Noise }

// cacheOf returns the dense cache as []T: nil in matrix-free mode, and for
// T = float64 with Mixed (its cache is float32; gatherK converts).
func cacheOf[T float](o *Operator) []T {
	if k, ok := asT[T](o.k64); ok {
		return k
	}
	k, _ := asT[T](o.k32)
	return k
}

// kTile returns K[rows, cols] in T, the operator's precision, as a
// row-major block with leading dimension ld: a view of the cache when rows
// and cols are contiguous, otherwise gathered from it (or computed, in
// matrix-free mode) into the worker's buffer.
func kTile[T float](o *Operator, s *scratch, rows, cols []int) (buf []T, ld int) {
	n := o.n
	nr, nc := len(rows), len(cols)
	cache := cacheOf[T](o)
	if cache != nil && contiguous(rows) && contiguous(cols) {
		return cache[rows[0]*n+cols[0]:], n
	}
	if o.mode == ModeDense { // converted exactly where T is not the cache's type (Mixed)
		buf = growAs[T](&s.w, &s.w32, nr*nc)
		gatherK(o, buf, nc, rows, cols)
		return buf, nc
	}
	k := o.kTileFree(s, rows, cols)
	if buf, ok := asT[T](k); ok {
		return buf, nc
	}
	buf = growAs[T](&s.w, &s.w32, nr*nc)
	for i, v := range k {
		buf[i] = T(v)
	}
	return buf, nc
}

// kTileFree computes K[rows, cols] (matrix-free) in float64 into s.t,
// counting the kernel evaluations (mulFreeSym's blocks I ≤ J included).
func (o *Operator) kTileFree(s *scratch, rows, cols []int) []float64 {
	n, d := o.n, o.d
	nr, nc := len(rows), len(cols)
	s.t = grow(s.t, nr*nc)
	buf := s.t
	zr := gatherRows(&s.zr, o.z, d, rows)
	zct := gatherCols(&s.zc, o.zt, n, o.z, d, cols)
	qr := gatherRows(&s.qr, o.sq, 1, rows)
	qc := gatherRows(&s.qc, o.sq, 1, cols)
	sqdist(buf, zr, qr, zct, qc, d, o.vec)
	o.fillK(buf)
	o.evals.Add(int64(nr) * int64(nc))
	return buf
}

// gather sets buf (len(rows)×len(cols), leading dimension ld) to
// k[rows, cols] from the n×n cache k, converted to D. Row segments of
// contiguous cols are straight copies.
func gather[S, D float](k []S, n int, buf []D, ld int, rows, cols []int) {
	nc := len(cols)
	if nc == 0 {
		return
	}
	if cols[nc-1] == cols[0]+nc-1 && contiguous(cols) {
		gatherRange(k, n, buf, ld, rows, cols[0], cols[0]+nc)
		return
	}
	for a, r := range rows {
		dst := buf[a*ld : a*ld+nc]
		src := k[r*n : (r+1)*n]
		for b, c := range cols {
			dst[b] = D(src[c])
		}
	}
}

// gatherRange is gather for the columns [c0, c1).
func gatherRange[S, D float](k []S, n int, buf []D, ld int, rows []int, c0, c1 int) {
	nc := c1 - c0
	for a, r := range rows {
		dst := buf[a*ld : a*ld+nc]
		if d, ok := asT[S](dst); ok {
			copy(d, k[r*n+c0:r*n+c1])
			continue
		}
		for b, x := range k[r*n+c0 : r*n+c1] {
			dst[b] = D(x)
		}
	}
}

// gatherK sets buf (len(rows)×len(cols), leading dimension ld) to
// K[rows, cols] in T, read from the dense cache whichever its type (a
// float32 value converts to float64 exactly).
func gatherK[T float](o *Operator, buf []T, ld int, rows, cols []int) {
	if o.k64 != nil {
		gather(o.k64, o.n, buf, ld, rows, cols)
	} else {
		gather(o.k32, o.n, buf, ld, rows, cols)
	}
}

// gatherKRange is gatherK for the columns [c0, c1).
func gatherKRange[T float](o *Operator, buf []T, ld int, rows []int, c0, c1 int) {
	if o.k64 != nil {
		gatherRange(o.k64, o.n, buf, ld, rows, c0, c1)
	} else {
		gatherRange(o.k32, o.n, buf, ld, rows, c0, c1)
	}
}

// rowsMul sets dst = K[rows, cols]·vtᵀ in T, where vt holds the right-hand
// sides transposed (m×len(cols)); cols are walked in chunks in ascending
// order. The chunking depends only on the index lists, never on the
// schedule.
func rowsMul[T float](o *Operator, s *scratch, dst general[T], rows, cols []int, vt general[T]) {
	// A contiguous block of the cache is multiplied in place, as one gemm
	// over whole rows. Anything else (scattered or repeated rows,
	// matrix-free) goes by column chunks of colChunk: K[rows, chunk] is
	// gathered (or computed) into a rowTile×colChunk buffer, whose product
	// with the chunk of Vᵀ then runs from cache.
	ch := colChunk
	if cacheOf[T](o) != nil && contiguous(rows) && contiguous(cols) {
		ch = max(1, len(cols))
	}
	for j0 := 0; j0 < len(cols); j0 += ch {
		j1 := min(len(cols), j0+ch)
		buf, ld := kTile[T](o, s, rows, cols[j0:j1])
		var beta T = 1
		if j0 == 0 {
			beta = 0
		}
		gemm(blas.NoTrans, blas.Trans, 1, general[T]{Rows: len(rows), Cols: j1 - j0, Stride: ld, Data: buf},
			colsOf(vt, j0, j1), beta, dst)
	}
}

// mulRows sets dst = K[rows, cols]·vtᵀ, computed in T: straight into dst
// for float64; for float32 into the worker's float32 tile, then converted
// once. With Mixed and contiguous cols, the vectorised kernel multiplies
// the cache's float32 rows in float64.
func mulRows[T float](o *Operator, s *scratch, dst blas64.General, rows, cols []int, vt general[T]) {
	if vt64, ok := any(vt).(general[float64]); ok && o.opt.Precision == Mixed && o.k32 != nil && mixedKernel != "" && contiguous(cols) {
		mixedRows(o, dst, rows, cols, vt64)
		return
	}
	if d, ok := asGeneral[T](dst); ok {
		rowsMul(o, s, d, rows, cols, vt)
		return
	}
	r, m := dst.Rows, dst.Cols
	out := growAs[T](nil, &s.o32, r*m) // T is float32 here
	rowsMul(o, s, general[T]{Rows: r, Cols: m, Stride: max(m, 1), Data: out}, rows, cols, vt)
	storeInto(dst, out, m, false)
}

// mixedRows is mulRows for Mixed by the vectorised kernel: rows of the
// float32 cache, columns [cols[0], cols[0]+len(cols)), times vtᵀ summed in
// float64. Contiguous rows go in one call (two rows share each load of
// Vᵀ), others one by one; each output's sum order is the same either way.
func mixedRows(o *Operator, dst blas64.General, rows, cols []int, vt general[float64]) {
	n, nc, m := o.n, len(cols), vt.Rows
	if len(rows) == 0 || nc == 0 {
		return
	}
	if contiguous(rows) {
		mixedRowsVec(o.k32[rows[0]*n+cols[0]:], n, len(rows), nc, vt.Data, vt.Stride, m, dst.Data, dst.Stride)
		return
	}
	for a, r := range rows {
		mixedRowsVec(o.k32[r*n+cols[0]:], n, 1, nc, vt.Data, vt.Stride, m, dst.Data[a*dst.Stride:], dst.Stride)
	}
}

// check validates the arguments of o's GramOperator methods.
func (o *Operator) check() ArgCheck { return ArgCheck{Pkg: "kernel", N: o.n, D: o.d} }

func sub(g blas64.General, r0, r1 int) blas64.General {
	if r0 == r1 {
		return blas64.General{Rows: 0, Cols: g.Cols, Stride: g.Stride}
	}
	return blas64.General{Rows: r1 - r0, Cols: g.Cols, Stride: g.Stride, Data: g.Data[r0*g.Stride:]}
}

// MulTo sets dst = H·V = K·V + σ²V, where V and dst are n×m. dst must be
// n×m or empty (then it is resized) and must not share memory with V.
// With Float32, K·V is computed in float32 from V rounded once, and σ²V is
// added in float64. With Mixed (dense), K's float32 values are multiplied
// with V in float64.
func (o *Operator) MulTo(dst, v *mat.Dense) {
	n := o.n
	vc := o.check().MulTo(dst, v)
	if vc == 0 {
		return
	}
	defer o.timed(&o.productNs)()
	V, D := v.RawMatrix(), dst.RawMatrix()
	if o.opt.Precision == Float32 {
		mulTo(o, D, V, convertInto(&o.vt32, V, true), &o.pbuf32)
	} else {
		mulTo(o, D, V, convertInto(&o.vt, V, true), &o.pbuf)
	}
	o.products.Add(int64(vc))
	o.rows.Add(int64(n))
}

// mulTo is MulTo in T, with vt = Vᵀ in T and pbuf mulFreeSym's buffer.
func mulTo[T float](o *Operator, D, V blas64.General, vt general[T], pbuf *[]T) {
	n, vc := o.n, V.Cols
	s2 := o.noise2()
	if o.mode == ModeMatrixFree {
		mulFreeSym(o, D, vt, pbuf)
		for a := 0; a < n; a++ {
			blas64.Implementation().Daxpy(vc, s2, V.Data[a*V.Stride:], 1, D.Data[a*D.Stride:], 1)
		}
		return
	}
	o.run(par.Tiles(n, rowTile), func(s *scratch, t int) {
		i0, i1 := par.Span(t, n, rowTile)
		mulRows(o, s, sub(D, i0, i1), o.iota[i0:i1], o.iota, vt)
		for a := i0; a < i1; a++ {
			blas64.Implementation().Daxpy(vc, s2, V.Data[a*V.Stride:], 1, D.Data[a*D.Stride:], 1)
		}
	})
}

// mulFreeSym sets D = K·V in matrix-free mode computing each kernel value
// once: block K_IJ (I ≤ J, symTile×symTile) serves both D_I += K_IJ·V_J and
// D_J += K_IJᵀ·V_I. Steps I = 0, 1, … run in order; within step I the
// blocks J ≥ I run in parallel, each writing its own P_IJ = K_IJ·V_J and
// adding K_IJᵀ·V_I into D_J (a different J per block, so no races); after
// the step D_I += Σ_J P_IJ in J order. Every element of D thus receives its
// terms in a fixed order (I' < J, then J' ≥ J) whatever the schedule. The
// blocks' products are in T; their sums in D are float64.
func mulFreeSym[T float](o *Operator, D blas64.General, vt general[T], pbuf *[]T) {
	n, m := o.n, vt.Rows
	bs := symTile
	nt := par.Tiles(n, bs)
	for a := 0; a < n; a++ {
		clear(D.Data[a*D.Stride : a*D.Stride+m])
	}
	*pbuf = grow(*pbuf, nt*bs*m)
	p := *pbuf
	for I := 0; I < nt; I++ {
		i0, i1 := par.Span(I, n, bs)
		nr := i1 - i0
		o.run(nt-I, func(s *scratch, q int) {
			J := I + q
			j0, j1 := par.Span(J, n, bs)
			nc := j1 - j0
			kt, _ := kTile[T](o, s, o.iota[i0:i1], o.iota[j0:j1])
			kb := general[T]{Rows: nr, Cols: nc, Stride: nc, Data: kt}
			gemm(blas.NoTrans, blas.Trans, 1, kb, colsOf(vt, j0, j1), 0,
				general[T]{Rows: nr, Cols: m, Stride: m, Data: p[q*bs*m:]})
			if J == I {
				return
			}
			// (K_IJᵀ·V_I)ᵀ = V_Iᵀ·K_IJ: m long axpys per row, no transpose
			// of the block; then D_J += its transpose.
			qt := growAs[T](&s.c, &s.c32, m*nc)
			gemm(blas.NoTrans, blas.NoTrans, 1, colsOf(vt, i0, i1), kb, 0,
				general[T]{Rows: m, Cols: nc, Stride: nc, Data: qt})
			for b := 0; b < nc; b++ {
				row := D.Data[(j0+b)*D.Stride : (j0+b)*D.Stride+m]
				for c := range row {
					row[c] += float64(qt[c*nc+b])
				}
			}
		})
		for q := 0; q < nt-I; q++ {
			storeInto(sub(D, i0, i1), p[q*bs*m:], m, true)
		}
	}
}

// RowsMulTo sets dst = H[idx,:]·V, where V is n×m and dst is len(idx)×m.
func (o *Operator) RowsMulTo(dst *mat.Dense, idx []int, v *mat.Dense) {
	vc := o.check().RowsMulTo(dst, idx, v)
	if vc == 0 {
		return
	}
	defer o.timed(&o.productNs)()
	V, D := v.RawMatrix(), dst.RawMatrix()
	if o.opt.Precision == Float32 {
		rowsMulTo(o, D, idx, V, convertInto(&o.vt32, V, true))
	} else {
		rowsMulTo(o, D, idx, V, convertInto(&o.vt, V, true))
	}
	o.rows.Add(int64(len(idx)))
}

// rowsMulTo is RowsMulTo in T, with vt = Vᵀ in T.
func rowsMulTo[T float](o *Operator, D blas64.General, idx []int, V blas64.General, vt general[T]) {
	vc := V.Cols
	s2 := o.noise2()
	o.run(par.Tiles(len(idx), rowTile), func(s *scratch, t int) {
		i0, i1 := par.Span(t, len(idx), rowTile)
		mulRows(o, s, sub(D, i0, i1), idx[i0:i1], o.iota, vt)
		for a := i0; a < i1; a++ {
			blas64.Implementation().Daxpy(vc, s2, V.Data[idx[a]*V.Stride:], 1, D.Data[a*D.Stride:], 1)
		}
	})
}

// ColsMulTo sets dst = H[:,idx]·D, where D is len(idx)×m and dst is n×m.
func (o *Operator) ColsMulTo(dst *mat.Dense, idx []int, d *mat.Dense) {
	dc := o.check().ColsMulTo(dst, idx, d)
	if dc == 0 {
		return
	}
	Dm, out := d.RawMatrix(), dst.RawMatrix()
	if len(idx) == 0 {
		dst.Zero()
		return
	}
	defer o.timed(&o.productNs)()
	if o.opt.Precision == Float32 {
		colsMulTo(o, out, idx, Dm, &o.vt32, &o.dv32)
	} else {
		colsMulTo(o, out, idx, Dm, &o.vt, nil)
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

// colsMulTo sets out = K[:,idx]·D in T; vt and dbuf are the operator's
// buffers for Dᵀ and (float32 only) D in T.
func colsMulTo[T float](o *Operator, out blas64.General, idx []int, Dm blas64.General, vt, dbuf *[]T) {
	n := o.n
	if o.mode == ModeMatrixFree || contiguous(idx) {
		// Row tile I of the output is K[I, idx]·D. Matrix-free, only these
		// n×len(idx) kernel values are computed. For a contiguous idx,
		// K[I, idx] is a block of the cache, multiplied in place (one gemm
		// per tile, long dot products against Dᵀ).
		dt := convertInto(vt, Dm, true)
		o.run(par.Tiles(n, rowTile), func(s *scratch, t int) {
			i0, i1 := par.Span(t, n, rowTile)
			mulRows(o, s, sub(out, i0, i1), o.iota[i0:i1], idx, dt)
		})
		return
	}
	// Scattered or repeated: K[I, idx] would be a scattered read of every
	// row of the cache, so use K[I, idx] = K[idx, I]ᵀ instead, len(idx)
	// contiguous row segments.
	d, ok := asGeneral[T](Dm)
	if !ok {
		d = convertInto(dbuf, Dm, false)
	}
	o.run(par.Tiles(n, rowTile), func(s *scratch, t int) {
		i0, i1 := par.Span(t, n, rowTile)
		colsMulDense(o, s, out, i0, i1, idx, d)
	})
}

// colsMulDense sets rows [i0, i1) of out to K[i0:i1, idx]·D from the dense
// cache for a scattered idx. K is symmetric, so K[i0:i1, idx] =
// K[idx, i0:i1]ᵀ: rows idx of the cache, each read along one contiguous
// segment. They are gathered colChunk at a time and the tile is computed
// transposed, Dᵀ·K[idx, i0:i1] (m×(i1−i0)), as the gemm Aᵀ·B with A = D,
// whose inner loops are axpys as long as the tile is wide, accumulating the
// chunks in ascending order; then it is transposed into out.
func colsMulDense[T float](o *Operator, s *scratch, out blas64.General, i0, i1 int, idx []int, d general[T]) {
	nc, m := i1-i0, d.Cols
	ct := growAs[T](&s.c, &s.c32, m*nc)
	for j0 := 0; j0 < len(idx); j0 += colChunk {
		j1 := min(len(idx), j0+colChunk)
		w := growAs[T](&s.w, &s.w32, (j1-j0)*nc)
		gatherKRange(o, w, nc, idx[j0:j1], i0, i1)
		var beta T = 1
		if j0 == 0 {
			beta = 0
		}
		gemm(blas.Trans, blas.NoTrans, 1, rowsOf(d, j0, j1),
			general[T]{Rows: j1 - j0, Cols: nc, Stride: nc, Data: w},
			beta, general[T]{Rows: m, Cols: nc, Stride: nc, Data: ct})
	}
	for b := 0; b < nc; b++ {
		row := out.Data[(i0+b)*out.Stride : (i0+b)*out.Stride+m]
		for c := range row {
			row[c] = float64(ct[c*nc+b])
		}
	}
}

// BlockTo sets dst = H[idx,idx]. An empty dst is resized to len(idx).
// With Float32 its entries are K's float32 values (converted exactly).
func (o *Operator) BlockTo(dst *mat.SymDense, idx []int) {
	m := o.check().BlockTo(dst, idx)
	if m == 0 {
		return
	}
	defer o.timed(&o.productNs)()
	S := dst.RawSymmetric()
	s2 := o.noise2()
	if o.mode == ModeDense {
		// Straight from the cache into the upper triangle, row by row: a
		// copy of each row's segment when idx is contiguous, a gather
		// otherwise; no intermediate tile.
		cont := contiguous(idx)
		o.run(par.Tiles(m, rowTile), func(_ *scratch, t int) {
			for a := t * rowTile; a < min(m, (t+1)*rowTile); a++ {
				ia := idx[a]
				row := S.Data[a*S.Stride+a : a*S.Stride+m]
				if cont {
					gatherKRange(o, row, 0, idx[a:a+1], ia, ia+m-a)
					row[0] += s2
					continue
				}
				gatherK(o, row, 0, idx[a:a+1], idx[a:])
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
	f32 := o.opt.Precision == Float32
	o.run(par.Tiles(m, rowTile), func(s *scratch, t int) {
		i0, i1 := par.Span(t, m, rowTile)
		for j0 := i0; j0 < m; j0 += colChunk {
			j1 := min(m, j0+colChunk)
			buf := o.kTileFree(s, idx[i0:i1], idx[j0:j1])
			ld := j1 - j0
			for a := i0; a < i1; a++ {
				for b := max(a, j0); b < j1; b++ {
					v := buf[(a-i0)*ld+b-j0]
					if f32 {
						v = float64(float32(v)) // the K a float32 product sees
					}
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
	o.check().DiagTo(dst)
	o.k.Hyper.GramDiagTo(dst[:o.n])
}

// ColumnTo sets dst[:n] to column j of H, K[:,j] + σ²e_j, without a
// product: row j of the dense cache (K is symmetric; float32 values convert
// exactly), or n kernel values computed in matrix-free mode, on the calling
// goroutine. Its values are those of ColsMulTo with a single column and a
// coefficient 1. It is what CG's pivoted-Cholesky preconditioner reads, a
// column at each of its k steps (solvers.ColumnOperator).
func (o *Operator) ColumnTo(dst []float64, j int) {
	o.check().ColumnTo(dst, j)
	n := o.n
	defer o.timed(&o.productNs)()
	row := o.iota[j : j+1]
	if o.mode == ModeDense {
		gatherKRange(o, dst, n, row, 0, n)
	} else {
		if len(o.scratch) == 0 {
			o.scratch = append(o.scratch, new(scratch))
		}
		for c0 := 0; c0 < n; c0 += colChunk {
			c1 := min(n, c0+colChunk)
			copy(dst[c0:c1], o.kTileFree(o.scratch[0], row, o.iota[c0:c1]))
		}
		if o.opt.Precision == Float32 { // K rounded, as its float32 products have it
			for i, v := range dst[:n] {
				dst[i] = float64(float32(v))
			}
		}
	}
	dst[j] += o.noise2()
	o.rows.Add(1)
}

// CrossMulTo sets dst = K(Xs, X)·V, where Xs is ns×d, V is n×m and dst is
// ns×m: the predictive mean at test inputs Xs when V = H⁻¹y. There is no
// noise term, and it is computed in float64 whatever the operator's
// precision. Rows of Xs that are not finite give non-finite rows of dst;
// validate test inputs first (a wrong number of columns panics).
func (o *Operator) CrossMulTo(dst, xs, v *mat.Dense) {
	n, d := o.n, o.d
	ns, vc := o.check().CrossMulTo(dst, xs, v)
	if vc == 0 || ns == 0 {
		return
	}
	defer o.timed(&o.productNs)()
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
	vt := convertInto(&o.vt, V, true)
	o.run(par.Tiles(ns, rowTile), func(s *scratch, t int) {
		i0, i1 := par.Span(t, ns, rowTile)
		nr := i1 - i0
		dt := sub(D, i0, i1)
		for j0 := 0; j0 < n; j0 += colChunk {
			j1 := min(n, j0+colChunk)
			nc := j1 - j0
			s.w = grow(s.w, nr*nc)
			sqdist(s.w, zs[i0*d:i1*d], qs[i0:i1], o.ztCols(j0, j1), o.sq[j0:j1], d, o.vec)
			o.fillK(s.w)
			beta := 1.0
			if j0 == 0 {
				beta = 0
			}
			blas64.Gemm(blas.NoTrans, blas.Trans, 1,
				blas64.General{Rows: nr, Cols: nc, Stride: nc, Data: s.w},
				blas64.General{Rows: vt.Rows, Cols: nc, Stride: vt.Stride, Data: vt.Data[j0:]}, beta, dt)
		}
	})
	o.products.Add(int64(vc))
	o.rows.Add(int64(ns))
	o.evals.Add(int64(ns) * int64(n))
}
