//go:build cuda || cudaemu

package cuda

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// The GPU operator implements the same interfaces as the CPU one, and keeps
// the solvers' vectors on the device (solvers.SpaceOperator).
var (
	_ kernel.GramOperator    = (*Operator)(nil)
	_ kernel.Rekerneler      = (*Operator)(nil)
	_ solvers.Operator       = (*Operator)(nil)
	_ solvers.NoiseVariancer = (*Operator)(nil)
	_ solvers.SpaceOperator  = (*Operator)(nil)
	_ solvers.CGStepper      = (*Space)(nil)
)

// Launch geometry of the other kernels; kernels/gpnb.cu relies on these.
const (
	threads     = 128 // scale
	tile2D      = 16  // block kernel: 16×16 threads, one entry each
	tileRows    = 64  // TT: build and reduce tiles of 64×64 pairs, 16×16 threads of 4×4
	tileDims    = 32  // TKC: dimensions of z staged at a time (build, reduce)
	reduceStrip = 8   // RSTRIP: reduce's tiles per block
	reduceCols  = 8   // RCC: columns of [A B] reduce stages at a time
	sumThreads  = 256 // reduce_sum: threads per block (a power of two for its tree)
	kAlign      = 32  // K's leading dimension is a multiple of this
)

// Operator is the kernel operator H_θ = K_θ(X,X) + σ²I on a GPU. It keeps X,
// the scaled inputs Z = (X − x̄)/ℓ and, in ModeDense, K on the device. A
// solver started on it works in a Space in device memory (NewSpace); the
// methods of solvers.Operator (MulTo, ...) copy their right-hand sides to
// the device and the results back per call. It is not safe for concurrent
// use. Close frees its device memory.
type Operator struct {
	drv  driver
	k    kernel.Kernel
	opt  Options
	mode kernel.Mode
	x    *mat.Dense
	n, d int
	ldk  int // K's leading dimension
	mean []float64
	elem int64 // bytes per value of Z and K: 8 (Float64) or 4 (Float32)

	dX, dMean, dEll, dZ, dK dbuf
	dV, dOut, dRows         dbuf
	dXs, dZs, dA, dB        dbuf
	dRed, dBlock, dPart     dbuf
	hIn                     hbuf // pinned staging of Reduce's A and B and its results

	args   args // kernel arguments, reused
	hidx   []int64
	part   []float64
	spaces map[*Space]bool     // open spaces, closed with the operator
	spare  *spaceBuffers       // a closed space's buffers, for the next
	pool   map[int64][]uintptr // closed spaces' blocks and index lists, by size in bytes

	err                   error
	products, rows, evals int64
	buildSec, reduceSec   float64 // device time by CUDA events
	closed                bool
}

// New is NewOperator returning the kernel.GramOperator interface, so the
// same call compiles with and without the cuda tag.
func New(x *mat.Dense, k kernel.Kernel, opt Options) (kernel.GramOperator, error) {
	o, err := NewOperator(x, k, opt)
	if err != nil {
		return nil, err
	}
	return o, nil
}

// NewOperator validates X, k and opt, uploads X to the GPU opt.Device and
// builds H_θ there. In ModeDense (or ModeAuto when the n² values fit the
// budget) it computes all n² kernel values once.
func NewOperator(x *mat.Dense, k kernel.Kernel, opt Options) (*Operator, error) {
	if err := checkInputs(x, k, opt); err != nil {
		return nil, err
	}
	drv, err := getDriver(opt.Device)
	if err != nil {
		return nil, err
	}
	return newOperatorOn(drv, x, k, opt)
}

