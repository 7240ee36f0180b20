//go:build cuda

package cuda

// #cgo LDFLAGS: -lcuda
// #cgo linux CFLAGS: -I/usr/local/cuda/include
// #cgo linux LDFLAGS: -L/usr/local/cuda/lib64 -L/usr/local/cuda/lib64/stubs
// #include <cuda.h>
// #include <stdint.h>
// #include <stdlib.h>
//
// // The calls of the stream path, made directly: gorgonia.org/cu has no
// // pinned allocation and copies every launch's arguments through malloc.
// // These functions keep their signatures from CUDA 11.8 to 13.
// static int gpnb_launch(uintptr_t f, int gx, int gy, int bx, int by, int smem, uintptr_t stream, uint64_t *args, int nargs) {
//     void *params[32];
//     for (int i = 0; i < nargs; i++) params[i] = &args[i];
//     return cuLaunchKernel((CUfunction)f, gx, gy, 1, bx, by, 1, smem, (CUstream)stream, params, NULL);
// }
// static int gpnb_htod_async(uintptr_t dst, const void *src, size_t n, uintptr_t s) { return cuMemcpyHtoDAsync((CUdeviceptr)dst, src, n, (CUstream)s); }
// static int gpnb_dtoh_async(void *dst, uintptr_t src, size_t n, uintptr_t s) { return cuMemcpyDtoHAsync(dst, (CUdeviceptr)src, n, (CUstream)s); }
// static int gpnb_zero_async(uintptr_t dst, size_t n, uintptr_t s) { return cuMemsetD8Async((CUdeviceptr)dst, 0, n, (CUstream)s); }
// static int gpnb_sync(uintptr_t s) { return cuStreamSynchronize((CUstream)s); }
// static int gpnb_stream(uintptr_t *s) { CUstream x; int r = cuStreamCreate(&x, CU_STREAM_NON_BLOCKING); *s = (uintptr_t)x; return r; }
// static int gpnb_alloc(uintptr_t *p, size_t n) { CUdeviceptr x; int r = cuMemAlloc(&x, n); *p = (uintptr_t)x; return r; }
// static int gpnb_free(uintptr_t p) { return cuMemFree((CUdeviceptr)p); }
// static int gpnb_alloc_host(void **p, size_t n) { return cuMemAllocHost(p, n); }
// static int gpnb_free_host(void *p) { return cuMemFreeHost(p); }
// static int gpnb_mem_info(size_t *free, size_t *total) { return cuMemGetInfo(free, total); }
// static int gpnb_event(uintptr_t *e, uintptr_t s) { CUevent x; int r = cuEventCreate(&x, CU_EVENT_DEFAULT); if (r) return r; *e = (uintptr_t)x; return cuEventRecord(x, (CUstream)s); }
// static int gpnb_elapsed(float *ms, uintptr_t a, uintptr_t b) { return cuEventElapsedTime(ms, (CUevent)a, (CUevent)b); }
// static void gpnb_event_free(uintptr_t e) { cuEventDestroy((CUevent)e); }
// static int gpnb_load(uintptr_t *m, const void *image) { CUmodule x; int r = cuModuleLoadData(&x, image); *m = (uintptr_t)x; return r; }
// static int gpnb_function(uintptr_t *f, uintptr_t m, const char *name) { CUfunction x; int r = cuModuleGetFunction(&x, (CUmodule)m, name); *f = (uintptr_t)x; return r; }
// static void gpnb_unload(uintptr_t m, uintptr_t s) { cuModuleUnload((CUmodule)m); cuStreamDestroy((CUstream)s); }
// static const char *gpnb_error(int r) { const char *s = 0; cuGetErrorString((CUresult)r, &s); return s ? s : "unknown CUDA error"; }
import "C"

