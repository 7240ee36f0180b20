package kernel_test

import (
	"context"
	"fmt"
	"log"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

// One pathwise step on 20 points of sin(x): draw the fixed prior samples,
// form the probes ξ_j = f_j(X) + σε_j at θ, solve H[v_y, ζ] = [y, ξ], and
// from the same solution take the gradient estimate and posterior samples
// at two test points: no further solve.
func ExamplePathwisePosterior() {
	const n, s = 20, 64
	x, y := mat.NewDense(n, 1, nil), mat.NewDense(n, 1, nil)
	for i := 0; i < n; i++ {
		x.Set(i, 0, 4*float64(i)/(n-1))
		y.Set(i, 0, math.Sin(x.At(i, 0)))
	}
	k := kernel.Kernel{Family: kernel.RBF, Hyper: kernel.Hyper{Lengthscales: []float64{0.7}, Signal: 1, Noise: 0.1}}
	draws, err := kernel.NewPathwiseDraws(k.Family, n, 1, kernel.DefaultFeatures, s, 1)
	if err != nil {
		log.Fatal(err)
	}
	op, err := kernel.NewOperator(x, k, kernel.Options{})
	if err != nil {
		log.Fatal(err)
	}
	b := mat.NewDense(n, 1+s, nil)
	b.Slice(0, n, 0, 1).(*mat.Dense).Copy(y)
	if err := draws.ProbesTo(b.Slice(0, n, 1, 1+s).(*mat.Dense), x, k); err != nil {
		log.Fatal(err)
	}
	tight := solvers.Settings{RelTolMean: 1e-8, RelTolProbes: 1e-8}
	sol, err := solvers.Solve(context.Background(), op, solvers.CG{}, b, nil, tight)
	if err != nil {
		log.Fatal(err)
	}
	v := sol.Solution()
	vy := mat.DenseCopyOf(v.Slice(0, n, 0, 1))
	zeta := mat.DenseCopyOf(v.Slice(0, n, 1, 1+s))

	grad := make([]float64, 3) // ∂L/∂(ℓ, s, σ)
	if err := kernel.PathwiseGradient(grad, op, vy, zeta); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("∂L/∂(ℓ, s, σ) ≈ %.1f\n", grad)

	xs := mat.NewDense(2, 1, []float64{1, 2.5})
	fStar := mat.NewDense(2, s, nil)
	if err := draws.Prior.EvalTo(fStar, xs, k); err != nil {
		log.Fatal(err)
	}
	post, err := kernel.PathwisePosterior(op, xs, fStar, vy, zeta)
	if err != nil {
		log.Fatal(err)
	}
	for i, xv := range []float64{1, 2.5} {
		fmt.Printf("x = %.1f: mean %.3f (sin %.3f), predictive sd %.2f\n", xv, post.Mean[i], math.Sin(xv), math.Sqrt(post.Variance[i]))
	}
	// Output:
	// ∂L/∂(ℓ, s, σ) ≈ [17.5 -6.1 -113.7]
	// x = 1.0: mean 0.842 (sin 0.841), predictive sd 0.11
	// x = 2.5: mean 0.595 (sin 0.598), predictive sd 0.12
}