// checkInputs validates NewOperator's arguments before any device is used.
func checkInputs(x *mat.Dense, k kernel.Kernel, opt Options) error {
	if x == nil || x.IsEmpty() {
		return fmt.Errorf("cuda: NewOperator: X is empty: give at least one row of inputs")
	}
	n, d := x.Dims()
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			if v := x.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("cuda: NewOperator: X[%d,%d] is %v: inputs must be finite (drop or impute missing values)", i, j, v)
			}
		}
	}
	if d > maxDims {
		return fmt.Errorf("cuda: NewOperator: X has %d columns; the GPU kernels take at most %d: reduce the dimension or use the CPU operator", d, maxDims)
	}
	if err := checkKernel(k, d); err != nil {
		return err
	}
	if opt.Precision == kernel.Mixed {
		return fmt.Errorf("cuda: NewOperator: precision mixed is the CPU operator's: on the GPU, float32 already stores K in float32 and sums in float64, so use --precision float32 (Float32)")
	}
	if opt.Precision != Float64 && opt.Precision != Float32 {
		return fmt.Errorf("cuda: NewOperator: unknown precision %v: use Float64 or Float32", opt.Precision)
	}
	if opt.MemoryBudget < 0 {
		return fmt.Errorf("cuda: NewOperator: MemoryBudget is %d: use 0 for half the free device memory or a positive number of bytes", opt.MemoryBudget)
	}
	return nil
}

// newOperatorOn is NewOperator on a given driver.
func newOperatorOn(drv driver, x *mat.Dense, k kernel.Kernel, opt Options) (*Operator, error) {
	n, d := x.Dims()
	elem := int64(8)
	if opt.Precision == Float32 {
		elem = 4
	}
	free, _, err := drv.memInfo()
	if err != nil {
		return nil, fmt.Errorf("cuda: NewOperator: querying device memory: %w", err)
	}
	budget := opt.MemoryBudget
	if budget == 0 {
		budget = free / 2
	}
	ldk := roundUp(n, kAlign)
	need := float64(n) * float64(ldk) * float64(elem)
	mode := opt.Mode
	switch mode {
	case kernel.ModeAuto:
		mode = kernel.ModeMatrixFree
		if need <= float64(budget) {
			mode = kernel.ModeDense
		}
	case kernel.ModeDense:
		if need > float64(budget) {
			return nil, fmt.Errorf("cuda: NewOperator: the dense cache for n=%d needs %.3g GB but the device budget is %.3g GB: use --operator matrixfree (ModeMatrixFree) or auto, --precision float32 (Float32), or raise the memory budget", n, need/1e9, float64(budget)/1e9)
		}
	case kernel.ModeMatrixFree:
	default:
		return nil, fmt.Errorf("cuda: NewOperator: unknown mode %v: use ModeAuto, ModeDense or ModeMatrixFree", mode)
	}

	o := &Operator{drv: drv, opt: opt, mode: mode, x: mat.DenseCopyOf(x), n: n, d: d, ldk: ldk, elem: elem,
		args: make(args, 0, 32), spaces: map[*Space]bool{}, pool: map[int64][]uintptr{}}
	o.mean = make([]float64, d)
	for j := 0; j < d; j++ {
		var s float64
		for i := 0; i < n; i++ {
			s += x.At(i, j)
		}
		o.mean[j] = s / float64(n)
	}
	if err := o.init(); err != nil {
		o.Close()
		return nil, err
	}
	if err := o.setKernel(k); err != nil {
		o.Close()
		return nil, fmt.Errorf("cuda: NewOperator: building H on the device: %w", err)
	}
	return o, nil
}

func checkKernel(k kernel.Kernel, d int) error {
	if !k.Family.Valid() {
		return fmt.Errorf("cuda: unknown family %v: use Matern12, Matern32, Matern52 or RBF", k.Family)
	}
	if err := k.Hyper.Validate(d); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	return nil
}

// prec returns the index of the operator's precision in the kernel tables.
func (o *Operator) prec() int {
	if o.elem == 4 {
		return 1
	}
	return 0
}

// init allocates the per-operator device buffers and uploads X and x̄.
func (o *Operator) init() error {
	n, d := int64(o.n), int64(o.d)
	for _, b := range []struct {
		buf   *dbuf
		bytes int64
		what  string
	}{{&o.dX, n * d * 8, "X"}, {&o.dMean, d * 8, "x̄"}, {&o.dEll, d * 8, "ℓ"}, {&o.dZ, n * d * o.elem, "Z"}} {
		if err := b.buf.ensure(o.drv, b.bytes, b.what); err != nil {
			return err
		}
	}
	if o.mode == kernel.ModeDense {
		if err := o.dK.ensure(o.drv, n*int64(o.ldk)*o.elem, fmt.Sprintf("the n×n kernel matrix (n = %d, %s)", o.n, o.opt.Precision)); err != nil {
			return err
		}
	}
	raw := o.x.RawMatrix() // a fresh copy: stride = d
	if err := o.drv.htod(o.dX.p, unsafe.Pointer(&raw.Data[0]), n*d*8); err != nil {
		return err
	}
	return o.drv.htod(o.dMean.p, unsafe.Pointer(&o.mean[0]), d*8)
}

