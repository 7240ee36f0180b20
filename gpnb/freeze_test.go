package gpnb

import (
	"context"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
	"gonum.org/v1/gonum/mat"
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
		// The paper's text, so that the rule fields (here Freeze) hold.
		est, err := NewEstimator(ds, Config{Solver: m, Settings: s, Seed: 11, Rules: solvers.RulesPaperText})
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

// polSubsetStep23 is θ after step 23 of `gpnb train --data pol --split 0
// --subset 1500 --solver sgd --steps 30 --seed 3` under the paper's-text
// rules and the paper's raw rate 90 (gpnb at 5a55248, OpenBLAS), whose 24th
// step ran to the 50 000-iteration cap (issue 60).
func polSubsetStep23() kernel.Hyper {
	return kernel.Hyper{
		Lengthscales: []float64{0.5432455906457426, 0.8889926649644737, 2.6128202201951405, 2.956454618958509, 2.8730380188368563, 2.9396636271772305, 2.9141962422064203, 2.940994314596625, 2.9480741371341512, 2.942398213609797, 2.9436407373134803, 2.6533874535242257, 2.911673419592621, 2.973138591573782, 3.023147497479493, 2.7997681870857822, 2.993213791963917, 2.9955260679168876, 3.0008337456246292, 3.0069273438067516, 3.0126192860101177, 3.0044389642850424, 2.9910683690640165, 2.9847704632693044, 2.9160848390608267, 2.9612391227807913},
		Signal:       0.39399131696984385,
		Noise:        0.15979988394607147,
	}
}

// TestSGDFreezeThawStall is issue 60's failing solve: the mean system
// H v = y of a 1500-point pol subset at the θ of polSubsetStep23, SGD with
// the paper's rate 90, batches of 1000, momentum 0.9, seed 3. Under the
// paper's-text rules the column freezes when its estimated residual (rows
// of the last few iterates) dips below 0.01, which drops its momentum; the
// check of b − Hv finds it above 0.01 and thaws it, and it starts again
// from zero velocity, oscillating. The estimate dips at the peaks of that
// oscillation, so every check fails although b − Hv is below 0.01 at a
// good share of the iterations, and the cycle repeats every few
// iterations: the step ran to the 50 000-iteration cap. Now the stall
// detection ends it early: its own checks, made StallEpochs after the
// last low of the estimate, do not wait for a dip, and find b − Hv below
// 0.01 (converged) or no progress (stalled). Keeping the momentum
// (FreezeJoint, so the authors' rules), the same batches converge in about
// a hundred iterations; without momentum at all in several hundred.
// Without the check (NoVerify) the solve stops at the first dip, which the
// log shows where b − Hv stands. (The probe rule plays no part: this is one
// column.)
func TestSGDFreezeThawStall(t *testing.T) {
	if testing.Short() {
		t.Skip("SGD solves on n = 1500 (a few seconds)")
	}
	ds := polSubset(t, 1500)
	op, err := kernel.NewOperator(ds.XTrain, kernel.Kernel{Family: Matern32, Hyper: polSubsetStep23()}, kernel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	y := mat.NewDense(ds.NTrain(), 1, append([]float64(nil), ds.YTrain...))
	hv := mat.NewDense(ds.NTrain(), 1, nil)
	trueRel := func(v *mat.Dense) float64 { // ‖y − Hv‖/‖y‖, one product here
		op.MulTo(hv, v)
		hv.Sub(y, hv)
		return mat.Norm(hv, 2) / mat.Norm(y, 2)
	}
	paper := solvers.SGD{BatchSize: 1000, RawLearningRate: 90, Seed: 3}
	// solve runs m under the rules, and returns its final state and, over
	// its iterations 100 on (but the last), the share of them at which
	// b − Hv was below 0.01 and the share of its checks of b − Hv that
	// found it there.
	solve := func(name string, m solvers.SGD, rules solvers.Rules, s solvers.Settings) (st *solvers.State, below, passed float64) {
		t.Helper()
		s, mm := rules.Apply(s, m)
		sv, err := mm.Start(op, y, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		var iters, under, checks, pass int
		for !sv.Done() {
			before := sv.State().SGD.Verifications
			if err := sv.Iterate(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if it := sv.State().Iteration; it >= 100 && !sv.Done() {
				iters++
				ok := trueRel(sv.Solution()) < solvers.DefaultRelTolMean
				if ok {
					under++
				}
				if sv.State().SGD.Verifications > before {
					checks++
					if ok {
						pass++
					}
				}
			}
		}
		st = sv.State()
		below, passed = float64(under)/float64(max(iters, 1)), float64(pass)/float64(max(checks, 1))
		t.Logf("%s: %d iterations, converged %v, stalled %v, %d checks of b − Hv, b − Hv of v_y %.4f at the end; from iteration 100 on, b − Hv below 0.01 at %.0f%% of %d iterations and at %d of %d checks",
			name, st.Iteration, st.Converged, st.Stalled, st.SGD.Verifications, trueRel(sv.Solution()), 100*below, iters, pass, checks)
		return st, below, passed
	}
	// The cap of the failing run: a stall must come long before it. The
	// bounds below are about 5× the iterations measured (OpenBLAS and
	// gonum's BLAS round the products differently, which moves the
	// iteration a column freezes at, not whether it converges).
	const cap = 50000
	st, below, passed := solve("paper's text", paper, solvers.RulesPaperText, solvers.Settings{MaxIterations: cap})
	if !(st.Stalled || st.Converged) || st.Iteration > 2000 || st.SGD.Verifications < st.Iteration/20 || !(passed < below/2) {
		t.Errorf("paper's text: stalled %v, converged %v after %d iterations with %d checks, of which %.0f%% passed where b − Hv was below 0.01 at %.0f%% of the iterations: want it ended within 2000 iterations, after a check every 20 iterations at least (the freeze and thaw), the checks passing at less than half that share (they come at the oscillation's peaks)",
			st.Stalled, st.Converged, st.Iteration, st.SGD.Verifications, 100*passed, 100*below)
	}
	for _, c := range []struct {
		name  string
		m     solvers.SGD
		rules solvers.Rules
		s     solvers.Settings
		max   int
	}{
		{"joint freeze", paper, solvers.RulesPaperText, solvers.Settings{Freeze: solvers.FreezeJoint, MaxIterations: cap}, 500},
		{"no check of b − Hv", solvers.SGD{BatchSize: 1000, RawLearningRate: 90, Seed: 3, NoVerify: true}, solvers.RulesPaperText, solvers.Settings{MaxIterations: cap}, 500},
		{"authors' rules", paper, solvers.RulesAuthors, solvers.Settings{MaxIterations: cap}, 500},
		{"no momentum", solvers.SGD{BatchSize: 1000, RawLearningRate: 90, Seed: 3, Momentum: -1}, solvers.RulesPaperText, solvers.Settings{MaxIterations: cap}, 4000},
	} {
		if st, _, _ := solve(c.name, c.m, c.rules, c.s); !st.Converged || st.Iteration > c.max {
			t.Errorf("%s: converged %v after %d iterations, want converged within %d", c.name, st.Converged, st.Iteration, c.max)
		}
	}
}
