package gpnb

import (
	"context"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

// polStep35 is θ after step 35 of the full-size pol SGD cold run
// (results/full/jobs/pol-s0-sgd-cold/result.json, history[34], as committed
// in 7478749): σ = 0.0539, where that run's σ path began to leave CG's.
func polStep35() kernel.Hyper {
	return kernel.Hyper{
		Lengthscales: []float64{0.6019470134262906, 0.5695029636770966, 2.2263072658158167, 3.5738430044562723, 2.3891930878810648, 3.9260514452442887, 3.8226601898573276, 4.058704206826279, 4.0526746300978305, 3.984649314348722, 3.7125185153829525, 2.8274608081735204, 3.818659381399303, 4.0270245766683646, 4.093939557494536, 2.9874710263843878, 3.8562372797832016, 3.9867027645398876, 4.064489849232528, 4.150810226181475, 3.9971333263493385, 4.205699337707549, 4.288463544454752, 3.9195698348420653, 3.9132623034679916, 4.129412575849405},
		Signal:       0.28999648460790006,
		Noise:        0.05390190216851497,
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// TestSGDFreezeBias pins the gradient bias of SGD's per-column freezing
// (Settings.Freeze FreezeColumn) against the authors' joint rule
// (FreezeJoint), on a pol subset at a small-σ θ of a real run: the same
// probes are solved by Cholesky (solvers.Cholesky, so the reference has no
// solver error and the same probe noise), by CG, and by SGD under each
// rule; the σ-gradients are compared. Freezing v_y at the first dip of its
// estimate below 0.01 leaves its error in H's small-eigenvalue directions,
// which dominate v_yᵀ(∂H/∂σ)v_y = 2σ‖v_y‖².
func TestSGDFreezeBias(t *testing.T) {
	if testing.Short() {
		t.Skip("a Cholesky and three iterative solves of n = 3000 (about 20 s)")
	}
	n := envInt("GPNB_FREEZE_N", 3000)
	ds := polSubset(t, n)
	hyp := polStep35()
	k := kernel.Kernel{Family: Matern32, Hyper: hyp}
	var vy2 float64 // ‖v_y‖² of the last solve
	grad := func(m solvers.Method, s solvers.Settings) ([]float64, *StepRecord) {
		t.Helper()
		est, err := NewEstimator(ds, Config{Solver: m, Settings: s, Seed: 11})
		if err != nil {
			t.Fatal(err)
		}
		defer est.Close()
		g := make([]float64, ds.D()+2)
		rec := new(StepRecord)
		if err := est.Gradient(context.Background(), k, g, rec); err != nil {
			t.Fatal(err)
		}
		v := est.State().PrevV
		vy2 = 0
		for i := 0; i < v.Rows; i++ {
			vy2 += v.Data[i*v.Cols] * v.Data[i*v.Cols]
		}
		return g, rec
	}
	exact, _ := grad(solvers.Cholesky{}, solvers.Settings{})
	vy2Exact := vy2
	sig := len(exact) - 1
	relErr := func(g []float64) float64 { return (g[sig] - exact[sig]) / math.Abs(exact[sig]) }
	cg, cgRec := grad(solvers.CG{}, solvers.Settings{})
	t.Logf("n %d σ %.4f: Cholesky dL/dσ %.2f, σ‖v_y‖² %.2f; CG %.2f (%+.2f%%, ‖v_y‖² %+.2f%%, %d iterations)", n, hyp.Noise, exact[sig], hyp.Noise*vy2Exact, cg[sig], 100*relErr(cg), 100*(vy2/vy2Exact-1), cgRec.SolverIterations)
	// SGD with the paper's raw rate and momentum; batches of 250 keep the
	// full-size run's ratio of batch to n roughly (1000/13500 there).
	errs := map[solvers.Freeze]float64{}
	for _, fr := range []solvers.Freeze{solvers.FreezeColumn, solvers.FreezeJoint} {
		m := solvers.SGD{BatchSize: 250, RawLearningRate: 90, Momentum: solvers.DefaultMomentum, Seed: uint64(envInt("GPNB_FREEZE_SEED", 0))}
		g, rec := grad(m, solvers.Settings{Freeze: fr})
		if !rec.SolverConverged {
			t.Fatalf("SGD %v: not converged in %d iterations", fr, rec.SolverIterations)
		}
		errs[fr] = math.Abs(relErr(g))
		t.Logf("SGD %v: dL/dσ %.2f (%+.2f%%), ‖v_y‖² %+.2f%%, %d iterations", fr, g[sig], 100*relErr(g), 100*(vy2/vy2Exact-1), rec.SolverIterations)
	}
	// Measured at 7478749 (n = 3000, seed 0): column −80 %, joint −15 %, CG
	// −6.5 %; seed 1: see DESIGN.md. The bound sits between them with a
	// factor ≥ 2 either side.
	const bound = 0.4
	if errs[solvers.FreezeJoint] >= bound || errs[solvers.FreezeColumn] <= bound {
		t.Errorf("σ-gradient errors: joint %.1f %%, column %.1f %%: want joint < %.0f %% < column", 100*errs[solvers.FreezeJoint], 100*errs[solvers.FreezeColumn], 100*bound)
	}
	if math.Abs(relErr(cg)) >= bound {
		t.Errorf("CG's σ-gradient error %.1f %% is not below %.0f %%", 100*math.Abs(relErr(cg)), 100*bound)
	}
}
