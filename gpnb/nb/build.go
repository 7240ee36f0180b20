package nb

import (
	"fmt"
	"runtime"

	"github.com/gpnb/gpnb/cuda"
	"github.com/gpnb/gpnb/gpnb/kernel"
)

// BuildInfo is the build a program runs, for a notebook's first output and
// gpnb bench's header, and what other builds would add on this machine.
// Its facts come from the code that decides them; String and Upgrades are
// the one place that words them.
type BuildInfo struct {
	// Backend is PickBackend(cuda.Options{}): where training runs by
	// default, and why.
	Backend Backend
	// CPU is kernel.ThisBuild(): cgo, the vectorised kernels, the BLAS.
	CPU kernel.Build
	// Host is kernel.ThisHost(): the CPU's features, a C compiler and
	// libopenblas on this machine.
	Host kernel.Host
	// CUDA is cuda.Built: the binary has the GPU backend (-tags cuda, or
	// the cudaemu emulation).
	CUDA bool
	// NVIDIADriver is cuda.InstalledDriver(): the NVIDIA driver's version
	// on this machine, or "".
	NVIDIADriver string
}

// Build returns this binary's BuildInfo. With the GPU backend built in, it
// opens the GPU (PickBackend).
func Build() BuildInfo {
	return BuildInfo{Backend: PickBackend(cuda.Options{}), CPU: kernel.ThisBuild(), Host: kernel.ThisHost(),
		CUDA: cuda.Built, NVIDIADriver: cuda.InstalledDriver()}
}

// ShowBuild prints Build's line and its upgrades, one a line, and returns
// it: a notebook's first cell calls it, so that every notebook says which
// build it runs.
func ShowBuild() BuildInfo {
	b := Build()
	fmt.Println(b)
	for _, u := range b.Upgrades() {
		fmt.Println("  " + u)
	}
	return b
}

// String is one line: the backend, then the CPU's kernel values, mixed
// precision's product and BLAS, e.g. "gpnb build: backend CPU (built
// without -tags cuda) · kernel values vectorised C (avx2+fma) · mixed
// precision vectorised C (avx2+fma) · BLAS OpenBLAS (-tags openblas)".
func (b BuildInfo) String() string {
	return fmt.Sprintf("gpnb build: backend %s · kernel values %s · mixed precision %s · BLAS %s",
		b.Backend, b.kernelValues(), b.mixed(), b.blas())
}

func (b BuildInfo) kernelValues() string {
	switch {
	case b.CPU.Vector != "":
		return "vectorised C (" + b.CPU.Vector + ")"
	case !b.CPU.Cgo:
		return "pure Go (built without cgo)"
	case runtime.GOARCH != "amd64":
		return "pure Go (no vectorised kernel on " + runtime.GOARCH + ")"
	}
	return "pure Go (this CPU lacks AVX2)"
}

func (b BuildInfo) mixed() string {
	if b.CPU.Mixed != "" {
		return "vectorised C (" + b.CPU.Mixed + ")"
	}
	return "pure Go (slower than float64)"
}

func (b BuildInfo) blas() string {
	if b.CPU.BLAS == "openblas" {
		return "OpenBLAS (-tags openblas)"
	}
	return b.CPU.BLAS + " (pure Go)"
}

// Upgrades returns what other builds would add on this machine, one
// sentence each, or nil when this build has it all: cgo (the vectorised C
// kernels, where the CPU has AVX2), -tags openblas (OpenBLAS's dgemm, where
// the library or at least a C compiler is found) and -tags cuda (where an
// NVIDIA driver is installed).
func (b BuildInfo) Upgrades() []string {
	var out []string
	if b.CPU.Vector == "" && !b.CPU.Cgo && runtime.GOARCH == "amd64" && b.Host.AVX2 {
		adds := "the vectorised C kernel values"
		if b.Host.FMA {
			adds += " and mixed precision's vectorised product"
		}
		if b.Host.CC != "" {
			out = append(out, fmt.Sprintf("cgo (CGO_ENABLED=1, the default where a C compiler is found; %s here) would add %s", b.Host.CC, adds))
		} else {
			out = append(out, "a C compiler (gcc) and cgo would add "+adds)
		}
	}
	if b.CPU.BLAS != "openblas" {
		tag := "-tags openblas"
		if !b.CPU.Cgo {
			tag += " (with cgo)"
		}
		switch {
		case b.Host.OpenBLAS != "":
			out = append(out, fmt.Sprintf("%s would add OpenBLAS's dgemm to the dense products (%s here)", tag, b.Host.OpenBLAS))
		case b.Host.CC != "":
			out = append(out, tag+" would add OpenBLAS's dgemm to the dense products, once libopenblas is installed (Debian: apt-get install libopenblas-dev)")
		}
	}
	if !b.CUDA && b.NVIDIADriver != "" {
		out = append(out, fmt.Sprintf("-tags cuda would add training on the GPU (NVIDIA driver %s here; the build needs cuda.h and libcuda.so)", b.NVIDIADriver))
	}
	return out
}
