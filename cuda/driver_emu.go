//go:build cudaemu && !cuda

package cuda

// #cgo CXXFLAGS: -std=c++20 -O2 -fno-strict-aliasing -Wno-unused-function
//
// // The sha256 of kernels/gpnb.cu, which emu.cc includes: Go's build cache
// // does not see that file, so this flag is what makes a changed gpnb.cu
// // rebuild the emulation. kernels/stamp.sh updates it; TestEmuSource checks it.
// #cgo CXXFLAGS: -DGPNB_CU_SHA256=sha256_dee4754524b60a5c2df96a9de09c52b8878f6c7d497d5da480b272bce68298b3
//
// const char *gpnb_emu_source(void);
// #cgo LDFLAGS: -lstdc++ -lm
// #include <stdint.h>
// #include <stdlib.h>
// #include <string.h>
// int gpnb_emu_lookup(const char *name);
// int gpnb_emu_check(int gx, int gy, int bx, int by, int shared);
// void gpnb_emu_run(int id, int gx, int gy, int bx, int by, const uint64_t *args);
// // Poisoned allocations: every byte 0xff, a NaN for floats.
// static uintptr_t emu_alloc(size_t n) { void *p = malloc(n); if (p) memset(p, 0xff, n); return (uintptr_t)p; }
// static void emu_free(uintptr_t p) { free((void *)p); }
// static void emu_copy(uintptr_t dst, uintptr_t src, size_t n) { memcpy((void *)dst, (const void *)src, n); }
// static void emu_zero(uintptr_t dst, size_t n) { memset((void *)dst, 0, n); }
// static void emu_htod(uintptr_t dst, const void *src, size_t n) { memcpy((void *)dst, src, n); }
// static void emu_dtoh(void *dst, uintptr_t src, size_t n) { memcpy(dst, (const void *)src, n); }
// static void *emu_alloc_host(size_t n) { return malloc(n); }
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// emuDriver runs the CUDA C kernels of kernels/gpnb.cu compiled as host
// C++ (emu.cc): the cudaemu build tag exists so the operator's host code
// and the kernels can be tested against the CPU operator on a machine
// without a GPU. "Device" memory is C heap memory. The stream is a queue:
// copies, memsets and launches wait in it until the stream is synchronised
// (sync, dtoh, free), as on a GPU, so host code that touched a pinned buffer
// before the device had read it would see the wrong data in the tests. The
// emulation also counts the traffic and allocations (emuStats), can refuse
// allocations beyond a limit (emuMemLimit: out of memory) and can fail a
// kernel while it runs (emuFault).
type emuDriver struct {
	mu    sync.Mutex
	inf   DeviceInfo
	ids   []C.int // emu.cc's index of each kernel of kernelNames
	queue []emuOp
	err   error             // sticky: the first fault of the stream's work
	sizes map[uintptr]int64 // device allocations
	hsize map[uintptr]int64 // pinned host allocations
	used  int64
	evs   map[event]time.Time
	nev   event
	args  *C.uint64_t // launch arguments in C memory
	stats emuCounts
}

// emuCounts counts what crossed between host and device, and allocations.
type emuCounts struct {
	htodCalls, dtohCalls int
	htodBytes, dtohBytes int64
	maxCopy              int64 // the largest single copy, either way
	allocs, hostAllocs   int
	launches, syncs      int
}

type emuOp struct {
	kind     int // opLaunch, opCopy, opZero, opEvent
	k        kfn
	gx, gy   int
	bx, by   int
	args     [24]uint64
	nargs    int
	dst, src uintptr
	bytes    int64
	ev       event
}

const (
	opLaunch = iota
	opCopy
	opZero
	opEvent
)

// Test hooks of the emulation.
var (
	emuMemLimit int64               = 2 << 30 // device bytes the emulation allocates at most
	emuFault    string                        // a kernel that fails while it runs
	emuHide     = map[string]bool{}           // kernels the emulated module lacks
	emuLock     sync.Mutex                    // emu.cc runs one kernel at a time
)