// SetKernel rebuilds H for new hyperparameters (same X, same mode),
// reusing the device memory, and returns once it is built (so that the
// caller's clock measures the build; Work's BuildSeconds adds its device
// time). On a validation error the operator is unchanged. Open spaces see
// the new H in their next operation.
func (o *Operator) SetKernel(k kernel.Kernel) error {
	if err := checkKernel(k, o.d); err != nil {
		return err
	}
	if o.closed {
		return errors.New("cuda: SetKernel on a closed operator: make a new one with NewOperator")
	}
	if err := o.setKernel(k); err != nil {
		o.err = err
		return err
	}
	return nil
}

// setKernel scales X and, in ModeDense, builds K for k, and waits for it.
func (o *Operator) setKernel(k kernel.Kernel) error {
	k.Hyper = k.Hyper.Clone()
	sec, err := o.timed(func() error {
		if err := o.drv.htod(o.dEll.p, unsafe.Pointer(&k.Hyper.Lengthscales[0]), int64(o.d)*8); err != nil {
			return err
		}
		o.k = k
		if err := o.scale(o.dZ.p, o.dX.p, o.n); err != nil {
			return err
		}
		if o.mode != kernel.ModeDense {
			return nil
		}
		s2 := k.Hyper.Signal * k.Hyper.Signal
		a := o.args[:0].p(o.dZ.p).i(o.n).i(o.d).i(int(k.Family)).f(s2).p(o.dK.p).i(o.ldk)
		nt := blocks(o.n, tileRows)
		smem := max(2*tileDims*tileRows, tileRows*(tileRows+1)) * int(o.elem)
		o.evals += int64(o.n) * int64(o.n)
		return o.drv.launch(kBuild[o.prec()], nt, nt, 16, 16, smem, a)
	})
	o.buildSec += sec
	return err
}

// timed runs f, which queues work on the stream, waits for it, and returns
// the seconds it took on the device (CUDA events around the work; the
// emulation's events are host clocks).
func (o *Operator) timed(f func() error) (float64, error) {
	start, err := o.drv.record()
	if err != nil {
		return 0, err
	}
	defer o.drv.freeEvent(start)
	if err := f(); err != nil {
		_ = o.drv.sync() // nothing left queued that could use what the caller frees
		return 0, err
	}
	end, err := o.drv.record()
	if err != nil {
		return 0, err
	}
	defer o.drv.freeEvent(end)
	if err := o.drv.sync(); err != nil {
		return 0, err
	}
	ms, err := o.drv.elapsed(start, end)
	return ms / 1e3, err
}

// scale sets Z = (X − x̄)/ℓ on the device for the rows of X (float64).
func (o *Operator) scale(z, x uintptr, rows int) error {
	a := o.args[:0].p(x).i(rows).i(o.d).p(o.dMean.p).p(o.dEll.p).p(z)
	return o.drv.launch(kScale[o.prec()], blocks(rows, threads), 1, threads, 1, 0, a)
}

