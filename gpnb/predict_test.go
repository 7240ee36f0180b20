package gpnb

import (
	"context"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
)

// TestPredictDataUnits: a GP is equivariant under the z-scoring, so the
// prediction in data units of a run on normalised data equals the exact
// posterior of the un-normalised data (centred targets) under θ in data
// units (DataUnits): an independent check of both mappings.
func TestPredictDataUnits(t *testing.T) {
	norm, err := data.Synthetic(120, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := data.Synthetic(120, 3, 5, data.Normalise(false))
	if err != nil {
		t.Fatal(err)
	}
	init := kernel.Hyper{Lengthscales: []float64{0.6, 0.9, 1.4}, Signal: 1.2, Noise: 0.3}
	o, err := NewOptimiser(norm, Config{Init: init})
	if err != nil {
		t.Fatal(err)
	}
	xs := mat.NewDense(7, 3, nil) // new points in the data's units
	for i := 0; i < 7; i++ {
		for j := 0; j < 3; j++ {
			xs.Set(i, j, math.Cos(float64(3*i+j))*0.9)
		}
	}
	p, err := o.Predict(xs)
	if err != nil {
		t.Fatal(err)
	}
	yc := make([]float64, raw.NTrain())
	for i, y := range raw.YTrain {
		yc[i] = y - norm.Stats.YMean
	}
	e, err := NewExact(raw.XTrain, yc, kernel.Kernel{Family: Matern32, Hyper: DataUnits(init, norm.Stats)})
	if err != nil {
		t.Fatal(err)
	}
	mean, varNoisy, err := e.Predict(xs)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*(1+math.Abs(b)) }
	for i := range mean {
		if !near(p.Data.Mean[i], mean[i]+norm.Stats.YMean) || !near(p.Data.VarNoisy[i], varNoisy[i]) {
			t.Errorf("point %d: predicted %v ± %v, exact in data units %v ± %v", i, p.Data.Mean[i], p.Data.VarNoisy[i], mean[i]+norm.Stats.YMean, varNoisy[i])
		}
		if !near(p.Data.VarNoisy[i]-p.Data.Var[i], math.Pow(init.Noise*norm.Stats.YStd, 2)) {
			t.Errorf("point %d: noisy − latent variance %v, want σ² in data units", i, p.Data.VarNoisy[i]-p.Data.Var[i])
		}
	}
	lo, hi := p.Data.Band(1.96, true)
	if !near(hi[0]-lo[0], 2*1.96*math.Sqrt(p.Data.VarNoisy[0])) {
		t.Errorf("band width %v", hi[0]-lo[0])
	}
	// Evaluate's metrics in the data's units are those of the prediction
	// at the raw test inputs against the raw test targets.
	ev, err := o.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	pt, err := o.Predict(raw.XTest)
	if err != nil {
		t.Fatal(err)
	}
	if r, l := TestRMSE(pt.Data.Mean, raw.YTest), TestLLH(pt.Data.Mean, pt.Data.VarNoisy, raw.YTest); !near(ev.DataRMSE, r) || !near(ev.DataLLH, l) {
		t.Errorf("Evaluate in data units: RMSE %v, LLH %v; from the prediction: %v, %v", ev.DataRMSE, ev.DataLLH, r, l)
	}
	// Back and forth between the scales.
	back := mat.DenseCopyOf(norm.XTest)
	if err := norm.Stats.OriginalXTo(back, back); err != nil {
		t.Fatal(err)
	}
	if !mat.EqualApprox(back, raw.XTest, 1e-12) {
		t.Error("OriginalXTo does not map the normalised test inputs back to the raw ones")
	}
}

// TestPredictIterative: beyond MaxExactN with a budget too small for the
// in-place Cholesky, the prediction is by CG, warm-started from the last
// solve, within its tolerance of the exact one; and Evaluate is prediction
// at the test inputs.
func TestPredictIterative(t *testing.T) {
	ds := synth(t, 150, 2, 3)
	cfg := Config{WarmStart: true, Probes: 4, MaxExactN: 100, Operator: kernel.Options{MemoryBudget: 800}}
	o, err := NewOptimiser(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	it, err := o.PredictScaled(ds.XTest)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Change(func(c *Config) { c.MaxExactN = 0 }); err != nil {
		t.Fatal(err)
	}
	ex, err := o.PredictScaled(ds.XTest)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(it.Method, "cg") || ex.Method != "cholesky" {
		t.Fatalf("methods %q, %q", it.Method, ex.Method)
	}
	for i := range ex.Scaled.Mean {
		if math.Abs(it.Scaled.Mean[i]-ex.Scaled.Mean[i]) > 1e-5 || math.Abs(it.Scaled.Var[i]-ex.Scaled.Var[i]) > 1e-5 {
			t.Errorf("point %d: CG %v ± %v, Cholesky %v ± %v", i, it.Scaled.Mean[i], it.Scaled.Var[i], ex.Scaled.Mean[i], ex.Scaled.Var[i])
		}
	}
	ev, err := o.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	if ev.TestRMSE != TestRMSE(ex.Scaled.Mean, ds.YTest) || ev.TestLLH != TestLLH(ex.Scaled.Mean, ex.Scaled.VarNoisy, ds.YTest) {
		t.Errorf("Evaluate %+v is not the prediction's metrics", ev)
	}
}

func TestPredictErrors(t *testing.T) {
	ds := synth(t, 40, 2, 1)
	o, err := NewOptimiser(ds, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for name, x := range map[string]*mat.Dense{
		"wrong columns": mat.NewDense(2, 3, nil),
		"NaN":           mat.NewDense(1, 2, []float64{math.NaN(), 0}),
		"empty":         nil,
	} {
		if _, err := o.Predict(x); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestPredictSamples: with the pathwise estimator, Predict carries the
// posterior samples of the last solve in the data's units — those of
// PosteriorSamples at the z-scored points, mapped back by y = ȳ + s_y·f —
// and none before the first step or with Hutchinson's estimator.
func TestPredictSamples(t *testing.T) {
	ds, err := data.Synthetic(150, 2, 9)
	if err != nil {
		t.Fatal(err)
	}
	xs := mat.NewDense(5, 2, []float64{0.1, -0.2, 1.3, 0.4, -0.7, 0.9, 0.0, 0.0, 2.1, -1.5})
	o, err := NewOptimiser(ds, Config{Estimator: Pathwise, WarmStart: true, Probes: 6, Features: 64})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := o.Predict(xs); err != nil || p.Samples != nil {
		t.Fatalf("before the first step: samples %v, error %v; want none and no error", p.Samples, err)
	}
	if err := o.Run(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	p, err := o.Predict(xs)
	if err != nil {
		t.Fatal(err)
	}
	zs := mat.DenseCopyOf(xs)
	if err := ds.Stats.NormaliseXTo(zs, zs); err != nil {
		t.Fatal(err)
	}
	post, err := o.PosteriorSamples(zs)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 6 {
		t.Fatalf("%d samples, want Config.Probes = 6", len(p.Samples))
	}
	for j, f := range p.Samples {
		for i, v := range f {
			want := ds.Stats.YMean + ds.Stats.YStd*post.Samples.At(i, j)
			if math.Abs(v-want) > 1e-12*(1+math.Abs(want)) {
				t.Errorf("sample %d at point %d: %v, want %v", j, i, v, want)
			}
		}
	}
	h, err := NewOptimiser(ds, Config{WarmStart: true, Probes: 6})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Run(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if p, err := h.Predict(xs); err != nil || p.Samples != nil {
		t.Errorf("Hutchinson: samples %v, error %v; want none and no error", p.Samples, err)
	}
}
