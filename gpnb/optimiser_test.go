package gpnb

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/floatbits"
	"github.com/gpnb/gpnb/internal/gptest"
	"github.com/gpnb/gpnb/solvers"
)

func sqrt(x float64) float64 { return math.Sqrt(x) }

// explicitDH returns ∂H/∂θ_k for every k as explicit n×n matrices.
func explicitDH(X *mat.Dense, k kernel.Kernel) []*mat.Dense { return gptest.DH(X, k, k.Hyper.Noise) }

// TestHutchinsonExplicit checks the estimator (eq. 4 with eq. 5) against
// explicit matrices: ½αᵀ∂Hα − (1/2s)Σ z_jᵀH⁻¹∂H z_j, with the probes the
// optimiser drew and an exact (Cholesky) solve.
func TestHutchinsonExplicit(t *testing.T) {
	ds := synth(t, 60, 2, 3)
	for _, dist := range []ProbeDist{Gaussian, Rademacher} {
		init := kernel.Hyper{Lengthscales: []float64{0.7, 1.4}, Signal: 1.2, Noise: 0.5}
		o, err := NewOptimiser(ds, Config{Solver: solvers.Cholesky{}, Probes: 5, ProbeDist: dist, Init: init, Seed: 9})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := o.State()
		z := st.Probes.Dense()
		if dist == Rademacher {
			for _, v := range st.Probes.Data {
				if v != 1 && v != -1 {
					t.Fatalf("Rademacher probe value %v", v)
				}
			}
		}
		k := kernel.Kernel{Family: Matern32, Hyper: init}
		h := mat.DenseCopyOf(explicitH(ds.XTrain, k))
		var hinv mat.Dense
		if err := hinv.Inverse(h); err != nil {
			t.Fatal(err)
		}
		var alpha mat.VecDense
		alpha.MulVec(&hinv, mat.NewVecDense(len(ds.YTrain), ds.YTrain))
		for i, dh := range explicitDH(ds.XTrain, k) {
			var t1 mat.VecDense
			t1.MulVec(dh, &alpha)
			want := 0.5 * mat.Dot(&alpha, &t1)
			var m mat.Dense
			m.Mul(&hinv, dh)
			for j := 0; j < 5; j++ {
				zj := mat.NewVecDense(z.RawMatrix().Rows, mat.Col(nil, j, z))
				var mz mat.VecDense
				mz.MulVec(&m, zj)
				want -= mat.Dot(zj, &mz) / 10
			}
			if got := st.Gradient[i]; math.Abs(got-want) > 1e-8*(1+math.Abs(want)) {
				t.Errorf("%v: gradient %d = %.12g, explicit %.12g", dist, i, got, want)
			}
		}
	}
}

// TestAdamExact checks two Adam ascent steps in raw space, with the chain
// rule through softplus, against a hand computation from the exact gradient.
func TestAdamExact(t *testing.T) {
	ds := synth(t, 50, 2, 4)
	const lr = 0.05
	o, err := NewOptimiser(ds, Config{Estimator: ExactGradient, LearningRate: lr})
	if err != nil {
		t.Fatal(err)
	}
	raw := kernel.DefaultHyper(2).Raw()
	m := make([]float64, 4)
	v := make([]float64, 4)
	for step := 1; step <= 2; step++ {
		e, err := NewExact(ds.XTrain, ds.YTrain, kernel.Kernel{Family: Matern32, Hyper: kernel.HyperFromRaw(raw)})
		if err != nil {
			t.Fatal(err)
		}
		g := make([]float64, 4)
		if err := e.Gradient(g); err != nil {
			t.Fatal(err)
		}
		for i := range raw {
			gr := g[i] / (1 + math.Exp(-raw[i]))
			m[i] = 0.9*m[i] + 0.1*gr
			v[i] = 0.999*v[i] + 0.001*gr*gr
			mh := m[i] / (1 - math.Pow(0.9, float64(step)))
			vh := v[i] / (1 - math.Pow(0.999, float64(step)))
			raw[i] += lr * mh / (math.Sqrt(vh) + 1e-8)
		}
		if err := o.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := o.State().Raw
		for i := range raw {
			if math.Abs(got[i]-raw[i]) > 1e-12 {
				t.Errorf("step %d raw[%d] = %.15g, want %.15g", step, i, got[i], raw[i])
			}
		}
	}
	// The first step of Adam moves every raw parameter by lr·sign(g).
	h := o.History()
	if h[0].SolverIterations != 0 || !h[0].SolverConverged {
		t.Errorf("exact mode record: %+v", h[0])
	}
}

// runSteps runs a new optimiser of cfg on ds for steps steps (Run), and
// fails the test on an error.
func runSteps(t *testing.T, ds *data.Dataset, cfg Config, steps int) *Optimiser {
	t.Helper()
	o, err := NewOptimiser(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), steps); err != nil {
		t.Fatal(err)
	}
	return o
}

// runTrace runs steps and returns the log-hyperparameter trace.
func runTrace(t *testing.T, ds *data.Dataset, cfg Config, steps int) (*Optimiser, [][]float64) {
	t.Helper()
	o := runSteps(t, ds, cfg, steps)
	var tr [][]float64
	for _, r := range o.History() {
		v := append(append([]float64(nil), r.Lengthscales...), r.Signal, r.Noise)
		for i := range v {
			v[i] = math.Log(v[i])
		}
		tr = append(tr, v)
	}
	return o, tr
}