import (
	_ "embed"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

// The kernels, compiled from kernels/gpnb.cu by kernels/gen.sh (make ptx):
// machine code for compute capability 9.0 (H100, H200), loaded with no JIT,
// and PTX for 9.0 and later and for 6.0 to 8.x, which the driver's JIT
// compiles at start-up. gen.sh compiles with -fmad=false, so the JIT of any
// driver gives the bits of the cubin.
//
//go:embed kernels/gpnb_sm90.cubin
var cubinSM90 []byte

//go:embed kernels/gpnb_sm90.ptx
var ptxSM90 []byte

//go:embed kernels/gpnb_sm60.ptx
var ptxSM60 []byte

// cuDriver runs on one device's primary context and one non-blocking
// stream. Every call locks the goroutine to its OS thread and makes the
// context current there, since a CUDA context is current per thread and
// goroutines move between threads.
type cuDriver struct {
	mu     sync.Mutex
	dev    cu.Device
	ctx    cu.CUContext
	stream C.uintptr_t
	mod    C.uintptr_t
	fns    []C.uintptr_t // by kfn
	module string        // which image was loaded, for messages
	inf    DeviceInfo
	cargs  *C.uint64_t // launch arguments in C memory (cgo may not keep Go pointers)
}

// cuErr turns a CUresult into an error (nil for success); out of memory
// wraps ErrOutOfMemory.
func cuErr(r C.int) error {
	if r == 0 {
		return nil
	}
	if r == C.CUDA_ERROR_OUT_OF_MEMORY {
		return ErrOutOfMemory
	}
	return fmt.Errorf("CUDA error %d: %s", int(r), C.GoString(C.gpnb_error(r)))
}

// do runs f with the device's context current on a locked OS thread.
func (d *cuDriver) do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return fmt.Errorf("cuda: making the context of GPU %d current: %w", d.inf.Ordinal, err)
	}
	return f()
}

func deviceInfo(ordinal int) (DeviceInfo, cu.Device, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return DeviceInfo{}, 0, fmt.Errorf("%w: the CUDA driver cannot count devices: %v", ErrUnavailable, err)
	}
	if n == 0 {
		return DeviceInfo{}, 0, fmt.Errorf("%w: the CUDA driver sees no GPU (check nvidia-smi and CUDA_VISIBLE_DEVICES)", ErrUnavailable)
	}
	if ordinal < 0 || ordinal >= n {
		return DeviceInfo{}, 0, fmt.Errorf("%w: device %d requested but the driver sees %d GPU(s): use 0..%d (GPNB_CUDA_DEVICE or Options.Device)", ErrUnavailable, ordinal, n, n-1)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return DeviceInfo{}, 0, fmt.Errorf("%w: device %d: %v", ErrUnavailable, ordinal, err)
	}
	inf := DeviceInfo{Ordinal: ordinal, Driver: cu.Version()}
	inf.DriverVersion = InstalledDriver()
	if inf.Name, err = dev.Name(); err != nil {
		return inf, dev, fmt.Errorf("%w: device %d name: %v", ErrUnavailable, ordinal, err)
	}
	if inf.TotalMemory, err = dev.TotalMem(); err != nil {
		return inf, dev, fmt.Errorf("%w: device %d memory: %v", ErrUnavailable, ordinal, err)
	}
	attrs, err := dev.Attributes(cu.ComputeCapabilityMajor, cu.ComputeCapabilityMinor, cu.MultiprocessorCount,
		cu.ClockRate, cu.MemoryClockRate, cu.GlobalMemoryBusWidth)
	if err != nil {
		return inf, dev, fmt.Errorf("%w: device %d attributes: %v", ErrUnavailable, ordinal, err)
	}
	inf.Major, inf.Minor, inf.SMs, inf.ClockKHz, inf.MemClockKHz, inf.BusWidthBits = attrs[0], attrs[1], attrs[2], attrs[3], attrs[4], attrs[5]
	return inf, dev, nil
}

// Devices lists the GPUs the driver sees.
func Devices() ([]DeviceInfo, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("%w: the CUDA driver cannot count devices: %v", ErrUnavailable, err)
	}
	out := make([]DeviceInfo, 0, n)
	for i := 0; i < n; i++ {
		inf, _, err := deviceInfo(i)
		if err != nil {
			return out, err
		}
		out = append(out, inf)
	}
	return out, nil
}

// image is a module the driver can load.
type image struct {
	name string
	data []byte // PTX must end in a NUL byte
}

