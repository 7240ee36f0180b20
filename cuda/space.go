//go:build cuda || cudaemu

package cuda

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/gpnb/gpnb/solvers"
)

// Space is a solvers.Space in the device memory of an Operator: a solver
// started on the operator keeps its vectors here, and every operation is one
// or a few kernels on the operator's stream, launched without waiting for
// them. What crosses between host and device per iteration is small: the
// per-column coefficients and column selections going in (through a pinned
// staging area, copied asynchronously), SGD's batch indices (SetIndex), and
// the k scalars of Dots coming out, which is where the host waits for the
// device. Vectors cross in Upload and Download only.
//
// Blocks are float64 and keep their exact number of columns; they are
// allocated by NewBlock and NewIndex, and the scratch of the operations
// (partial sums, Solve's intermediate, Factorize's copy) grows to its
// largest use once, so an iteration allocates nothing. Every sum is in an
// order fixed by the sizes (see kernels/gpnb.cu): the same calls give the
// same bits on the same GPU. The element-wise operations (Axpy, Xpby, Scale,
// Copy, the row gathers and scatters, ScaleRows) give the bits of
// solvers.HostSpace; Dots and the products differ from it by rounding.
//
// Errors: a device failure during a method without an error result (a
// failed launch, or a fault that shows at the next synchronisation) is kept
// and returned by the next method that returns an error (Dots, Upload,
// Download, Factorize, SetIndex, NewBlock, NewIndex, Close); the methods
// do nothing after it. Using a Space after Close panics (a programming
// error), except for the methods with an error result, which return one.
type Space struct {
	o        *Operator
	drv      driver
	err      error
	reported bool // err has been returned
	closed   bool

	blocks  []*devBlock
	indices []*devIndex

	spaceBuffers
	// Allocations in the arena bump aoff and are released all at once when
	// the stream is synchronised (everything queued before has then run).
	aoff  int64
	epoch int
	// The column selection last staged in the arena, reused while the arena
	// is not reset (the solvers pass the same active set call after call).
	lastCols  []int
	lastPtr   uintptr
	lastEpoch int

	htab []int64
}

// spaceBuffers are a Space's staging buffers and scratch. The operator keeps
// those of a closed space for the next one (a solver per Adam step), so that
// a new Space allocates only its blocks: pinned host memory is slow to get.
type spaceBuffers struct {
	// The arena: pinned host memory and its device mirror, for the small
	// per-call data (coefficients, column lists, chunk tables, results).
	arena  hbuf
	dArena dbuf
	stage  hbuf // pinned staging for Upload and Download
	part   dbuf // chunk sums of Dots
	ys     dbuf // Solve's intermediate Wᵀb
	fac    dbuf // Factorize's working copy
	info   dbuf // Factorize's flag
}

