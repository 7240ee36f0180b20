//go:build cuda || cudaemu

package cuda

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"unsafe"
)

// driver is what the operator and its spaces need from a device: memory,
// copies and kernel launches, all on one stream. The cuda build implements
// it with the CUDA driver API; the cudaemu build (tests only) with a CPU
// emulation of the same CUDA C kernels that queues the stream's work until
// it is synchronised, as a GPU does.
//
// Ordering: every copy, memset and launch runs on the driver's one stream,
// in the order issued. Launches return before the kernel runs (a launch
// error, such as a bad geometry, is returned at once; a fault while it runs
// is returned by the next sync). The *Async copies go between device memory
// and pinned host memory from allocHost, which must stay untouched until
// the next sync returns; htod and dtoh take ordinary (pageable) host memory
// and have finished with it when they return (dtoh waits for the stream).
// free and freeHost must not be given memory that queued work may still
// use: synchronise first (the emulation checks it).
type driver interface {
	alloc(bytes int64) (uintptr, error)
	free(p uintptr) error
	allocHost(bytes int64) (unsafe.Pointer, error)
	freeHost(p unsafe.Pointer) error
	htod(dst uintptr, src unsafe.Pointer, bytes int64) error
	dtoh(dst unsafe.Pointer, src uintptr, bytes int64) error
	htodAsync(dst uintptr, src unsafe.Pointer, bytes int64) error
	dtohAsync(dst unsafe.Pointer, src uintptr, bytes int64) error
	// zeroAsync sets bytes of device memory to zero.
	zeroAsync(dst uintptr, bytes int64) error
	// launch runs kernel k on a gx×gy grid of bx×by blocks with smem bytes
	// of dynamic shared memory; every argument is 8 bytes. The driver does
	// not keep args.
	launch(k kfn, gx, gy, bx, by, smem int, args []uint64) error
	// sync waits for the stream and returns the first failure of its work.
	sync() error
	// record returns an event recorded on the stream now; elapsed the
	// milliseconds between two recorded events (after a sync).
	record() (event, error)
	elapsed(start, end event) (float64, error)
	freeEvent(e event)
	// memInfo returns free and total device memory in bytes.
	memInfo() (free, total int64, err error)
	info() DeviceInfo
}

// event is a driver's handle for a recorded point in its stream.
type event uintptr

// ErrOutOfMemory is wrapped by the errors of allocations that the device
// refused for lack of memory. Their messages say how to need less: float32
// storage of K, or the matrix-free operator.
var ErrOutOfMemory = errors.New("cuda: out of device memory")

// errAlloc is the message of a failed allocation of bytes for what.
func errAlloc(d driver, what string, bytes int64, err error) error {
	if !errors.Is(err, ErrOutOfMemory) {
		return fmt.Errorf("cuda: allocating %s of device memory for %s: %w", fmtBytes(bytes), what, err)
	}
	free, total, ierr := d.memInfo()
	have := ""
	if ierr == nil {
		have = fmt.Sprintf(" (%s free of %s)", fmtBytes(free), fmtBytes(total))
	}
	return fmt.Errorf("%w: %s for %s%s: use --precision float32 (half the memory of K) or --operator matrixfree (no n×n matrix on the device)", err, fmtBytes(bytes), what, have)
}

func fmtBytes(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", b)
}

var (
	driversMu sync.Mutex
	drivers   = map[int]driver{}
)

// getDriver returns the (cached) driver for a device ordinal.
func getDriver(ordinal int) (driver, error) {
	if ordinal < 0 {
		return nil, fmt.Errorf("%w: device ordinal %d: use 0 for the first GPU", ErrUnavailable, ordinal)
	}
	driversMu.Lock()
	defer driversMu.Unlock()
	if d, ok := drivers[ordinal]; ok {
		return d, nil
	}
	d, err := openDriver(ordinal)
	if err != nil {
		return nil, err
	}
	drivers[ordinal] = d
	return d, nil
}

// Available returns nil when the GPU named by GPNB_CUDA_DEVICE (default 0)
// can run the kernels: the driver sees it, its compute capability is at
// least 6.0 and the kernels load. Otherwise the error says why and wraps
// ErrUnavailable.
func Available() error {
	_, err := getDriver(envDevice())
	return err
}

