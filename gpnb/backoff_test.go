package gpnb

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/gpnb/gpnb/internal/floatbits"
	"github.com/gpnb/gpnb/solvers"
)

// backoffConfig is an SGD run on synth(t, 200, 3, 1) whose first solve
// diverges at raw rate raw.
func backoffConfig(raw float64) Config {
	return Config{Solver: solvers.SGD{BatchSize: 50, RawLearningRate: raw, Seed: 1}, Probes: 4, Seed: 2}
}

// TestSGDBacksOffOnDivergence: a step whose SGD solve diverges starts it
// again from its initial guess at half the rate, and the step is then
// exactly the step a run configured with the halved rate makes: the same
// gradient bits, the record saying how often it halved and what the
// abandoned attempts cost. A rate MaxRateBackoffs halvings cannot save is
// an error that says so.
func TestSGDBacksOffOnDivergence(t *testing.T) {
	ds := synth(t, 200, 3, 1)
	step := func(raw float64) (*Optimiser, StepRecord, error) {
		t.Helper()
		o, err := NewOptimiser(ds, backoffConfig(raw))
		if err != nil {
			t.Fatal(err)
		}
		err = o.Step(context.Background())
		if err != nil {
			return o, StepRecord{}, err
		}
		h := o.History()
		return o, h[len(h)-1], nil
	}
	// A rate at which the first solve diverges: doubled until it does.
	raw := 1.0
	for {
		_, rec, err := step(raw)
		if err != nil {
			t.Fatal(err)
		}
		if rec.RateBackoffs > 0 {
			break
		}
		if raw *= 2; raw > 1e6 {
			t.Fatal("no rate diverges")
		}
	}
	o, rec, err := step(raw)
	if err != nil {
		t.Fatal(err)
	}
	k := rec.RateBackoffs
	t.Logf("raw rate %g: %d restarts, %d of %d iterations abandoned", raw, k, rec.BackoffIterations, rec.SolverIterations)
	if k < 1 || k > MaxRateBackoffs || rec.BackoffIterations < 1 || !rec.SolverConverged {
		t.Fatalf("record %+v", rec)
	}
	// The halved rates reach the same step, with fewer restarts.
	for j := 1; j <= k; j++ {
		oj, rj, err := step(raw / float64(int(1)<<j))
		if err != nil {
			t.Fatal(err)
		}
		if rj.RateBackoffs != k-j || !floatbits.Equal(oj.State().Raw, o.State().Raw) || !floatbits.Equal(rj.Gradient, rec.Gradient) {
			t.Errorf("rate/%d: %d restarts, gradient %v; at the full rate %d restarts, gradient %v", 1<<j, rj.RateBackoffs, rj.Gradient, k, rec.Gradient)
		}
		if j == k && rj.SolverIterations != rec.SolverIterations-rec.BackoffIterations {
			t.Errorf("rate/%d: %d iterations; the backed-off step's last attempt %d", 1<<j, rj.SolverIterations, rec.SolverIterations-rec.BackoffIterations)
		}
	}
	// Far above: MaxRateBackoffs halvings do not help.
	if _, _, err := step(raw * math.Pow(2, MaxRateBackoffs+8)); !errors.Is(err, solvers.ErrDiverged) {
		t.Errorf("a rate 2^%d times a diverging one: %v, want ErrDiverged", MaxRateBackoffs+8, err)
	}
}

// TestBackoffResume: a step interrupted after its SGD solve diverged, in
// the attempt at half the rate, resumes from its checkpoint into the step
// of a run never interrupted, bit for bit, record included.
func TestBackoffResume(t *testing.T) {
	ds := synth(t, 200, 3, 1)
	raw := 1.0
	var straight *Optimiser
	for ; raw < 1e6; raw *= 2 {
		o, err := NewOptimiser(ds, backoffConfig(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		if o.History()[0].RateBackoffs > 0 {
			straight = o
			break
		}
	}
	if straight == nil {
		t.Fatal("no rate diverges")
	}
	ctx, cancel := context.WithCancel(context.Background())
	last, restarted := 0, false
	cfg := backoffConfig(raw)
	cfg.CheckpointPath = filepath.Join(t.TempDir(), "run.ckpt")
	o, err := NewOptimiser(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	o.AddRecorder(Hooks{Iteration: func(p IterationRecord) {
		if p.Iteration < last {
			restarted = true
		}
		last = p.Iteration
		if restarted && p.Iteration == 3 {
			cancel()
		}
	}})
	if err := o.Run(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	st := o.State()
	if st.Pending == nil || st.PendingBackoff.Halvings < 1 {
		t.Fatalf("interrupted with pending %v, backoff %+v: want it in an attempt at half the rate", st.Pending != nil, st.PendingBackoff)
	}
	r, err := Resume(cfg.CheckpointPath, ds)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, want := r.History()[0].Untimed(), straight.History()[0].Untimed()
	if !floatbits.Equal(r.State().Raw, straight.State().Raw) || got.RateBackoffs != want.RateBackoffs || got.SolverIterations != want.SolverIterations || got.OperatorProducts != want.OperatorProducts || !floatbits.Equal(got.Gradient, want.Gradient) {
		t.Errorf("resumed step %+v, straight %+v", got, want)
	}
}