// Close frees the operator's device memory and closes its open spaces.
// Using it afterwards fills every destination with NaN and sets Err.
func (o *Operator) Close() error {
	if o.closed {
		return nil
	}
	var first error
	for s := range o.spaces {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	o.closed = true
	if err := o.drv.sync(); err != nil && first == nil {
		first = err
	}
	for _, b := range []*dbuf{&o.dX, &o.dMean, &o.dEll, &o.dZ, &o.dK, &o.dV, &o.dOut, &o.dRows, &o.dXs, &o.dZs, &o.dA, &o.dB, &o.dRed, &o.dBlock, &o.dPart} {
		if err := b.release(o.drv); err != nil && first == nil {
			first = err
		}
	}
	if err := o.hIn.release(o.drv); err != nil && first == nil {
		first = err
	}
	if o.spare != nil {
		if err := o.spare.release(o.drv); err != nil && first == nil {
			first = err
		}
		o.spare = nil
	}
	if err := o.drainPool(); err != nil && first == nil {
		first = err
	}
	return first
}

// fromPool returns a device buffer of bytes from the pool of closed
// spaces' blocks, or 0.
func (o *Operator) fromPool(bytes int64) uintptr {
	l := o.pool[bytes]
	if len(l) == 0 {
		return 0
	}
	p := l[len(l)-1]
	o.pool[bytes] = l[:len(l)-1]
	return p
}

// drainPool frees the pooled buffers (none is used by queued work: they
// come from spaces closed after a synchronisation).
func (o *Operator) drainPool() error {
	var first error
	for bytes, l := range o.pool {
		for _, p := range l {
			if err := o.drv.free(p); err != nil && first == nil {
				first = err
			}
		}
		delete(o.pool, bytes)
	}
	return first
}

// Err returns the first device error met by a method without an error
// result (MulTo, Reduce, ...), or nil. After such an error the methods fill
// their destinations with NaN.
func (o *Operator) Err() error { return o.err }

// Size returns n.
func (o *Operator) Size() int { return o.n }

// Mode returns ModeDense or ModeMatrixFree, whichever was chosen.
func (o *Operator) Mode() kernel.Mode { return o.mode }

// Precision returns the device precision of Z and K.
func (o *Operator) Precision() Precision { return o.opt.Precision }

// Storage describes the operator for records and logs, as the CPU
// operator's Storage does, and names the GPU: "gpu dense float64 on NVIDIA
// H100 80GB HBM3 (79.1 GiB, driver 580.159.04, CUDA 13.0)", "gpu
// matrix-free float32 on ...".
func (o *Operator) Storage() string {
	m := "dense"
	if o.mode == kernel.ModeMatrixFree {
		m = "matrix-free"
	}
	return kernel.GPUStoragePrefix + m + " " + o.opt.Precision.String() + " on " + o.drv.info().Label()
}

// Device returns the GPU's description.
func (o *Operator) Device() DeviceInfo { return o.drv.info() }

// Kernel returns the family and hyperparameters (a copy).
func (o *Operator) Kernel() kernel.Kernel {
	k := o.k
	k.Hyper = k.Hyper.Clone()
	return k
}

// X returns the inputs (the operator's own copy; do not modify it).
func (o *Operator) X() *mat.Dense { return o.x }

// NoiseVariance returns σ², so solvers.CG can build its preconditioner.
func (o *Operator) NoiseVariance() float64 { return o.k.Hyper.Noise * o.k.Hyper.Noise }

// Work returns the counters accumulated so far, counted as the CPU
// operator counts them (KernelEvals counts every value computed on the
// device: the matrix-free products evaluate all n² pairs). BuildSeconds and
// ReduceSeconds are device times, measured by CUDA events around the work;
// ProductSeconds is not measured (a Space's products run asynchronously).
func (o *Operator) Work() kernel.Work {
	return kernel.Work{Products: o.products, RowsEvaluated: o.rows, KernelEvals: o.evals,
		BuildSeconds: o.buildSec, ReduceSeconds: o.reduceSec}
}

// fail records err (the first one) and fills the destination with NaN.
func (o *Operator) fail(method string, err error, fill func(float64)) {
	if o.err == nil {
		o.err = fmt.Errorf("cuda: %s: %w", method, err)
	}
	fill(math.NaN())
}

func fillDense(m *mat.Dense) func(float64) {
	return func(v float64) {
		r, c := m.Dims()
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				m.Set(i, j, v)
			}
		}
	}
}

func fillSlice(s []float64) func(float64) {
	return func(v float64) {
		for i := range s {
			s[i] = v
		}
	}
}

// ready returns an error when the operator cannot run (closed, or an
// earlier device error).
func (o *Operator) ready() error {
	if o.closed {
		return errors.New("operator is closed")
	}
	if o.err != nil {
		return o.err
	}
	return nil
}

