//go:build cuda || cudaemu

package cuda_test

import (
	"fmt"
	"log"
	"math"

	"github.com/gpnb/gpnb/cuda"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"gonum.org/v1/gonum/mat"
)

// The GPU operator is a drop-in for the CPU one: here H·v on both, for a
// Matérn-3/2 kernel on 200 points, agree to float64 rounding.
func ExampleNewOperator() {
	if err := cuda.Available(); err != nil {
		log.Fatal(err) // or fall back to kernel.NewOperator
	}
	n := 200
	x := mat.NewDense(n, 2, nil)
	v := mat.NewDense(n, 1, nil)
	for i := 0; i < n; i++ {
		t := float64(i) / float64(n)
		x.Set(i, 0, math.Sin(7*t))
		x.Set(i, 1, t)
		v.Set(i, 0, math.Cos(3*t))
	}
	k := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(2)}

	gpu, err := cuda.NewOperator(x, k, cuda.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer gpu.Close()
	cpu, err := kernel.NewOperator(x, k, kernel.Options{})
	if err != nil {
		log.Fatal(err)
	}
	var hg, hc, diff mat.Dense
	gpu.MulTo(&hg, v)
	cpu.MulTo(&hc, v)
	diff.Sub(&hg, &hc)
	fmt.Println("agree to 1e-12:", mat.Norm(&diff, 2) < 1e-12*mat.Norm(&hc, 2))
	// Output:
	// agree to 1e-12: true
}