// envDevice returns GPNB_CUDA_DEVICE, or 0.
func envDevice() int {
	if s := os.Getenv("GPNB_CUDA_DEVICE"); s != "" {
		if v, err := strconv.Atoi(s); err == nil {
			return v
		}
		return -1
	}
	return 0
}

// ModuleEnv names the environment variable that, when set, gives the path
// of a module (cubin, fatbin or PTX) to load instead of the embedded
// kernels: kernels compiled on the GPU machine by cuda/kernels/gen.sh, say.
const ModuleEnv = "GPNB_CUDA_MODULE"

// checkKernels returns an error naming the first kernel of kernelNames that
// the loaded module lacks (has reports presence, and resolves kernel k), so a
// stale module fails when the device is opened rather than at its first
// launch.
func checkKernels(source string, has func(k kfn, name string) bool) error {
	for k, name := range kernelNames {
		if !has(kfn(k), name) {
			return fmt.Errorf("%w: kernel %s is missing from %s: it was compiled from an older cuda/kernels/gpnb.cu; regenerate the kernels with cuda/kernels/gen.sh (make ptx)", ErrUnavailable, name, source)
		}
	}
	return nil
}

// Built reports whether the package was compiled with the cuda build tag
// (or the cudaemu test emulation).
const Built = true

// args packs kernel arguments as 8-byte words into a reused slice.
type args []uint64

func (a args) p(v uintptr) args { return append(a, uint64(v)) }
func (a args) i(v int) args     { return append(a, uint64(int64(v))) }
func (a args) f(v float64) args { return append(a, math.Float64bits(v)) }

// dbuf is a device buffer that grows on demand and is reused across calls.
type dbuf struct {
	p     uintptr
	bytes int64
}

// ensure makes b at least bytes long (contents are not kept); what names it
// in an out-of-memory message. A buffer it replaces is freed after the
// stream has been synchronised, since queued work may still use it.
func (b *dbuf) ensure(d driver, bytes int64, what string) error {
	if bytes <= b.bytes && b.p != 0 {
		return nil
	}
	if b.p != 0 {
		if err := d.sync(); err != nil {
			return err
		}
		if err := d.free(b.p); err != nil {
			return err
		}
		b.p, b.bytes = 0, 0
	}
	if bytes == 0 {
		bytes = 8
	}
	p, err := d.alloc(bytes)
	if err != nil {
		return errAlloc(d, what, bytes, err)
	}
	b.p, b.bytes = p, bytes
	return nil
}

func (b *dbuf) release(d driver) error {
	if b.p == 0 {
		return nil
	}
	err := d.free(b.p)
	b.p, b.bytes = 0, 0
	return err
}

// hbuf is pinned host memory that grows on demand (contents not kept; the
// memory it replaces is freed after a synchronisation).
type hbuf struct {
	p     unsafe.Pointer
	bytes int64
}

func (b *hbuf) ensure(d driver, bytes int64) error {
	if bytes <= b.bytes && b.p != nil {
		return nil
	}
	if b.p != nil {
		if err := d.sync(); err != nil { // queued copies may still use it
			return err
		}
		if err := d.freeHost(b.p); err != nil {
			return err
		}
		b.p, b.bytes = nil, 0
	}
	p, err := d.allocHost(bytes)
	if err != nil {
		return fmt.Errorf("cuda: allocating %s of pinned host memory: %w", fmtBytes(bytes), err)
	}
	b.p, b.bytes = p, bytes
	return nil
}

func (b *hbuf) release(d driver) error {
	if b.p == nil {
		return nil
	}
	err := d.freeHost(b.p)
	b.p, b.bytes = nil, 0
	return err
}

// f64 returns the first n float64 of b.
func (b *hbuf) f64(off int64, n int) []float64 {
	return unsafe.Slice((*float64)(unsafe.Add(b.p, off)), n)
}

// i64 returns the first n int64 of b from byte offset off.
func (b *hbuf) i64(off int64, n int) []int64 {
	return unsafe.Slice((*int64)(unsafe.Add(b.p, off)), n)
}
