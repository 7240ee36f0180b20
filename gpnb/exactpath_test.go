package gpnb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/floatbits"
	"github.com/gpnb/gpnb/solvers"
)

// exactAt returns L and ∇L (constrained θ) at h by Exact, independently of
// the optimiser.
func exactAt(t *testing.T, ds *data.Dataset, fam kernel.Family, h kernel.Hyper) (float64, []float64) {
	t.Helper()
	k := kernel.Kernel{Family: fam, Hyper: h}
	ex, err := NewExact(ds.XTrain, ds.YTrain, k)
	if err != nil {
		t.Fatal(err)
	}
	return ex.MLL(), exactGradient(t, ds, k)
}

// projectedLogGradient returns the largest |θ_i ∂L/∂θ_i| / n over the
// hyperparameters not held at a bound of the box [lo_i, hi_i] (held: at
// the bound, L rising beyond it).
func projectedLogGradient(theta, grad, lo, hi []float64, n int) float64 {
	mx := 0.0
	for i, th := range theta {
		g := th * grad[i] // ∂L/∂log θ_i
		atLo := math.Abs(math.Log(th)-math.Log(lo[i])) < 1e-12
		atHi := math.Abs(math.Log(th)-math.Log(hi[i])) < 1e-12
		if (atLo && g < 0) || (atHi && g > 0) {
			continue
		}
		mx = math.Max(mx, math.Abs(g)/float64(n))
	}
	return mx
}

// exactBox returns the exact path's box for d inputs and a noise floor as
// documented: ℓ_i in [ExactThetaMin, ExactThetaMax], s² and σ² in it too,
// σ at least noiseMin; it checks that the optimiser's L-BFGS has that box
// in its coordinates log ℓ_i, log s², log σ² (PathExact).
func exactBox(t *testing.T, o *Optimiser, d int, noiseMin float64) (lo, hi []float64) {
	t.Helper()
	for i := 0; i < d+2; i++ {
		l, h := ExactThetaMin, ExactThetaMax
		if i >= d {
			l, h = math.Sqrt(l), math.Sqrt(h)
		}
		if i == d+1 {
			l = math.Max(l, noiseMin)
		}
		lo, hi = append(lo, l), append(hi, h)
	}
	m := o.State().LBFGS
	for i := range lo {
		c := 1.0 // x_i = log θ_i^c
		if i >= d {
			c = 2
		}
		if math.Abs(m.Lower[i]-c*math.Log(lo[i])) > 1e-12 || math.Abs(m.Upper[i]-c*math.Log(hi[i])) > 1e-12 {
			t.Fatalf("θ_%d: box [%g, %g], want [%g, %g]", i, math.Exp(m.Lower[i]), math.Exp(m.Upper[i]), lo[i], hi[i])
		}
	}
	return lo, hi
}

