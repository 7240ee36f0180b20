package kernel_test

import (
	"fmt"
	"log"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"gonum.org/v1/gonum/mat"
)

// Build H = K + σ²I for three points, multiply it by a vector, compute the
// gradient reduction Σ_ab W_ab ∂H_ab/∂θ for W = v·vᵀ, and the partial
// products that alternating projections and SGD iterate on: rows of H times
// V, columns of H times a block update, and a block of H. Indices may be in
// any order and repeat.
func ExampleNewOperator() {
	// RBF kernel (ℓ = s = 1) and σ = 0.5 for points 0, 1, 3: off-diagonal
	// e^{−r²/2} = e^{−0.5}, e^{−2}, e^{−4.5}.
	x := mat.NewDense(3, 1, []float64{0, 1, 3})
	k := kernel.Kernel{Family: kernel.RBF, Hyper: kernel.Hyper{Lengthscales: []float64{1}, Signal: 1, Noise: 0.5}}
	op, err := kernel.NewOperator(x, k, kernel.Options{})
	if err != nil {
		log.Fatal(err)
	}
	v := mat.NewDense(3, 1, []float64{1, 0, 0})
	hv := mat.NewDense(3, 1, nil)
	op.MulTo(hv, v) // the first column of H: 1+0.25, e^{-1/2}, e^{-9/2}
	fmt.Printf("mode %v, H·e₁ = %.4f\n", op.Mode(), mat.Col(nil, 0, hv))

	grad := make([]float64, 3) // ∂/∂ℓ, ∂/∂s, ∂/∂σ
	op.Reduce(grad, v, v)      // W = e₁e₁ᵀ picks ∂H_11 = (0, 2s, 2σ)
	fmt.Printf("gradient %.4f\n", grad)

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
	// mode dense, H·e₁ = [1.2500 0.6065 0.0111]
	// gradient [0.0000 2.0000 1.0000]
	// H[{2,0},:]·1   = [1.3964 1.8676]
	// H[:,{1,1}]·[1 2]ᵀ = [1.8196 3.7500 0.4060]
	// H[{0,2},{0,2}] = ⎡1.2500  0.0111⎤
	//                  ⎣0.0111  1.2500⎦
}

// A matrix-free operator gives the same products without storing K.
func ExampleOperator_MulTo() {
	x := mat.NewDense(4, 2, []float64{0, 0, 1, 0, 0, 1, 1, 1})
	k := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(2)}
	ones := mat.NewDense(4, 1, []float64{1, 1, 1, 1})
	for _, mode := range []kernel.Mode{kernel.ModeDense, kernel.ModeMatrixFree} {
		op, err := kernel.NewOperator(x, k, kernel.Options{Mode: mode})
		if err != nil {
			log.Fatal(err)
		}
		dst := mat.NewDense(4, 1, nil)
		op.MulTo(dst, ones) // row sums of K + I: 2 + 2·m(1) + m(√2)
		fmt.Printf("%-10v %.6f\n", mode, mat.Col(nil, 0, dst))
	}
	// Output:
	// dense      [3.264536 3.264536 3.264536 3.264536]
	// matrixfree [3.264536 3.264536 3.264536 3.264536]
}
