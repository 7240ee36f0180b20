package nb

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/cuda"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
)

// Backend is where training runs: the CPU operator of package gpnb/kernel,
// or the GPU operator of package cuda. The zero value is the CPU.
type Backend struct {
	// Device is the GPU the backend uses, or nil for the CPU.
	Device *cuda.DeviceInfo
	// Why says why this backend was picked: for the CPU, why not the GPU.
	Why string

	opt cuda.Options
}

// Option returns the gpnb.Option that builds the optimiser's kernel
// operator on this backend: gpnb.WithBackend(cuda.Backend(opt)) on a GPU,
// gpnb.WithBackend(nil) (the CPU operator) otherwise.
func (b Backend) Option() gpnb.Option {
	if b.Device == nil {
		return gpnb.WithBackend(nil)
	}
	return gpnb.WithBackend(cuda.Backend(b.opt))
}

// String names the backend and why: "CUDA on GPU 0: NVIDIA H100 80GB HBM3
// (79.1 GiB, driver 580.159.04, CUDA 13.0)", or "CPU (built without -tags
// cuda)".
func (b Backend) String() string {
	if b.Device != nil {
		return fmt.Sprintf("CUDA on GPU %d: %s", b.Device.Ordinal, b.Device.Label())
	}
	return "CPU (" + b.Why + ")"
}

// PickBackend returns the GPU backend with opt (device opt.Device, its mode
// and precision) when this binary was built with -tags cuda (or cudaemu,
// the tests' emulation of the GPU kernels on the CPU) and that device can
// run gpnb's kernels, and the CPU otherwise; Why says which and why.
//
// In a notebook, the build tags come from the first cell's %goflags line:
// `%goflags -tags=openblas,cuda` for the GPU (this needs cuda.h and
// libcuda.so; see package cuda). A binary built with -tags cuda stops at
// start-up on a machine without the NVIDIA driver, before PickBackend can
// choose the CPU.
func PickBackend(opt cuda.Options) Backend {
	return pickBackend(gpuProbe{built: cuda.Built, devices: cuda.Devices, open: openDevice, driver: cuda.InstalledDriver}, opt)
}

// gpuProbe is what PickBackend asks about the GPU, replaceable in tests.
type gpuProbe struct {
	built   bool                              // cuda.Built
	devices func() ([]cuda.DeviceInfo, error) // cuda.Devices
	open    func(opt cuda.Options) error      // openDevice
	driver  func() string                     // cuda.InstalledDriver
}

func pickBackend(p gpuProbe, opt cuda.Options) Backend {
	if !p.built {
		why := "built without -tags cuda"
		if v := p.driver(); v != "" {
			why += fmt.Sprintf("; this machine has NVIDIA driver %s: build with -tags cuda to train on its GPU", v)
		}
		return Backend{Why: why}
	}
	devs, err := p.devices()
	switch {
	case err != nil:
		return Backend{Why: fmt.Sprintf("built with the GPU backend, but %v", err)}
	case opt.Device < 0 || opt.Device >= len(devs):
		return Backend{Why: fmt.Sprintf("built with the GPU backend, but cuda.Options.Device is %d and the driver sees %d GPU(s)", opt.Device, len(devs))}
	}
	d := devs[opt.Device]
	if err := p.open(opt); err != nil {
		return Backend{Why: fmt.Sprintf("built with the GPU backend, but GPU %d (%s) cannot run it: %v", d.Ordinal, d.Name, err)}
	}
	return Backend{Device: &d, Why: fmt.Sprintf("built with the GPU backend, and GPU %d runs gpnb's kernels", d.Ordinal), opt: opt}
}

// openDevice builds a GPU operator with opt for two points and closes it:
// nil when the device opens, loads gpnb's kernels and accepts opt.
func openDevice(opt cuda.Options) error {
	x := mat.NewDense(2, 1, []float64{0, 1})
	op, err := cuda.New(x, kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(1)}, opt)
	if err != nil {
		return err
	}
	if c, ok := op.(interface{ Close() error }); ok {
		return c.Close()
	}
	return errors.New("the GPU operator cannot be closed")
}