func openDriver(ordinal int) (driver, error) {
	if ordinal != 0 {
		return nil, fmt.Errorf("%w: device %d requested but the emulation has only device 0", ErrUnavailable, ordinal)
	}
	d := &emuDriver{
		inf:   DeviceInfo{Name: "gpnb CPU emulation of the CUDA kernels", Major: 9, TotalMemory: emuMemLimit, SMs: 1},
		sizes: map[uintptr]int64{},
		hsize: map[uintptr]int64{},
		evs:   map[event]time.Time{},
		args:  (*C.uint64_t)(C.malloc(8 * 24)),
	}
	has := func(_ kfn, name string) bool {
		if emuHide[name] {
			return false
		}
		cs := C.CString(name)
		defer C.free(unsafe.Pointer(cs))
		id := C.gpnb_emu_lookup(cs)
		d.ids = append(d.ids, id)
		return id >= 0
	}
	if err := checkKernels("the emulated module", has); err != nil {
		return nil, err
	}
	return d, nil
}

// Devices lists the one emulated device.
func Devices() ([]DeviceInfo, error) {
	d, err := getDriver(0)
	if err != nil {
		return nil, err
	}
	return []DeviceInfo{d.info()}, nil
}

func (d *emuDriver) info() DeviceInfo { return d.inf }

func (d *emuDriver) alloc(bytes int64) (uintptr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.used+bytes > emuMemLimit {
		return 0, fmt.Errorf("%w (emulated: %d of %d bytes in use)", ErrOutOfMemory, d.used, emuMemLimit)
	}
	p := uintptr(C.emu_alloc(C.size_t(bytes)))
	if p == 0 {
		return 0, ErrOutOfMemory
	}
	d.sizes[p] = bytes
	d.used += bytes
	d.stats.allocs++
	return p, nil
}

func (d *emuDriver) free(p uintptr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.inUse(p, d.sizes[p]); err != nil {
		return err
	}
	d.used -= d.sizes[p]
	delete(d.sizes, p)
	C.emu_free(C.uintptr_t(p))
	return nil
}

func (d *emuDriver) allocHost(bytes int64) (unsafe.Pointer, error) {
	d.mu.Lock()
	d.stats.hostAllocs++
	d.mu.Unlock()
	p := C.emu_alloc_host(C.size_t(bytes))
	if p == nil {
		return nil, errors.New("out of host memory")
	}
	d.mu.Lock()
	d.hsize[uintptr(p)] = bytes
	d.mu.Unlock()
	return p, nil
}

func (d *emuDriver) freeHost(p unsafe.Pointer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.inUse(uintptr(p), d.hsize[uintptr(p)]); err != nil {
		return err
	}
	delete(d.hsize, uintptr(p))
	C.free(p)
	return nil
}

// inUse returns an error when work still queued on the stream uses the
// memory at p (bytes long): a copy to or from it, or a launch with an
// argument pointing into it. A GPU's free need not wait for that work, so
// the driver's users synchronise before they free (d.mu held).
func (d *emuDriver) inUse(p uintptr, bytes int64) error {
	in := func(x uintptr) bool { return x >= p && x < p+uintptr(max(bytes, 1)) }
	for i := range d.queue {
		op := &d.queue[i]
		used := (op.kind == opCopy || op.kind == opZero) && (in(op.dst) || in(op.src))
		for _, a := range op.args[:op.nargs] {
			used = used || in(uintptr(a))
		}
		if used {
			return fmt.Errorf("cuda: freeing memory that queued work still uses (op %d of %d on the stream): synchronise first (emulated check)", i+1, len(d.queue))
		}
	}
	return nil
}

func (d *emuDriver) count(htod bool, bytes int64) {
	if htod {
		d.stats.htodCalls++
		d.stats.htodBytes += bytes
	} else {
		d.stats.dtohCalls++
		d.stats.dtohBytes += bytes
	}
	d.stats.maxCopy = max(d.stats.maxCopy, bytes)
}

func (d *emuDriver) htod(dst uintptr, src unsafe.Pointer, bytes int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bytes <= 0 {
		return nil
	}
	d.count(true, bytes)
	d.flush() // ordered after the queued work; src is Go memory: copy now
	C.emu_htod(C.uintptr_t(dst), src, C.size_t(bytes))
	return d.err
}

func (d *emuDriver) dtoh(dst unsafe.Pointer, src uintptr, bytes int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bytes <= 0 {
		return nil
	}
	d.count(false, bytes)
	d.flush()
	if d.err != nil {
		return d.err
	}
	C.emu_dtoh(dst, C.uintptr_t(src), C.size_t(bytes))
	return nil
}

func (d *emuDriver) htodAsync(dst uintptr, src unsafe.Pointer, bytes int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bytes > 0 {
		d.count(true, bytes)
		d.queue = append(d.queue, emuOp{kind: opCopy, dst: dst, src: uintptr(src), bytes: bytes}) // src is pinned (C) memory
	}
	return nil
}

