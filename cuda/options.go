package cuda

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"gonum.org/v1/gonum/mat"
)

// ErrNotBuilt is wrapped by the errors of Available, New and Devices in a
// build without the cuda tag.
var ErrNotBuilt = errors.New("cuda: built without -tags cuda: rebuild with `go build -tags cuda` (needs cuda.h and libcuda.so; see package cuda's documentation) or use the CPU backend")

// ErrUnavailable is wrapped by the errors that say no usable GPU was found
// (no device, an ordinal out of range, a device too old for the kernels).
var ErrUnavailable = errors.New("cuda: no usable GPU")

// Precision selects the floating-point type of the device computations. It
// is kernel.Precision, the one precision setting of both backends.
type Precision = kernel.Precision

const (
	// Float64 computes in double precision (the default).
	Float64 = kernel.Float64
	// Float32 stores Z and K in single precision (half the memory, half
	// the bytes a product reads); the right-hand sides, the products' sums,
	// the solvers' vectors and the gradient's reductions stay float64.
	Float32 = kernel.Float32
)

// ParsePrecision parses float64 (or f64, double) and float32 (f32, single):
// kernel.ParsePrecision.
func ParsePrecision(s string) (Precision, error) { return kernel.ParsePrecision(s) }

// Options configure a GPU operator. The zero value is ready to use: device
// 0, automatic mode, float64.
type Options struct {
	// Device is the CUDA device ordinal.
	Device int
	// Mode forces the dense cache of K on the device or matrix-free
	// products; kernel.ModeAuto chooses dense when n² values fit
	// MemoryBudget.
	Mode kernel.Mode
	// MemoryBudget is the number of device bytes the dense cache may use;
	// 0 means half of the device memory free when the operator is made.
	MemoryBudget int64
	// Precision is Float64 (default) or Float32.
	Precision Precision
}

// DeviceInfo describes a GPU as the driver reports it. Plain data.
type DeviceInfo struct {
	Ordinal      int
	Name         string
	Major, Minor int   // compute capability
	TotalMemory  int64 // bytes
	SMs          int   // multiprocessors
	ClockKHz     int   // SM clock
	MemClockKHz  int   // memory clock
	BusWidthBits int   // memory bus width
	Driver       int   // CUDA version of the driver API, e.g. 12040
	// DriverVersion is the NVIDIA driver's version, e.g. "580.159.04" (from
	// /proc/driver/nvidia/version on Linux; "" where it cannot be read).
	DriverVersion string
}

// Bandwidth returns the theoretical memory bandwidth in bytes/s
// (2 transfers per memory clock, double data rate), or 0 when unknown.
func (d DeviceInfo) Bandwidth() float64 {
	return 2 * float64(d.MemClockKHz) * 1e3 * float64(d.BusWidthBits) / 8
}

// FP64Peak returns the theoretical float64 FMA peak in flop/s from the
// number of float64 units per SM of the architecture (64 on the
// data-centre parts sm_60, sm_70, sm_80, sm_90; 2 on most others), or 0
// when unknown.
func (d DeviceInfo) FP64Peak() float64 {
	units := 2
	switch d.Major*10 + d.Minor {
	case 60, 70, 80, 90, 100:
		units = 64
	}
	return 2 * float64(units) * float64(d.SMs) * float64(d.ClockKHz) * 1e3
}

// Label names the device for records and logs: its name, memory and
// driver, e.g. "NVIDIA H100 80GB HBM3 (79.1 GiB, driver 580.159.04, CUDA
// 13.0)".
func (d DeviceInfo) Label() string {
	s := fmt.Sprintf("%s (%.1f GiB", d.Name, float64(d.TotalMemory)/(1<<30))
	if d.DriverVersion != "" {
		s += ", driver " + d.DriverVersion
	}
	if d.Driver > 0 {
		s += fmt.Sprintf(", CUDA %d.%d", d.Driver/1000, d.Driver%1000/10)
	}
	return s + ")"
}

// InstalledDriver returns the version of the NVIDIA driver installed on
// this machine (from /proc/driver/nvidia/version, e.g. "580.159.04"), or ""
// when there is none or the file cannot be read (systems other than
// Linux). It works in every build, so a binary without the cuda tag can
// say that a GPU is there to use.
func InstalledDriver() string {
	b, err := os.ReadFile("/proc/driver/nvidia/version")
	if err != nil {
		return ""
	}
	return driverVersion(string(b))
}

// nvrmVersion is the version in the first line of /proc/driver/nvidia/version
// ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Sun ...", or
// "... Open Kernel Module for x86_64  580.159.04  Release Build ...").
var nvrmVersion = regexp.MustCompile(`\s(\d+\.\d+(?:\.\d+)?)\s`)

// driverVersion returns the NVIDIA driver's version from the contents of
// /proc/driver/nvidia/version, or "".
func driverVersion(proc string) string {
	line, _, _ := strings.Cut(proc, "\n")
	if m := nvrmVersion.FindStringSubmatch(line + " "); m != nil {
		return m[1]
	}
	return ""
}

// String returns a one-line summary.
func (d DeviceInfo) String() string {
	return fmt.Sprintf("GPU %d: %s, sm_%d%d, %d SMs, %.0f GB/s, %.1f TFLOP/s fp64",
		d.Ordinal, d.Label(), d.Major, d.Minor, d.SMs, d.Bandwidth()/1e9, d.FP64Peak()/1e12)
}

// Backend returns a builder for gpnb.WithBackend that makes GPU operators
// with opt:
//
//	o, err := gpnb.NewOptimiser(ds, cfg, gpnb.WithBackend(cuda.Backend(cuda.Options{})))
//
// In a build without the cuda tag the builder returns ErrNotBuilt, so the
// optimiser fails at its first step with that message.
func Backend(opt Options) func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error) {
	return func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error) {
		return New(x, k, opt)
	}
}
