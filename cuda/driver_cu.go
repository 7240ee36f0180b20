//go:build cuda

package cuda

import (
	_ "embed"
	"fmt"
	"runtime"
	"unsafe"

	"gorgonia.org/cu"
)

// The kernels, compiled from kernels/gpnb.cu by `make ptx`: one PTX for
// compute capability 9.0 and later (H100) and one for 6.0 to 8.x.
//
//go:embed kernels/gpnb_sm90.ptx
var ptxSM90 string

//go:embed kernels/gpnb_sm60.ptx
var ptxSM60 string

// cuDriver runs on one device's primary context. Every call locks the
// goroutine to its OS thread and makes the context current there, since a
// CUDA context is current per thread and goroutines move between threads.
type cuDriver struct {
	dev cu.Device
	ctx cu.CUContext
	mod cu.Module
	fns map[string]cu.Function
	inf DeviceInfo
}

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

func openDriver(ordinal int) (driver, error) {
	inf, dev, err := deviceInfo(ordinal)
	if err != nil {
		return nil, err
	}
	if inf.Major < 6 {
		return nil, fmt.Errorf("%w: %s has compute capability %d.%d; the gpnb kernels need 6.0 or later: use the CPU backend", ErrUnavailable, inf.Name, inf.Major, inf.Minor)
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: retaining the primary context: %v (is the GPU in exclusive or prohibited compute mode?)", ErrUnavailable, inf.Name, err)
	}
	d := &cuDriver{dev: dev, ctx: ctx, inf: inf, fns: map[string]cu.Function{}}
	ptx := ptxSM60
	if inf.Major >= 9 {
		ptx = ptxSM90
	}
	err = d.do(func() error {
		mod, err := cu.LoadData(ptx)
		if err != nil {
			return fmt.Errorf("%w: %s (driver %d): loading the embedded PTX failed: %v (a driver older than CUDA 11.8 cannot JIT PTX ISA 7.8: update the driver)", ErrUnavailable, inf.Name, inf.Driver, err)
		}
		d.mod = mod
		for _, name := range kernelNames {
			fn, err := mod.Function(name)
			if err != nil {
				return fmt.Errorf("cuda: kernel %s missing from the embedded PTX (%v): regenerate it with `make ptx`", name, err)
			}
			d.fns[name] = fn
		}
		return nil
	})
	if err != nil {
		_ = dev.ReleasePrimaryCtx()
		return nil, err
	}
	return d, nil
}

func (d *cuDriver) info() DeviceInfo { return d.inf }

func (d *cuDriver) alloc(bytes int64) (p uintptr, err error) {
	err = d.do(func() error {
		ptr, err := cu.MemAlloc(bytes)
		p = uintptr(ptr)
		return err
	})
	return p, err
}

func (d *cuDriver) free(p uintptr) error {
	return d.do(func() error { return cu.MemFree(cu.DevicePtr(p)) })
}

func (d *cuDriver) htod(dst uintptr, src unsafe.Pointer, bytes int64) error {
	if bytes == 0 {
		return nil
	}
	return d.do(func() error { return cu.MemcpyHtoD(cu.DevicePtr(dst), src, bytes) })
}

func (d *cuDriver) dtoh(dst unsafe.Pointer, src uintptr, bytes int64) error {
	if bytes == 0 {
		return nil
	}
	return d.do(func() error { return cu.MemcpyDtoH(dst, cu.DevicePtr(src), bytes) })
}

func (d *cuDriver) memInfo() (free, total int64, err error) {
	err = d.do(func() error {
		free, total, err = cu.MemInfo()
		return err
	})
	return free, total, err
}

func (d *cuDriver) launch(name string, gx, gy, bx, by, smem int, args []uint64) error {
	fn, ok := d.fns[name]
	if !ok {
		return fmt.Errorf("cuda: no kernel %s", name)
	}
	params := make([]unsafe.Pointer, len(args))
	for i := range args {
		params[i] = unsafe.Pointer(&args[i])
	}
	return d.do(func() error {
		if err := fn.Launch(gx, gy, 1, bx, by, 1, smem, cu.Stream{}, params); err != nil {
			return fmt.Errorf("cuda: launching %s (grid %d×%d, block %d×%d, %d B shared): %w", name, gx, gy, bx, by, smem, err)
		}
		// Synchronise so that a fault is reported by the kernel that made it.
		if err := cu.Synchronize(); err != nil {
			return fmt.Errorf("cuda: %s failed: %w", name, err)
		}
		return nil
	})
}