func (d *emuDriver) dtohAsync(dst unsafe.Pointer, src uintptr, bytes int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bytes > 0 {
		d.count(false, bytes)
		d.queue = append(d.queue, emuOp{kind: opCopy, dst: uintptr(dst), src: src, bytes: bytes})
	}
	return nil
}

func (d *emuDriver) zeroAsync(dst uintptr, bytes int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if bytes > 0 {
		d.queue = append(d.queue, emuOp{kind: opZero, dst: dst, bytes: bytes})
	}
	return nil
}

func (d *emuDriver) memInfo() (free, total int64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return emuMemLimit - d.used, emuMemLimit, nil
}

func (d *emuDriver) launch(k kfn, gx, gy, bx, by, smem int, a []uint64) error {
	name := kernelNames[k]
	switch C.gpnb_emu_check(C.int(gx), C.int(gy), C.int(bx), C.int(by), C.int(smem)) {
	case 2:
		return fmt.Errorf("cuda: launching %s: %d bytes of shared memory, more than 48 KiB", name, smem)
	case 3:
		return fmt.Errorf("cuda: launching %s: bad geometry grid %d×%d block %d×%d", name, gx, gy, bx, by)
	}
	op := emuOp{kind: opLaunch, k: k, gx: gx, gy: gy, bx: bx, by: by, nargs: len(a)}
	if len(a) > len(op.args) {
		return fmt.Errorf("cuda: launching %s: %d arguments", name, len(a))
	}
	copy(op.args[:], a)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats.launches++
	d.queue = append(d.queue, op)
	return nil
}

func (d *emuDriver) record() (event, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nev++
	d.queue = append(d.queue, emuOp{kind: opEvent, ev: d.nev})
	return d.nev, nil
}

func (d *emuDriver) elapsed(start, end event) (float64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok1 := d.evs[start]
	b, ok2 := d.evs[end]
	if !ok1 || !ok2 {
		return 0, errors.New("cuda: event not recorded yet: synchronise first")
	}
	return float64(b.Sub(a)) / 1e6, nil
}

func (d *emuDriver) freeEvent(e event) {
	d.mu.Lock()
	delete(d.evs, e)
	d.mu.Unlock()
}

func (d *emuDriver) sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats.syncs++
	d.flush()
	return d.err
}

// flush runs the queued work in order (d.mu held). After a fault the rest
// is dropped, as a GPU's context is lost after one.
func (d *emuDriver) flush() {
	q := d.queue
	d.queue = d.queue[:0]
	if d.err != nil {
		return
	}
	emuLock.Lock()
	defer emuLock.Unlock()
	for i := range q {
		op := &q[i]
		switch op.kind {
		case opCopy:
			C.emu_copy(C.uintptr_t(op.dst), C.uintptr_t(op.src), C.size_t(op.bytes))
		case opZero:
			C.emu_zero(C.uintptr_t(op.dst), C.size_t(op.bytes))
		case opEvent:
			d.evs[op.ev] = time.Now()
		case opLaunch:
			name := kernelNames[op.k]
			if name == emuFault {
				d.err = fmt.Errorf("cuda: %s failed while running: an illegal memory access was encountered (emulated)", name)
				return
			}
			copy(unsafe.Slice((*uint64)(unsafe.Pointer(d.args)), len(op.args)), op.args[:op.nargs])
			C.gpnb_emu_run(d.ids[op.k], C.int(op.gx), C.int(op.gy), C.int(op.bx), C.int(op.by), d.args)
		}
	}
}

// emuStats returns the counts of device 0's emulation.
func emuStats() emuCounts {
	d, err := getDriver(0)
	if err != nil {
		return emuCounts{}
	}
	e := d.(*emuDriver)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// emuReset clears device 0's sticky fault (a test's emuFault), as a new
// context would.
func emuReset() {
	d, err := getDriver(0)
	if err != nil {
		return
	}
	e := d.(*emuDriver)
	e.mu.Lock()
	e.err = nil
	e.queue = e.queue[:0]
	e.mu.Unlock()
}

// emuZeroMax restarts the count of the largest single copy.
func emuZeroMax() {
	d, err := getDriver(0)
	if err != nil {
		return
	}
	e := d.(*emuDriver)
	e.mu.Lock()
	e.stats.maxCopy = 0
	e.mu.Unlock()
}

// emuSource returns the sha256 of the gpnb.cu the emulation was built from.
func emuSource() string { return C.GoString(C.gpnb_emu_source()) }