// testTraces checks that warm start and the baseline reach the same
// hyperparameters and test LLH and both follow the exact trace (figure 4).
func testTraces(t *testing.T, ds *data.Dataset, steps int, tolTrace, tolLLH float64) {
	exact, te := runTrace(t, ds, Config{Estimator: ExactGradient}, steps)
	ee, err := exact.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	var finals [2][]float64
	var llhs [2]float64
	for w, ws := range []bool{false, true} {
		o, tr := runTrace(t, ds, Config{WarmStart: ws, Seed: 5}, steps)
		finals[w] = tr[len(tr)-1]
		maxDev := 0.0
		for s := range tr {
			for i := range tr[s] {
				maxDev = math.Max(maxDev, math.Abs(tr[s][i]-te[s][i]))
			}
		}
		ev, err := o.Evaluate()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("warm=%v: max |Δlog θ| vs exact over %d steps = %.3g; test LLH %.4f (exact %.4f); iterations %d", ws, steps, maxDev, ev.TestLLH, ee.TestLLH, o.History().TotalSolverIterations())
		if maxDev > tolTrace {
			t.Errorf("warm=%v: trace deviates from the exact trace by %.3g in log θ (limit %g)", ws, maxDev, tolTrace)
		}
		if math.Abs(ev.TestLLH-ee.TestLLH) > tolLLH {
			t.Errorf("warm=%v: test LLH %.4f, exact-gradient run %.4f", ws, ev.TestLLH, ee.TestLLH)
		}
		llhs[w] = ev.TestLLH
	}
	// Warm start and the baseline end at the same place.
	for i := range finals[0] {
		if math.Abs(finals[0][i]-finals[1][i]) > tolTrace {
			t.Errorf("final log θ_%d: baseline %.4f, warm start %.4f", i, finals[0][i], finals[1][i])
		}
	}
	if math.Abs(llhs[0]-llhs[1]) > tolLLH {
		t.Errorf("test LLH: baseline %.4f, warm start %.4f", llhs[0], llhs[1])
	}
}

func TestTracesFollowExactSynthetic(t *testing.T) {
	testTraces(t, synth(t, 300, 3, 1), 25, 0.15, 0.05)
}

func TestTracesFollowExactPol(t *testing.T) {
	testTraces(t, polSubset(t, 400), 20, 0.15, 0.05)
}

// TestWarmStartFewerIterations: fixed probes + warm start need markedly
// fewer solver iterations than resampled probes + zero init, per solver.
func TestWarmStartFewerIterations(t *testing.T) {
	ds := synth(t, 400, 3, 2)
	for _, m := range []solvers.Method{solvers.CG{}, solvers.AP{BlockSize: 50}, solvers.SGD{BatchSize: 50, Seed: 1}} {
		var it [2]int
		for w, ws := range []bool{false, true} {
			o, err := NewOptimiser(ds, Config{Solver: m, WarmStart: ws, Settings: solvers.Settings{MaxIterations: 20000}})
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Run(context.Background(), 12); err != nil {
				t.Fatal(err)
			}
			it[w] = o.History().TotalSolverIterations()
		}
		t.Logf("%s: total solver iterations cold %d, warm %d (ratio %.2f)", m.Name(), it[0], it[1], float64(it[0])/float64(it[1]))
		if float64(it[1]) > 0.7*float64(it[0]) {
			t.Errorf("%s: warm start used %d iterations, cold %d: expected at most 70%%", m.Name(), it[1], it[0])
		}
	}
}

// historyEqual compares histories bit for bit, ignoring wall-clock fields.
func historyEqual(t *testing.T, a, b History) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("history lengths %d and %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i].Untimed(), b[i].Untimed()
		if !recordsEqual(x, y) {
			t.Fatalf("step %d records differ:\n%+v\n%+v", i+1, x, y)
		}
	}
}

func recordsEqual(x, y StepRecord) bool {
	eq := floatbits.Equal
	if x.Step != y.Step || x.SolverIterations != y.SolverIterations || x.SolverConverged != y.SolverConverged ||
		math.Float64bits(x.Noise) != math.Float64bits(y.Noise) || math.Float64bits(x.Signal) != math.Float64bits(y.Signal) ||
		math.Float64bits(x.InitDistance) != math.Float64bits(y.InitDistance) || math.Float64bits(x.ZeroInitDistance) != math.Float64bits(y.ZeroInitDistance) ||
		!eq(x.Lengthscales, y.Lengthscales) || !eq(x.Gradient, y.Gradient) || len(x.Residuals) != len(y.Residuals) ||
		x.BudgetStop != y.BudgetStop || math.Float64bits(x.SolverEpochs) != math.Float64bits(y.SolverEpochs) || !eq(x.FinalResiduals, y.FinalResiduals) {
		return false
	}
	if (x.ExactMLL == nil) != (y.ExactMLL == nil) || (x.ExactMLL != nil && math.Float64bits(*x.ExactMLL) != math.Float64bits(*y.ExactMLL)) {
		return false
	}
	for t := range x.Residuals {
		if !eq(x.Residuals[t], y.Residuals[t]) {
			return false
		}
	}
	return true
}

