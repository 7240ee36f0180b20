//go:build cuda || cudaemu

package cuda

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"unsafe"
)

// driver is what the operator needs from a device: memory, copies and
// kernel launches by name. The cuda build implements it with
// gorgonia.org/cu; the cudaemu build (tests only) with a CPU emulation of
// the same CUDA C kernels.
type driver interface {
	alloc(bytes int64) (uintptr, error)
	free(p uintptr) error
	htod(dst uintptr, src unsafe.Pointer, bytes int64) error
	dtoh(dst unsafe.Pointer, src uintptr, bytes int64) error
	// launch runs kernel fn on a gx×gy grid of bx×by blocks with smem
	// bytes of dynamic shared memory; every argument is 8 bytes.
	launch(fn string, gx, gy, bx, by, smem int, args []uint64) error
	// memInfo returns free and total device memory in bytes.
	memInfo() (free, total int64, err error)
	info() DeviceInfo
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
// least 6.0 and the embedded PTX loads. Otherwise the error says why and
// wraps ErrUnavailable.
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

// Built reports whether the package was compiled with the cuda build tag
// (or the cudaemu test emulation).
const Built = true

// arg packs kernel arguments as 8-byte words.
type arg = uint64

func ptrArg(p uintptr) arg { return uint64(p) }
func intArg(v int) arg     { return uint64(int64(v)) }
func f64Arg(v float64) arg { return math.Float64bits(v) }

// dbuf is a device buffer that grows on demand and is reused across calls.
type dbuf struct {
	p     uintptr
	bytes int64
}

// ensure makes b at least bytes long (contents are not kept).
func (b *dbuf) ensure(d driver, bytes int64) error {
	if bytes <= b.bytes && b.p != 0 {
		return nil
	}
	if b.p != 0 {
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
		return fmt.Errorf("cuda: allocating %d bytes of device memory: %w", bytes, err)
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