// check validates the arguments of o's GramOperator methods, with the CPU
// operator's rules and messages.
func (o *Operator) check() kernel.ArgCheck { return kernel.ArgCheck{Pkg: "cuda", N: o.n, D: o.d} }

func roundUp(m, q int) int { return (m + q - 1) / q * q }

// put copies the r×c matrix src to b as float64 with exact width.
func (o *Operator) put(b *dbuf, src blas64.General, what string) error {
	r, c := src.Rows, src.Cols
	bytes := int64(r) * int64(c) * 8
	if err := b.ensure(o.drv, bytes, what); err != nil {
		return err
	}
	if r == 0 || c == 0 {
		return nil
	}
	if src.Stride == c {
		return o.drv.htod(b.p, unsafe.Pointer(&src.Data[0]), bytes)
	}
	for i := 0; i < r; i++ {
		if err := o.drv.htod(b.p+uintptr(i*c*8), unsafe.Pointer(&src.Data[i*src.Stride]), int64(c)*8); err != nil {
			return err
		}
	}
	return nil
}

// get copies the r×c float64 device matrix in b into dst.
func (o *Operator) get(dst blas64.General, b *dbuf) error {
	r, c := dst.Rows, dst.Cols
	if r == 0 || c == 0 {
		return nil
	}
	if dst.Stride == c {
		return o.drv.dtoh(unsafe.Pointer(&dst.Data[0]), b.p, int64(r)*int64(c)*8)
	}
	for i := 0; i < r; i++ {
		if err := o.drv.dtoh(unsafe.Pointer(&dst.Data[i*dst.Stride]), b.p+uintptr(i*c*8), int64(c)*8); err != nil {
			return err
		}
	}
	return nil
}

// putIdx copies idx to b as int64.
func (o *Operator) putIdx(b *dbuf, idx []int) error {
	if err := b.ensure(o.drv, int64(len(idx))*8, "an index list"); err != nil {
		return err
	}
	if len(idx) == 0 {
		return nil
	}
	o.hidx = o.hidx[:0]
	for _, i := range idx {
		o.hidx = append(o.hidx, int64(i))
	}
	return o.drv.htod(b.p, unsafe.Pointer(&o.hidx[0]), int64(len(idx))*8)
}

func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// denseKind returns the product kinds of the operator's mode: over K's
// columns (mulk or mulfree) and along K's rows (mulrows).
func (o *Operator) denseKind() (cols, rows prodKind) {
	if o.mode == kernel.ModeDense {
		return pDense, pRows
	}
	return pFree, pRowsFree
}

// mulH describes H·V for n×c V at v (leading dimension ld, columns cols)
// into out.
func (o *Operator) mulH(out, v uintptr, ld int, cols uintptr, k int) product {
	kind, _ := o.denseKind()
	return product{kind: kind, m: o.dK.p, ldm: o.ldk, zr: o.dZ.p, nj: o.n, nr: o.n,
		v: v, ldv: ld, vcols: cols, k: k, out: out, ldo: ld, noise: true, noise2: o.NoiseVariance()}
}

// rowsH describes H[rows,:]·V (nr rows) into out (nr×ld).
func (o *Operator) rowsH(out, rows uintptr, nr int, v uintptr, ld int, cols uintptr, k int) product {
	_, kind := o.denseKind()
	return product{kind: kind, m: o.dK.p, ldm: o.ldk, rows: rows, nj: o.n, nr: nr,
		v: v, ldv: ld, vcols: cols, k: k, out: out, ldo: ld, noise: true, nrows: rows, noise2: o.NoiseVariance()}
}

// colsK describes K[:,idx]·D (without σ²) for nidx×ld D into n×ld out.
func (o *Operator) colsK(out, idx uintptr, nidx int, d uintptr, ld int, cols uintptr, k int) product {
	kind, _ := o.denseKind()
	return product{kind: kind, m: o.dK.p, ldm: o.ldk, zr: o.dZ.p, jidx: idx, nj: nidx, nr: o.n,
		v: d, ldv: ld, vcols: cols, k: k, out: out, ldo: ld}
}