// release frees the buffers.
func (b *spaceBuffers) release(d driver) error {
	var first error
	for _, x := range []*dbuf{&b.dArena, &b.part, &b.ys, &b.fac, &b.info} {
		if err := x.release(d); err != nil && first == nil {
			first = err
		}
	}
	for _, x := range []*hbuf{&b.arena, &b.stage} {
		if err := x.release(d); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// devBlock is a row-major r×c float64 matrix in device memory. After
// Factorize it holds W = U⁻¹ (A = UᵀU) in its upper triangle and Wᵀ below.
type devBlock struct {
	s        *Space
	p        uintptr
	r, c     int
	factored bool
}

func (b *devBlock) Dims() (int, int) { return b.r, b.c }

// devIndex is a list of int64 row indices in device memory.
type devIndex struct {
	s *Space
	p uintptr
	n int
}

func (ix *devIndex) Len() int { return ix.n }

// Sizes of the staging buffers.
const (
	arenaBytes = 64 << 10
	stageBytes = 4 << 20
)

var errSpaceClosed = errors.New("cuda: the Space is closed")

// NewSpace returns a new Space in the operator's device memory for a
// solver (solvers.SpaceOperator). The operator's Close closes it too.
func (o *Operator) NewSpace() (solvers.Space, error) {
	if err := o.ready(); err != nil {
		return nil, fmt.Errorf("cuda: NewSpace: %w", err)
	}
	s := &Space{o: o, drv: o.drv}
	if o.spare != nil {
		s.spaceBuffers, o.spare = *o.spare, nil
	}
	if err := s.growArena(arenaBytes); err != nil {
		_ = s.free()
		return nil, err
	}
	o.spaces[s] = true
	return s, nil
}

// Size returns n.
func (s *Space) Size() int { return s.o.n }

// fail keeps the first failure.
func (s *Space) fail(err error) {
	if s.err == nil && err != nil {
		s.err = fmt.Errorf("cuda: Space: %w", err)
	}
}

// live panics after Close and reports whether work may be queued (no
// failure yet).
func (s *Space) live(method string) bool {
	if s.closed {
		panic("cuda: Space." + method + " after Close")
	}
	return s.err == nil
}

// status returns the error a method with an error result returns: closed,
// or the kept failure (then marked as returned).
func (s *Space) status() error {
	if s.closed {
		return errSpaceClosed
	}
	if s.err != nil {
		s.reported = true
		return s.err
	}
	return nil
}

func (s *Space) blk(b solvers.Block) *devBlock {
	d, ok := b.(*devBlock)
	if !ok || d.s != s {
		panic(fmt.Sprintf("cuda: Space: a block of another space (%T)", b))
	}
	return d
}

func (s *Space) idx(ix solvers.Index) *devIndex {
	d, ok := ix.(*devIndex)
	if !ok || d.s != s {
		panic(fmt.Sprintf("cuda: Space: an index list of another space (%T)", ix))
	}
	return d
}

// syncReset waits for the stream and releases the arena.
func (s *Space) syncReset() error {
	err := s.drv.sync()
	s.aoff = 0
	s.epoch++
	if err != nil {
		s.fail(err)
		return s.status()
	}
	return nil
}

// growArena replaces the arena by one of at least bytes (after a sync).
func (s *Space) growArena(bytes int64) error {
	if s.arena.bytes >= bytes {
		return nil
	}
	if s.arena.p != nil {
		if err := s.syncReset(); err != nil {
			return err
		}
	}
	if err := s.arena.ensure(s.drv, bytes); err != nil {
		return err
	}
	if err := s.dArena.ensure(s.drv, bytes, "the Space's staging area"); err != nil {
		return err
	}
	s.epoch++
	return nil
}

// reserve makes room for words 8-byte values (in up to four pieces) in the
// arena, synchronising (or growing it) first if need be, and reports
// whether work may go on. An operation reserves everything it stages before
// staging anything: a reset in the middle would let a later piece overwrite
// an earlier one before the kernel that reads it has run.
func (s *Space) reserve(words int) bool {
	bytes := int64(words)*8 + 4*16
	if s.err != nil {
		return false
	}
	if s.aoff+bytes > s.arena.bytes {
		if s.syncReset() != nil {
			return false
		}
		if bytes > s.arena.bytes {
			if err := s.growArena(2 * bytes); err != nil {
				s.fail(err)
				return false
			}
		}
	}
	return true
}

// take returns the offset of bytes of the arena, which reserve has made
// room for.
func (s *Space) take(bytes int64) int64 {
	bytes = (bytes + 15) &^ 15
	if s.aoff+bytes > s.arena.bytes {
		panic("cuda: Space: the arena overflowed its reservation")
	}
	off := s.aoff
	s.aoff += bytes
	return off
}

// putF64 stages v on the device and returns its device address (0 after a
// failure).
func (s *Space) putF64(v []float64) uintptr {
	off := s.take(int64(len(v)) * 8)
	copy(s.arena.f64(off, len(v)), v)
	return s.send(off, int64(len(v))*8)
}

// putInts stages v as int64 and returns its device address (0 after a
// failure).
func (s *Space) putInts(v []int) uintptr {
	off := s.take(int64(len(v)) * 8)
	h := s.arena.i64(off, len(v))
	for i, x := range v {
		h[i] = int64(x)
	}
	return s.send(off, int64(len(v))*8)
}

func (s *Space) send(off, bytes int64) uintptr {
	if err := s.drv.htodAsync(s.dArena.p+uintptr(off), unsafe.Add(s.arena.p, off), bytes); err != nil {
		s.fail(err)
		return 0
	}
	return s.dArena.p + uintptr(off)
}

// cols reserves room in the arena for the selection and extra more values
// (the operation's coefficients, say), and returns the number of selected
// columns of a block with c columns and the device address of the
// selection (0 for all columns in order). ok is false after a failure.
func (s *Space) cols(cols []int, c, extra int) (k int, p uintptr, ok bool) {
	k = c
	all := true
	if cols != nil {
		k = len(cols)
		all = len(cols) == c
		for a, j := range cols {
			if j < 0 || j >= c {
				panic(fmt.Sprintf("cuda: Space: column %d out of range [0,%d)", j, c))
			}
			if a != j {
				all = false
			}
		}
	}
	if !s.reserve(k + extra) {
		return k, 0, false
	}
	if all || k == 0 {
		return k, 0, true
	}
	if s.lastEpoch == s.epoch && s.lastPtr != 0 && slices.Equal(s.lastCols, cols) {
		return k, s.lastPtr, true
	}
	p = s.putInts(cols)
	s.lastCols = append(s.lastCols[:0], cols...)
	s.lastPtr, s.lastEpoch = p, s.epoch
	return k, p, s.err == nil
}

// begin starts a method that works on the columns cols of a block with c
// columns: it panics after Close, selects the columns as cols does, and
// returns ok = false when there is nothing to queue (a failure, or no
// columns selected).
func (s *Space) begin(method string, cols []int, c, extra int) (k int, cp uintptr, ok bool) {
	if !s.live(method) {
		return 0, 0, false
	}
	k, cp, ok = s.cols(cols, c, extra)
	return k, cp, ok && k > 0
}

// beginPair begins a method on the columns cols of dst and src (see begin)
// after checking their shapes: dst has dstRows rows, src srcRows rows, and
// src has dst's columns.
func (s *Space) beginPair(method string, dst *devBlock, dstRows int, src *devBlock, srcRows int, cols []int) (k int, cp uintptr, ok bool) {
	checkShape(method, dst, dstRows, dst.c)
	checkShape(method, src, srcRows, dst.c)
	return s.begin(method, cols, dst.c, 0)
}

// launch queues a kernel, keeping a launch failure.
func (s *Space) launch(k kfn, gx, gy, bx, by, smem int, a args) {
	if s.err != nil {
		return
	}
	if err := s.drv.launch(k, gx, gy, bx, by, smem, a); err != nil {
		s.fail(err)
	}
}

// run queues a product, keeping a failure.
func (s *Space) run(p product) {
	if s.err != nil {
		return
	}
	if err := s.o.runProduct(p); err != nil {
		s.fail(err)
	}
}

// alloc returns device memory for a block or an index list: a buffer of
// that size from the operator's pool (the blocks of closed spaces: a
// solver per Adam step allocates nothing once the first has run), or a new
// one; when the device is out of memory, the pool is freed and it tries
// again.
func (s *Space) alloc(bytes int64) (uintptr, error) {
	if p := s.o.fromPool(bytes); p != 0 {
		return p, nil
	}
	p, err := s.drv.alloc(bytes)
	if errors.Is(err, ErrOutOfMemory) && len(s.o.pool) > 0 {
		if err := s.o.drainPool(); err != nil {
			return 0, err
		}
		p, err = s.drv.alloc(bytes)
	}
	return p, err
}

// NewBlock returns an r×c block of zeros (r, c ≥ 1).
func (s *Space) NewBlock(r, c int) (solvers.Block, error) {
	if r < 1 || c < 1 {
		return nil, fmt.Errorf("%w: NewBlock(%d, %d): both dimensions must be ≥ 1", solvers.ErrShape, r, c)
	}
	if err := s.status(); err != nil {
		return nil, err
	}
	bytes := int64(r) * int64(c) * 8
	p, err := s.alloc(bytes)
	if err != nil {
		return nil, errAlloc(s.drv, fmt.Sprintf("a %d×%d block of the solver's vectors", r, c), bytes, err)
	}
	b := &devBlock{s: s, p: p, r: r, c: c}
	s.blocks = append(s.blocks, b)
	if err := s.drv.zeroAsync(p, bytes); err != nil {
		s.fail(err)
		return nil, s.status()
	}
	return b, nil
}

// NewIndex returns an index list holding a copy of idx (len ≥ 1).
func (s *Space) NewIndex(idx []int) (solvers.Index, error) {
	if len(idx) == 0 {
		return nil, fmt.Errorf("%w: NewIndex: empty index list", solvers.ErrShape)
	}
	if err := s.status(); err != nil {
		return nil, err
	}
	// The arena must hold a SetIndex of this length between two syncs.
	if err := s.growArena(max(arenaBytes, 4*int64(len(idx))*8)); err != nil {
		return nil, err
	}
	bytes := int64(len(idx)) * 8
	p, err := s.alloc(bytes)
	if err != nil {
		return nil, errAlloc(s.drv, "an index list", bytes, err)
	}
	ix := &devIndex{s: s, p: p, n: len(idx)}
	s.indices = append(s.indices, ix)
	return ix, s.SetIndex(ix, idx)
}

// SetIndex overwrites ix with idx, which has ix's length. The copy goes
// through the arena and reaches the device in stream order.
func (s *Space) SetIndex(ix solvers.Index, idx []int) error {
	d := s.idx(ix)
	if len(idx) != d.n {
		panic(fmt.Sprintf("cuda: Space.SetIndex: %d indices for a list of %d", len(idx), d.n))
	}
	for _, i := range idx {
		if i < 0 || i >= s.o.n {
			panic(fmt.Sprintf("cuda: Space.SetIndex: index %d out of range [0,%d)", i, s.o.n))
		}
	}
	if err := s.status(); err != nil {
		return err
	}
	if !s.reserve(len(idx)) {
		return s.status()
	}
	off := s.take(int64(len(idx)) * 8)
	h := s.arena.i64(off, len(idx))
	for i, x := range idx {
		h[i] = int64(x)
	}
	if err := s.drv.htodAsync(d.p, unsafe.Add(s.arena.p, off), int64(len(idx))*8); err != nil {
		s.fail(err)
	}
	return s.status()
}

// Upload copies the row-major r×c matrix src into b, through the pinned
// staging buffer.
func (s *Space) Upload(b solvers.Block, src []float64) error {
	d := s.blk(b)
	if len(src) != d.r*d.c {
		panic(fmt.Sprintf("cuda: Space.Upload: %d values for a %d×%d block", len(src), d.r, d.c))
	}
	if err := s.status(); err != nil {
		return err
	}
	d.factored = false
	return s.transfer(d, src, true)
}

// Download copies b into the row-major r×c matrix dst.
func (s *Space) Download(dst []float64, b solvers.Block) error {
	d := s.blk(b)
	if len(dst) != d.r*d.c {
		panic(fmt.Sprintf("cuda: Space.Download: %d values for a %d×%d block", len(dst), d.r, d.c))
	}
	if err := s.status(); err != nil {
		return err
	}
	return s.transfer(d, dst, false)
}

// transfer moves a whole block in pieces of the staging buffer, waiting for
// each piece before the buffer is reused.
func (s *Space) transfer(d *devBlock, h []float64, up bool) error {
	total := len(h)
	if err := s.stage.ensure(s.drv, min(int64(total)*8, stageBytes)); err != nil {
		s.fail(err)
		return s.status()
	}
	per := int(s.stage.bytes / 8)
	for lo := 0; lo < total; lo += per {
		n := min(per, total-lo)
		dev, host, bytes := d.p+uintptr(lo*8), s.stage.p, int64(n)*8
		var err error
		if up {
			copy(s.stage.f64(0, n), h[lo:lo+n])
			err = s.drv.htodAsync(dev, host, bytes)
		} else {
			err = s.drv.dtohAsync(host, dev, bytes)
		}
		if err != nil {
			s.fail(err)
			return s.status()
		}
		if err := s.syncReset(); err != nil {
			return err
		}
		if !up {
			copy(h[lo:lo+n], s.stage.f64(0, n))
		}
	}
	return nil
}

// Close releases every block and index list of the space and returns the
// first failure not yet returned.
func (s *Space) Close() error {
	if s.closed {
		return nil
	}
	serr := s.drv.sync()
	var ferr error
	switch {
	case serr != nil || s.err != nil || s.o.closed:
		ferr = s.free()
	case s.o.spare == nil:
		s.poolBlocks()
		s.o.spare = &spaceBuffers{}
		*s.o.spare, s.spaceBuffers = s.spaceBuffers, spaceBuffers{}
	default:
		s.poolBlocks()
		ferr = s.spaceBuffers.release(s.drv)
	}
	s.closed = true
	delete(s.o.spaces, s)
	switch {
	case s.err != nil:
		// The synchronisation reports the same failure (a GPU's context
		// stays failed): return it only if no method has.
		if !s.reported {
			return s.err
		}
		return nil
	case serr != nil:
		return fmt.Errorf("cuda: Space: %w", serr)
	}
	return ferr
}

// free releases the blocks, index lists and buffers.
func (s *Space) free() error {
	err := s.freeBlocks()
	if berr := s.spaceBuffers.release(s.drv); err == nil {
		err = berr
	}
	return err
}

// poolBlocks gives the blocks and index lists to the operator's pool, for
// the next space (after a synchronisation: no queued work uses them).
func (s *Space) poolBlocks() {
	for _, b := range s.blocks {
		bytes := int64(b.r) * int64(b.c) * 8
		s.o.pool[bytes] = append(s.o.pool[bytes], b.p)
	}
	for _, ix := range s.indices {
		bytes := int64(ix.n) * 8
		s.o.pool[bytes] = append(s.o.pool[bytes], ix.p)
	}
	s.blocks, s.indices = nil, nil
}

// freeBlocks releases the blocks and index lists.
func (s *Space) freeBlocks() error {
	var first error
	for _, b := range s.blocks {
		if err := s.drv.free(b.p); err != nil && first == nil {
			first = err
		}
	}
	for _, ix := range s.indices {
		if err := s.drv.free(ix.p); err != nil && first == nil {
			first = err
		}
	}
	s.blocks, s.indices = nil, nil
	return first
}

func checkShape(what string, d *devBlock, r, c int) {
	if d.r != r || d.c != c {
		panic(fmt.Sprintf("cuda: Space.%s: block is %d×%d, want %d×%d", what, d.r, d.c, r, c))
	}
}

// Mul sets dst[:,c] = H·src[:,c].
func (s *Space) Mul(dst, src solvers.Block, cols []int) {
	d, x := s.blk(dst), s.blk(src)
	n := s.o.n
	k, cp, ok := s.beginPair("Mul", d, n, x, n, cols)
	if !ok {
		return
	}
	s.run(s.o.mulH(d.p, x.p, d.c, cp, k))
	s.o.products += int64(k)
	s.o.rows += int64(n)
}

// MulRows sets dst[:,c] = H[rows,:]·src[:,c].
func (s *Space) MulRows(dst solvers.Block, rows solvers.Index, src solvers.Block, cols []int) {
	d, ix, x := s.blk(dst), s.idx(rows), s.blk(src)
	k, cp, ok := s.beginPair("MulRows", d, ix.n, x, s.o.n, cols)
	if !ok {
		return
	}
	s.run(s.o.rowsH(d.p, ix.p, ix.n, x.p, d.c, cp, k))
	s.o.rows += int64(ix.n)
}

// MulCols sets dst[:,c] = H[:,rows]·src[:,c]: K[:,rows]·src, then σ²·src
// added to the rows of dst in rows.
func (s *Space) MulCols(dst solvers.Block, rows solvers.Index, src solvers.Block, cols []int) {
	d, ix, x := s.blk(dst), s.idx(rows), s.blk(src)
	k, cp, ok := s.beginPair("MulCols", d, s.o.n, x, ix.n, cols)
	if !ok {
		return
	}
	s.run(s.o.colsK(d.p, ix.p, ix.n, x.p, d.c, cp, k))
	s.vec(vAddRows, d, x, ix.p, ix.n, cp, k, 0, s.o.NoiseVariance())
	s.o.rows += int64(ix.n)
}

// Principal sets dst = H[rows,rows] (both triangles).
func (s *Space) Principal(dst solvers.Block, rows solvers.Index) {
	d, ix := s.blk(dst), s.idx(rows)
	checkShape("Principal", d, ix.n, ix.n)
	if !s.live("Principal") {
		return
	}
	d.factored = false
	if err := s.o.principal(d.p, ix.p, ix.n); err != nil {
		s.fail(err)
	}
	s.o.rows += int64(ix.n)
}

// Factorize replaces the k×k block a (its upper triangle) by W = U⁻¹ for
// its Cholesky factor A = UᵀU, computed on the device: right-looking by
// blocks of 32 in a scratch copy, then the triangular inverse by block
// columns. Solve then needs two triangular products (A⁻¹b = W·Wᵀb), each
// one pass over the block, instead of two substitutions with a dependency
// chain of k steps; computing W costs about as much as the factor itself,
// once per block and step. It waits for the device to read the flag.
func (s *Space) Factorize(a solvers.Block) error {
	d := s.blk(a)
	k := d.r
	if d.c != k {
		panic(fmt.Sprintf("cuda: Space.Factorize: %d×%d block is not square", d.r, d.c))
	}
	if err := s.status(); err != nil {
		return err
	}
	d.factored = false
	if err := s.fac.ensure(s.drv, int64(k)*int64(k)*8, "Factorize's working copy"); err != nil {
		s.fail(err)
		return s.status()
	}
	if err := s.info.ensure(s.drv, 8, "Factorize's flag"); err != nil {
		s.fail(err)
		return s.status()
	}
	if err := s.drv.zeroAsync(s.info.p, 8); err != nil {
		s.fail(err)
		return s.status()
	}
	S, A, info := s.fac.p, d.p, s.info.p
	s.launch(kCholInit, blocks(k*k, vecThreads), 1, vecThreads, 1, 0, s.o.args[:0].p(A).i(k).p(S).p(info))
	tri := cholNB * (cholNB + 1) * 8
	for kb := 0; kb < k; kb += cholNB {
		s.launch(kCholDiag, 1, 1, 64, 1, tri, s.o.args[:0].p(S).i(k).i(kb).p(info))
		if rest := k - kb - cholNB; rest > 0 {
			s.launch(kCholPanel, blocks(rest, rowThreads), 1, rowThreads, 1, tri, s.o.args[:0].p(S).i(k).i(kb).p(info))
			g := blocks(rest, 16)
			s.launch(kCholUpd, g, g, 16, 16, 2*cholNB*16*8, s.o.args[:0].p(S).i(k).i(kb).p(info))
		}
	}
	s.launch(kTrinvDiag, blocks(k, cholNB), 1, cholNB, 1, 2*tri, s.o.args[:0].p(S).i(k).p(A).p(info))
	for j0 := cholNB; j0 < k; j0 += cholNB {
		s.launch(kTrinvCol, blocks(j0, rowThreads), 1, rowThreads, 1, 2*tri, s.o.args[:0].p(S).p(A).i(k).i(j0).p(info))
	}
	s.launch(kTrinvMirror, blocks(k*k, vecThreads), 1, vecThreads, 1, 0, s.o.args[:0].p(A).i(k).p(info))
	if !s.reserve(1) {
		return s.status()
	}
	off := s.take(8)
	if s.err == nil {
		if err := s.drv.dtohAsync(unsafe.Add(s.arena.p, off), info, 8); err != nil {
			s.fail(err)
		}
	}
	if err := s.syncReset(); err != nil {
		return err
	}
	if err := s.status(); err != nil {
		return err
	}
	switch flag := s.arena.i64(off, 1)[0]; {
	case flag < 0:
		return fmt.Errorf("%w: cuda: Factorize: the upper triangle has a NaN or Inf", solvers.ErrNotFinite)
	case flag > 0:
		return fmt.Errorf("%w: cuda: Factorize: the pivot of row %d is not positive", solvers.ErrNotPositiveDefinite, flag-1)
	}
	d.factored = true
	return nil
}

// Solve sets dst[:,c] = A⁻¹·src[:,c] = W·(Wᵀ·src[:,c]) for the factorised a.
func (s *Space) Solve(dst, a, src solvers.Block, cols []int) {
	d, f, x := s.blk(dst), s.blk(a), s.blk(src)
	if !f.factored {
		panic("cuda: Space.Solve: the block is not factorised")
	}
	k, cp, ok := s.beginPair("Solve", d, f.r, x, f.r, cols)
	if !ok {
		return
	}
	if err := s.ys.ensure(s.drv, int64(f.r)*int64(d.c)*8, "Solve's intermediate"); err != nil {
		s.fail(err)
		return
	}
	n := f.r
	s.run(product{kind: pTri, m: f.p, ldm: n, nj: n, nr: n, tri: 1, v: x.p, ldv: d.c, vcols: cp, k: k, out: s.ys.p, ldo: d.c})
	s.run(product{kind: pTri, m: f.p, ldm: n, nj: n, nr: n, tri: 2, v: s.ys.p, ldv: d.c, vcols: cp, k: k, out: d.p, ldo: d.c})
}

// MulT sets dst[:,c] = xᵀ·y[:,c]: chunk sums of CH rows, added in order.
func (s *Space) MulT(dst, x, y solvers.Block, cols []int) {
	d, xb, yb := s.blk(dst), s.blk(x), s.blk(y)
	k, cp, ok := s.beginPair("MulT", d, xb.c, yb, xb.r, cols)
	if !ok {
		return
	}
	n, rx := xb.r, xb.c
	nq := blocks(n, chunkRows)
	if err := s.o.dPart.ensure(s.drv, int64(nq)*int64(rx)*int64(k)*8, "the partial sums of a product"); err != nil {
		s.fail(err)
		return
	}
	part := s.o.dPart.p
	s.launch(kMult, blocks(nq*rx*k, vecThreads), 1, vecThreads, 1, 0, s.o.args[:0].p(xb.p).i(rx).p(yb.p).i(d.c).i(n).p(cp).i(k).i(nq).p(part))
	s.launch(kSumpart, blocks(rx*k, vecThreads), 1, vecThreads, 1, 0, s.o.args[:0].p(part).i(nq).i(rx).i(k).p(d.p).i(d.c).p(cp).i(0).p(0).i(0).p(0).f(0))
}

// MulAdd sets y[:,c] = y[:,c] + alpha·x·u[:,c].
func (s *Space) MulAdd(y solvers.Block, alpha float64, x, u solvers.Block, cols []int) {
	yb, xb, ub := s.blk(y), s.blk(x), s.blk(u)
	k, cp, ok := s.beginPair("MulAdd", yb, xb.r, ub, xb.c, cols)
	if !ok {
		return
	}
	s.launch(kMuladd, blocks(yb.r*k, vecThreads), 1, vecThreads, 1, 0, s.o.args[:0].p(yb.p).i(yb.c).i(yb.r).f(alpha).p(xb.p).i(xb.c).p(ub.p).p(cp).i(k))
}

// Dots sets dst[s·k+a] = Σ_i x[i,c_a]·y[i,c_a] over the rows of segment s:
// chunk sums of CH rows (fma, ascending rows), added in chunk order. It
// waits for the device.
func (s *Space) Dots(dst []float64, x, y solvers.Block, cols, segs []int) error {
	xb, yb := s.blk(x), s.blk(y)
	checkShape("Dots", yb, xb.r, xb.c)
	nseg := 1
	if segs != nil {
		nseg = len(segs) - 1
		if nseg < 1 || segs[0] < 0 || segs[nseg] > xb.r {
			panic(fmt.Sprintf("cuda: Space.Dots: segments %v of a block of %d rows", segs, xb.r))
		}
	}
	if err := s.status(); err != nil {
		return err
	}
	k := xb.c
	if cols != nil {
		k = len(cols)
	}
	if len(dst) != nseg*k {
		panic(fmt.Sprintf("cuda: Space.Dots: %d results for %d segments × %d columns", len(dst), nseg, k))
	}
	if k == 0 {
		return nil
	}
	_, cp, ok := s.cols(cols, xb.c, 2*(nseg+1)+nseg*k)
	if !ok {
		return s.status()
	}
	var segsP, cstartP uintptr
	nq := blocks(xb.r, chunkRows)
	if segs != nil {
		s.htab = s.htab[:0]
		q := 0
		for sg := 0; sg < nseg; sg++ {
			if segs[sg+1] < segs[sg] {
				panic(fmt.Sprintf("cuda: Space.Dots: decreasing segments %v", segs))
			}
			s.htab = append(s.htab, int64(q))
			q += (segs[sg+1] - segs[sg] + chunkRows - 1) / chunkRows
		}
		s.htab = append(s.htab, int64(q))
		nq = max(q, 1)
		segsP = s.putInts(segs)
		off := s.take(int64(len(s.htab)) * 8)
		copy(s.arena.i64(off, len(s.htab)), s.htab)
		cstartP = s.send(off, int64(len(s.htab))*8)
	}
	off := s.take(int64(len(dst)) * 8)
	out := s.dArena.p + uintptr(off)
	s.dotsOn(out, xb, yb, cp, k, segsP, cstartP, nseg, nq)
	if s.err == nil {
		if err := s.drv.dtohAsync(unsafe.Add(s.arena.p, off), out, int64(len(dst))*8); err != nil {
			s.fail(err)
		}
	}
	if err := s.syncReset(); err != nil {
		return err
	}
	if err := s.status(); err != nil {
		return err
	}
	copy(dst, s.arena.f64(off, len(dst)))
	return nil
}

// dotsOn queues the column dots of Dots into the device array out (nseg·k
// values): the nq chunk sums, then their sums by segment.
func (s *Space) dotsOn(out uintptr, xb, yb *devBlock, cp uintptr, k int, segsP, cstartP uintptr, nseg, nq int) {
	if err := s.part.ensure(s.drv, int64(nq)*int64(k)*8, "Dots' partial sums"); err != nil {
		s.fail(err)
		return
	}
	s.launch(kDotsPart, blocks(nq*k, vecThreads), 1, vecThreads, 1, 0, s.o.args[:0].p(xb.p).p(yb.p).i(xb.c).p(cp).i(k).i(xb.r).p(segsP).p(cstartP).i(nseg).i(nq).p(s.part.p))
	s.launch(kDotsFinal, blocks(nseg*k, vecThreads), 1, vecThreads, 1, 0, s.o.args[:0].p(s.part.p).p(cstartP).i(nseg).i(nq).i(k).p(out))
}

// CGStep is solvers.CGStepper: after Q = H·P, the rest of an
// unpreconditioned CG iteration on the columns cols, with α and β computed
// on the device: pᵀq (Dots), α = rzOld/pᵀq and −α (gpnb_cgcoef), V += α·P
// and R += (−α)·Q (Axpy), rᵀr (Dots), β = rᵀr/rzOld and P = R + β·P (Xpby).
// Each step is the kernel of the Space method it names, so the bits are
// those of the separate calls with α and β computed on the host; the one
// wait is for the 2k scalars pq and rz it returns.
func (s *Space) CGStep(pq, rz []float64, v, r, p, q solvers.Block, rzOld []float64, cols []int) error {
	vb, rb, pb, qb := s.blk(v), s.blk(r), s.blk(p), s.blk(q)
	for _, b := range []*devBlock{rb, pb, qb} {
		checkShape("CGStep", b, vb.r, vb.c)
	}
	if err := s.status(); err != nil {
		return err
	}
	k := vb.c
	if cols != nil {
		k = len(cols)
	}
	if len(pq) != k || len(rz) != k || len(rzOld) != k {
		panic(fmt.Sprintf("cuda: Space.CGStep: %d, %d and %d scalars for %d columns", len(pq), len(rz), len(rzOld), k))
	}
	if k == 0 {
		return nil
	}
	_, cp, ok := s.cols(cols, vb.c, 6*k)
	if !ok {
		return s.status()
	}
	old := s.putF64(rzOld)
	off := s.take(int64(2*k) * 8)
	pqD := s.dArena.p + uintptr(off) // pq, then rz
	rzD := pqD + uintptr(8*k)
	alpha := s.dArena.p + uintptr(s.take(int64(3*k)*8)) // α, −α, β
	neg, beta := alpha+uintptr(8*k), alpha+uintptr(16*k)
	n, nq, g := vb.r, blocks(vb.r, chunkRows), blocks(k, vecThreads)
	s.dotsOn(pqD, pb, qb, cp, k, 0, 0, 1, nq)
	s.launch(kCGCoef, g, 1, vecThreads, 1, 0, s.o.args[:0].p(old).p(pqD).i(k).p(alpha).p(neg))
	s.vec(vAxpy, vb, pb, 0, n, cp, k, alpha, 0)
	s.vec(vAxpy, rb, qb, 0, n, cp, k, neg, 0)
	s.dotsOn(rzD, rb, rb, cp, k, 0, 0, 1, nq)
	s.launch(kCGCoef, g, 1, vecThreads, 1, 0, s.o.args[:0].p(rzD).p(old).i(k).p(beta).p(0))
	s.vec(vXpby, pb, rb, 0, n, cp, k, beta, 0)
	if s.err == nil {
		if err := s.drv.dtohAsync(unsafe.Add(s.arena.p, off), pqD, int64(2*k)*8); err != nil {
			s.fail(err)
		}
	}
	if err := s.syncReset(); err != nil {
		return err
	}
	if err := s.status(); err != nil {
		return err
	}
	copy(pq, s.arena.f64(off, k))
	copy(rz, s.arena.f64(off+int64(8*k), k))
	return nil
}

// The operations of gpnb_vec (kernels/gpnb.cu).
const (
	vAxpy = iota
	vXpby
	vScale
	vCopy
	vGather
	vScatter
	vAxpyRows
	vScaleRows
	vAddRows
)

// vec queues gpnb_vec over r rows and the k selected columns cp of y.
func (s *Space) vec(op int, y, x *devBlock, rows uintptr, r int, cp uintptr, k int, coef uintptr, sc float64) {
	var xp uintptr
	if x != nil {
		xp = x.p
	}
	s.launch(kVec, blocks(r*k, vecThreads), 1, vecThreads, 1, 0, s.o.args[:0].i(op).p(y.p).p(xp).p(rows).i(y.c).i(r).p(cp).i(k).p(coef).f(sc))
}

// coefOp queues an element-wise operation with per-column coefficients.
func (s *Space) coefOp(method string, op int, y, x *devBlock, coef []float64, cols []int) {
	if x != nil {
		checkShape(method, x, y.r, y.c)
	}
	k, cp, ok := s.begin(method, cols, y.c, len(coef))
	if !ok {
		return
	}
	if len(coef) < k {
		panic(fmt.Sprintf("cuda: Space.%s: %d coefficients for %d columns", method, len(coef), k))
	}
	cf := s.putF64(coef[:k])
	if s.err != nil {
		return
	}
	s.vec(op, y, x, 0, y.r, cp, k, cf, 0)
}

// Axpy sets y[:,c_a] = y[:,c_a] + alpha[a]·x[:,c_a].
func (s *Space) Axpy(y solvers.Block, alpha []float64, x solvers.Block, cols []int) {
	s.coefOp("Axpy", vAxpy, s.blk(y), s.blk(x), alpha, cols)
}

// Xpby sets y[:,c_a] = x[:,c_a] + beta[a]·y[:,c_a].
func (s *Space) Xpby(y solvers.Block, x solvers.Block, beta []float64, cols []int) {
	s.coefOp("Xpby", vXpby, s.blk(y), s.blk(x), beta, cols)
}

// Scale sets y[:,c_a] = alpha[a]·y[:,c_a], +0 where alpha[a] is 0.
func (s *Space) Scale(y solvers.Block, alpha []float64, cols []int) {
	s.coefOp("Scale", vScale, s.blk(y), nil, alpha, cols)
}

// Copy sets y[:,c] = x[:,c].
func (s *Space) Copy(y, x solvers.Block, cols []int) {
	yb, xb := s.blk(y), s.blk(x)
	checkShape("Copy", xb, yb.r, yb.c)
	k, cp, ok := s.begin("Copy", cols, yb.c, 0)
	if !ok {
		return
	}
	s.vec(vCopy, yb, xb, 0, yb.r, cp, k, 0, 0)
}

// rowsOp queues a gather, scatter or row axpy between the k×w block small
// and the n×w block big.
func (s *Space) rowsOp(method string, op int, y, x *devBlock, ix *devIndex, coef []float64, cols []int) {
	small := x
	if op == vGather {
		small = y
	}
	checkShape(method, small, ix.n, y.c)
	if x.c != y.c {
		panic(fmt.Sprintf("cuda: Space.%s: blocks have %d and %d columns", method, y.c, x.c))
	}
	k, cp, ok := s.begin(method, cols, y.c, len(coef))
	if !ok {
		return
	}
	var cf uintptr
	if coef != nil {
		if len(coef) < k {
			panic(fmt.Sprintf("cuda: Space.%s: %d coefficients for %d columns", method, len(coef), k))
		}
		if cf = s.putF64(coef[:k]); s.err != nil {
			return
		}
	}
	s.vec(op, y, x, ix.p, ix.n, cp, k, cf, 0)
}

// GatherRows sets dst[a,c] = src[rows[a],c].
func (s *Space) GatherRows(dst solvers.Block, rows solvers.Index, src solvers.Block, cols []int) {
	s.rowsOp("GatherRows", vGather, s.blk(dst), s.blk(src), s.idx(rows), nil, cols)
}

// ScatterRows sets y[rows[a],c] = x[a,c].
func (s *Space) ScatterRows(y solvers.Block, rows solvers.Index, x solvers.Block, cols []int) {
	s.rowsOp("ScatterRows", vScatter, s.blk(y), s.blk(x), s.idx(rows), nil, cols)
}

// AxpyRows sets y[rows[a],c_b] = y[rows[a],c_b] + alpha[b]·x[a,c_b].
func (s *Space) AxpyRows(y solvers.Block, rows solvers.Index, alpha []float64, x solvers.Block, cols []int) {
	s.rowsOp("AxpyRows", vAxpyRows, s.blk(y), s.blk(x), s.idx(rows), alpha, cols)
}

// ScaleRows sets y[i,c] = y[i,c]·d[i] for the r×1 block d.
func (s *Space) ScaleRows(y, d solvers.Block, cols []int) {
	yb, db := s.blk(y), s.blk(d)
	checkShape("ScaleRows", db, yb.r, 1)
	k, cp, ok := s.begin("ScaleRows", cols, yb.c, 0)
	if !ok {
		return
	}
	s.vec(vScaleRows, yb, db, 0, yb.r, cp, k, 0, 0)
}