// TestResumeBitIdentical: 10 steps straight equal 4 + Save + Resume + 6,
// and equal a run interrupted mid-solve, saved and resumed, bit for bit.
func TestResumeBitIdentical(t *testing.T) {
	ds := synth(t, 250, 3, 6)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"cg-warm", Config{WarmStart: true, Seed: 3}},
		{"cg-cold", Config{Seed: 3}},
		{"ap-warm", Config{Solver: solvers.AP{BlockSize: 40}, WarmStart: true, Seed: 3}},
		{"sgd-warm", Config{Solver: solvers.SGD{BatchSize: 50, Seed: 2}, WarmStart: true, Seed: 3, Settings: solvers.Settings{MaxIterations: 20000}}},
		// The checkpoint keeps the raw (paper) rate: with the normalised
		// default in its place the resumed run would differ.
		{"sgd-raw-cold", Config{Solver: solvers.SGD{BatchSize: 50, RawLearningRate: 3, Seed: 2}, Seed: 3, Settings: solvers.Settings{MaxIterations: 20000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ref, err := NewOptimiser(ds, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := ref.Run(ctx, 10); err != nil {
				t.Fatal(err)
			}
			path := t.TempDir() + "/run.ckpt"

			// 4 steps, save, resume, 6 more.
			a, _ := NewOptimiser(ds, tc.cfg)
			if err := a.Run(ctx, 4); err != nil {
				t.Fatal(err)
			}
			if err := a.Save(path); err != nil {
				t.Fatal(err)
			}
			checkSaved(t, path, tc.cfg, false)
			b, err := Resume(path, ds)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.RunTo(ctx, 10); err != nil {
				t.Fatal(err)
			}
			compareStates(t, ref.State(), b.State())

			// Interrupted mid-solve in step 3 after 2 solver iterations.
			c, _ := NewOptimiser(ds, tc.cfg)
			cctx, cancel := context.WithCancel(ctx)
			c.AddRecorder(Hooks{Iteration: func(p IterationRecord) {
				if p.Step == 3 && p.Iteration == 2 {
					cancel()
				}
			}})
			err = c.Run(cctx, 10)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted run returned %v, want context.Canceled", err)
			}
			if st := c.State(); st.Step != 2 || st.Pending == nil || st.Pending.Iteration != 2 {
				t.Fatalf("after interrupt: step %d, pending %v", st.Step, st.Pending != nil)
			}
			if err := c.Save(path); err != nil {
				t.Fatal(err)
			}
			checkSaved(t, path, tc.cfg, true)
			d, err := Resume(path, ds)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.RunTo(ctx, 10); err != nil {
				t.Fatal(err)
			}
			compareStates(t, ref.State(), d.State())
		})
	}
}

