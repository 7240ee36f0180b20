package gpnb

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/floatbits"
	"github.com/gpnb/gpnb/solvers"
)

// character builds a z-scored dataset of n training and n/3 test points in
// d inputs on [-1,1]^d (or the rows of fixed, in order) whose target is f(x)
// plus noise of the given standard deviation; with distinct > 0 the
// training inputs are distinct points, each repeated in n/distinct rows
// (each row with its own noise).
func character(n, d, distinct int, noise float64, seed uint64, f func(x []float64) float64, fixed ...*mat.Dense) *data.Dataset {
	rng := rand.New(rand.NewPCG(seed, 11))
	point := func() []float64 {
		x := make([]float64, d)
		for j := range x {
			x[j] = 2*rng.Float64() - 1
		}
		return x
	}
	nt := n / 3
	x, y := mat.NewDense(n+nt, d, nil), make([]float64, n+nt)
	var base [][]float64
	for i := 0; i < n+nt; i++ {
		var xi []float64
		switch {
		case len(fixed) > 0:
			xi = fixed[0].RawRowView(i)
		case i < n && distinct > 0 && i >= distinct:
			xi = base[i%distinct]
		default:
			xi = point()
			if i < distinct {
				base = append(base, xi)
			}
		}
		x.SetRow(i, xi)
		y[i] = f(xi) + noise*rng.NormFloat64()
	}
	m, sd := 0.0, 0.0
	for _, v := range y[:n] {
		m += v / float64(n)
	}
	for _, v := range y[:n] {
		sd += (v - m) * (v - m) / float64(n)
	}
	sd = math.Sqrt(sd)
	for i := range y {
		y[i] = (y[i] - m) / sd
	}
	return &data.Dataset{Name: "character", XTrain: mat.DenseCopyOf(x.Slice(0, n, 0, d)), YTrain: y[:n],
		XTest: mat.DenseCopyOf(x.Slice(n, n+nt, 0, d)), YTest: y[n:], Stats: data.Stats{Normalised: true, YStd: 1}}
}

// nearNoiseless: the target is a draw of a Matérn-3/2 Gaussian process in
// two of three inputs (length scales 0.6 and 0.9, the third irrelevant),
// observed without noise: the marginal likelihood's optimum has σ → 0 at a
// finite signal and length scales, which a smooth made-up function would
// not give (its optimum runs off to s, ℓ → ∞).
func nearNoiseless(n int) *data.Dataset {
	nt := n / 3
	rng := rand.New(rand.NewPCG(3, 5))
	x := mat.NewDense(n+nt, 3, nil)
	for i := 0; i < n+nt; i++ {
		for j := 0; j < 3; j++ {
			x.Set(i, j, 2*rng.Float64()-1)
		}
	}
	k := kernel.Kernel{Family: Matern32, Hyper: kernel.Hyper{Lengthscales: []float64{0.6, 0.9, 1e9}, Signal: 1, Noise: 1e-5}}
	g := mat.NewSymDense(n+nt, nil)
	denseGram(g, x, k)
	for i := 0; i < n+nt; i++ {
		g.SetSym(i, i, g.At(i, i)+1e-10)
	}
	var c mat.Cholesky
	if !c.Factorize(g) {
		panic("nearNoiseless: K is not positive definite")
	}
	z := make([]float64, n+nt)
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	var l mat.TriDense
	c.LTo(&l)
	f := mat.NewVecDense(n+nt, nil)
	f.MulVec(&l, mat.NewVecDense(n+nt, z))
	i := -1
	return character(n, 3, 0, 0, 3, func(xi []float64) float64 { i++; return f.AtVec(i) }, x)
}

// duplicated: every training input stands in three rows, so K is singular
// (rank n/3); the target is noisy.
func duplicated(n int) *data.Dataset {
	return character(n, 3, n/3, 0.1, 4, func(x []float64) float64 { return math.Sin(3*x[0]) + x[1]*x[2] })
}

// exactOptimum runs Adam on the exact (Cholesky) gradient, in the fast
// preset's parametrisation and noise floor, until it has converged under a
// tolerance far below the default, and returns its test log-likelihood.
func exactOptimum(t *testing.T, ds *data.Dataset) (Eval, kernel.Hyper) {
	t.Helper()
	cfg := Fast()
	cfg.Estimator, cfg.Operator = ExactGradient, kernel.Options{}
	cfg.ConvergedTol, cfg.ConvergedGrad = 1e-7, 1e-4
	o, err := NewOptimiser(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 3000); err != nil {
		t.Fatal(err)
	}
	ev, err := o.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	return ev, o.Hyper()
}