// runDense runs one product of the right-hand sides v on the device and
// copies its result, rows×(v's columns), into dst: v goes to o.dV and, when
// idx is not nil, the indices to o.dRows; prod then describes the product
// from those buffers into o.dOut. A failure is kept and fills dst (see
// fail); runDense reports whether the product was made.
func (o *Operator) runDense(method string, dst, v *mat.Dense, idx []int, rows int, prod func() product) bool {
	_, m := v.Dims()
	err := func() error {
		if err := o.ready(); err != nil {
			return err
		}
		if err := o.put(&o.dV, v.RawMatrix(), "the right-hand sides"); err != nil {
			return err
		}
		if idx != nil {
			if err := o.putIdx(&o.dRows, idx); err != nil {
				return err
			}
		}
		if err := o.dOut.ensure(o.drv, int64(rows)*int64(m)*8, "the product"); err != nil {
			return err
		}
		if err := o.runProduct(prod()); err != nil {
			return err
		}
		return o.get(dst.RawMatrix(), &o.dOut)
	}()
	if err != nil {
		o.fail(method, err, fillDense(dst))
		return false
	}
	return true
}

// MulTo sets dst = H·V = K·V + σ²V, where V and dst are n×m. dst must be
// n×m or empty (then it is resized) and must not be V.
func (o *Operator) MulTo(dst, v *mat.Dense) {
	n := o.n
	vc := o.check().MulTo(dst, v)
	if vc == 0 {
		return
	}
	if !o.runDense("MulTo", dst, v, nil, n, func() product { return o.mulH(o.dOut.p, o.dV.p, vc, 0, vc) }) {
		return
	}
	o.products += int64(vc)
	o.rows += int64(n)
}

// RowsMulTo sets dst = H[idx,:]·V, where V is n×m and dst is len(idx)×m.
func (o *Operator) RowsMulTo(dst *mat.Dense, idx []int, v *mat.Dense) {
	vc := o.check().RowsMulTo(dst, idx, v)
	if vc == 0 {
		return
	}
	rows := func() product { return o.rowsH(o.dOut.p, o.dRows.p, len(idx), o.dV.p, vc, 0, vc) }
	if !o.runDense("RowsMulTo", dst, v, idx, len(idx), rows) {
		return
	}
	o.rows += int64(len(idx))
}

// ColsMulTo sets dst = H[:,idx]·D, where D is len(idx)×m and dst is n×m.
func (o *Operator) ColsMulTo(dst *mat.Dense, idx []int, d *mat.Dense) {
	n := o.n
	dc := o.check().ColsMulTo(dst, idx, d)
	if dc == 0 {
		return
	}
	if len(idx) == 0 {
		dst.Zero()
		return
	}
	cols := func() product { return o.colsK(o.dOut.p, o.dRows.p, len(idx), o.dV.p, dc, 0, dc) }
	if !o.runDense("ColsMulTo", dst, d, idx, n, cols) {
		return
	}
	// σ²·D scattered to rows idx, in order (repeated indices add up), as
	// the CPU operator does.
	s2 := o.NoiseVariance()
	D, out := d.RawMatrix(), dst.RawMatrix()
	for j, i := range idx {
		src := D.Data[j*D.Stride : j*D.Stride+dc]
		row := out.Data[i*out.Stride : i*out.Stride+dc]
		for c, x := range src {
			row[c] += s2 * x
		}
	}
	o.rows += int64(len(idx))
}

// principal launches out (m×m float64) = H[idx,idx] for m device indices.
func (o *Operator) principal(out, idx uintptr, m int) error {
	var kp uintptr
	if o.mode == kernel.ModeDense {
		kp = o.dK.p
	} else {
		o.evals += int64(m) * int64(m)
	}
	s2 := o.k.Hyper.Signal * o.k.Hyper.Signal
	a := o.args[:0].p(o.dZ.p).p(kp).i(o.ldk).i(o.d).i(int(o.k.Family)).f(s2).f(o.NoiseVariance()).p(idx).i(m).p(out)
	g := blocks(m, tile2D)
	return o.drv.launch(kBlock[o.prec()], g, g, tile2D, tile2D, 0, a)
}

