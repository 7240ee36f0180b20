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

// The GPU operator implements the same interfaces as the CPU one.
var (
	_ kernel.GramOperator    = (*Operator)(nil)
	_ kernel.Rekerneler      = (*Operator)(nil)
	_ solvers.Operator       = (*Operator)(nil)
	_ solvers.NoiseVariancer = (*Operator)(nil)
)

// Launch geometry; kernels/gpnb.cu relies on these values.
const (
	mc         = 16       // right-hand-side columns per thread (MC)
	threads    = 128      // threads per block of the row kernels (a power of two for reduce)
	tile2D     = 16       // build and block kernels: 16×16 threads
	smemLimit  = 48 << 10 // dynamic shared memory available without opt-in
	maxTile    = 256      // column tile of mulfree, muldense and reduce
	maxDims    = 256      // GENMAXD: largest d the generic kernels take
	reduceMaxC = 512      // Reduce processes A·Bᵀ in chunks of this many columns
)

// Split sums of the row products (see storeacc in kernels/gpnb.cu): a launch
// with fewer than splitBlocksPerSM blocks per multiprocessor splits its sum
// over the columns into chunks of at least splitMinChunk, to fill the GPU.
// Variables so that tests can force splits on small problems.
var (
	splitBlocksPerSM = 16
	splitMinChunk    = 256
)

// splitSum returns how many chunks the sum over nc columns of a launch with
// blocks blocks is split into, and the chunk length.
func splitSum(blocks, nc, sms int) (nz, chunk int) {
	if nc <= 0 || blocks <= 0 {
		return 1, max(nc, 1)
	}
	want := (splitBlocksPerSM*max(sms, 1) + blocks - 1) / blocks
	nz = max(1, min(want, nc/max(splitMinChunk, 1)))
	chunk = (nc + nz - 1) / nz
	return (nc + chunk - 1) / chunk, chunk
}

// Operator is the kernel operator H_θ = K_θ(X,X) + σ²I on a GPU. It keeps X,
// the scaled inputs Z = (X − x̄)/ℓ and, in ModeDense, K on the device; the
// right-hand sides are uploaded per call into device buffers that are
// reused. It is not safe for concurrent use. Close frees its device memory.
type Operator struct {
	drv  driver
	k    kernel.Kernel
	opt  Options
	mode kernel.Mode
	x    *mat.Dense
	n, d int
	mean []float64
	elem int64 // bytes per device value: 8 (Float64) or 4 (Float32)
	sfx  string

	dX, dMean, dEll, dZ, dK dbuf
	dV, dOut, dRows, dCols  dbuf
	dXs, dZs, dA, dB        dbuf
	dPart, dBlock, dSplit   dbuf

	h64  []float64 // staging for uploads and downloads
	h32  []float32
	hidx []int64
	part []float64

	err                   error
	products, rows, evals int64
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
// builds H_θ there. In ModeDense (or ModeAuto when n² values fit the budget)
// it computes all n² kernel values once.
func NewOperator(x *mat.Dense, k kernel.Kernel, opt Options) (*Operator, error) {
	if x == nil || x.IsEmpty() {
		return nil, fmt.Errorf("cuda: NewOperator: X is empty: give at least one row of inputs")
	}
	n, d := x.Dims()
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			if v := x.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("cuda: NewOperator: X[%d,%d] is %v: inputs must be finite (drop or impute missing values)", i, j, v)
			}
		}
	}
	if d > maxDims {
		return nil, fmt.Errorf("cuda: NewOperator: X has %d columns; the GPU kernels take at most %d: reduce the dimension or use the CPU operator", d, maxDims)
	}
	if err := checkKernel(k, d); err != nil {
		return nil, err
	}
	var elem int64
	switch opt.Precision {
	case Float64:
		elem = 8
	case Float32:
		elem = 4
	default:
		return nil, fmt.Errorf("cuda: NewOperator: unknown precision %v: use Float64 or Float32", opt.Precision)
	}
	if opt.MemoryBudget < 0 {
		return nil, fmt.Errorf("cuda: NewOperator: MemoryBudget is %d: use 0 for half the free device memory or a positive number of bytes", opt.MemoryBudget)
	}
	drv, err := getDriver(opt.Device)
	if err != nil {
		return nil, err
	}
	free, _, err := drv.memInfo()
	if err != nil {
		return nil, fmt.Errorf("cuda: NewOperator: querying device memory: %w", err)
	}
	budget := opt.MemoryBudget
	if budget == 0 {
		budget = free / 2
	}
	need := float64(n) * float64(n) * float64(elem)
	mode := opt.Mode
	switch mode {
	case kernel.ModeAuto:
		mode = kernel.ModeMatrixFree
		if need <= float64(budget) {
			mode = kernel.ModeDense
		}
	case kernel.ModeDense:
		if need > float64(budget) {
			return nil, fmt.Errorf("cuda: NewOperator: the dense cache for n=%d needs %.3g GB but the device budget is %.3g GB: use ModeMatrixFree or ModeAuto, Precision Float32, or raise Options.MemoryBudget", n, need/1e9, float64(budget)/1e9)
		}
	case kernel.ModeMatrixFree:
	default:
		return nil, fmt.Errorf("cuda: NewOperator: unknown mode %v: use ModeAuto, ModeDense or ModeMatrixFree", mode)
	}

	o := &Operator{drv: drv, opt: opt, mode: mode, x: mat.DenseCopyOf(x), n: n, d: d, elem: elem, sfx: "f64"}
	if elem == 4 {
		o.sfx = "f32"
	}
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
		return nil, err
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

