//go:build !cuda && !cudaemu

package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"gonum.org/v1/gonum/mat"
)

// Without the tag every entry point fails with an error that names the tag.
func TestNotBuilt(t *testing.T) {
	if Built {
		t.Fatal("Built is true in a build without the cuda tag")
	}
	x := mat.NewDense(2, 1, []float64{0, 1})
	_, errNew := New(x, kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(1)}, Options{})
	_, errDev := Devices()
	_, errBackend := Backend(Options{})(x, kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(1)})
	for name, err := range map[string]error{"Available": Available(), "New": errNew, "Devices": errDev, "Backend": errBackend} {
		if !errors.Is(err, ErrNotBuilt) {
			t.Errorf("%s: error %v does not wrap ErrNotBuilt", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "-tags cuda") {
			t.Errorf("%s: error %q does not say how to rebuild", name, err)
		}
	}
}