// BlockTo sets dst = H[idx,idx]. An empty dst is resized to len(idx).
func (o *Operator) BlockTo(dst *mat.SymDense, idx []int) {
	m := o.check().BlockTo(dst, idx)
	if m == 0 {
		return
	}
	S := dst.RawSymmetric()
	err := func() error {
		if err := o.ready(); err != nil {
			return err
		}
		if err := o.putIdx(&o.dRows, idx); err != nil {
			return err
		}
		if err := o.dBlock.ensure(o.drv, int64(m)*int64(m)*8, "a block of H"); err != nil {
			return err
		}
		if err := o.principal(o.dBlock.p, o.dRows.p, m); err != nil {
			return err
		}
		o.part = grow(o.part, m*m)
		if err := o.drv.dtoh(unsafe.Pointer(&o.part[0]), o.dBlock.p, int64(m)*int64(m)*8); err != nil {
			return err
		}
		for a := 0; a < m; a++ {
			copy(S.Data[a*S.Stride+a:a*S.Stride+m], o.part[a*m+a:(a+1)*m])
		}
		return nil
	}()
	if err != nil {
		o.fail("BlockTo", err, func(v float64) {
			for a := 0; a < m; a++ {
				for b := a; b < m; b++ {
					S.Data[a*S.Stride+b] = v
				}
			}
		})
		return
	}
	o.rows += int64(m)
}

// DiagTo sets dst[i] = H_ii = s² + σ² for i < n; len(dst) must be ≥ n.
func (o *Operator) DiagTo(dst []float64) {
	o.check().DiagTo(dst)
	o.k.Hyper.GramDiagTo(dst[:o.n])
}

// CrossMulTo sets dst = K(Xs, X)·V, where Xs is ns×d, V is n×m and dst is
// ns×m: the predictive mean at Xs when V = H⁻¹y. There is no noise term.
// Rows of Xs that are not finite give non-finite rows of dst.
func (o *Operator) CrossMulTo(dst, xs, v *mat.Dense) {
	n, d := o.n, o.d
	ns, vc := o.check().CrossMulTo(dst, xs, v)
	if vc == 0 || ns == 0 {
		return
	}
	err := func() error {
		if err := o.ready(); err != nil {
			return err
		}
		if err := o.put(&o.dXs, xs.RawMatrix(), "the test inputs"); err != nil {
			return err
		}
		if err := o.dZs.ensure(o.drv, int64(ns)*int64(d)*o.elem, "the scaled test inputs"); err != nil {
			return err
		}
		if err := o.scale(o.dZs.p, o.dXs.p, ns); err != nil {
			return err
		}
		if err := o.put(&o.dV, v.RawMatrix(), "the right-hand sides"); err != nil {
			return err
		}
		if err := o.dOut.ensure(o.drv, int64(ns)*int64(vc)*8, "the product"); err != nil {
			return err
		}
		p := product{kind: pFree, zr: o.dZs.p, nr: ns, nj: n, v: o.dV.p, ldv: vc, k: vc, out: o.dOut.p, ldo: vc}
		if err := o.runProduct(p); err != nil {
			return err
		}
		return o.get(dst.RawMatrix(), &o.dOut)
	}()
	if err != nil {
		o.fail("CrossMulTo", err, fillDense(dst))
		return
	}
	o.products += int64(vc)
	o.rows += int64(ns)
}

// Reduce sets dst[k] = Σ_ab W_ab ∂H_ab/∂θ_k for W = A·Bᵀ, where A and B are
// n×c, for every θ_k = (ℓ_1..ℓ_d, s, σ) in one fused pass over the n(n+1)/2
// pairs of the upper triangle on the device (the formulas of
// kernel.Operator.Reduce, summed directly), the trace of W included. A and
// B go to the device through pinned memory. len(dst) must be d+2.
func (o *Operator) Reduce(dst []float64, a, b *mat.Dense) {
	n := o.n
	ac := o.check().Reduce(dst, a, b)
	clear(dst)
	var trace float64
	err := func() error {
		if err := o.ready(); err != nil {
			return err
		}
		bytes := int64(n) * int64(ac) * 8
		if err := o.hIn.ensure(o.drv, max(2*bytes, int64(o.d+2)*8)); err != nil {
			return err
		}
		var err error
		trace, err = o.reduce(dst, func() (uintptr, uintptr, error) {
			for i, m := range []*mat.Dense{a, b} {
				buf := []*dbuf{&o.dA, &o.dB}[i]
				if err := buf.ensure(o.drv, bytes, "the gradient's vectors"); err != nil {
					return 0, 0, err
				}
				M := m.RawMatrix()
				h := o.hIn.f64(int64(i)*bytes, n*ac)
				for r := 0; r < n; r++ {
					copy(h[r*ac:(r+1)*ac], M.Data[r*M.Stride:r*M.Stride+ac])
				}
				if err := o.drv.htodAsync(buf.p, unsafe.Pointer(&h[0]), bytes); err != nil {
					return 0, 0, err
				}
			}
			return o.dA.p, o.dB.p, nil
		}, ac, false)
		return err
	}()
	if err != nil {
		o.fail("Reduce", err, fillSlice(dst))
		return
	}
	o.finishReduce(dst, trace)
}