// init allocates the per-operator device buffers and uploads X and x̄.
func (o *Operator) init() error {
	n, d := int64(o.n), int64(o.d)
	for _, b := range []struct {
		buf   *dbuf
		bytes int64
	}{{&o.dX, n * d * 8}, {&o.dMean, d * 8}, {&o.dEll, d * 8}, {&o.dZ, n * d * o.elem}} {
		if err := b.buf.ensure(o.drv, b.bytes); err != nil {
			return err
		}
	}
	if o.mode == kernel.ModeDense {
		if err := o.dK.ensure(o.drv, n*n*o.elem); err != nil {
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
// reusing the device memory. On a validation error the operator is
// unchanged.
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

func (o *Operator) setKernel(k kernel.Kernel) error {
	k.Hyper = k.Hyper.Clone()
	if err := o.drv.htod(o.dEll.p, unsafe.Pointer(&k.Hyper.Lengthscales[0]), int64(o.d)*8); err != nil {
		return err
	}
	o.k = k
	if err := o.scale(o.dZ.p, o.dX.p, o.n); err != nil {
		return err
	}
	if o.mode == kernel.ModeDense {
		s2 := k.Hyper.Signal * k.Hyper.Signal
		g := (o.n + tile2D - 1) / tile2D
		err := o.drv.launch("gpnb_build_"+o.sfx, g, g, tile2D, tile2D, 0,
			[]arg{ptrArg(o.dZ.p), intArg(o.n), intArg(o.d), intArg(int(k.Family)), f64Arg(s2), ptrArg(o.dK.p)})
		if err != nil {
			return err
		}
		o.evals += int64(o.n) * int64(o.n)
	}
	return nil
}

// scale sets Z = (X − x̄)/ℓ on the device for the rows of X (float64).
func (o *Operator) scale(z, x uintptr, rows int) error {
	return o.drv.launch("gpnb_scale_"+o.sfx, (rows+threads-1)/threads, 1, threads, 1, 0,
		[]arg{ptrArg(x), intArg(rows), intArg(o.d), ptrArg(o.dMean.p), ptrArg(o.dEll.p), ptrArg(z)})
}

// Close frees the operator's device memory. Using it afterwards fills
// every destination with NaN and sets Err.
func (o *Operator) Close() error {
	if o.closed {
		return nil
	}
	o.closed = true
	var first error
	for _, b := range []*dbuf{&o.dX, &o.dMean, &o.dEll, &o.dZ, &o.dK, &o.dV, &o.dOut, &o.dRows, &o.dCols, &o.dXs, &o.dZs, &o.dA, &o.dB, &o.dPart, &o.dBlock, &o.dSplit} {
		if err := b.release(o.drv); err != nil && first == nil {
			first = err
		}
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

// Precision returns the device precision.
func (o *Operator) Precision() Precision { return o.opt.Precision }

// Storage describes the operator for records and logs, as the CPU
// operator's Storage does: "gpu dense float64", "gpu matrix-free float32", ...
func (o *Operator) Storage() string {
	m := "dense"
	if o.mode == kernel.ModeMatrixFree {
		m = "matrix-free"
	}
	return "gpu " + m + " " + o.opt.Precision.String()
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
// device: the matrix-free products evaluate all n² pairs).
func (o *Operator) Work() kernel.Work {
	return kernel.Work{Products: o.products, RowsEvaluated: o.rows, KernelEvals: o.evals}
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

// checkDims panics unless dst is r×c; an empty dst is resized (as gonum and
// the CPU operator do).
func checkDims(method string, dst *mat.Dense, r, c int) {
	if dst.IsEmpty() && r > 0 && c > 0 {
		dst.ReuseAs(r, c)
		return
	}
	if dr, dc := dst.Dims(); dr != r || dc != c {
		panic(fmt.Sprintf("cuda: %s: dst is %d×%d, want %d×%d", method, dr, dc, r, c))
	}
}

func checkIdx(method string, idx []int, n int) {
	for _, i := range idx {
		if i < 0 || i >= n {
			panic(fmt.Sprintf("cuda: %s: index %d out of range [0,%d)", method, i, n))
		}
	}
}

func roundUp(m, q int) int { return (m + q - 1) / q * q }

// groups returns how the mp padded right-hand sides are split: into column
// groups of 32 when mp allows (one group for y and 16 probes), of 16
// otherwise. Each group recomputes (or rereads) the kernel values.
func groups(mp int) (count, width int) {
	if mp%(2*mc) == 0 {
		return mp / (2 * mc), 2 * mc
	}
	return mp / mc, mc
}

// upload copies the r×c matrix src into b as an r×ld matrix of the device
// precision, zero-padding columns c..ld−1.
func (o *Operator) upload(b *dbuf, src blas64.General, ld int) error {
	r, c := src.Rows, src.Cols
	bytes := int64(r) * int64(ld) * o.elem
	if err := b.ensure(o.drv, bytes); err != nil {
		return err
	}
	if r == 0 {
		return nil
	}
	if o.elem == 4 {
		o.h32 = grow(o.h32, r*ld)
		h := o.h32
		for i := 0; i < r; i++ {
			row := src.Data[i*src.Stride : i*src.Stride+c]
			out := h[i*ld : (i+1)*ld]
			for j, v := range row {
				out[j] = float32(v)
			}
			clear(out[c:])
		}
		return o.drv.htod(b.p, unsafe.Pointer(&h[0]), bytes)
	}
	if ld == c && src.Stride == c {
		return o.drv.htod(b.p, unsafe.Pointer(&src.Data[0]), bytes)
	}
	o.h64 = grow(o.h64, r*ld)
	h := o.h64
	for i := 0; i < r; i++ {
		out := h[i*ld : (i+1)*ld]
		copy(out, src.Data[i*src.Stride:i*src.Stride+c])
		clear(out[c:])
	}
	return o.drv.htod(b.p, unsafe.Pointer(&h[0]), bytes)
}

// download copies the first c columns of the r×ld device matrix in b
// (device precision) into dst (r×c).
func (o *Operator) download(dst blas64.General, b *dbuf, ld int) error {
	r, c := dst.Rows, dst.Cols
	if r == 0 || c == 0 {
		return nil
	}
	bytes := int64(r) * int64(ld) * o.elem
	if o.elem == 4 {
		o.h32 = grow(o.h32, r*ld)
		h := o.h32
		if err := o.drv.dtoh(unsafe.Pointer(&h[0]), b.p, bytes); err != nil {
			return err
		}
		for i := 0; i < r; i++ {
			out := dst.Data[i*dst.Stride : i*dst.Stride+c]
			for j := range out {
				out[j] = float64(h[i*ld+j])
			}
		}
		return nil
	}
	o.h64 = grow(o.h64, r*ld)
	h := o.h64
	if err := o.drv.dtoh(unsafe.Pointer(&h[0]), b.p, bytes); err != nil {
		return err
	}
	for i := 0; i < r; i++ {
		copy(dst.Data[i*dst.Stride:i*dst.Stride+c], h[i*ld:i*ld+c])
	}
	return nil
}

// uploadIdx copies idx to b as int64.
func (o *Operator) uploadIdx(b *dbuf, idx []int) error {
	if err := b.ensure(o.drv, int64(len(idx))*8); err != nil {
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

// variant returns the kernel suffix for d: registers for d ≤ 8 and d ≤ 32,
// the generic kernel above.
func (o *Operator) variant() string {
	switch {
	case o.d <= 8:
		return "_d8"
	case o.d <= 32:
		return "_d32"
	}
	return "_d0"
}

// product describes one launch of the row-product kernels: out (nr×mp) =
// K(Zr[rows], Zc[cols])·V (+ σ²·V[rows] when noise).
type product struct {
	zr       uintptr // row inputs (Z, or the scaled Xs)
	rows     uintptr // row indices, 0 for 0..nr−1
	nr       int
	cols     uintptr // column indices, 0 for 0..nc−1
	nc       int
	mp       int  // padded number of right-hand sides (leading dimension)
	noise    bool // add σ²·V[rows]
	useCache bool // read K from the dense cache
	v, out   uintptr
}

// run launches the product from p.v (o.dV when 0) into p.out (o.dOut,
// grown to fit, when 0).
func (o *Operator) run(p product) error {
	if p.v == 0 {
		p.v = o.dV.p
	}
	if p.out == 0 {
		if err := o.dOut.ensure(o.drv, int64(p.nr)*int64(p.mp)*o.elem); err != nil {
			return err
		}
		p.out = o.dOut.p
	}
	if p.nr == 0 {
		return nil
	}
	var vn uintptr
	noise2 := 0.0
	if p.noise {
		vn, noise2 = p.v, o.NoiseVariance()
	}
	ng, nc := groups(p.mp)
	cs := fmt.Sprintf("_c%d", nc)
	gx := (p.nr + threads - 1) / threads
	nz, chunk := splitSum(gx*ng, p.nc, o.drv.info().SMs)
	part := uintptr(0)
	if nz > 1 {
		if err := o.dSplit.ensure(o.drv, int64(nz)*int64(p.nr)*int64(p.mp)*o.elem); err != nil {
			return err
		}
		part = o.dSplit.p
	}
	split := []arg{intArg(ng), intArg(chunk), ptrArg(part)}
	var err error
	if p.useCache {
		tc := min(maxTile, smemLimit/(nc*int(o.elem)+8))
		smem := tc*nc*int(o.elem) + tc*8
		err = o.drv.launch("gpnb_muldense_"+o.sfx+cs, gx, ng*nz, threads, 1, smem,
			append([]arg{ptrArg(o.dK.p), intArg(o.n), ptrArg(p.rows), intArg(p.nr), ptrArg(p.cols), intArg(p.nc),
				ptrArg(p.v), intArg(p.mp), ptrArg(vn), f64Arg(noise2), ptrArg(p.out), intArg(tc)}, split...))
	} else {
		tc := min(maxTile, smemLimit/(int(o.elem)*(o.d+nc)))
		smem := tc * (o.d + nc) * int(o.elem)
		s2 := o.k.Hyper.Signal * o.k.Hyper.Signal
		err = o.drv.launch("gpnb_mulfree_"+o.sfx+o.variant()+cs, gx, ng*nz, threads, 1, smem,
			append([]arg{ptrArg(p.zr), ptrArg(p.rows), intArg(p.nr), ptrArg(o.dZ.p), ptrArg(p.cols), intArg(p.nc),
				intArg(o.d), intArg(int(o.k.Family)), f64Arg(s2),
				ptrArg(p.v), intArg(p.mp), ptrArg(vn), f64Arg(noise2), ptrArg(p.out), intArg(tc)}, split...))
		if err == nil {
			o.evals += int64(p.nr) * int64(p.nc) * int64(ng)
		}
	}
	if err != nil || nz == 1 {
		return err
	}
	total := p.nr * p.mp
	return o.drv.launch("gpnb_sumparts_"+o.sfx, (total+threads-1)/threads, 1, threads, 1, 0,
		[]arg{ptrArg(part), intArg(nz), intArg(p.nr), intArg(p.mp), ptrArg(p.rows), ptrArg(vn), f64Arg(noise2), ptrArg(p.out)})
}

// MulTo sets dst = H·V = K·V + σ²V, where V and dst are n×m. dst must be
// n×m or empty (then it is resized) and must not be V.
func (o *Operator) MulTo(dst, v *mat.Dense) {
	n := o.n
	vr, vc := v.Dims()
	if vr != n {
		panic(fmt.Sprintf("cuda: MulTo: V has %d rows, want %d", vr, n))
	}
	checkDims("MulTo", dst, n, vc)
	if dst == v {
		panic("cuda: MulTo: dst and V are the same matrix")
	}
	if vc == 0 {
		return
	}
	if err := o.mulTo(dst, v); err != nil {
		o.fail("MulTo", err, fillDense(dst))
		return
	}
	o.products += int64(vc)
	o.rows += int64(n)
}

func (o *Operator) mulTo(dst, v *mat.Dense) error {
	if err := o.ready(); err != nil {
		return err
	}
	mp := roundUp(v.RawMatrix().Cols, mc)
	if err := o.upload(&o.dV, v.RawMatrix(), mp); err != nil {
		return err
	}
	p := product{zr: o.dZ.p, nr: o.n, nc: o.n, mp: mp, noise: true, useCache: o.mode == kernel.ModeDense}
	if err := o.run(p); err != nil {
		return err
	}
	return o.download(dst.RawMatrix(), &o.dOut, mp)
}

// RowsMulTo sets dst = H[idx,:]·V, where V is n×m and dst is len(idx)×m.
func (o *Operator) RowsMulTo(dst *mat.Dense, idx []int, v *mat.Dense) {
	n := o.n
	vr, vc := v.Dims()
	if vr != n {
		panic(fmt.Sprintf("cuda: RowsMulTo: V has %d rows, want %d", vr, n))
	}
	checkIdx("RowsMulTo", idx, n)
	if len(idx) == 0 {
		return
	}
	checkDims("RowsMulTo", dst, len(idx), vc)
	if vc == 0 {
		return
	}
	err := func() error {
		if err := o.ready(); err != nil {
			return err
		}
		mp := roundUp(vc, mc)
		if err := o.upload(&o.dV, v.RawMatrix(), mp); err != nil {
			return err
		}
		if err := o.uploadIdx(&o.dRows, idx); err != nil {
			return err
		}
		p := product{zr: o.dZ.p, rows: o.dRows.p, nr: len(idx), nc: n, mp: mp, noise: true, useCache: o.mode == kernel.ModeDense}
		if err := o.run(p); err != nil {
			return err
		}
		return o.download(dst.RawMatrix(), &o.dOut, mp)
	}()
	if err != nil {
		o.fail("RowsMulTo", err, fillDense(dst))
		return
	}
	o.rows += int64(len(idx))
}

// ColsMulTo sets dst = H[:,idx]·D, where D is len(idx)×m and dst is n×m.
func (o *Operator) ColsMulTo(dst *mat.Dense, idx []int, d *mat.Dense) {
	n := o.n
	dr, dc := d.Dims()
	if dr != len(idx) {
		panic(fmt.Sprintf("cuda: ColsMulTo: D has %d rows, want len(idx) = %d", dr, len(idx)))
	}
	checkIdx("ColsMulTo", idx, n)
	checkDims("ColsMulTo", dst, n, dc)
	if dst == d {
		panic("cuda: ColsMulTo: dst and D are the same matrix")
	}
	if dc == 0 {
		return
	}
	if len(idx) == 0 {
		dst.Zero()
		return
	}
	err := func() error {
		if err := o.ready(); err != nil {
			return err
		}
		mp := roundUp(dc, mc)
		if err := o.upload(&o.dV, d.RawMatrix(), mp); err != nil {
			return err
		}
		if err := o.uploadIdx(&o.dCols, idx); err != nil {
			return err
		}
		p := product{zr: o.dZ.p, nr: n, cols: o.dCols.p, nc: len(idx), mp: mp, useCache: o.mode == kernel.ModeDense}
		if err := o.run(p); err != nil {
			return err
		}
		return o.download(dst.RawMatrix(), &o.dOut, mp)
	}()
	if err != nil {
		o.fail("ColsMulTo", err, fillDense(dst))
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

// BlockTo sets dst = H[idx,idx]. An empty dst is resized to len(idx).
func (o *Operator) BlockTo(dst *mat.SymDense, idx []int) {
	checkIdx("BlockTo", idx, o.n)
	m := len(idx)
	if m == 0 {
		return
	}
	if dst.IsEmpty() {
		dst.ReuseAsSym(m)
	}
	if dm := dst.SymmetricDim(); dm != m {
		panic(fmt.Sprintf("cuda: BlockTo: dst is %d×%d, want %d×%d", dm, dm, m, m))
	}
	S := dst.RawSymmetric()
	err := func() error {
		if err := o.ready(); err != nil {
			return err
		}
		if err := o.uploadIdx(&o.dRows, idx); err != nil {
			return err
		}
		if err := o.dBlock.ensure(o.drv, int64(m)*int64(m)*8); err != nil {
			return err
		}
		var kp uintptr
		if o.mode == kernel.ModeDense {
			kp = o.dK.p
		} else {
			o.evals += int64(m) * int64(m)
		}
		g := (m + tile2D - 1) / tile2D
		s2 := o.k.Hyper.Signal * o.k.Hyper.Signal
		if err := o.drv.launch("gpnb_block_"+o.sfx, g, g, tile2D, tile2D, 0,
			[]arg{ptrArg(o.dZ.p), ptrArg(kp), intArg(o.n), intArg(o.d), intArg(int(o.k.Family)), f64Arg(s2),
				f64Arg(o.NoiseVariance()), ptrArg(o.dRows.p), intArg(m), ptrArg(o.dBlock.p)}); err != nil {
			return err
		}
		o.h64 = grow(o.h64, m*m)
		if err := o.drv.dtoh(unsafe.Pointer(&o.h64[0]), o.dBlock.p, int64(m)*int64(m)*8); err != nil {
			return err
		}
		for a := 0; a < m; a++ {
			copy(S.Data[a*S.Stride+a:a*S.Stride+m], o.h64[a*m+a:(a+1)*m])
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
	if len(dst) < o.n {
		panic(fmt.Sprintf("cuda: DiagTo: len(dst) = %d, want ≥ %d", len(dst), o.n))
	}
	v := o.k.Hyper.Signal*o.k.Hyper.Signal + o.NoiseVariance()
	for i := range dst[:o.n] {
		dst[i] = v
	}
}

// CrossMulTo sets dst = K(Xs, X)·V, where Xs is ns×d, V is n×m and dst is
// ns×m: the predictive mean at Xs when V = H⁻¹y. There is no noise term.
// Rows of Xs that are not finite give non-finite rows of dst.
func (o *Operator) CrossMulTo(dst, xs, v *mat.Dense) {
	n, d := o.n, o.d
	ns, xd := xs.Dims()
	if xd != d {
		panic(fmt.Sprintf("cuda: CrossMulTo: Xs has %d columns, want %d", xd, d))
	}
	vr, vc := v.Dims()
	if vr != n {
		panic(fmt.Sprintf("cuda: CrossMulTo: V has %d rows, want %d", vr, n))
	}
	checkDims("CrossMulTo", dst, ns, vc)
	if vc == 0 || ns == 0 {
		return
	}
	err := func() error {
		if err := o.ready(); err != nil {
			return err
		}
		elem := o.elem
		o.elem = 8 // Xs goes up as float64, like X
		err := o.upload(&o.dXs, xs.RawMatrix(), d)
		o.elem = elem
		if err != nil {
			return err
		}
		if err := o.dZs.ensure(o.drv, int64(ns)*int64(d)*o.elem); err != nil {
			return err
		}
		if err := o.scale(o.dZs.p, o.dXs.p, ns); err != nil {
			return err
		}
		mp := roundUp(vc, mc)
		if err := o.upload(&o.dV, v.RawMatrix(), mp); err != nil {
			return err
		}
		if err := o.run(product{zr: o.dZs.p, nr: ns, nc: n, mp: mp}); err != nil {
			return err
		}
		return o.download(dst.RawMatrix(), &o.dOut, mp)
	}()
	if err != nil {
		o.fail("CrossMulTo", err, fillDense(dst))
		return
	}
	o.products += int64(vc)
	o.rows += int64(ns)
}

// Reduce sets dst[k] = Σ_ab W_ab ∂H_ab/∂θ_k for W = A·Bᵀ, where A and B are
// n×c, for every θ_k = (ℓ_1..ℓ_d, s, σ) in one fused pass over the n²
// pairs on the device (the formulas of kernel.Operator.Reduce, summed
// directly). len(dst) must be d+2.
func (o *Operator) Reduce(dst []float64, a, b *mat.Dense) {
	n := o.n
	ar, ac := a.Dims()
	br, bc := b.Dims()
	if ar != n || br != n || ac != bc {
		panic(fmt.Sprintf("cuda: Reduce: A is %d×%d and B is %d×%d, want both n×c with n = %d", ar, ac, br, bc, n))
	}
	o.checkReduceDst("Reduce", dst)
	A, B := a.RawMatrix(), b.RawMatrix()
	var tr float64
	for i := 0; i < n; i++ {
		ra, rb := A.Data[i*A.Stride:i*A.Stride+ac], B.Data[i*B.Stride:i*B.Stride+ac]
		for j, x := range ra {
			tr += x * rb[j]
		}
	}
	clear(dst)
	err := func() error {
		if err := o.ready(); err != nil {
			return err
		}
		// W = Σ over column chunks of A_ch·B_chᵀ; each chunk is one pass.
		for c0 := 0; c0 < ac; c0 += reduceMaxC {
			c1 := min(ac, c0+reduceMaxC)
			sa := a.Slice(0, n, c0, c1).(*mat.Dense).RawMatrix()
			sb := b.Slice(0, n, c0, c1).(*mat.Dense).RawMatrix()
			if err := o.upload(&o.dA, sa, c1-c0); err != nil {
				return err
			}
			if err := o.upload(&o.dB, sb, c1-c0); err != nil {
				return err
			}
			if err := o.reduce(dst, o.dA.p, o.dB.p, c1-c0, 0); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		o.fail("Reduce", err, fillSlice(dst))
		return
	}
	o.finishReduce(dst, tr)
}

// ReduceDense is Reduce with an explicit n×n W.
func (o *Operator) ReduceDense(dst []float64, w *mat.Dense) {
	n := o.n
	if r, c := w.Dims(); r != n || c != n {
		panic(fmt.Sprintf("cuda: ReduceDense: W is %d×%d, want %d×%d", r, c, n, n))
	}
	o.checkReduceDst("ReduceDense", dst)
	W := w.RawMatrix()
	var tr float64
	for i := 0; i < n; i++ {
		tr += W.Data[i*W.Stride+i]
	}
	clear(dst)
	err := func() error {
		if err := o.ready(); err != nil {
			return err
		}
		if err := o.upload(&o.dA, W, n); err != nil {
			return err
		}
		return o.reduce(dst, 0, 0, 0, o.dA.p)
	}()
	if err != nil {
		o.fail("ReduceDense", err, fillSlice(dst))
		return
	}
	o.finishReduce(dst, tr)
}

func (o *Operator) checkReduceDst(method string, dst []float64) {
	if len(dst) != o.d+2 {
		panic(fmt.Sprintf("cuda: %s: len(dst) = %d, want d+2 = %d", method, len(dst), o.d+2))
	}
}

// reduce runs one reduction pass (A·Bᵀ with cp columns, or the dense W
// when wd ≠ 0) and adds its block partial sums, in block order, to
// dst[0..d].
func (o *Operator) reduce(dst []float64, a, b uintptr, cp int, wd uintptr) error {
	n, d := o.n, o.d
	nb := (n + threads - 1) / threads
	if err := o.dPart.ensure(o.drv, int64(nb)*int64(d+1)*8); err != nil {
		return err
	}
	per := d // Z values per tile column
	if wd == 0 {
		per += cp
	}
	tc := min(maxTile, (smemLimit-threads*8)/(int(o.elem)*max(per, 1)))
	if tc < 1 {
		return fmt.Errorf("%d right-hand sides with d = %d do not fit in shared memory", cp, d)
	}
	smem := threads*8 + tc*per*int(o.elem)
	if err := o.drv.launch("gpnb_reduce_"+o.sfx+o.variant(), nb, 1, threads, 1, smem,
		[]arg{ptrArg(o.dZ.p), intArg(n), intArg(d), intArg(int(o.k.Family)), ptrArg(a), ptrArg(b), intArg(cp),
			ptrArg(wd), ptrArg(o.dPart.p), intArg(tc)}); err != nil {
		return err
	}
	o.part = grow(o.part, nb*(d+1))
	if err := o.drv.dtoh(unsafe.Pointer(&o.part[0]), o.dPart.p, int64(nb)*int64(d+1)*8); err != nil {
		return err
	}
	for blk := 0; blk < nb; blk++ {
		for k, v := range o.part[blk*(d+1) : (blk+1)*(d+1)] {
			dst[k] += v
		}
	}
	o.evals += int64(n) * int64(n)
	return nil
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
