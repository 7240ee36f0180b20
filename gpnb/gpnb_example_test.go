package gpnb_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

// Train with the paper's method (fixed probes, warm start) and look at the
// history.
func ExampleNewOptimiser() {
	ds, err := data.Synthetic(300, 3, 1)
	if err != nil {
		panic(err)
	}
	opt, err := gpnb.NewOptimiser(ds, gpnb.Config{Kernel: gpnb.Matern32, Solver: solvers.CG{}, WarmStart: true})
	if err != nil {
		panic(err)
	}
	if err := opt.Run(context.Background(), 10); err != nil {
		panic(err)
	}
	h := opt.History()
	converged := true
	for _, r := range h {
		converged = converged && r.SolverConverged
	}
	fmt.Println("steps:", len(h), "all solves converged:", converged)
	fmt.Println("noise went down from 1.0:", h[len(h)-1].Noise < 1)
	fmt.Println("warm start closer than zero init at step 10:", h[9].InitDistance < h[9].ZeroInitDistance)
	// Output:
	// steps: 10 all solves converged: true
	// noise went down from 1.0: true
	// warm start closer than zero init at step 10: true
}

// Pause a run, save it, and continue in another process (a new notebook
// cell) from the checkpoint.
func ExampleResume() {
	ds, err := data.Synthetic(200, 2, 7)
	if err != nil {
		panic(err)
	}
	path := filepath.Join(os.TempDir(), "gpnb-example.ckpt")
	defer os.Remove(path)

	opt, err := gpnb.NewOptimiser(ds, gpnb.Config{WarmStart: true, CheckpointPath: path})
	if err != nil {
		panic(err)
	}
	if err := opt.Run(context.Background(), 3); err != nil { // saves after every step
		panic(err)
	}

	// Later, in another process: the same data, the saved run.
	opt, err = gpnb.Resume(path, ds)
	if err != nil {
		panic(err)
	}
	fmt.Println("resumed at step", opt.Steps())
	if err := opt.RunTo(context.Background(), 5); err != nil {
		panic(err)
	}
	fmt.Println("now at step", opt.Steps(), "with", len(opt.History()), "records")
	// Output:
	// resumed at step 3
	// now at step 5 with 5 records
}

// The exact baseline on one point: L = log N(y; 0, s²+σ²).
func ExampleExact() {
	X := mat.NewDense(1, 1, []float64{0})
	k := kernel.Kernel{Family: gpnb.Matern32, Hyper: kernel.Hyper{Lengthscales: []float64{1}, Signal: 1, Noise: 1}}
	e, err := gpnb.NewExact(X, []float64{2}, k)
	if err != nil {
		panic(err)
	}
	fmt.Printf("MLL %.6f, closed form %.6f\n", e.MLL(), -0.5*4/2-0.5*math.Log(2*math.Pi*2))
	mean, variance, _ := e.Predict(mat.NewDense(1, 1, []float64{0}))
	fmt.Printf("predictive mean %.3f, variance %.3f\n", mean[0], variance[0])
	// Output:
	// MLL -2.265512, closed form -2.265512
	// predictive mean 1.000, variance 1.500
}

// Level 2 on its own: the exact gradient and a Hutchinson estimate at the
// same hyperparameters.
func ExampleNewEstimator() {
	ds, _ := data.Synthetic(200, 2, 3)
	k := kernel.Kernel{Family: gpnb.Matern32, Hyper: kernel.DefaultHyper(2)}
	exact, _ := gpnb.NewEstimator(ds, gpnb.Config{Estimator: gpnb.ExactGradient})
	hutch, _ := gpnb.NewEstimator(ds, gpnb.Config{Probes: 64, Solver: solvers.CG{}})
	ge := make([]float64, 4)
	gh := make([]float64, 4)
	var rec gpnb.StepRecord
	if err := exact.Gradient(context.Background(), k, ge, nil); err != nil {
		panic(err)
	}
	if err := hutch.Gradient(context.Background(), k, gh, &rec); err != nil {
		panic(err)
	}
	// ∂L/∂σ, the largest component, agrees in sign and roughly in size.
	fmt.Println("same sign:", math.Signbit(ge[3]) == math.Signbit(gh[3]))
	fmt.Println("within 20%:", math.Abs(gh[3]-ge[3]) < 0.2*math.Abs(ge[3]))
	fmt.Println("solve converged:", rec.SolverConverged)
	// Output:
	// same sign: true
	// within 20%: true
	// solve converged: true
}