// TestExactPathOptimum: the exact path on a small synthetic set stops
// converged at a point where the independently computed gradient of L
// with respect to log θ vanishes (per training point, to 1e-4), with the
// L its records report, and at least as high an L as a long Adam run on
// the exact gradient reaches (less 1e-6 per point).
func TestExactPathOptimum(t *testing.T) {
	const n, d = 150, 3
	ds, err := data.Synthetic(n, d, 7) // noisy: an optimum inside the box
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewOptimiser(ds, Config{ExactUpTo: n, Until: UntilConverged})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 500); err != nil {
		t.Fatal(err)
	}
	if !o.Converged() || o.Steps() >= 500 || o.State().Path != PathExact {
		t.Fatalf("after %d steps: converged %v, path %v", o.Steps(), o.Converged(), o.State().Path)
	}
	h := o.Hyper()
	mll, grad := exactAt(t, ds, Matern32, h)
	lo, hi := exactBox(t, o, d, 0)
	if g := projectedLogGradient(h.Vector(), grad, lo, hi, n); g > 1e-4 {
		t.Errorf("projected gradient per point %g at the end (θ %v)", g, h.Vector())
	}
	last := o.History()[o.Steps()-1]
	if last.ExactMLL == nil || math.Abs(*last.ExactMLL-mll) > 1e-9*math.Abs(mll) {
		t.Errorf("the last record's L %v, Exact's at its θ %v", last.ExactMLL, mll)
	}
	evals := o.History().TotalEvaluations()
	t.Logf("exact path: %d steps, %d evaluations, L = %.10g, θ %v", o.Steps(), evals, mll, h.Vector())
	if evals < o.Steps() || last.Evaluations < 1 {
		t.Errorf("%d evaluations in %d steps", evals, o.Steps())
	}

	// Adam on the exact gradient, in log θ, long after it has settled.
	adam, err := NewOptimiser(ds, Config{Estimator: ExactGradient, Param: ParamLog, LearningRate: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if err := adam.Run(context.Background(), 800); err != nil {
		t.Fatal(err)
	}
	la, _ := exactAt(t, ds, Matern32, adam.Hyper())
	t.Logf("Adam, 800 steps: L = %.10g, θ %v", la, adam.Hyper().Vector())
	if mll < la-1e-6*n {
		t.Errorf("L-BFGS reached L = %.10g, below Adam's %.10g", mll, la)
	}
}

// countdown is a context cancelled after its Err has been asked k times:
// a pause at a chosen evaluation of the exact path's line search.
type countdown struct {
	context.Context
	k int
}

func (c *countdown) Err() error {
	if c.k--; c.k < 0 {
		return context.Canceled
	}
	return nil
}

// TestExactPathResume: a run of the exact path saved after k steps, or in
// the middle of a step's line search, and resumed, ends with the same bits
// as the run that was never interrupted: its θ, its L-BFGS state (memory,
// counters) and its history.
func TestExactPathResume(t *testing.T) {
	const n, d, total = 120, 2, 9
	ds := synth(t, n, d, 3)
	cfg := Config{ExactUpTo: 200, Kernel: Matern52}
	want := runSteps(t, ds, cfg, total).State()
	dir := t.TempDir()
	midSearch := false
	for _, tc := range []struct{ before, pause int }{{3, 0}, {0, 2}, {0, 3}, {3, 1}, {3, 2}, {3, 5}} {
		// tc.pause: the step after tc.before steps stops at its
		// tc.pause-th check of ctx (the first at the top of Step, then one
		// before every evaluation), unless it has ended before.
		pause := tc.pause
		path := dir + "/run.ckpt"
		c := cfg
		c.CheckpointPath = path
		o, err := NewOptimiser(ds, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Run(context.Background(), tc.before); err != nil {
			t.Fatal(err)
		}
		if pause > 0 {
			err := o.Step(&countdown{context.Background(), pause - 1})
			if !errors.Is(err, context.Canceled) && err != nil {
				t.Fatal(err)
			} // else the step ended before the pause: it is done, not paused
			if m := o.State().LBFGS; m.Searching && m.IterationEval > 0 {
				midSearch = true
			}
			if err := o.Save(path); err != nil {
				t.Fatal(err)
			}
		}
		r, err := Resume(path, ds)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.RunTo(context.Background(), total); err != nil {
			t.Fatal(err)
		}
		got := r.State()
		m, w := got.LBFGS, want.LBFGS
		same := floatbits.Equal(m.X, w.X) && floatbits.Equal(m.G, w.G) && math.Float64bits(m.F) == math.Float64bits(w.F) &&
			floatbits.Equal(got.Raw, want.Raw) && len(m.S) == len(w.S) && m.Evaluations == w.Evaluations && m.Iterations == w.Iterations
		for j := range m.S {
			same = same && j < len(w.S) && floatbits.Equal(m.S[j], w.S[j]) && floatbits.Equal(m.Y[j], w.Y[j])
		}
		if !same {
			t.Errorf("pause %d: resumed run differs: X %v / %v, evaluations %d / %d", pause, m.X, w.X, m.Evaluations, w.Evaluations)
		}
		historyEqual(t, got.History, want.History)
		for i, rec := range got.History {
			wr := want.History[i]
			if rec.Evaluations != wr.Evaluations || math.Float64bits(*rec.ExactMLL) != math.Float64bits(*wr.ExactMLL) {
				t.Errorf("pause %d: step %d: %d evaluations, L %v; straight %d, %v", pause, i+1, rec.Evaluations, *rec.ExactMLL, wr.Evaluations, *wr.ExactMLL)
			}
		}
	}
	if !midSearch {
		t.Error("no pause fell inside a line search")
	}
}

// TestCheckpointV3ExactPath: a version-3 checkpoint of a run paused
// inside an exact path's line search, whose L-BFGS state is in log s and
// log σ, is read into version 4's coordinates (log s², log σ²) bit for
// bit, and the run goes on from it to the same θ as the run that was
// never saved, within 1e-6 relatively (the two take different L-BFGS
// steps: the coordinates are not the same).
func TestCheckpointV3ExactPath(t *testing.T) {
	const n, d, total = 120, 2, 40
	ds := synth(t, n, d, 3)
	cfg := Config{ExactUpTo: 200, Kernel: Matern52, Until: UntilConverged}
	o, err := NewOptimiser(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if err := o.Step(&countdown{context.Background(), 2}); !errors.Is(err, context.Canceled) {
		t.Fatalf("pausing inside step 4: %v", err)
	}
	st := o.State()
	if m := st.LBFGS; !m.Searching || m.IterationEval == 0 || len(m.S) == 0 {
		t.Fatalf("the pause fell outside a line search: searching %v, %d evaluations, %d pairs", m.Searching, m.IterationEval, len(m.S))
	}
	v3 := st
	v3.LBFGS = st.LBFGS.Clone()
	v3.LBFGS.rescale([]float64{1, 1, 0.5, 0.5})
	b, err := EncodeCheckpoint(v3)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCheckpoint(resealed(b, 3))
	if err != nil {
		t.Fatal(err)
	}
	m, w := got.LBFGS, st.LBFGS
	same := floatbits.Equal(m.X, w.X) && floatbits.Equal(m.G, w.G) && floatbits.Equal(m.Lower, w.Lower) &&
		floatbits.Equal(m.Upper, w.Upper) && floatbits.Equal(m.Dir, w.Dir) && floatbits.Equal(m.Trial, w.Trial) &&
		floatbits.Equal(m.LoX, w.LoX) && floatbits.Equal(m.LoG, w.LoG) && len(m.S) == len(w.S) &&
		math.Float64bits(m.Slope) == math.Float64bits(w.Slope) && math.Float64bits(m.Alpha) == math.Float64bits(w.Alpha)
	for j := range m.S {
		same = same && floatbits.Equal(m.S[j], w.S[j]) && floatbits.Equal(m.Y[j], w.Y[j])
	}
	if !same {
		t.Fatalf("version 3 read as X %v, G %v; saved as version 4: X %v, G %v", m.X, m.G, w.X, w.G)
	}
	if _, err := DecodeCheckpoint(b); err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/v3.ckpt"
	if err := os.WriteFile(path, resealed(b, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Resume(path, ds)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background(), total); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), total); err != nil {
		t.Fatal(err)
	}
	if !r.Converged() || !o.Converged() {
		t.Fatalf("converged: resumed %v, straight %v", r.Converged(), o.Converged())
	}
	a, c := r.Hyper().Vector(), o.Hyper().Vector()
	for i := range a {
		if math.Abs(a[i]-c[i]) > 1e-6*math.Abs(c[i]) {
			t.Errorf("θ_%d: %g from the version-3 checkpoint, %g straight", i, a[i], c[i])
		}
	}
}

// TestExactPathNoiseFloor: on a noiseless target, y = sin(3x₁) exactly,
// where L rises as σ falls, the exact path holds σ at Config.NoiseMin (no
// step's σ below it, the last at it, with ∂L/∂σ < 0 there by Exact) and
// ends converged without error.
func TestExactPathNoiseFloor(t *testing.T) {
	const n, floor = 100, 1e-2 // above the box's own floor, √ExactThetaMin
	rng := rand.New(rand.NewPCG(1, 2))
	x := mat.NewDense(n, 2, nil)
	y := make([]float64, n)
	for i := range y {
		x.Set(i, 0, 2*rng.Float64()-1)
		x.Set(i, 1, 2*rng.Float64()-1)
		y[i] = math.Sin(3 * x.At(i, 0))
	}
	ds, err := data.New(x, y)
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewOptimiser(ds, Config{ExactUpTo: n, NoiseMin: floor, Until: UntilConverged})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 500); err != nil {
		t.Fatal(err)
	}
	if !o.Converged() || o.Steps() >= 500 {
		t.Fatalf("after %d steps: converged %v", o.Steps(), o.Converged())
	}
	for _, r := range o.History() {
		if r.Noise < floor*(1-1e-12) {
			t.Fatalf("step %d: σ = %g below the floor %g", r.Step, r.Noise, floor)
		}
	}
	h := o.Hyper()
	_, grad := exactAt(t, ds, Matern32, h)
	t.Logf("%d steps, θ %v, ∂L/∂σ = %g", o.Steps(), h.Vector(), grad[len(grad)-1])
	if math.Abs(h.Noise-floor) > 1e-12*floor || !(grad[len(grad)-1] < 0) {
		t.Errorf("σ = %g, ∂L/∂σ = %g: want σ held at the floor %g, L rising below it", h.Noise, grad[len(grad)-1], floor)
	}
	lo, hi := exactBox(t, o, 2, floor)
	if g := projectedLogGradient(h.Vector(), grad, lo, hi, n); g > 1e-4 {
		t.Errorf("projected gradient per point %g at the end", g)
	}
}

// TestExactPathDuplicates: inputs repeated many times (40 points, each 5
// times, noisy targets), whose K is singular, train on the exact path to a
// converged θ with the noise near the targets' noise and a vanishing
// projected gradient.
func TestExactPathDuplicates(t *testing.T) {
	const distinct, copies, noise = 40, 5, 0.3
	n := distinct * copies
	rng := rand.New(rand.NewPCG(3, 4))
	x := mat.NewDense(n, 1, nil)
	y := make([]float64, n)
	for i := 0; i < distinct; i++ {
		xi := 4*rng.Float64() - 2
		for c := 0; c < copies; c++ {
			x.Set(i*copies+c, 0, xi)
			y[i*copies+c] = math.Sin(2*xi) + noise*rng.NormFloat64()
		}
	}
	ds, err := data.New(x, y)
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewOptimiser(ds, Config{ExactUpTo: n, Until: UntilConverged})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 500); err != nil {
		t.Fatal(err)
	}
	if !o.Converged() || o.Steps() >= 500 {
		t.Fatalf("after %d steps: converged %v", o.Steps(), o.Converged())
	}
	h := o.Hyper()
	_, grad := exactAt(t, ds, Matern32, h)
	σ := h.Noise * ds.Stats.YStd // in the data's units
	t.Logf("%d steps, θ %v, σ in the data's units %.3g", o.Steps(), h.Vector(), σ)
	if math.Abs(σ-noise) > 0.1 {
		t.Errorf("σ = %.3g in the data's units, the targets' noise is %g", σ, noise)
	}
	lo, hi := exactBox(t, o, 1, 0)
	if g := projectedLogGradient(h.Vector(), grad, lo, hi, n); g > 1e-4 {
		t.Errorf("projected gradient per point %g at the end", g)
	}
}