// TestResumeRaisedCap: a solve interrupted under a cap it would have hit,
// resumed with a larger one, goes on past the old cap and ends as a run
// started under the larger cap does, bit for bit; resumed without the raise
// it stops at the old cap, unconverged.
func TestResumeRaisedCap(t *testing.T) {
	ds := synth(t, 250, 3, 6)
	ctx := context.Background()
	cfg := Config{Solver: solvers.SGD{BatchSize: 50, Seed: 2}, Seed: 3, Settings: solvers.Settings{MaxIterations: 20000}}
	ref, err := NewOptimiser(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.Run(ctx, 3); err != nil {
		t.Fatal(err)
	}
	need := ref.History()[0].SolverIterations
	if need < 10 || !ref.History()[0].SolverConverged {
		t.Fatalf("step 1 took %d iterations (converged %v): the test needs a longer solve", need, ref.History()[0].SolverConverged)
	}
	small := cfg
	small.Settings.MaxIterations = need / 2
	path := t.TempDir() + "/run.ckpt"
	c, err := NewOptimiser(ds, small)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	c.AddRecorder(Hooks{Iteration: func(p IterationRecord) {
		if p.Step == 1 && p.Iteration == 2 {
			cancel()
		}
	}})
	if err := c.Run(cctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run returned %v, want context.Canceled", err)
	}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	raised, err := Resume(path, ds, WithChanges(func(c *Config) { c.Settings.MaxIterations = cfg.Settings.MaxIterations }))
	if err != nil {
		t.Fatal(err)
	}
	if err := raised.RunTo(ctx, 3); err != nil {
		t.Fatal(err)
	}
	compareStates(t, ref.State(), raised.State())

	kept, err := Resume(path, ds)
	if err != nil {
		t.Fatal(err)
	}
	if err := kept.RunTo(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if r := kept.History()[0]; r.SolverIterations != small.Settings.MaxIterations || r.SolverConverged {
		t.Errorf("resumed under the old cap %d: %d iterations, converged %v; want the cap, unconverged", small.Settings.MaxIterations, r.SolverIterations, r.SolverConverged)
	}
}

// checkSaved: a checkpoint keeps the previous solution only with warm
// start, and the probes only when they are fixed or a solve is pending (its
// right-hand side needs them); TestResumeBitIdentical shows that what is
// left out is never read.
func checkSaved(t *testing.T, path string, cfg Config, pending bool) {
	t.Helper()
	st, err := ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	n, s := st.N, st.Config.Probes
	wantV, wantZ := 0, 0
	if cfg.WarmStart {
		wantV = n
	}
	if cfg.fixedProbes() || pending {
		wantZ = n
	}
	if st.PrevV.Rows != wantV || len(st.PrevV.Data) != wantV*(s+1) {
		t.Errorf("saved previous solution has %d rows (%d values), want %d", st.PrevV.Rows, len(st.PrevV.Data), wantV)
	}
	if st.Probes.Rows != wantZ || len(st.Probes.Data) != wantZ*s {
		t.Errorf("saved probes have %d rows (%d values), want %d", st.Probes.Rows, len(st.Probes.Data), wantZ)
	}
	if (st.Pending != nil) != pending {
		t.Errorf("saved pending solve: %v, want %v", st.Pending != nil, pending)
	}
}

func compareStates(t *testing.T, want, got OptimiserState) {
	t.Helper()
	if got.Step != want.Step || !floatbits.Equal(got.Raw, want.Raw) || !floatbits.Equal(got.AdamM, want.AdamM) || !floatbits.Equal(got.AdamV, want.AdamV) || !floatbits.Equal(got.PrevV.Data, want.PrevV.Data) {
		t.Fatalf("state differs: step %d/%d raw %v vs %v", got.Step, want.Step, got.Raw, want.Raw)
	}
	historyEqual(t, want.History, got.History)
}

// TestDropResidualTraces: without traces a run has the same bits (θ, Adam
// moments, every record but its Residuals) as with them, its checkpoint
// shrinks by the traces' size, and the option may change on resume: a run
// that starts with traces and resumes without them (and back) matches the
// uninterrupted run in everything else.
func TestDropResidualTraces(t *testing.T) {
	ds := synth(t, 250, 3, 6)
	ctx := context.Background()
	for _, base := range []Config{
		{Solver: solvers.SGD{BatchSize: 50, Seed: 2}, Seed: 3, Settings: solvers.Settings{MaxIterations: 20000}},
		{WarmStart: true, Seed: 3},
	} {
		drop := base
		drop.DropResidualTraces = true
		run := func(cfg Config, steps int) *Optimiser {
			t.Helper()
			o, err := NewOptimiser(ds, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Run(ctx, steps); err != nil {
				t.Fatal(err)
			}
			return o
		}
		full, small := run(base, 6), run(drop, 6)
		fs, ss := full.State(), small.State()
		for i, r := range fs.History {
			if len(r.Residuals) != r.SolverIterations+1 || r.SolverIterations == 0 {
				t.Fatalf("step %d with traces: %d rows for %d iterations", i+1, len(r.Residuals), r.SolverIterations)
			}
			if ss.History[i].Residuals != nil {
				t.Fatalf("step %d kept %d residual rows with DropResidualTraces", i+1, len(ss.History[i].Residuals))
			}
			r.Residuals = nil
			fs.History[i] = r
		}
		compareStates(t, fs, ss)
		if !ss.Config.DropResidualTraces || fs.Config.DropResidualTraces {
			t.Errorf("State.Config.DropResidualTraces: %v with, %v without", fs.Config.DropResidualTraces, ss.Config.DropResidualTraces)
		}

		// Checkpoint sizes: the traces are (iterations+1)·(s+1) float64s.
		dir := t.TempDir()
		if err := full.Save(dir + "/full"); err != nil {
			t.Fatal(err)
		}
		if err := small.Save(dir + "/small"); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(dir + "/full")
		si, _ := os.Stat(dir + "/small")
		rows := 0
		for _, r := range full.History() {
			rows += len(r.Residuals)
		}
		traceBytes := int64(rows * (full.Config().Probes + 1) * 8)
		if fi.Size()-si.Size() < traceBytes/2 {
			t.Errorf("checkpoint %d bytes with traces, %d without: the %d bytes of traces were not dropped", fi.Size(), si.Size(), traceBytes)
		}

		// 3 steps with traces, resume without; 3 without, resume with.
		for _, cfgs := range [][2]Config{{base, drop}, {drop, base}} {
			a := run(cfgs[0], 3)
			if err := a.Save(dir + "/mid"); err != nil {
				t.Fatal(err)
			}
			b, err := Resume(dir+"/mid", ds, WithConfig(cfgs[1]))
			if err != nil {
				t.Fatalf("resume changing DropResidualTraces to %v: %v", cfgs[1].DropResidualTraces, err)
			}
			if err := b.RunTo(ctx, 6); err != nil {
				t.Fatal(err)
			}
			bs := b.State()
			if bs.Config.DropResidualTraces != cfgs[1].DropResidualTraces {
				t.Errorf("resumed run's DropResidualTraces %v, asked %v", bs.Config.DropResidualTraces, cfgs[1].DropResidualTraces)
			}
			for i, r := range bs.History {
				wantTrace := !cfgs[0].DropResidualTraces
				if i >= 3 {
					wantTrace = !cfgs[1].DropResidualTraces
				}
				if (r.Residuals != nil) != wantTrace {
					t.Errorf("resumed history step %d: trace kept %v, want %v", i+1, r.Residuals != nil, wantTrace)
				}
				r.Residuals = nil
				bs.History[i] = r
			}
			compareStates(t, ss, bs)
		}
	}
}

// TestDeterministicGOMAXPROCS: the same seed gives the same bits with one
// and two threads.
func TestDeterministicGOMAXPROCS(t *testing.T) {
	ds := synth(t, 300, 3, 8)
	old := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(old)
	for _, cfg := range []Config{
		{WarmStart: true, Seed: 11, Solver: solvers.SGD{BatchSize: 60, Seed: 4}, Settings: solvers.Settings{MaxIterations: 20000}},
		{WarmStart: true, Seed: 11, Solver: solvers.CG{}},
		{Estimator: ExactGradient, TrackExactMLL: true},
		{Estimator: Pathwise, Features: 200, WarmStart: true, Seed: 11, Settings: solvers.Settings{Budget: 8}},
	} {
		var states [2]OptimiserState
		var evals [2]Eval
		for i, p := range []int{1, 2} {
			runtime.GOMAXPROCS(p)
			o, err := NewOptimiser(ds, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Run(context.Background(), 4); err != nil {
				t.Fatal(err)
			}
			states[i] = o.State()
			if evals[i], err = o.Evaluate(); err != nil {
				t.Fatal(err)
			}
		}
		compareStates(t, states[0], states[1])
		if evals[0].TestLLH != evals[1].TestLLH || *evals[0].MLL != *evals[1].MLL {
			t.Errorf("%v: evaluation differs between GOMAXPROCS 1 and 2: %+v vs %+v", cfg.Estimator, evals[0], evals[1])
		}
		if s0, s1 := evals[0].Samples, evals[1].Samples; (s0 == nil) != (cfg.Estimator != Pathwise) || (s0 != nil && (s0.TestLLH != s1.TestLLH || s0.TestRMSE != s1.TestRMSE)) {
			t.Errorf("%v: sample evaluation differs between GOMAXPROCS 1 and 2: %+v vs %+v", cfg.Estimator, s0, s1)
		}
	}
}

// TestDistances checks InitDistance and ZeroInitDistance against explicit
// H-norms, with an exact solver so that the final iterate is the solution.
func TestDistances(t *testing.T) {
	ds := synth(t, 80, 2, 5)
	o, err := NewOptimiser(ds, Config{Solver: solvers.Cholesky{}, WarmStart: true, Probes: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	v0 := o.State().PrevV.Dense()
	k := o.Kernel()
	if err := o.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := o.State().PrevV.Dense()
	h := explicitH(ds.XTrain, k)
	n, m := v.Dims()
	var wantInit, wantZero float64
	for j := 0; j < m; j++ {
		dv := mat.NewVecDense(n, nil)
		dv.SubVec(v0.ColView(j), v.ColView(j))
		wantInit += math.Sqrt(mat.Inner(dv, h, dv)/float64(n)) / float64(m)
		wantZero += math.Sqrt(mat.Inner(v.ColView(j), h, v.ColView(j))/float64(n)) / float64(m)
	}
	r := o.History()[1]
	if math.Abs(r.InitDistance-wantInit) > 1e-6*wantZero || math.Abs(r.ZeroInitDistance-wantZero) > 1e-8*wantZero {
		t.Errorf("distances (%v, %v), explicit (%v, %v)", r.InitDistance, r.ZeroInitDistance, wantInit, wantZero)
	}
	if !(r.InitDistance < r.ZeroInitDistance) {
		t.Errorf("warm start distance %v not below zero-init distance %v", r.InitDistance, r.ZeroInitDistance)
	}
}

// TestEvaluateIterative compares the evaluation beyond MaxExactN, by an
// in-place Cholesky factorisation (when n×n fits the memory budget) and by
// batched CG (when it does not), with Exact's.
func TestEvaluateIterative(t *testing.T) {
	ds := synth(t, 200, 2, 9)
	init := kernel.Hyper{Lengthscales: []float64{0.5, 0.8}, Signal: 1, Noise: 0.3}
	o, err := NewOptimiser(ds, Config{Init: init})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := o.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	// A budget of 100 float64s: the optimiser's operator is matrix-free
	// and the evaluation cannot hold H.
	small, err := NewOptimiser(ds, Config{Init: init, Operator: kernel.Options{MemoryBudget: 800}})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*Optimiser{o, small} {
		if err := x.Change(func(c *Config) { c.MaxExactN = 100 }); err != nil {
			t.Fatal(err)
		}
	}
	ip, err := o.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	it, err := small.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	if ex.Method != "cholesky" || ip.Method != "cholesky" || it.Method == "cholesky" || it.MLL != nil || ip.MLL == nil {
		t.Fatalf("methods %q, %q, %q", ex.Method, ip.Method, it.Method)
	}
	if math.Abs(ex.TestRMSE-it.TestRMSE) > 1e-6 || math.Abs(ex.TestLLH-it.TestLLH) > 1e-6 {
		t.Errorf("exact (%v, %v) vs iterative (%v, %v)", ex.TestRMSE, ex.TestLLH, it.TestRMSE, it.TestLLH)
	}
	if math.Abs(ex.TestRMSE-ip.TestRMSE) > 1e-12 || math.Abs(ex.TestLLH-ip.TestLLH) > 1e-12 || math.Abs(*ex.MLL-*ip.MLL) > 1e-9*math.Abs(*ex.MLL) {
		t.Errorf("exact (%v, %v, MLL %v) vs in place (%v, %v, MLL %v)", ex.TestRMSE, ex.TestLLH, *ex.MLL, ip.TestRMSE, ip.TestLLH, *ip.MLL)
	}
	// The optimiser goes on after the in-place evaluation released its operator.
	if err := o.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestPredictInPlace checks the in-place predictor's mean, variance and
// MLL against Exact point by point, and that its parallel chunks give the
// same bits on one core as on several.
func TestPredictInPlace(t *testing.T) {
	ds := synth(t, 150, 3, 4)
	xs := mat.NewDense(130, 3, nil) // more test points than two chunks
	for i := 0; i < 130; i++ {
		for j := 0; j < 3; j++ {
			xs.Set(i, j, math.Sin(float64(7*i+3*j)))
		}
	}
	k := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.Hyper{Lengthscales: []float64{0.7, 1.1, 0.9}, Signal: 1.3, Noise: 0.2}}
	e, err := NewExact(ds.XTrain, ds.YTrain, k)
	if err != nil {
		t.Fatal(err)
	}
	wm, wv, err := e.predictLatent(xs) // predictInPlace's variance is latent too
	if err != nil {
		t.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(1)
	m1, v1, mll1, err1 := predictInPlace(ds.XTrain, ds.YTrain, xs, k)
	runtime.GOMAXPROCS(max(prev, 3))
	m2, v2, mll2, err2 := predictInPlace(ds.XTrain, ds.YTrain, xs, k)
	runtime.GOMAXPROCS(prev)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	for i := range wm {
		if math.Abs(m1[i]-wm[i]) > 1e-10*(1+math.Abs(wm[i])) || math.Abs(v1[i]-wv[i]) > 1e-10*wv[i] {
			t.Fatalf("point %d: in place (%v, %v), Exact (%v, %v)", i, m1[i], v1[i], wm[i], wv[i])
		}
		if math.Float64bits(m1[i]) != math.Float64bits(m2[i]) || math.Float64bits(v1[i]) != math.Float64bits(v2[i]) {
			t.Fatalf("point %d differs between GOMAXPROCS 1 and %d", i, max(prev, 3))
		}
	}
	if math.Abs(mll1-e.MLL()) > 1e-10*math.Abs(e.MLL()) || mll1 != mll2 {
		t.Errorf("MLL in place %v (and %v), Exact %v", mll1, mll2, e.MLL())
	}
	// A matrix that is not positive definite is an error, not garbage.
	bad := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.Hyper{Lengthscales: []float64{0.7, 1.1, 0.9}, Signal: 1.3, Noise: 1e-300}}
	dup := mat.NewDense(4, 3, []float64{1, 2, 3, 1, 2, 3, 1, 2, 3, 0, 0, 0})
	if _, _, _, err := predictInPlace(dup, []float64{1, 2, 3, 4}, xs, bad); !errors.Is(err, ErrNotPositiveDefinite) {
		t.Errorf("duplicated points without noise: err = %v, want ErrNotPositiveDefinite", err)
	}
	if !inPlaceFits(100, 80000) || inPlaceFits(100, 79999) {
		t.Error("inPlaceFits: 100² float64 values need 80000 bytes")
	}
}

// TestOptimiserBadInput: a bad field is a ConfigError naming the field
// (so that the command line can name its flag).
func TestOptimiserBadInput(t *testing.T) {
	ds := synth(t, 30, 2, 1)
	for i, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{Probes: -1}, "Probes"},
		{Config{LearningRate: math.NaN()}, "LearningRate"},
		{Config{LearningRate: -1}, "LearningRate"},
		{Config{Kernel: 42}, "Kernel"},
		{Config{Estimator: 7}, "Estimator"},
		{Config{ProbeDist: 3}, "ProbeDist"},
		{Config{FixedProbes: 9}, "FixedProbes"},
		{Config{Features: 3, Estimator: Pathwise}, "Features"},
		{Config{NoiseMin: -1}, "NoiseMin"},
		{Config{MaxExactN: 10, Estimator: ExactGradient}, "MaxExactN"},
		{Config{Rules: 5}, "Rules"},
		{Config{Init: kernel.Hyper{Lengthscales: []float64{1}, Signal: 1, Noise: 1}}, "Init"},
		{Config{Init: kernel.Hyper{Lengthscales: []float64{1, 1}, Signal: 1, Noise: 0}}, "Init"},
		{Config{Settings: solvers.Settings{RelTolMean: -1}}, "Settings.RelTolMean"},
		{Config{Settings: solvers.Settings{MaxIterations: -3}}, "Settings.MaxIterations"},
		{Config{Settings: solvers.Settings{Budget: 1}, Estimator: ExactGradient}, "Settings.Budget"},
		{Config{Solver: solvers.SGD{Momentum: 1.5}}, "Solver.Momentum"},
		{Config{Solver: solvers.AP{BlockSize: -1}}, "Solver.BlockSize"},
		{Config{Solver: solvers.CG{PrecondRank: -2}}, "Solver.PrecondRank"},
	} {
		_, err := NewOptimiser(ds, c.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !errors.Is(err, ErrConfig) {
			t.Errorf("config %d (%+v): %v, want a ConfigError of field %s", i, c.cfg, err, c.field)
		}
	}
	if _, err := NewOptimiser(nil, Config{}); err == nil {
		t.Error("nil dataset: no error")
	}
	nan := synth(t, 30, 2, 1)
	nan.YTrain[3] = math.NaN()
	if _, err := NewOptimiser(nan, Config{}); err == nil {
		t.Error("NaN target: no error")
	}
	o, _ := NewOptimiser(ds, Config{})
	if err := o.Run(context.Background(), -1); err == nil {
		t.Error("Run(-1): no error")
	}
}

// TestRunInterruptSaves: a cancelled Run saves the checkpoint and says how
// to resume; the error wraps context.Canceled.
func TestRunInterruptSaves(t *testing.T) {
	ds := synth(t, 100, 2, 1)
	path := t.TempDir() + "/x.ckpt"
	ctx, cancel := context.WithCancel(context.Background())
	o, err := NewOptimiser(ds, Config{WarmStart: true, CheckpointPath: path})
	if err != nil {
		t.Fatal(err)
	}
	o.AddRecorder(Hooks{Step: func(r StepRecord) {
		if r.Step == 2 {
			cancel()
		}
	}})
	err = o.Run(ctx, 10)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	st, err := ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Step != 2 {
		t.Errorf("checkpoint at step %d, want 2", st.Step)
	}
}

// TestProbeSwitches: FixedProbes and WarmStart ablate separately.
func TestProbeSwitches(t *testing.T) {
	ds := synth(t, 80, 2, 3)
	for _, c := range []struct {
		warm      bool
		mode      ProbeMode
		wantFixed bool
	}{
		{false, ProbesAuto, false},
		{true, ProbesAuto, true},
		{false, ProbesFixed, true},
		{true, ProbesResampled, false},
	} {
		o, err := NewOptimiser(ds, Config{WarmStart: c.warm, FixedProbes: c.mode, Probes: 3})
		if err != nil {
			t.Fatal(err)
		}
		var probes [][]float64
		var inits []float64
		for i := 0; i < 3; i++ {
			if err := o.Step(context.Background()); err != nil {
				t.Fatal(err)
			}
			probes = append(probes, o.State().Probes.Data)
			r := o.History()[i]
			inits = append(inits, r.InitDistance/r.ZeroInitDistance)
		}
		fixed := floatbits.Equal(probes[0], probes[1]) && floatbits.Equal(probes[1], probes[2])
		if fixed != c.wantFixed {
			t.Errorf("warm %v, %v: probes fixed = %v, want %v", c.warm, c.mode, fixed, c.wantFixed)
		}
		// A zero start has InitDistance = ZeroInitDistance. A warm start
		// (from step 2) differs, and is closer only with fixed probes: the
		// previous solution for other probes is no better than zero.
		for i, q := range inits {
			warmUsed := c.warm && i > 0
			if warmUsed != (math.Abs(q-1) > 1e-3) || (warmUsed && c.wantFixed && !(q < 0.5)) {
				t.Errorf("warm %v, %v, step %d: InitDistance/ZeroInitDistance = %v", c.warm, c.mode, i+1, q)
			}
		}
	}
}

// TestHooksAndTracking: OnIteration sees the residuals History records, and
// TrackExactMLL records the Cholesky MLL at each step's starting θ.
func TestHooksAndTracking(t *testing.T) {
	ds := synth(t, 120, 2, 4)
	var seen [][]float64
	var steps []int
	var other []int // a second recorder, removed after step 1
	o, err := NewOptimiser(ds, Config{WarmStart: true, TrackExactMLL: true})
	if err != nil {
		t.Fatal(err)
	}
	o.AddRecorder(Hooks{
		Iteration: func(p IterationRecord) {
			if p.Step == 2 {
				if p.Iteration != len(seen)+1 {
					t.Errorf("iteration %d after %d", p.Iteration, len(seen))
				}
				seen = append(seen, p.RelResiduals)
			}
		},
		Step: func(r StepRecord) { steps = append(steps, r.Step) },
	})
	var remove func()
	remove = o.AddRecorder(Hooks{Step: func(r StepRecord) {
		other = append(other, r.Step)
		remove()
	}})
	k0 := o.Kernel()
	if err := o.Run(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	h := o.History()
	if len(steps) != 3 || steps[2] != 3 {
		t.Errorf("the first recorder saw steps %v", steps)
	}
	if !reflect.DeepEqual(other, []int{1}) {
		t.Errorf("the second recorder, removed during step 1, saw steps %v", other)
	}
	r := h[1]
	if len(seen) != r.SolverIterations || len(r.Residuals) != r.SolverIterations+1 {
		t.Fatalf("hook saw %d iterations, record has %d (trace %d)", len(seen), r.SolverIterations, len(r.Residuals))
	}
	for i := range seen {
		if !floatbits.Equal(seen[i], r.Residuals[i+1]) {
			t.Errorf("iteration %d: hook %v, record %v", i+1, seen[i], r.Residuals[i+1])
		}
	}
	last := r.Residuals[len(r.Residuals)-1]
	if !r.SolverConverged || last[0] >= 0.01 || last[1] >= 0.1 {
		t.Errorf("final residuals %v (converged %v): tolerances 0.01 and 0.1", last, r.SolverConverged)
	}
	e, err := NewExact(ds.XTrain, ds.YTrain, k0)
	if err != nil {
		t.Fatal(err)
	}
	if h[0].ExactMLL == nil || *h[0].ExactMLL != e.MLL() {
		t.Errorf("ExactMLL at step 1: %v, want %v", h[0].ExactMLL, e.MLL())
	}
	if h[0].OperatorProducts == 0 {
		t.Error("no solver work recorded")
	}
}

func TestResult(t *testing.T) {
	ds := synth(t, 100, 2, 2)
	o, err := NewOptimiser(ds, Config{WarmStart: true, Probes: 4, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	r := o.Result()
	if r.Test != nil || r.StepsDone != 3 || len(r.History) != 3 || r.Solver != "cg" || !r.WarmStart || r.Probes != 4 || r.Seed != 3 ||
		r.NTrain != 100 || r.NTest != 25 || r.D != 2 || r.Kernel != "matern32" {
		t.Errorf("result %+v", r)
	}
	h := o.Hyper()
	if r.Final.Noise != h.Noise || r.Final.Signal != h.Signal || !floatbits.Equal(r.Final.Lengthscales, h.Lengthscales) {
		t.Errorf("final %+v, hyper %+v", r.Final, h)
	}
	if r.SolverSeconds != o.History().TotalSolverSeconds() || r.TotalSeconds < r.SolverSeconds {
		t.Errorf("seconds: solver %v, total %v", r.SolverSeconds, r.TotalSeconds)
	}
	ev, err := o.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	// The evaluation survives result.json, where the tables read it.
	r.Test = &ev
	var back Result
	if b, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Test == nil || back.Test.TestLLH != ev.TestLLH || back.Test.TestRMSE != ev.TestRMSE || back.Test.Method != "cholesky" || *back.Test.MLL != *ev.MLL {
		t.Errorf("result with eval %+v, evaluation %+v", back.Test, ev)
	}
	noTest := synth(t, 40, 2, 1)
	noTest.XTest, noTest.YTest = nil, nil
	o2, _ := NewOptimiser(noTest, Config{})
	if _, err := o2.Evaluate(); err == nil {
		t.Error("Evaluate without test data: no error")
	}
}

// BenchmarkStep measures one warm-started CG step on 1000 points.
func BenchmarkStep(b *testing.B) {
	ds := synth(b, 1000, 4, 1)
	o, err := NewOptimiser(ds, Config{WarmStart: true})
	if err != nil {
		b.Fatal(err)
	}
	if err := o.Step(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := o.Step(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(o.History().TotalSolverIterations())/float64(o.Steps()), "iters/step")
}

// TestUnconvergedSteps: History.UnconvergedSteps counts the steps whose
// solve the iteration cap stopped short of its tolerances, judged here from
// each step's own residual trace (its last row against 0.01 and 0.1).
func TestUnconvergedSteps(t *testing.T) {
	ds := synth(t, 300, 3, 4)
	const steps = 4
	for _, c := range []struct {
		maxIter int
		want    int
	}{{1, steps}, {0, 0}} {
		o, err := NewOptimiser(ds, Config{Solver: solvers.CG{}, Settings: solvers.Settings{MaxIterations: c.maxIter}})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Run(context.Background(), steps); err != nil {
			t.Fatal(err)
		}
		h := o.History()
		if got := h.UnconvergedSteps(); got != c.want {
			t.Errorf("MaxIterations %d: UnconvergedSteps = %d, want %d", c.maxIter, got, c.want)
		}
		for _, r := range h {
			last := r.Residuals[len(r.Residuals)-1]
			met := last[0] < solvers.DefaultRelTolMean
			for _, v := range last[1:] {
				met = met && v < solvers.DefaultRelTolProbes
			}
			if met == !r.SolverConverged {
				t.Errorf("MaxIterations %d, step %d: converged %v but final residuals %v", c.maxIter, r.Step, r.SolverConverged, last)
			}
			if c.maxIter == 1 && r.SolverIterations != 1 {
				t.Errorf("step %d: %d iterations under a cap of 1", r.Step, r.SolverIterations)
			}
		}
	}
}

// TestNoiseMin: with a floor, σ never falls below it; the raw σ is exactly
// kernel.InvSoftplus(floor) after a step that would have gone lower, and
// before the floor binds the run is bit for bit the run without it (Adam's
// moments are untouched by the clip, as in the authors' code).
func TestNoiseMin(t *testing.T) {
	ds := synth(t, 60, 2, 4)
	free, err := NewOptimiser(ds, Config{Estimator: ExactGradient, LearningRate: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	const floor = 0.5
	floored, err := NewOptimiser(ds, Config{Estimator: ExactGradient, LearningRate: 0.2, NoiseMin: floor})
	if err != nil {
		t.Fatal(err)
	}
	bound := false
	for step := 1; step <= 12; step++ {
		if err := free.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := floored.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		fs, gs := free.State(), floored.State()
		last := len(gs.Raw) - 1
		if !bound && free.Hyper().Noise >= floor {
			for i := range fs.Raw {
				if fs.Raw[i] != gs.Raw[i] {
					t.Fatalf("step %d: raw[%d] %v with the floor, %v without, before it binds", step, i, gs.Raw[i], fs.Raw[i])
				}
			}
			continue
		}
		bound = true
		if s := floored.Hyper().Noise; s < floor*(1-1e-12) {
			t.Errorf("step %d: σ = %v below the floor %v", step, s, floor)
		}
		if free.Hyper().Noise < floor && step == firstBelow(free) && gs.Raw[last] != kernel.InvSoftplus(floor) {
			t.Errorf("step %d: raw σ %v, want InvSoftplus(%v) = %v", step, gs.Raw[last], floor, kernel.InvSoftplus(floor))
		}
	}
	if !bound {
		t.Fatalf("σ never fell below %v in 12 steps (%v): the test does not exercise the floor", floor, free.Hyper().Noise)
	}
	if _, err := NewOptimiser(ds, Config{NoiseMin: -1}); !errors.Is(err, ErrConfig) {
		t.Errorf("NoiseMin −1: %v", err)
	}
}

// firstBelow returns the first step after which o's σ was below 0.5, from
// its history.
func firstBelow(o *Optimiser) int {
	for _, r := range o.History() {
		if r.Noise < 0.5 {
			return r.Step
		}
	}
	return 0
}

// TestProbeResidual: the mean of the probe columns' final residuals; NaN
// for a record without probes.
func TestProbeResidual(t *testing.T) {
	if got := (StepRecord{FinalResiduals: []float64{0.5, 0.1, 0.2, 0.6}}).ProbeResidual(); math.Abs(got-0.3) > 1e-15 {
		t.Errorf("ProbeResidual = %v, want 0.3", got)
	}
	if got := (StepRecord{FinalResiduals: []float64{0.5}}).ProbeResidual(); !math.IsNaN(got) {
		t.Errorf("without probes: %v, want NaN", got)
	}
}
