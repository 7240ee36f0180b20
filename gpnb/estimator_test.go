package gpnb

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/floatbits"
	"github.com/gpnb/gpnb/solvers"
)

// TestEstimatorStandalone: exact mode equals Exact.Gradient; a Hutchinson
// solve interrupted and continued gives the bits of an uninterrupted one;
// the Hutchinson mean over many fixed-θ probe draws approaches the exact
// gradient.
func TestEstimatorStandalone(t *testing.T) {
	ds := synth(t, 100, 2, 12)
	k := kernel.Kernel{Family: Matern32, Hyper: kernel.Hyper{Lengthscales: []float64{0.6, 0.9}, Signal: 1.1, Noise: 0.4}}
	want := exactGradient(t, ds, k)
	e, err := NewEstimator(ds, Config{Estimator: ExactGradient})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float64, 4)
	if err := e.Gradient(context.Background(), k, got, nil); err != nil {
		t.Fatal(err)
	}
	if !floatbits.Equal(got, want) {
		t.Errorf("exact mode %v, Exact %v", got, want)
	}
	if err := e.Gradient(context.Background(), k, make([]float64, 3), nil); err == nil {
		t.Error("short destination: no error")
	}

	// Interrupt after 3 iterations, continue: same bits as straight.
	cfg := Config{Probes: 4, Seed: 2, Settings: solvers.Settings{RelTolMean: 1e-6, RelTolProbes: 1e-6}}
	straight, _ := NewEstimator(ds, cfg)
	g1 := make([]float64, 4)
	var r1 StepRecord
	if err := straight.Gradient(context.Background(), k, g1, &r1); err != nil {
		t.Fatal(err)
	}
	paused, _ := NewEstimator(ds, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	paused.AddRecorder(Hooks{Iteration: func(p IterationRecord) {
		if p.Iteration == 3 {
			cancel()
		}
	}})
	g2 := make([]float64, 4)
	if err := paused.Gradient(ctx, k, g2, nil); !errors.Is(err, context.Canceled) || !paused.Pending() {
		t.Fatalf("interrupted: %v, pending %v", err, paused.Pending())
	}
	other := kernel.Kernel{Family: Matern32, Hyper: k.Hyper.Clone()}
	other.Hyper.Noise *= 1.01
	if err := paused.Gradient(context.Background(), other, g2, nil); err == nil || !paused.Pending() {
		t.Errorf("continuing at another θ: err %v, pending %v", err, paused.Pending())
	}
	var r2 StepRecord
	if err := paused.Gradient(context.Background(), k, g2, &r2); err != nil {
		t.Fatal(err)
	}
	if !floatbits.Equal(g1, g2) || r1.SolverIterations != r2.SolverIterations {
		t.Errorf("continued %v (%d its), straight %v (%d its)", g2, r2.SolverIterations, g1, r1.SolverIterations)
	}

	// Unbiasedness: average 300 resampled estimates (64 probes each).
	mc, _ := NewEstimator(ds, Config{Probes: 64, Solver: solvers.Cholesky{}, Seed: 5})
	mean := make([]float64, 4)
	const draws = 300
	for i := 0; i < draws; i++ {
		if err := mc.Gradient(context.Background(), k, got, nil); err != nil {
			t.Fatal(err)
		}
		for j, v := range got {
			mean[j] += v / draws
		}
	}
	for j := range mean {
		if math.Abs(mean[j]-want[j]) > 0.02*(1+math.Abs(want[j])) {
			t.Errorf("Monte Carlo mean of component %d = %v, exact %v", j, mean[j], want[j])
		}
	}
}

// plainOp hides the CPU operator's SetKernel, so the estimator must rebuild;
// it counts Close calls and can report a failure through Err, as the GPU
// operator does.
type plainOp struct {
	kernel.GramOperator
	closed *int
	err    error
}

func (p plainOp) Close() error { *p.closed++; return nil }
func (p plainOp) Err() error   { return p.err }