// moduleImages returns the modules to try for a device, in order: the file
// named by GPNB_CUDA_MODULE alone when it is set; otherwise the embedded
// cubin on compute capability 9.0, then the embedded PTX for the device.
func moduleImages(inf DeviceInfo) ([]image, error) {
	if path := os.Getenv(ModuleEnv); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%w: %s=%s: %v", ErrUnavailable, ModuleEnv, path, err)
		}
		return []image{{path, append(b, 0)}}, nil
	}
	var imgs []image
	if inf.Major == 9 && inf.Minor == 0 {
		imgs = append(imgs, image{"the embedded cubin for sm_90", cubinSM90})
	}
	if inf.Major >= 9 {
		return append(imgs, image{"the embedded PTX for sm_90", append(ptxSM90[:len(ptxSM90):len(ptxSM90)], 0)}), nil
	}
	return append(imgs, image{"the embedded PTX for sm_60", append(ptxSM60[:len(ptxSM60):len(ptxSM60)], 0)}), nil
}

func openDriver(ordinal int) (driver, error) {
	inf, dev, err := deviceInfo(ordinal)
	if err != nil {
		return nil, err
	}
	if inf.Major < 6 {
		return nil, fmt.Errorf("%w: %s has compute capability %d.%d; the gpnb kernels need 6.0 or later: use the CPU backend", ErrUnavailable, inf.Name, inf.Major, inf.Minor)
	}
	imgs, err := moduleImages(inf)
	if err != nil {
		return nil, err
	}
	return openDriverImages(ordinal, inf, dev, imgs)
}

// openDriverImages opens the device with the first of imgs that loads.
func openDriverImages(ordinal int, inf DeviceInfo, dev cu.Device, imgs []image) (*cuDriver, error) {
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: retaining the primary context: %v (is the GPU in exclusive or prohibited compute mode?)", ErrUnavailable, inf.Name, err)
	}
	d := &cuDriver{dev: dev, ctx: ctx, inf: inf, fns: make([]C.uintptr_t, len(kernelNames))}
	d.cargs = (*C.uint64_t)(C.malloc(8 * 32))
	err = d.do(func() error {
		if err := cuErr(C.gpnb_stream(&d.stream)); err != nil {
			return fmt.Errorf("%w: %s: creating a stream: %v", ErrUnavailable, inf.Name, err)
		}
		var failed []string
		for _, img := range imgs {
			p := C.CBytes(img.data)
			r := C.gpnb_load(&d.mod, p)
			C.free(p)
			if err := cuErr(r); err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", img.name, err))
				continue
			}
			d.module = img.name
			return checkKernels(img.name, func(k kfn, name string) bool {
				cs := C.CString(name)
				defer C.free(unsafe.Pointer(cs))
				var f C.uintptr_t
				if C.gpnb_function(&f, d.mod, cs) != 0 {
					return false
				}
				d.fns[k] = f
				return true
			})
		}
		return fmt.Errorf("%w: %s (driver %d): no kernel module loads: %v (a driver older than CUDA 11.8 cannot JIT PTX ISA 7.8: update the driver)", ErrUnavailable, inf.Name, inf.Driver, failed)
	})
	if err != nil {
		_ = dev.ReleasePrimaryCtx()
		return nil, err
	}
	return d, nil
}

func (d *cuDriver) info() DeviceInfo { return d.inf }

// close unloads the module, destroys the stream and releases the context
// (for drivers opened beside the cached one, as TestModuleBits does).
func (d *cuDriver) close() {
	_ = d.sync()
	_ = d.do(func() error { C.gpnb_unload(d.mod, d.stream); return nil })
	_ = d.dev.ReleasePrimaryCtx()
	C.free(unsafe.Pointer(d.cargs))
}

func (d *cuDriver) alloc(bytes int64) (p uintptr, err error) {
	err = d.do(func() error {
		var x C.uintptr_t
		err := cuErr(C.gpnb_alloc(&x, C.size_t(bytes)))
		p = uintptr(x)
		return err
	})
	return p, err
}

func (d *cuDriver) free(p uintptr) error {
	return d.do(func() error { return cuErr(C.gpnb_free(C.uintptr_t(p))) })
}

func (d *cuDriver) allocHost(bytes int64) (p unsafe.Pointer, err error) {
	err = d.do(func() error { return cuErr(C.gpnb_alloc_host(&p, C.size_t(bytes))) })
	return p, err
}

