package gpnb

import (
	"context"
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/floatbits"
	"github.com/gpnb/gpnb/solvers"
)

// quadDH returns Σ_j u_jᵀ(∂H/∂θ_c)u_j for the columns u_j of u, with ∂H/∂θ_c
// by central differences of explicitH in θ_c = (ℓ_1..ℓ_d, s, σ)_c.
func quadDH(x *mat.Dense, k kernel.Kernel, c int, u *mat.Dense) float64 {
	th := k.Hyper.Vector()
	step := 1e-5 * th[c]
	at := func(v float64) *mat.SymDense {
		t := append([]float64(nil), th...)
		t[c] = v
		return explicitH(x, kernel.Kernel{Family: k.Family, Hyper: kernel.HyperFromVector(t)})
	}
	hp, hm := at(th[c]+step), at(th[c]-step)
	var d mat.Dense
	d.Sub(hp, hm)
	d.Scale(1/(2*step), &d)
	var du mat.Dense
	du.Mul(&d, u)
	_, m := u.Dims()
	q := 0.0
	for j := 0; j < m; j++ {
		q += mat.Dot(u.ColView(j), du.ColView(j))
	}
	return q
}

// TestPathwiseGradientFormula: for one draw, the estimator's pathwise
// gradient equals ½v_yᵀ∂H v_y − (1/2s)Σ_j ζ_jᵀ∂H ζ_j computed independently:
// ξ_j from the materialised features (FeaturesTo, times the weights, plus
// σ times the noise), v_y and ζ_j by gonum's Cholesky of H built entry by
// entry, ∂H by central differences.
func TestPathwiseGradientFormula(t *testing.T) {
	ds := synth(t, 50, 2, 21)
	k := kernel.Kernel{Family: Matern52, Hyper: kernel.Hyper{Lengthscales: []float64{0.7, 1.3}, Signal: 0.9, Noise: 0.3}}
	const s, f = 3, 40
	e, err := NewEstimator(ds, Config{Kernel: Matern52, Estimator: Pathwise, Probes: s, Features: f, Solver: solvers.Cholesky{}, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float64, 4)
	var rec StepRecord
	if err := e.Gradient(context.Background(), k, got, &rec); err != nil {
		t.Fatal(err)
	}
	draws := e.State().Pathwise
	if draws == nil || draws.Prior.Features != f || draws.Prior.Samples != s {
		t.Fatalf("draws %+v", draws)
	}
	n := ds.NTrain()
	phi := mat.NewDense(n, f, nil)
	if err := draws.Prior.FeaturesTo(phi, ds.XTrain, k); err != nil {
		t.Fatal(err)
	}
	b := mat.NewDense(n, s+1, nil)
	var fx mat.Dense
	fx.Mul(phi, mat.NewDense(f, s, draws.Prior.Weights))
	for i := 0; i < n; i++ {
		b.Set(i, 0, ds.YTrain[i])
		for j := 0; j < s; j++ {
			b.Set(i, 1+j, fx.At(i, j)+k.Hyper.Noise*draws.Noise[i*s+j])
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(explicitH(ds.XTrain, k)) {
		t.Fatal("H not positive definite")
	}
	var v mat.Dense
	if err := ch.SolveTo(&v, b); err != nil {
		t.Fatal(err)
	}
	vy, zeta := v.Slice(0, n, 0, 1).(*mat.Dense), v.Slice(0, n, 1, s+1).(*mat.Dense)
	for c := range got {
		want := 0.5*quadDH(ds.XTrain, k, c, vy) - quadDH(ds.XTrain, k, c, zeta)/(2*s)
		if math.Abs(got[c]-want) > 1e-6*(1+math.Abs(want)) {
			t.Errorf("component %d: estimator %.10g, independent %.10g", c, got[c], want)
		}
	}
	if len(rec.FinalResiduals) != s+1 || !rec.SolverConverged {
		t.Errorf("record: final residuals %v, converged %v", rec.FinalResiduals, rec.SolverConverged)
	}
}

// TestPathwiseGradientUnbiased: averaged over independent draws (features,
// weights and noise drawn anew at every call: resampled), the pathwise
// estimate of ∇L matches the exact gradient by Cholesky within four
// standard errors in every component, even with only 32 features, because
// the feature kernel is unbiased for the kernel and the estimate is linear
// in it.
func TestPathwiseGradientUnbiased(t *testing.T) {
	ds := synth(t, 60, 2, 22)
	k := kernel.Kernel{Family: Matern32, Hyper: kernel.Hyper{Lengthscales: []float64{0.5, 0.8}, Signal: 1.2, Noise: 0.35}}
	want := exactGradient(t, ds, k)
	e, err := NewEstimator(ds, Config{Estimator: Pathwise, Probes: 8, Features: 32, Solver: solvers.Cholesky{}, FixedProbes: ProbesResampled, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	const draws = 400
	sum, sum2 := make([]float64, 4), make([]float64, 4)
	g := make([]float64, 4)
	for r := 0; r < draws; r++ {
		if err := e.Gradient(context.Background(), k, g, nil); err != nil {
			t.Fatal(err)
		}
		for c, v := range g {
			sum[c] += v
			sum2[c] += v * v
		}
	}
	for c := range want {
		mean := sum[c] / draws
		se := math.Sqrt((sum2[c]/draws - mean*mean) / (draws - 1))
		if math.Abs(mean-want[c]) > 4*se || se > 0.1*(1+math.Abs(want[c])) {
			t.Errorf("component %d: mean %.5g ± %.2g over %d draws, exact %.5g", c, mean, se, draws, want[c])
		}
	}
}

// TestPosteriorSamplesMatchExact: the posterior samples' mean and variance
// at test points match the exact posterior (Exact.Predict) within four
// standard errors, over independent feature draws (each estimator's own
// seed), and PathwisePosterior's Mean is the exact mean of the solve.
func TestPosteriorSamplesMatchExact(t *testing.T) {
	ds := synth(t, 60, 2, 23)
	k := kernel.Kernel{Family: RBF, Hyper: kernel.Hyper{Lengthscales: []float64{0.6, 0.9}, Signal: 1.0, Noise: 0.3}}
	ex, err := NewExact(ds.XTrain, ds.YTrain, k)
	if err != nil {
		t.Fatal(err)
	}
	xs := mat.DenseCopyOf(ds.XTest.Slice(0, 8, 0, 2))
	wantMean, wantVar, err := ex.Predict(xs)
	if err != nil {
		t.Fatal(err)
	}
	const runs, s = 150, 32
	m := len(wantMean)
	sumM, sumM2, sumV, sumV2 := make([]float64, m), make([]float64, m), make([]float64, m), make([]float64, m)
	for r := 0; r < runs; r++ {
		e, err := NewEstimator(ds, Config{Kernel: RBF, Estimator: Pathwise, Probes: s, Features: 128, Solver: solvers.Cholesky{}, Seed: uint64(100 + r)})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Gradient(context.Background(), k, make([]float64, 4), nil); err != nil {
			t.Fatal(err)
		}
		post, err := e.PosteriorSamples(xs)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < m; i++ {
			if math.Abs(post.Mean[i]-wantMean[i]) > 1e-9 {
				t.Fatalf("run %d: mean k(x*,X)v_y = %v, exact %v", r, post.Mean[i], wantMean[i])
			}
			row := post.Samples.RawRowView(i)
			mu, v := 0.0, 0.0
			for _, x := range row {
				mu += x / s
			}
			for _, x := range row {
				v += (x - wantMean[i]) * (x - wantMean[i]) / s
			}
			v += k.Hyper.Noise * k.Hyper.Noise
			if math.Abs(v-post.Variance[i]) > 1e-9*v {
				t.Fatalf("run %d: Variance %v, from the samples %v", r, post.Variance[i], v)
			}
			sumM[i] += mu
			sumM2[i] += mu * mu
			sumV[i] += v
			sumV2[i] += v * v
		}
	}
	for i := 0; i < m; i++ {
		mu, va := sumM[i]/runs, sumV[i]/runs
		seM := math.Sqrt((sumM2[i]/runs - mu*mu) / (runs - 1))
		seV := math.Sqrt((sumV2[i]/runs - va*va) / (runs - 1))
		if math.Abs(mu-wantMean[i]) > 4*seM {
			t.Errorf("point %d: sample mean %.5g ± %.2g, exact %.5g", i, mu, seM, wantMean[i])
		}
		if math.Abs(va-wantVar[i]) > 4*seV || seV > 0.05*wantVar[i] {
			t.Errorf("point %d: sample variance %.5g ± %.2g, exact %.5g", i, va, seV, wantVar[i])
		}
	}
}

// TestPathwiseResumeBitIdentical: pathwise runs (fixed draws with warm
// start, resampled draws cold, under a budget) resumed from a checkpoint
// taken between steps and one taken mid-solve match the uninterrupted run
// bit for bit, draws, posterior samples and records included; the
// checkpoint keeps the draws and the last solution, so the resumed run
// gives the same posterior samples.
func TestPathwiseResumeBitIdentical(t *testing.T) {
	ds := synth(t, 200, 3, 24)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"cg-warm", Config{Estimator: Pathwise, Features: 64, WarmStart: true, Seed: 3}},
		{"cg-cold", Config{Estimator: Pathwise, Features: 64, Seed: 3}},
		{"cg-warm-budget", Config{Estimator: Pathwise, Features: 64, WarmStart: true, Seed: 3, Settings: solvers.Settings{Budget: 5}}},
		{"ap-warm-budget", Config{Estimator: Pathwise, Features: 64, WarmStart: true, Seed: 3, Solver: solvers.AP{BlockSize: 40}, Settings: solvers.Settings{Budget: 6}}},
		{"hutchinson-cg-warm-budget", Config{WarmStart: true, Seed: 3, Settings: solvers.Settings{Budget: 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ref, err := NewOptimiser(ds, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := ref.Run(ctx, 8); err != nil {
				t.Fatal(err)
			}
			path := t.TempDir() + "/run.ckpt"
			a, _ := NewOptimiser(ds, tc.cfg)
			if err := a.Run(ctx, 3); err != nil {
				t.Fatal(err)
			}
			if err := a.Save(path); err != nil {
				t.Fatal(err)
			}
			b, err := Resume(path, ds)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.RunTo(ctx, 8); err != nil {
				t.Fatal(err)
			}
			comparePathwise(t, ref, b)

			// Interrupted mid-solve in step 4 after 2 iterations.
			c, _ := NewOptimiser(ds, tc.cfg)
			cctx, cancel := context.WithCancel(ctx)
			c.AddRecorder(Hooks{Iteration: func(p IterationRecord) {
				if p.Step == 4 && p.Iteration == 2 {
					cancel()
				}
			}})
			if err := c.Run(cctx, 8); !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted run returned %v", err)
			}
			if tc.cfg.Estimator == Pathwise {
				if _, err := c.PosteriorSamples(ds.XTest); !errors.Is(err, ErrNoSamples) {
					t.Errorf("posterior samples mid-step: %v, want ErrNoSamples", err)
				}
			}
			if err := c.Save(path); err != nil {
				t.Fatal(err)
			}
			d, err := Resume(path, ds)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.RunTo(ctx, 8); err != nil {
				t.Fatal(err)
			}
			comparePathwise(t, ref, d)
			if b := tc.cfg.Settings.Budget; b > 0 {
				h := ref.History()
				if h.BudgetSteps() == 0 || h.UnconvergedSteps() != 0 {
					t.Errorf("budget %v: %d budget stops, %d capped steps", b, h.BudgetSteps(), h.UnconvergedSteps())
				}
				for _, r := range h {
					if r.SolverEpochs > b {
						t.Errorf("step %d spent %v epochs, budget %v", r.Step, r.SolverEpochs, b)
					}
				}
			}
		})
	}
}

// comparePathwise compares two runs' states, their draws and, for the
// pathwise estimator, their posterior samples, bit for bit.
func comparePathwise(t *testing.T, want, got *Optimiser) {
	t.Helper()
	ws, gs := want.State(), got.State()
	compareStates(t, ws, gs)
	if (ws.Pathwise == nil) != (gs.Pathwise == nil) {
		t.Fatalf("draws present %v / %v", ws.Pathwise != nil, gs.Pathwise != nil)
	}
	if ws.Pathwise == nil {
		return
	}
	if !floatbits.Equal(ws.Pathwise.Noise, gs.Pathwise.Noise) || !floatbits.Equal(ws.Pathwise.Prior.Weights, gs.Pathwise.Prior.Weights) || !floatbits.Equal(ws.SolvedTheta, gs.SolvedTheta) {
		t.Fatal("draws or solved θ differ")
	}
	xs := want.Dataset().XTest
	pw, err := want.PosteriorSamples(xs)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := got.PosteriorSamples(xs)
	if err != nil {
		t.Fatal(err)
	}
	if !floatbits.Equal(pw.Samples.RawMatrix().Data, pg.Samples.RawMatrix().Data) || !floatbits.Equal(pw.Variance, pg.Variance) {
		t.Fatal("posterior samples differ")
	}
}

// TestBudgetWarmBeatsCold: under the same budget, the warm-started run's
// residuals at the stop fall below the cold run's after the first steps
// (progress accumulates across steps), and every stop is a budget stop,
// not the iteration cap.
func TestBudgetWarmBeatsCold(t *testing.T) {
	ds := synth(t, 300, 3, 25)
	run := func(warm bool, est EstimatorKind) History {
		o, err := NewOptimiser(ds, Config{Estimator: est, WarmStart: warm, Seed: 1, Settings: solvers.Settings{Budget: 4}})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Run(context.Background(), 12); err != nil {
			t.Fatal(err)
		}
		return o.History()
	}
	for _, est := range []EstimatorKind{Hutchinson, Pathwise} {
		cold, warm := run(false, est), run(true, est)
		for i := 4; i < len(warm); i++ {
			if w, c := meanProbe(warm[i].FinalResiduals), meanProbe(cold[i].FinalResiduals); !(w < c) {
				t.Errorf("%v step %d: warm mean probe residual %.3g not below cold %.3g", est, i+1, w, c)
			}
		}
		if cold.UnconvergedSteps() != 0 || warm.UnconvergedSteps() != 0 {
			t.Errorf("%v: budget stops counted as capped steps", est)
		}
	}
}

func meanProbe(r []float64) float64 {
	s := 0.0
	for _, x := range r[1:] {
		s += x
	}
	return s / float64(len(r)-1)
}

// TestPathwiseConfig: configuration errors say what to do, and the
// pathwise estimator's defaults are filled in.
func TestPathwiseConfig(t *testing.T) {
	c, err := Config{Estimator: Pathwise}.Resolve(2)
	if err != nil || c.Features != kernel.DefaultFeatures {
		t.Errorf("Resolve: %v, features %d", err, c.Features)
	}
	for name, bad := range map[string]Config{
		"features-hutchinson": {Features: 100},
		"odd-features":        {Estimator: Pathwise, Features: 101},
		"negative-features":   {Estimator: Pathwise, Features: -2},
		"rademacher":          {Estimator: Pathwise, ProbeDist: Rademacher},
		"budget-exact":        {Estimator: ExactGradient, Settings: solvers.Settings{Budget: 3}},
		"negative-budget":     {Settings: solvers.Settings{Budget: -1}},
	} {
		if _, err := bad.Resolve(2); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	ds := synth(t, 40, 2, 26)
	o, err := NewOptimiser(ds, Config{Settings: solvers.Settings{Budget: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Step(context.Background()); !errors.Is(err, solvers.ErrSettings) {
		t.Errorf("a budget below one CG iteration: %v, want solvers.ErrSettings", err)
	}
	h, _ := NewOptimiser(ds, Config{})
	if _, err := h.PosteriorSamples(ds.XTest); !errors.Is(err, ErrNoSamples) {
		t.Errorf("Hutchinson posterior samples: %v, want ErrNoSamples", err)
	}
	p, _ := NewOptimiser(ds, Config{Estimator: Pathwise, Features: 16})
	if _, err := p.PosteriorSamples(ds.XTest); !errors.Is(err, ErrNoSamples) {
		t.Errorf("posterior samples before a step: %v, want ErrNoSamples", err)
	}
}

// TestEvaluateSamples: a pathwise run's evaluation reports the samples'
// test metrics beside the exact ones, in the Result too, close to them on
// a converged run: under the paper's-text rules, which solve every
// sample's system to its tolerance (under the authors' mean rule single
// samples may stay above it).
func TestEvaluateSamples(t *testing.T) {
	ds, err := data.Synthetic(400, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewOptimiser(ds, Config{Estimator: Pathwise, Probes: 64, WarmStart: true, Seed: 2, Rules: solvers.RulesPaperText})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 15); err != nil {
		t.Fatal(err)
	}
	ev, err := o.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	s := ev.Samples
	if s == nil || s.Samples != 64 || len(s.Theta) != 5 {
		t.Fatalf("Eval.Samples = %+v", s)
	}
	if math.Abs(s.TestRMSE-ev.TestRMSE) > 0.05*ev.TestRMSE || math.Abs(s.TestLLH-ev.TestLLH) > 0.1 {
		t.Errorf("samples RMSE %.4f LLH %.4f, exact RMSE %.4f LLH %.4f", s.TestRMSE, s.TestLLH, ev.TestRMSE, ev.TestLLH)
	}
	h, _ := NewOptimiser(ds, Config{Seed: 2})
	if err := h.Run(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	if ev, err := h.Evaluate(); err != nil || ev.Samples != nil {
		t.Errorf("Hutchinson evaluation: %v, samples %+v", err, ev.Samples)
	}
}