// TestBackend: a custom operator builder is used (rebuilt each step when it
// cannot SetKernel), gives the default path's bits, and its errors surface.
func TestBackend(t *testing.T) {
	ds := synth(t, 90, 2, 6)
	ref, _ := NewOptimiser(ds, Config{WarmStart: true})
	if err := ref.Run(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	calls, closed := 0, 0
	backend := func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error) {
		calls++
		op, err := kernel.NewOperator(x, k, kernel.Options{})
		return plainOp{GramOperator: op, closed: &closed}, err
	}
	o, err := NewOptimiser(ds, Config{WarmStart: true}, WithBackend(backend))
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if calls != 3 || closed != 2 {
		t.Errorf("backend called %d times, closed %d: want once per step, each replaced one closed", calls, closed)
	}
	if err := o.Close(); err != nil || closed != 3 {
		t.Errorf("Close: %v, closed %d", err, closed)
	}
	compareStates(t, ref.State(), o.State())

	path := t.TempDir() + "/b.ckpt"
	if err := o.Save(path); err != nil {
		t.Fatal(err)
	}
	r, err := Resume(path, ds, WithBackend(func(*mat.Dense, kernel.Kernel) (kernel.GramOperator, error) {
		return nil, errors.New("no GPU here")
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Step(context.Background()); err == nil || !strings.Contains(err.Error(), "no GPU here") {
		t.Errorf("backend error: got %v", err)
	}
	failing := func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error) {
		op, err := kernel.NewOperator(x, k, kernel.Options{})
		return plainOp{GramOperator: op, closed: new(int), err: errors.New("device lost")}, err
	}
	f, _ := NewOptimiser(ds, Config{}, WithBackend(failing))
	if err := f.Step(context.Background()); err == nil || !strings.Contains(err.Error(), "device lost") {
		t.Errorf("operator Err: got %v", err)
	}
}

// TestEvaluateWithBackend: beyond MaxExactN, a Backend's optimiser is
// evaluated exactly by the in-place host Cholesky when the matrix fits (the
// backend's operator released first and rebuilt by the next step), and by
// batched CG on the backend's operator when the budget is too small.
func TestEvaluateWithBackend(t *testing.T) {
	ds := synth(t, 90, 2, 6)
	init := kernel.Hyper{Lengthscales: []float64{0.5, 0.8}, Signal: 1, Noise: 0.3}
	ref, err := NewOptimiser(ds, Config{Init: init})
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	ex, err := ref.Evaluate()
	if err != nil || ex.Method != "cholesky" {
		t.Fatalf("reference: %v, method %q", err, ex.Method)
	}
	calls, closed := 0, 0
	backend := func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error) {
		calls++
		op, err := kernel.NewOperator(x, k, kernel.Options{})
		return plainOp{GramOperator: op, closed: &closed}, err
	}
	o, err := NewOptimiser(ds, Config{Init: init, MaxExactN: 50}, WithBackend(backend))
	if err != nil {
		t.Fatal(err)
	}
	small, err := NewOptimiser(ds, Config{Init: init, MaxExactN: 50, Operator: kernel.Options{MemoryBudget: 800}}, WithBackend(backend))
	if err != nil {
		t.Fatal(err)
	}
	// One step each, so that each holds a backend operator (the same
	// hyperparameters as ref's: TestBackend checks the bits).
	if err := o.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := small.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := calls
	ip, err := o.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	if ip.Method != "cholesky" || ip.MLL == nil || calls != before || closed != 1 {
		t.Fatalf("in place: method %q, backend called %d more times, closed %d: want the host Cholesky, no new operator, the old one closed", ip.Method, calls-before, closed)
	}
	if math.Abs(ex.TestRMSE-ip.TestRMSE) > 1e-12 || math.Abs(ex.TestLLH-ip.TestLLH) > 1e-12 || math.Abs(*ex.MLL-*ip.MLL) > 1e-9*math.Abs(*ex.MLL) {
		t.Errorf("exact (%v, %v, MLL %v) vs in place (%v, %v, MLL %v)", ex.TestRMSE, ex.TestLLH, *ex.MLL, ip.TestRMSE, ip.TestLLH, *ip.MLL)
	}
	before = calls
	it, err := small.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	if it.Method == "cholesky" || calls != before+1 {
		t.Fatalf("small budget: method %q, backend called %d more times: want CG on one new backend operator", it.Method, calls-before)
	}
	if math.Abs(ex.TestRMSE-it.TestRMSE) > 1e-6 || math.Abs(ex.TestLLH-it.TestLLH) > 1e-6 {
		t.Errorf("exact (%v, %v) vs iterative on the backend (%v, %v)", ex.TestRMSE, ex.TestLLH, it.TestRMSE, it.TestLLH)
	}
	before = calls
	if err := o.Step(context.Background()); err != nil || calls != before+1 {
		t.Fatalf("step after the evaluation: %v, backend called %d more times (want 1)", err, calls-before)
	}
}