func (d *cuDriver) freeHost(p unsafe.Pointer) error {
	return d.do(func() error { return cuErr(C.gpnb_free_host(p)) })
}

// htod copies from pageable memory: the driver stages it before returning.
func (d *cuDriver) htod(dst uintptr, src unsafe.Pointer, bytes int64) error {
	if bytes == 0 {
		return nil
	}
	return d.do(func() error {
		return cuErr(C.gpnb_htod_async(C.uintptr_t(dst), src, C.size_t(bytes), d.stream))
	})
}

// dtoh copies into pageable memory, after the stream's earlier work.
func (d *cuDriver) dtoh(dst unsafe.Pointer, src uintptr, bytes int64) error {
	if bytes == 0 {
		return nil
	}
	return d.do(func() error {
		if err := cuErr(C.gpnb_dtoh_async(dst, C.uintptr_t(src), C.size_t(bytes), d.stream)); err != nil {
			return err
		}
		return cuErr(C.gpnb_sync(d.stream))
	})
}

func (d *cuDriver) htodAsync(dst uintptr, src unsafe.Pointer, bytes int64) error {
	if bytes == 0 {
		return nil
	}
	return d.do(func() error { return cuErr(C.gpnb_htod_async(C.uintptr_t(dst), src, C.size_t(bytes), d.stream)) })
}

func (d *cuDriver) dtohAsync(dst unsafe.Pointer, src uintptr, bytes int64) error {
	if bytes == 0 {
		return nil
	}
	return d.do(func() error { return cuErr(C.gpnb_dtoh_async(dst, C.uintptr_t(src), C.size_t(bytes), d.stream)) })
}

func (d *cuDriver) zeroAsync(dst uintptr, bytes int64) error {
	if bytes == 0 {
		return nil
	}
	return d.do(func() error { return cuErr(C.gpnb_zero_async(C.uintptr_t(dst), C.size_t(bytes), d.stream)) })
}

func (d *cuDriver) memInfo() (free, total int64, err error) {
	err = d.do(func() error {
		var f, t C.size_t
		err := cuErr(C.gpnb_mem_info(&f, &t))
		free, total = int64(f), int64(t)
		return err
	})
	return free, total, err
}

// launch enqueues the kernel without waiting for it: a fault while it runs
// is reported by the next sync.
func (d *cuDriver) launch(k kfn, gx, gy, bx, by, smem int, a []uint64) error {
	if len(a) > 32 {
		return fmt.Errorf("cuda: launching %s: %d arguments", kernelNames[k], len(a))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	copy(unsafe.Slice((*uint64)(unsafe.Pointer(d.cargs)), 32), a)
	return d.do(func() error {
		r := C.gpnb_launch(d.fns[k], C.int(gx), C.int(gy), C.int(bx), C.int(by), C.int(smem), d.stream, d.cargs, C.int(len(a)))
		if err := cuErr(r); err != nil {
			return fmt.Errorf("cuda: launching %s (grid %d×%d, block %d×%d, %d B shared): %w", kernelNames[k], gx, gy, bx, by, smem, err)
		}
		return nil
	})
}

func (d *cuDriver) sync() error {
	return d.do(func() error {
		if err := cuErr(C.gpnb_sync(d.stream)); err != nil {
			return fmt.Errorf("cuda: the GPU's work failed: %w", err)
		}
		return nil
	})
}

func (d *cuDriver) record() (e event, err error) {
	err = d.do(func() error {
		var x C.uintptr_t
		err := cuErr(C.gpnb_event(&x, d.stream))
		e = event(x)
		return err
	})
	return e, err
}

func (d *cuDriver) elapsed(start, end event) (ms float64, err error) {
	err = d.do(func() error {
		var f C.float
		err := cuErr(C.gpnb_elapsed(&f, C.uintptr_t(start), C.uintptr_t(end)))
		ms = float64(f)
		return err
	})
	return ms, err
}

func (d *cuDriver) freeEvent(e event) {
	_ = d.do(func() error { C.gpnb_event_free(C.uintptr_t(e)); return nil })
}
