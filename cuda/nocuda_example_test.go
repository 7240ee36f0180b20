//go:build !cuda && !cudaemu

package cuda_test

import (
	"errors"
	"fmt"

	"github.com/gpnb/gpnb/cuda"
)

// A program checks Available before choosing the GPU backend and falls back
// to the CPU operator when it is not there. This is what a build without
// -tags cuda prints.
func ExampleAvailable() {
	if err := cuda.Available(); err != nil {
		fmt.Println("GPU backend:", errors.Is(err, cuda.ErrNotBuilt))
		fmt.Println("using the CPU operator")
		return
	}
	fmt.Println("using the GPU operator")
	// Output:
	// GPU backend: true
	// using the CPU operator
}