// TestPathChoice: Config.ExactUpTo and ExactWorkUpTo decide the path at
// NewOptimiser: exact for n ≤ ExactUpTo, or n·(d+2) ≤ ExactWorkUpTo and n
// ≤ min(ExactWorkMaxN, MaxExactN) where ExactUpTo > 0, iterative
// otherwise; negative values and
// ExactUpTo above MaxExactN are ConfigErrors naming the field; a
// checkpoint whose path disagrees with its configuration is corrupt.
func TestPathChoice(t *testing.T) {
	const n, d = 40, 2
	const work = n * (d + 2)
	ds := synth(t, n, d, 1)
	// The work rule stops at ExactWorkMaxN points, however large
	// ExactWorkUpTo; ExactUpTo does not.
	wide := Config{ExactUpTo: 1, ExactWorkUpTo: 1 << 30}
	for _, m := range []int{ExactWorkMaxN, ExactWorkMaxN + 1} {
		want := m <= ExactWorkMaxN
		if got := wide.ExactByWork(m, d); got != want {
			t.Errorf("ExactWorkUpTo %d: ExactByWork(%d, %d) = %v, want %v", wide.ExactWorkUpTo, m, d, got, want)
		}
		if got := (Config{ExactUpTo: m}).PathFor(m, d); got != PathExact {
			t.Errorf("ExactUpTo %d: PathFor(%d, %d) = %v, want exact", m, m, d, got)
		}
	}
	for _, tc := range []struct {
		upTo, work, maxN int
		want             Path
	}{
		{0, 0, 0, PathIterative}, {n - 1, 0, 0, PathIterative}, {n, 0, 0, PathExact}, {n + 1, 0, 0, PathExact},
		{1, work - 1, 0, PathIterative}, {1, work, 0, PathExact}, {n - 1, work + 1, 0, PathExact},
		{0, work, 0, PathIterative},     // ExactUpTo 0: never the exact path
		{1, work, n - 1, PathIterative}, // the work rule stops at MaxExactN
	} {
		cfg := Config{ExactUpTo: tc.upTo, ExactWorkUpTo: tc.work, MaxExactN: tc.maxN}
		name := fmt.Sprintf("ExactUpTo %d, ExactWorkUpTo %d, MaxExactN %d", tc.upTo, tc.work, tc.maxN)
		if got := cfg.PathFor(n, d); got != tc.want {
			t.Errorf("%s: PathFor(%d, %d) = %v, want %v", name, n, d, got, tc.want)
		}
		if got, want := cfg.ExactByWork(n, d), tc.want == PathExact && n > tc.upTo; got != want {
			t.Errorf("%s: ExactByWork(%d, %d) = %v, want %v", name, n, d, got, want)
		}
		o, err := NewOptimiser(ds, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := o.State()
		if st.Path != tc.want || (st.LBFGS != nil) != (tc.want == PathExact) || o.Result().Path != tc.want {
			t.Errorf("%s, n = %d: path %v (L-BFGS state %v, result %v), want %v", name, n, st.Path, st.LBFGS != nil, o.Result().Path, tc.want)
		}
		if exact := st.History[0].Evaluations > 0; exact != (tc.want == PathExact) {
			t.Errorf("%s: the step recorded %d evaluations", name, st.History[0].Evaluations)
		}
		if tc.want == PathExact {
			st.Path = PathIterative
			b, err := EncodeCheckpoint(st)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := DecodeCheckpoint(b); !errors.Is(err, ErrCheckpointCorrupt) {
				t.Errorf("%s: a checkpoint on the wrong path: %v, want ErrCheckpointCorrupt", name, err)
			}
		}
	}
	for _, bad := range []struct {
		cfg   Config
		field string
	}{{Config{ExactUpTo: -1}, "ExactUpTo"}, {Config{ExactUpTo: 101, MaxExactN: 100}, "ExactUpTo"}, {Config{ExactWorkUpTo: -1}, "ExactWorkUpTo"}} {
		_, err := NewOptimiser(ds, bad.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != bad.field {
			t.Errorf("%+v: %v, want a ConfigError of %s", bad.cfg, err, bad.field)
		}
	}
}

// TestFinishExact: a run until converged on n ≤ FinishExactUpTo points
// goes on along the exact path after the first step at which Adam's test
// (without its gradient bound) holds, and not before, or after the first
// step that takes σ below FinishNoiseRatio·NoiseMin, also for n >
// FinishConvergedUpTo; it has not converged until the finish has; n >
// FinishExactUpTo, a run for a number of steps, or Adam's test for n >
// FinishConvergedUpTo never switches; a checkpoint whose switch does not
// fit its path, steps or n is corrupt; FinishExactUpTo and
// FinishConvergedUpTo are checked.
func TestFinishExact(t *testing.T) {
	const n = 60
	ds := synth(t, n, 2, 4)
	base := Config{WarmStart: true, Probes: 8, Solver: solvers.CG{}, Until: UntilConverged, FinishExactUpTo: n}
	o := runSteps(t, ds, base, ConvergedMaxSteps)
	st := o.State()
	from, h := st.ExactFrom, st.History
	if from == 0 || st.Path != PathExact || !o.Converged() || len(h) >= ConvergedMaxSteps {
		t.Fatalf("exact from step %d, path %v, converged %v after %d steps", from, st.Path, o.Converged(), len(h))
	}
	cfg := o.Config()
	if !cfg.settled(h[:from], n, false) || cfg.settled(h[:from-1], n, false) {
		t.Errorf("switched after step %d, not where Adam's test first holds", from)
	}
	if got, before := cfg.FinishCause(h[:from], n), cfg.FinishCause(h[:from-1], n); got != FinishConverged || before != "" {
		t.Errorf("FinishCause after steps %d and %d: %q and %q, want %q and none", from, from-1, got, before, FinishConverged)
	}
	if r := o.Result(); r.ExactFrom != from || r.Path != PathExact {
		t.Errorf("result: exact from %d on the %v path, want %d on the exact path", r.ExactFrom, r.Path, from)
	}
	// Replayed step by step: not converged before the finish has.
	re, err := NewOptimiser(ds, base)
	if err != nil {
		t.Fatal(err)
	}
	for re.Steps() < len(h)-1 {
		if err := re.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		if re.Converged() {
			t.Fatalf("converged after step %d of %d", re.Steps(), len(h))
		}
	}

	// σ below FinishNoiseRatio·NoiseMin: a floor whose threshold lies
	// between σ's lowest value before step j and σ after step j, j < from,
	// leaves Adam's steps as they were (σ stays ten times above the floor)
	// and switches after step j, whether or not Adam's test may switch.
	j := 0
	for s := 2; s < from && j == 0; s++ {
		lowest := h[0].Noise
		for _, r := range h[:s-1] {
			lowest = min(lowest, r.Noise)
		}
		if h[s-1].Noise < lowest {
			j = s
			for _, upTo := range []int{0, n - 1} {
				nc := base
				nc.NoiseMin = (h[s-1].Noise + lowest) / 2 / FinishNoiseRatio
				nc.FinishConvergedUpTo = upTo
				o := runSteps(t, ds, nc, ConvergedMaxSteps)
				st := o.State()
				if st.ExactFrom != j || st.History[j-1].Noise != h[j-1].Noise || !o.Converged() {
					t.Errorf("noise floor %g, FinishConvergedUpTo %d: exact from step %d (σ %g after step %d), want %d", nc.NoiseMin, upTo, st.ExactFrom, h[j-1].Noise, j, j)
				} else if c := st.Config.FinishCause(st.History[:j], n); c != FinishNoise {
					t.Errorf("noise floor %g, FinishConvergedUpTo %d: FinishCause %q, want %q", nc.NoiseMin, upTo, c, FinishNoise)
				}
			}
		}
	}
	if j == 0 {
		t.Fatalf("σ never fell below its earlier values in the %d steps before the switch", from)
	}

	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"n > FinishExactUpTo", func() Config { c := base; c.FinishExactUpTo = n - 1; return c }()},
		{"until steps", func() Config { c := base; c.Until = UntilSteps; return c }()},
		{"n > FinishConvergedUpTo", func() Config { c := base; c.FinishConvergedUpTo = n - 1; return c }()},
	} {
		if st := runSteps(t, ds, c.cfg, from+5).State(); st.ExactFrom != 0 || st.Path != PathIterative || st.History.TotalEvaluations() != 0 {
			t.Errorf("%s: exact from %d, path %v", c.name, st.ExactFrom, st.Path)
		}
	}

	for _, tamper := range []func(*OptimiserState){
		func(s *OptimiserState) { s.ExactFrom = s.Step + 1 },
		func(s *OptimiserState) { s.Path = PathIterative },
		func(s *OptimiserState) { s.Config.FinishExactUpTo = n - 1 },
	} {
		bad := o.State()
		tamper(&bad)
		b, err := EncodeCheckpoint(bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeCheckpoint(b); !errors.Is(err, ErrCheckpointCorrupt) {
			t.Errorf("a checkpoint whose finish does not fit: %v, want ErrCheckpointCorrupt", err)
		}
	}
	for _, bad := range []struct {
		cfg   Config
		field string
	}{
		{Config{FinishExactUpTo: -1}, "FinishExactUpTo"},
		{Config{FinishExactUpTo: 101, MaxExactN: 100}, "FinishExactUpTo"},
		{Config{FinishExactUpTo: n, FinishConvergedUpTo: -1}, "FinishConvergedUpTo"},
	} {
		_, err := NewOptimiser(ds, bad.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != bad.field {
			t.Errorf("%+v: %v, want a ConfigError of %s", bad.cfg, err, bad.field)
		}
	}
}

// pausePoint is where resumesAsStraight pauses a run: after before
// steps, and with pause > 0 at the pause-th check of ctx in the next step
// (the first at the top of Step, then one before every evaluation).
type pausePoint struct{ before, pause int }

// resumesAsStraight runs cfg on ds, with a checkpoint, up to each pause
// point, saves, resumes and runs on (at most steps steps): the resumed run
// must end converged with the straight run's state want, bit for bit (its
// L-BFGS point, its step count, its history).
func resumesAsStraight(t *testing.T, ds *data.Dataset, cfg Config, want OptimiserState, steps int, at []pausePoint) {
	t.Helper()
	path := t.TempDir() + "/run.ckpt"
	for _, tc := range at {
		c := cfg
		c.CheckpointPath = path
		r := runSteps(t, ds, c, tc.before)
		if tc.pause > 0 {
			if err := r.Step(&countdown{context.Background(), tc.pause - 1}); err != nil && !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			if err := r.Save(path); err != nil {
				t.Fatal(err)
			}
		}
		res, err := Resume(path, ds)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Run(context.Background(), steps); err != nil {
			t.Fatal(err)
		}
		got := res.State()
		if !floatbits.Equal(got.LBFGS.X, want.LBFGS.X) || got.Step != want.Step || !res.Converged() {
			t.Errorf("paused after %d steps (+%d checks): %d steps, X %v, converged %v; straight %d, %v", tc.before, tc.pause, got.Step, got.LBFGS.X, res.Converged(), want.Step, want.LBFGS.X)
		}
		historyEqual(t, got.History, want.History)
	}
}

// TestExactSubsetStage: with a subset stage (Config.ExactSubset) the
// exact path's first steps are on max(ExactSubset, n/ExactSubsetDiv,
// ExactSubsetPerInput·d) training points drawn as data.SubsetRows draws
// them, each step's L that
// of Exact on those points at its θ; the steps after are on all points,
// and the run ends converged by the exact finish's rule: the projected
// gradient per point below ConvergedGrad, computed independently, and L
// within 1e-3 per point of the run without a subset stage, which goes on
// until scipy's tolerances. Paused anywhere in the subset stage, at its
// end, or after it, and resumed, the run gives the same bits.
func TestExactSubsetStage(t *testing.T) {
	const n, d, sub = 240, 1, 50
	ds := synth(t, n, d, 5)
	cfg := Config{ExactUpTo: n, ExactSubset: sub, Until: UntilConverged, Seed: 3}
	o := runSteps(t, ds, cfg, 500)
	if !o.Converged() || o.Steps() >= 500 {
		t.Fatalf("after %d steps: converged %v", o.Steps(), o.Converged())
	}
	h := o.History()
	k, m := h.SubsetSteps()
	if want := max(n/ExactSubsetDiv, ExactSubsetPerInput*d); k == 0 || k == len(h) || m != want {
		t.Fatalf("%d of %d steps on a subset of %d points, want some but not all on %d", k, len(h), m, want)
	}
	xs, ys := data.SubsetRows(ds.XTrain, ds.YTrain, m, cfg.Seed)
	for i, r := range h {
		x, y := ds.XTrain, ds.YTrain
		if i < k {
			x, y = xs, ys
		}
		e, err := NewExact(x, y, kernel.Kernel{Family: Matern32, Hyper: r.Hyper()})
		if err != nil {
			t.Fatal(err)
		}
		if r.ExactMLL == nil || math.Abs(*r.ExactMLL-e.MLL()) > 1e-9*math.Abs(e.MLL()) {
			t.Fatalf("step %d (points %d): L %v, Exact's %v on the %d points", r.Step, r.Points, r.ExactMLL, e.MLL(), len(y))
		}
	}
	th := o.Hyper()
	mll, grad := exactAt(t, ds, Matern32, th)
	lo, hi := exactBox(t, o, d, 0)
	if g := projectedLogGradient(th.Vector(), grad, lo, hi, n); g > DefaultConvergedGrad {
		t.Errorf("projected gradient per point %g at the end (θ %v)", g, th.Vector())
	}
	plain := cfg
	plain.ExactSubset = 0
	p := runSteps(t, ds, plain, 500)
	lp, _ := exactAt(t, ds, Matern32, p.Hyper())
	t.Logf("subset stage: %d steps on %d points, %d on all, %d evaluations on all, L %.6f; without: %d steps, %d evaluations, L %.6f",
		k, m, len(h)-k, h[k:].TotalEvaluations(), mll, p.Steps(), p.History().TotalEvaluations(), lp)
	if math.Abs(mll-lp) > 1e-3*n {
		t.Errorf("L %.6f, without the subset stage %.6f", mll, lp)
	}

	resumesAsStraight(t, ds, cfg, o.State(), 500, []pausePoint{{k - 1, 0}, {k - 1, 2}, {k - 1, 1}, {k, 0}, {k, 2}, {1, 3}})
}

// TestExactSubsetSize: the subset stage's size is max(ExactSubset,
// n/ExactSubsetDiv, ExactSubsetPerInput·d), and there is none where that
// exceeds n/2 or ExactSubset is 0.
func TestExactSubsetSize(t *testing.T) {
	for _, c := range []struct{ n, d, sub, want int }{
		{2000, 5, 1000, 1000}, {4000, 5, 1000, 1000}, {8000, 2, 1000, 2000}, {4000, 17, 1000, 1700},
		{2000, 17, 1000, 0}, {1999, 1, 1000, 0}, {4000, 26, 1000, 0}, {4000, 5, 0, 0}, {240, 1, 50, 100},
	} {
		cfg := Config{ExactSubset: c.sub}
		if got := cfg.exactSubset(c.n, c.d); got != c.want {
			t.Errorf("n = %d, d = %d, ExactSubset = %d: %d points, want %d", c.n, c.d, c.sub, got, c.want)
		}
	}
}

// twoBasins returns n points of y = 2x + 0.3 sin(40x) + 0.05ε, x uniform
// on [0, 1]: L has a maximum with a short length scale and σ near 0.05,
// and one with a long length scale that takes the wiggle for noise.
func twoBasins(t testing.TB, n int, seed uint64) *data.Dataset {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 9))
	x := mat.NewDense(n, 1, nil)
	y := make([]float64, n)
	for i := range n {
		v := rng.Float64()
		x.Set(i, 0, v)
		y[i] = 2*v + 0.3*math.Sin(40*v) + 0.05*rng.NormFloat64()
	}
	ds, err := data.New(x, y)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestExactStarts: with two starts (Config.ExactStarts) the exact path's
// steps are those of start 0 from Init, then of start 1 from Init with
// twice its length scales, each converged by the exact path's rule, and
// the run ends at the last θ of the start whose L, computed independently,
// is the higher: on twoBasins' data the first (short length scale), so the
// run goes back to it. Paused around the second start's beginning and at
// its last step, and resumed, it gives the same bits. Starts apply only
// up to ExactUpTo points and without a subset stage.
func TestExactStarts(t *testing.T) {
	const n = 50
	ds := twoBasins(t, n, 5)
	cfg := Config{ExactUpTo: n, ExactStarts: 2, Until: UntilConverged}
	o := runSteps(t, ds, cfg, 1000)
	if !o.Converged() || o.Steps() >= 1000 {
		t.Fatalf("after %d steps: converged %v", o.Steps(), o.Converged())
	}
	h := o.History()
	k := 0
	for k < len(h) && h[k].Start == 0 {
		k++
	}
	if k == 0 || k == len(h) {
		t.Fatalf("%d of %d steps on start 0, want some but not all", k, len(h))
	}
	for _, r := range h[k:] {
		if r.Start != 1 {
			t.Fatalf("step %d on start %d after start 1 began", r.Step, r.Start)
		}
	}
	l0, _ := exactAt(t, ds, Matern32, h[k-1].Hyper())
	l1, _ := exactAt(t, ds, Matern32, h[len(h)-1].Hyper())
	if l0 < l1+1 {
		t.Fatalf("start 0 ended at L %.6f, start 1 at %.6f: want start 0 the higher, by a nat", l0, l1)
	}
	if best := h[k-1].Hyper(); !floatbits.Equal(o.Hyper().Vector(), best.Vector()) {
		t.Errorf("ends at θ %v; the starts ended at %v (L %.6f) and %v (L %.6f)", o.Hyper().Vector(), best.Vector(), l0, h[len(h)-1].Hyper().Vector(), l1)
	}
	t.Logf("start 0: %d steps, L %.6f; start 1: %d steps, L %.6f", k, l0, len(h)-k, l1)
	if x := o.State().LBFGS.X; !floatbits.Equal(exactHyper(x).Vector(), o.Hyper().Vector()) {
		t.Errorf("the state's L-BFGS is at %v, not the result's θ", exactHyper(x).Vector())
	}

	resumesAsStraight(t, ds, cfg, o.State(), 1000, []pausePoint{{k - 1, 0}, {k - 1, 2}, {k, 0}, {k, 2}, {len(h) - 1, 0}})

	for _, c := range []struct {
		cfg  Config
		n, d int
		want int
	}{
		{Config{ExactUpTo: 400, ExactStarts: 2}, 400, 5, 2},
		{Config{ExactUpTo: 400, ExactStarts: 2}, 401, 5, 1},
		{Config{ExactUpTo: 5000, ExactStarts: 3, ExactSubset: 1000}, 2000, 5, 1},
		{Config{ExactUpTo: 5000, ExactStarts: 3, ExactSubset: 1000}, 1999, 5, 3},
		{Config{ExactUpTo: 400}, 400, 5, 1},
	} {
		if got := c.cfg.exactStarts(c.n, c.d); got != c.want {
			t.Errorf("%+v, n = %d, d = %d: %d starts, want %d", c.cfg, c.n, c.d, got, c.want)
		}
	}
}
