//go:build !cuda && !cudaemu

package cuda

import (
	"github.com/gpnb/gpnb/gpnb/kernel"
	"gonum.org/v1/gonum/mat"
)

// Built reports whether the package was compiled with the cuda build tag.
const Built = false

// Available returns nil when a usable GPU is present. In this build (no
// cuda tag) it always returns an error wrapping ErrNotBuilt.
func Available() error { return ErrNotBuilt }

// Devices lists the GPUs. In this build it returns ErrNotBuilt.
func Devices() ([]DeviceInfo, error) { return nil, ErrNotBuilt }

// New returns the GPU kernel operator for X and k. In this build (no cuda
// tag) it returns an error wrapping ErrNotBuilt.
func New(x *mat.Dense, k kernel.Kernel, opt Options) (kernel.GramOperator, error) {
	return nil, ErrNotBuilt
}