// ReduceDense is Reduce with an explicit n×n W.
func (o *Operator) ReduceDense(dst []float64, w *mat.Dense) {
	o.check().ReduceDense(dst, w)
	clear(dst)
	var trace float64
	err := func() error {
		if err := o.ready(); err != nil {
			return err
		}
		if err := o.hIn.ensure(o.drv, int64(o.d+2)*8); err != nil {
			return err
		}
		var err error
		trace, err = o.reduce(dst, func() (uintptr, uintptr, error) {
			return o.dA.p, 0, o.put(&o.dA, w.RawMatrix(), "W")
		}, 0, true)
		return err
	}()
	if err != nil {
		o.fail("ReduceDense", err, fillSlice(dst))
		return
	}
	o.finishReduce(dst, trace)
}

// reduce runs the reduction on the device for W = A·Bᵀ with cp columns, or
// the dense W in a when dense, the inputs queued by stage (which returns
// their device addresses), and sets dst[0..d] to the sums and returns the
// trace of W. It waits for the device.
func (o *Operator) reduce(dst []float64, stage func() (a, b uintptr, err error), cp int, dense bool) (float64, error) {
	n, d := o.n, o.d
	nq := d + 2
	nt := blocks(n, tileRows)
	gx := blocks(nt, reduceStrip)
	nb := gx * nt
	if err := o.dRed.ensure(o.drv, int64(nb+1)*int64(nq)*8, "the gradient's partial sums"); err != nil {
		return 0, err
	}
	out := o.dRed.p + uintptr(nb*nq*8)
	sec, err := o.timed(func() error {
		a, b, err := stage()
		if err != nil {
			return err
		}
		wd := uintptr(0)
		if dense {
			a, b, wd = 0, 0, a
		}
		smem := 2*tileDims*tileRows*int(o.elem) + (2*reduceCols*tileRows+sumThreads)*8
		args := o.args[:0].p(o.dZ.p).i(n).i(d).i(int(o.k.Family)).p(a).p(b).i(cp).p(wd).p(o.dRed.p)
		if err := o.drv.launch(kReduce[o.prec()][dVariant(d)], gx, nt, 16, 16, smem, args); err != nil {
			return err
		}
		args = o.args[:0].p(o.dRed.p).i(nb).i(nq).p(out)
		if err := o.drv.launch(kReduceSum, nq, 1, sumThreads, 1, sumThreads*8, args); err != nil {
			return err
		}
		return o.drv.dtohAsync(o.hIn.p, out, int64(nq)*8)
	})
	o.reduceSec += sec
	if err != nil {
		return 0, err
	}
	res := o.hIn.f64(0, nq)
	copy(dst[:d+1], res[:d+1])
	o.evals += int64(n) * int64(n+1) / 2
	return res[d+1], nil
}

// finishReduce applies the factors s²/ℓ_k and 2s and sets the noise term
// 2σ·tr(W).
func (o *Operator) finishReduce(dst []float64, trace float64) {
	hy := o.k.Hyper
	s2 := hy.Signal * hy.Signal
	for k := 0; k < o.d; k++ {
		dst[k] *= s2 / hy.Lengthscales[k]
	}
	dst[o.d] *= 2 * hy.Signal
	dst[o.d+1] = 2 * hy.Noise * trace
	o.rows += int64(o.n)
}
