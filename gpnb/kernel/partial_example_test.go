package kernel_test

import (
	"fmt"
	"log"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"gonum.org/v1/gonum/mat"
)

// The partial products that alternating projections and SGD iterate on:
// rows of H times V, columns of H times a block update, and a block of H.
// Indices may be in any order and repeat.
func ExampleOperator_RowsMulTo() {
	// H = K + σ²I for points 0, 1, 3 with an RBF kernel (ℓ = s = 1) and
	// σ = 0.5: off-diagonal e^{−r²/2} = e^{−0.5}, e^{−2}, e^{−4.5}.
	x := mat.NewDense(3, 1, []float64{0, 1, 3})
	k := kernel.Kernel{Family: kernel.RBF, Hyper: kernel.Hyper{Lengthscales: []float64{1}, Signal: 1, Noise: 0.5}}
	op, err := kernel.NewOperator(x, k, kernel.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rows := mat.NewDense(2, 1, nil)
	op.RowsMulTo(rows, []int{2, 0}, mat.NewDense(3, 1, []float64{1, 1, 1})) // row sums of H
	fmt.Printf("H[{2,0},:]·1   = %.4f\n", mat.Col(nil, 0, rows))

	cols := mat.NewDense(3, 1, nil)
	op.ColsMulTo(cols, []int{1, 1}, mat.NewDense(2, 1, []float64{1, 2})) // 3·H[:,1]
	fmt.Printf("H[:,{1,1}]·[1 2]ᵀ = %.4f\n", mat.Col(nil, 0, cols))

	var blk mat.SymDense
	op.BlockTo(&blk, []int{0, 2})
	fmt.Printf("H[{0,2},{0,2}] = %.4f\n", mat.Formatted(&blk, mat.Prefix("                 ")))
	// Output:
	// H[{2,0},:]·1   = [1.3964 1.8676]
	// H[:,{1,1}]·[1 2]ᵀ = [1.8196 3.7500 0.4060]
	// H[{0,2},{0,2}] = ⎡1.2500  0.0111⎤
	//                  ⎣0.0111  1.2500⎦
}