// The fast preset on data it was not tuned to, at small n: a target with
// no noise (σ driven to the preset's floor, where a float32 K's rounding
// is far above σ², so the steps switch to float64) and a training set of
// repeated rows (K singular), on the iterative path alone (ExactUpTo and
// FinishExactUpTo 0), on it finishing on the exact path (the preset's
// FinishExactUpTo), and on the exact path the preset takes at this n.
// Each run finishes converged, with no solve at the iteration cap and no
// error, σ never below its floor, at a test log-likelihood within 0.05 of
// the exact-gradient optimum's on the iterative path alone (the fixed
// probes' bias, the optimiser finding the optimum of 64 probes' estimate;
// the exact reference is Adam on the Cholesky gradient run to a
// converged-gradient tolerance 100 times tighter) and within 0.01 with the
// exact finish or path; a run resumed halfway (with the finish: at the
// switch, and one step after it) ends with the same bits.
func TestFastPresetCharacters(t *testing.T) {
	noiseless, dup := nearNoiseless(360), duplicated(360)
	// Each data set's exact-gradient optimum, computed once for both paths.
	type optimum struct {
		ev    Eval
		theta kernel.Hyper
	}
	refs := map[*data.Dataset]optimum{}
	// The paths: Adam alone, Adam finishing on the exact path
	// (FinishExactUpTo), and the exact path from the start.
	const (
		adam = iota
		finish
		exact
	)
	for _, c := range []struct {
		name string
		ds   *data.Dataset
		path int
		tol  float64 // below the exact optimum's test LLH
	}{
		{"near-noiseless", noiseless, adam, 0.05},
		{"duplicate rows", dup, adam, 0.05},
		{"near-noiseless, exact finish", noiseless, finish, 0.01},
		{"duplicate rows, exact finish", dup, finish, 0.01},
		{"near-noiseless, exact path", noiseless, exact, 0.01},
		{"duplicate rows, exact path", dup, exact, 0.01},
	} {
		t.Run(c.name, func(t *testing.T) {
			ds := c.ds
			cfg := Fast()
			cfg.Operator.Precision = kernel.Mixed // also where the vectorised kernel is missing
			switch {
			case c.path == adam:
				cfg.ExactUpTo, cfg.FinishExactUpTo = 0, 0
			case c.path == finish:
				cfg.ExactUpTo = 0
				if ds.NTrain() > cfg.FinishExactUpTo {
					t.Fatalf("n = %d: the preset's exact finish ends at %d", ds.NTrain(), cfg.FinishExactUpTo)
				}
			case ds.NTrain() > cfg.ExactUpTo:
				t.Fatalf("n = %d: the preset's exact path ends at %d", ds.NTrain(), cfg.ExactUpTo)
			}
			o, err := NewOptimiser(ds, cfg)
			if err != nil {
				t.Fatal(err)
			}
			const cap = ConvergedMaxSteps
			if err := o.Run(context.Background(), cap); err != nil {
				t.Fatal(err)
			}
			h := o.History()
			f64, retries := h.Float64Steps()
			t.Logf("%d steps, σ %.3g, %d float64 steps (%d retried), %d iterations", len(h), o.Hyper().Noise, f64, retries, h.TotalSolverIterations())
			if !o.Converged() || len(h) >= cap {
				t.Fatalf("not converged after %d steps", len(h))
			}
			if k := h.UnconvergedSteps(); k > 0 {
				t.Errorf("%d steps' solves stopped short of their tolerances", k)
			}
			for _, r := range h {
				if r.Noise < FastNoiseMin*(1-1e-12) {
					t.Fatalf("step %d: σ = %g below the floor %g", r.Step, r.Noise, FastNoiseMin)
				}
			}
			ev, err := o.Evaluate()
			if err != nil {
				t.Fatal(err)
			}
			opt, ok := refs[ds]
			if !ok {
				opt.ev, opt.theta = exactOptimum(t, ds)
				refs[ds] = opt
			}
			ref, refTheta := opt.ev, opt.theta
			t.Logf("test LLH %.4f, exact optimum's %.4f (σ %.3g)", ev.TestLLH, ref.TestLLH, refTheta.Noise)
			if ev.TestLLH < ref.TestLLH-c.tol {
				t.Errorf("test LLH %.4f, the exact optimum's %.4f", ev.TestLLH, ref.TestLLH)
			}
			from := o.State().ExactFrom
			if (c.path == finish) != (from > 0) {
				t.Fatalf("finished on the exact path after step %d (0: not)", from)
			}
			stops := []int{len(h) / 2}
			if c.path == finish {
				t.Logf("exact finish from step %d: %d L-BFGS steps", from+1, len(h)-from)
				for _, r := range h[:from] {
					if r.Evaluations != 0 {
						t.Fatalf("step %d before the finish made %d Cholesky evaluations", r.Step, r.Evaluations)
					}
				}
				for _, r := range h[from:] {
					if r.Evaluations == 0 || r.ExactMLL == nil {
						t.Fatalf("step %d of the finish has no Cholesky evaluation", r.Step)
					}
				}
				// The finish raises the exact L from Adam's θ.
				if first, last := *h[from].ExactMLL, *h[len(h)-1].ExactMLL; last < first {
					t.Errorf("the finish lowered L from %g to %g", first, last)
				}
				stops = []int{from, from + 1} // at the switch and within the finish
			}

			// Resumed: the same bits.
			for _, stop := range stops {
				path := filepath.Join(t.TempDir(), "run.ckpt")
				part := cfg
				part.CheckpointPath = path
				runSteps(t, ds, part, stop)
				r, err := Resume(path, ds)
				if err != nil {
					t.Fatal(err)
				}
				if err := r.RunTo(context.Background(), cap); err != nil {
					t.Fatal(err)
				}
				if r.Steps() != len(h) || !floatbits.Equal(r.State().Raw, o.State().Raw) || r.State().ExactFrom != from {
					t.Errorf("resumed after %d steps: %d steps, same bits %v, exact from %d; straight: %d steps, exact from %d", stop, r.Steps(), floatbits.Equal(r.State().Raw, o.State().Raw), r.State().ExactFrom, len(h), from)
				}
			}
		})
	}
}

