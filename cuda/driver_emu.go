//go:build cudaemu && !cuda

package cuda

// #cgo CXXFLAGS: -std=c++20 -O2 -Wno-unused-function
// #cgo LDFLAGS: -lstdc++ -lpthread -lm
// #include <stdint.h>
// #include <stdlib.h>
// #include <string.h>
// int gpnb_emu_launch(const char *name, int gx, int gy, int bx, int by, int shared, const uint64_t *args);
// int gpnb_emu_has(const char *name);
// // Poisoned allocations: every byte 0xff, a NaN for floats.
// static uintptr_t emu_alloc(size_t n) { void *p = malloc(n); if (p) memset(p, 0xff, n); return (uintptr_t)p; }
// static void emu_free(uintptr_t p) { free((void *)p); }
// static void emu_htod(uintptr_t dst, const void *src, size_t n) { memcpy((void *)dst, src, n); }
// static void emu_dtoh(void *dst, uintptr_t src, size_t n) { memcpy(dst, (const void *)src, n); }
import "C"

import (
	"fmt"
	"unsafe"
)

// emuDriver runs the CUDA C kernels of kernels/gpnb.cu compiled as host
// C++ (emu.cc): the cudaemu build tag exists so the operator's host code
// and the kernels can be tested against the CPU operator on a machine
// without a GPU. "Device" memory is C heap memory.
type emuDriver struct{ inf DeviceInfo }

func openDriver(ordinal int) (driver, error) {
	if ordinal != 0 {
		return nil, fmt.Errorf("%w: device %d requested but the emulation has only device 0", ErrUnavailable, ordinal)
	}
	return &emuDriver{inf: DeviceInfo{Name: "gpnb CPU emulation of the CUDA kernels", Major: 9, TotalMemory: 2 << 30, SMs: 1}}, nil
}

// Devices lists the one emulated device.
func Devices() ([]DeviceInfo, error) {
	d, _ := openDriver(0)
	return []DeviceInfo{d.info()}, nil
}

func (d *emuDriver) info() DeviceInfo { return d.inf }

func (d *emuDriver) alloc(bytes int64) (uintptr, error) {
	p := C.emu_alloc(C.size_t(bytes))
	if p == 0 {
		return 0, fmt.Errorf("out of memory")
	}
	return uintptr(p), nil
}

func (d *emuDriver) free(p uintptr) error {
	C.emu_free(C.uintptr_t(p))
	return nil
}

func (d *emuDriver) htod(dst uintptr, src unsafe.Pointer, bytes int64) error {
	if bytes > 0 {
		C.emu_htod(C.uintptr_t(dst), src, C.size_t(bytes))
	}
	return nil
}

func (d *emuDriver) dtoh(dst unsafe.Pointer, src uintptr, bytes int64) error {
	if bytes > 0 {
		C.emu_dtoh(dst, C.uintptr_t(src), C.size_t(bytes))
	}
	return nil
}

func (d *emuDriver) memInfo() (free, total int64, err error) { return 1 << 30, 2 << 30, nil }

func (d *emuDriver) launch(fn string, gx, gy, bx, by, smem int, args []uint64) error {
	name := C.CString(fn)
	defer C.free(unsafe.Pointer(name))
	ca := (*C.uint64_t)(C.malloc(C.size_t(8 * max(1, len(args)))))
	defer C.free(unsafe.Pointer(ca))
	copy(unsafe.Slice((*uint64)(unsafe.Pointer(ca)), len(args)), args)
	switch C.gpnb_emu_launch(name, C.int(gx), C.int(gy), C.int(bx), C.int(by), C.int(smem), ca) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("cuda: no kernel %s", fn)
	case 2:
		return fmt.Errorf("cuda: %s asks for %d bytes of shared memory, more than 48 KiB", fn, smem)
	default:
		return fmt.Errorf("cuda: %s: bad launch geometry grid %d×%d block %d×%d", fn, gx, gy, bx, by)
	}
}

// emuHas reports whether the emulation has kernel name.
func emuHas(name string) bool {
	c := C.CString(name)
	defer C.free(unsafe.Pointer(c))
	return C.gpnb_emu_has(c) == 1
}
