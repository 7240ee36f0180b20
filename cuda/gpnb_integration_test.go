//go:build cuda || cudaemu

package cuda_test

import (
	"context"
	"math"
	"testing"

	"github.com/gpnb/gpnb/cuda"
	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"gonum.org/v1/gonum/mat"
)

// Two optimiser steps with the GPU backend give the CPU backend's gradients
// and hyperparameters to near float64 rounding (the same probes, solver and
// tolerances; only the operator differs).
func TestOptimiserWithGPUBackend(t *testing.T) {
	if err := cuda.Available(); err != nil {
		t.Skipf("no usable GPU, skipping: %v", err)
	}
	ds, err := data.Synthetic(150, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	run := func(cfg gpnb.Config, opts ...gpnb.Option) gpnb.History {
		o, err := gpnb.NewOptimiser(ds, cfg, opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if err := o.Run(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
		return o.History()
	}
	cfg := gpnb.Config{Seed: 3, WarmStart: true}
	cpu := run(cfg)
	built := 0
	gpu := run(cfg, gpnb.WithBackend(func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error) {
		built++
		return cuda.Backend(cuda.Options{})(x, k)
	}))
	if built == 0 {
		t.Fatal("the optimiser never built the GPU operator")
	}
	if len(cpu) != 2 || len(gpu) != 2 {
		t.Fatalf("steps: CPU %d, GPU %d", len(cpu), len(gpu))
	}
	for s := range cpu {
		c, g := cpu[s], gpu[s]
		if c.SolverIterations != g.SolverIterations {
			t.Errorf("step %d: %d CG iterations on the CPU, %d on the GPU", s+1, c.SolverIterations, g.SolverIterations)
		}
		for i := range c.Gradient {
			if d := math.Abs(c.Gradient[i] - g.Gradient[i]); d > 1e-8*(1+math.Abs(c.Gradient[i])) {
				t.Errorf("step %d: ∂L/∂θ_%d = %.12g (CPU) vs %.12g (GPU)", s+1, i, c.Gradient[i], g.Gradient[i])
			}
		}
	}
}
