package solvers

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/internal/ucitest"
)

// polSystem builds H = K + σ²I over a 500-point subset of pol (Matérn-3/2,
// the paper's initial hyperparameters 1.0 unless changed) and B = [y, 8
// Gaussian probes].
func polSystem(t *testing.T, ell, noise float64) (*kernelSystem, *mat.Dense) {
	t.Helper()
	ds, err := data.Load("pol", data.Subset(500), data.Dir(ucitest.Dir(t, "pol")))
	if err != nil {
		t.Fatal(err)
	}
	x := ds.XTrain
	n, d := x.Dims()
	rng := rand.New(rand.NewPCG(5, 6))
	b := mat.NewDense(n, 9, nil)
	for i := 0; i < n; i++ {
		b.Set(i, 0, ds.YTrain[i])
		for j := 1; j < 9; j++ {
			b.Set(i, j, rng.NormFloat64())
		}
	}
	return newKernelSystem(t, x, hyper(d, ell, 1, noise), b), x
}

func TestPolConvergesToCholesky(t *testing.T) {
	for _, noise := range []float64{1, 0.1} {
		sys, _ := polSystem(t, 1, noise)
		methods := []Method{CG{}, AP{BlockSize: 100}, SGD{BatchSize: 100, Seed: 1}, Cholesky{}, CG{PrecondRank: 50, PrecondNoise: noise * noise}, CG{PrecondRank: 50, PrecondNoise: noise * noise, PrecondDiagonal: true}}
		for _, m := range methods {
			t.Run(fmt.Sprintf("%s%+v/noise=%v", m.Name(), m, noise), func(t *testing.T) {
				sv, err := Solve(context.Background(), sys.op, m, sys.b, nil, Settings{})
				if err != nil {
					t.Fatal(err)
				}
				if !sv.Converged() {
					t.Fatalf("not converged after %d iterations: %v", sv.State().Iteration, sv.State().RelResiduals)
				}
				rel := trueRel(sys.h, sv.Solution(), sys.b)
				for j, r := range rel {
					if r >= sv.State().Settings.tol(j) {
						t.Errorf("column %d: true residual %g", j, r)
					}
					var e mat.VecDense
					e.SubVec(sv.Solution().ColView(j), sys.vstar.ColView(j))
					bound := r * mat.Norm(sys.b.ColView(j), 2) / sys.lmin
					if en := mat.Norm(&e, 2); en > bound*(1+1e-9)+1e-12 {
						t.Errorf("column %d: ‖v−v*‖ = %g > ‖r‖/λmin = %g", j, en, bound)
					}
				}
				t.Logf("%d iterations, residuals mean %.2g", sv.State().Iteration, rel[0])
			})
		}
	}
}

func TestPolWarmStart(t *testing.T) {
	old, x := polSystem(t, 1, 0.5)
	_, d := x.Dims()
	cur := newKernelSystem(t, x, hyper(d, 1.05, 1.02, 0.48), old.b)
	for _, m := range []Method{CG{}, AP{BlockSize: 100}, SGD{BatchSize: 100, Seed: 2}} {
		cold, err := Solve(context.Background(), cur.op, m, cur.b, nil, Settings{})
		if err != nil {
			t.Fatal(err)
		}
		warm, err := Solve(context.Background(), cur.op, m, cur.b, old.vstar, Settings{})
		if err != nil {
			t.Fatal(err)
		}
		ci, wi := cold.State().Iteration, warm.State().Iteration
		t.Logf("%s: zero init %d iterations, warm start %d", m.Name(), ci, wi)
		if !warm.Converged() || !cold.Converged() || wi >= ci {
			t.Errorf("%s: warm %d (converged %v) vs zero init %d", m.Name(), wi, warm.Converged(), ci)
		}
		if math.IsNaN(warm.State().RelResiduals[0]) {
			t.Fatal("NaN")
		}
	}
}