// A Mixed K is used while σ² is well above its rounding and float64 below
// (MixedNoiseRatio): on the near-noiseless target the run switches within
// the run, each step recording which it used, exactly where the bound
// says, and a step in float64 is bit for bit the step of a run configured
// with float64.
func TestMixedSwitchesToFloat64(t *testing.T) {
	ds := nearNoiseless(240)
	n := ds.NTrain()
	cfg := Fast()
	cfg.Operator.Precision = kernel.Mixed
	cfg.Until, cfg.ExactUpTo = UntilSteps, 0
	o, err := NewOptimiser(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 180); err != nil {
		t.Fatal(err)
	}
	h := o.History()
	var mixed, f64 int
	for i, r := range h {
		before := cfg.Init.Clone()
		if i > 0 {
			before = h[i-1].Hyper()
		}
		want := before.Noise*before.Noise < MixedNoiseRatio*0x1p-24*math.Sqrt(float64(n))*before.Signal*before.Signal
		if r.Float64 != want {
			t.Errorf("step %d (σ %.3g, s %.3g): float64 %v, want %v", r.Step, before.Noise, before.Signal, r.Float64, want)
		}
		if r.Float64 {
			f64++
		} else {
			mixed++
		}
	}
	if mixed == 0 || f64 == 0 {
		t.Fatalf("%d mixed and %d float64 steps: the run did not switch", mixed, f64)
	}
	// The first float64 step, from the state before it, against a run
	// configured with float64 from that state.
	first := 0
	for h[first].Float64 == false {
		first++
	}
	path := filepath.Join(t.TempDir(), "run.ckpt")
	a := cfg
	a.CheckpointPath = path
	oa, err := NewOptimiser(ds, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := oa.Run(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	st, err := ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	st.Config.Operator.Precision = kernel.Float64
	st.Config.CheckpointPath = ""
	enc, err := EncodeCheckpoint(*st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, enc, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Resume(path, ds)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := b.History()[first]; !floatbits.Equal(got.Gradient, h[first].Gradient) {
		t.Errorf("step %d: gradient %v in a float64 run, %v after the switch", first+1, got.Gradient, h[first].Gradient)
	}
}

// A solve that fails on a float32 K (here: at a cap of 3 iterations, far
// short of a tight tolerance) is started again in float64 from its initial
// guess, and the step is then exactly the step of a run configured with
// float64: the same gradient bits, the record saying it retried and what
// the failed attempt cost.
func TestFloat64Retry(t *testing.T) {
	ds := synth(t, 200, 3, 1)
	cfg := Config{Solver: solvers.CG{}, Probes: 4, Seed: 2, WarmStart: true,
		Settings: solvers.Settings{RelTolMean: 1e-10, RelTolProbes: 1e-10, MaxIterations: 3},
		Operator: kernel.Options{Precision: kernel.Mixed}}
	step := func(c Config) StepRecord {
		t.Helper()
		o, err := NewOptimiser(ds, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		return o.History()[0]
	}
	got := step(cfg)
	f64 := cfg
	f64.Operator.Precision = kernel.Float64
	want := step(f64)
	if !got.Float64Retry || !got.Float64 || got.BackoffIterations != 3 || got.SolverIterations != 6 {
		t.Errorf("record: retry %v, float64 %v, %d abandoned of %d iterations; want a retry after 3 of 6",
			got.Float64Retry, got.Float64, got.BackoffIterations, got.SolverIterations)
	}
	if !floatbits.Equal(got.Gradient, want.Gradient) {
		t.Errorf("gradient %v after the retry, %v in float64", got.Gradient, want.Gradient)
	}
	if want.Float64 || want.Float64Retry {
		t.Errorf("a float64 run records float64 %v, retry %v", want.Float64, want.Float64Retry)
	}
	// A budget stop is no failure: no retry.
	b := cfg
	b.Settings.MaxIterations, b.Settings.Budget = 0, 2
	if r := step(b); r.Float64Retry || !r.BudgetStop {
		t.Errorf("budget stop: retry %v, budget stop %v", r.Float64Retry, r.BudgetStop)
	}
}
