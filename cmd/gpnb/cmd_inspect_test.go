package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/solvers"
)

// inspectJSON runs `gpnb inspect PATH --json -` and decodes its output.
func inspectJSON(t *testing.T, path string) inspection {
	t.Helper()
	in, _ := runJSON[inspection](t, "inspect", path, "--json", "-")
	return in
}

// checkHistory compares the summary's totals and rows with the history it
// was made from, summed here.
func checkHistory(t *testing.T, in inspection, h gpnb.History) {
	t.Helper()
	iters, capped := 0, 0
	secs := 0.0
	for _, r := range h {
		iters += r.SolverIterations
		secs += r.StepSeconds
		if !r.SolverConverged {
			capped++
		}
	}
	if in.SolverIterations != iters || in.UnconvergedSteps != capped || in.TotalSeconds != secs {
		t.Errorf("totals: %d iterations, %d capped, %v s; the history sums to %d, %d, %v",
			in.SolverIterations, in.UnconvergedSteps, in.TotalSeconds, iters, capped, secs)
	}
	if len(in.History) != len(h) {
		t.Fatalf("%d rows for %d steps", len(in.History), len(h))
	}
	for i, r := range h {
		// The record itself, less its residual trace.
		r.Residuals = nil
		if got := in.History[i]; !reflect.DeepEqual(got, r) {
			t.Errorf("row %d: %+v, record %+v", i, got, r)
		}
	}
}

// TestInspectCheckpoint: a checkpoint taken mid-solve, with steps cut at an
// iteration cap of 3, is summarised from its own state: totals, the cap,
// the pending solve and θ.
func TestInspectCheckpoint(t *testing.T) {
	ds, err := data.Synthetic(150, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := gpnb.Config{Solver: solvers.CG{}, Probes: 4, Settings: solvers.Settings{MaxIterations: 3}}
	opt, err := gpnb.NewOptimiser(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opt.AddRecorder(gpnb.Hooks{Iteration: func(p gpnb.IterationRecord) {
		if p.Step == 4 && p.Iteration == 2 {
			cancel()
		}
	}})
	if err := opt.Run(ctx, 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run returned %v, want context.Canceled", err)
	}
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "run.ckpt")
	if err := opt.Save(ckpt); err != nil {
		t.Fatal(err)
	}
	st, err := gpnb.ReadCheckpoint(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if st.Step != 3 || st.Pending == nil {
		t.Fatalf("checkpoint at step %d, pending %v: the test needs a solve pending in step 4", st.Step, st.Pending != nil)
	}

	in := inspectJSON(t, ckpt)
	if in.Kind != "checkpoint" || in.Steps != 3 || in.N != 150 || in.D != 2 || in.Fingerprint != ds.Fingerprint() || in.DataTag != ds.String() {
		t.Errorf("header: %+v", in)
	}
	if in.MaxIterations != 3 {
		t.Errorf("max iterations %d, want the configured 3", in.MaxIterations)
	}
	if in.UnconvergedSteps == 0 {
		t.Errorf("no capped steps at a cap of 3 CG iterations: %+v", in.History)
	}
	if p := in.Pending; p == nil || p.Step != 4 || p.Iteration != 2 || len(p.RelResiduals) != 5 {
		t.Errorf("pending %+v, want step 4 after 2 iterations with 5 residuals", in.Pending)
	}
	if len(in.Theta) != 4 {
		t.Fatalf("θ %v", in.Theta)
	}
	for i, v := range st.Theta {
		if in.Theta[i] != v {
			t.Errorf("θ[%d] = %v, checkpoint holds %v", i, in.Theta[i], v)
		}
	}
	if in.Config == nil || in.Config.Solver.Name() != "cg" || in.Config.Probes != 4 {
		t.Errorf("config %+v", in.Config)
	}
	checkHistory(t, in, st.History)

	// The same checkpoint as a job directory holds it, and as text.
	job := filepath.Join(dir, "job")
	if err := os.Mkdir(job, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(ckpt)
	if err := os.WriteFile(filepath.Join(job, "checkpoint"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCmd(t, "inspect", job, "--last", "2")
	if code != 0 {
		t.Fatalf("inspect job dir: exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		ds.String(),
		"cg, cold start (zero initial guess), 4 resampled gaussian probes",
		fmt.Sprintf("steps:     3 done, %d solver iterations", in.SolverIterations),
		fmt.Sprintf("cap:       %d of 3 steps stopped at the iteration cap (3 iterations a step)", in.UnconvergedSteps),
		"pending:   step 4 interrupted after 2 solver iterations",
		"last 2 of 3 steps:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	// Two step rows: steps 2 and 3, each line starting with its number.
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 10 && (f[0] == "2" || f[0] == "3") {
			rows++
		}
		if len(f) == 10 && f[0] == "1" {
			t.Errorf("--last 2 listed step 1: %q", line)
		}
	}
	if rows != 2 {
		t.Errorf("%d step rows, want 2:\n%s", rows, out)
	}
}

// TestInspectResult: a `gpnb train --json` result and a job directory that
// holds only its result.json give the same summary, with the test metrics.
func TestInspectResult(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "result.json")
	code, _, stderr := runCmd(t, "train", "--data", "synthetic-120-2-0",
		"--steps", "3", "--warm-start", "--solver", "cg", "--quiet", "--json", res)
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	r := readJSON[gpnb.Result](t, res)
	for _, path := range []string{res, dir} {
		in := inspectJSON(t, path)
		if in.Kind != "result" || in.Steps != 3 || in.N != 120 || in.Pending != nil || in.Config != nil {
			t.Errorf("%s: header %+v", path, in)
		}
		if in.Test == nil || r.Test == nil || !reflect.DeepEqual(*in.Test, *r.Test) {
			t.Errorf("%s: test metrics %+v, result has %+v", path, in.Test, r.Test)
		}
		want := append(append([]float64(nil), r.Final.Lengthscales...), r.Final.Signal, r.Final.Noise)
		if fmt.Sprint(in.Theta) != fmt.Sprint(want) {
			t.Errorf("%s: θ %v, result's final %v", path, in.Theta, want)
		}
		checkHistory(t, in, r.History)
	}
	code, out, _ := runCmd(t, "inspect", res)
	if code != 0 || !strings.Contains(out, "cg, warm start (previous solution), 16 probes\n") ||
		!strings.Contains(out, fmt.Sprintf("log-likelihood %.4f", r.Test.TestLLH)) {
		t.Errorf("text: exit %d:\n%s", code, out)
	}
}

// TestInspectDescribesRun: a checkpoint's run line describes the probes as
// the checkpoint holds them, not as the start implies (an ablation may
// warm-start with resampled probes, or fix Rademacher probes with a zero
// start), and the solver's parameters as the run applies them: defaults
// filled in, AP's block and SGD's batch capped at the 80 training points,
// explicit values and tolerances kept.
func TestInspectDescribesRun(t *testing.T) {
	const n = 80
	ds, err := data.Synthetic(n, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  gpnb.Config
		want string
	}{
		{gpnb.Config{Solver: solvers.CG{}, Probes: 3, WarmStart: true, FixedProbes: gpnb.ProbesResampled},
			"cg, warm start (previous solution), 3 resampled gaussian probes;"},
		{gpnb.Config{Solver: solvers.CG{}, Probes: 3, FixedProbes: gpnb.ProbesFixed, ProbeDist: gpnb.Rademacher},
			"cg, cold start (zero initial guess), 3 fixed rademacher probes;"},
		{gpnb.Config{Solver: solvers.AP{}, Probes: 2},
			fmt.Sprintf("; block %d, tolerances %g (mean) / %g (probes), the authors' stopping rules, Adam learning rate %g, seed 0",
				min(n, solvers.DefaultBlockSize), solvers.DefaultRelTolMean, solvers.DefaultRelTolProbes, gpnb.DefaultLearningRate)},
		{gpnb.Config{Solver: solvers.SGD{}, Probes: 2, Settings: solvers.Settings{RelTolMean: 0.005}},
			fmt.Sprintf("; batch %d, momentum %g, learning rate %g (normalised), tolerances 0.005 (mean) / %g (probes), the authors' stopping rules",
				min(n, solvers.DefaultBatchSize), solvers.DefaultMomentum, solvers.DefaultLearningRate, solvers.DefaultRelTolProbes)},
		{gpnb.Config{Solver: solvers.SGD{BatchSize: 20, Momentum: -1, RawLearningRate: 3}, Probes: 2, LearningRate: 0.05, Seed: 7, Rules: solvers.RulesPaperText},
			"; batch 20, no momentum, learning rate 3 (the paper's units), tolerances"},
		{gpnb.Config{Solver: solvers.SGD{NoVerify: true}, Probes: 2, Rules: solvers.RulesPaperText, Settings: solvers.Settings{Freeze: solvers.FreezeJoint}},
			"stop on the estimate, tolerances 0.01 (mean) / 0.1 (probes), every system iterated to the joint stop, Adam"},
		{gpnb.Config{Solver: solvers.CG{PrecondRank: 5}, Probes: 2},
			"; pivoted-Cholesky preconditioner of rank 5, tolerances"},
	} {
		opt, err := gpnb.NewOptimiser(ds, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := opt.Run(context.Background(), 1); err != nil {
			t.Fatalf("%+v: %v", tc.cfg.Solver, err)
		}
		ckpt := filepath.Join(t.TempDir(), "run.ckpt")
		if err := opt.Save(ckpt); err != nil {
			t.Fatal(err)
		}
		if in := inspectJSON(t, ckpt); !strings.Contains(in.Run, tc.want) {
			t.Errorf("%+v: run %q, want it to contain %q", tc.cfg.Solver, in.Run, tc.want)
		}
	}
}

func TestInspectBadInput(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "bad.ckpt")
	os.WriteFile(corrupt, []byte("GPNBCKPT not really a checkpoint, far too short to hold a payload and its hash"), 0o644)
	notResult := filepath.Join(dir, "job.json")
	os.WriteFile(notResult, []byte(`{"dataset":"pol","solver":"cg"}`), 0o644)
	two := filepath.Join(dir, "two.json")
	r := reportResult("synthetic", "cg", true, 0)
	writeJSONFile(t, two, []gpnb.Result{r, r})
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no path", []string{"inspect"}, 2, "give a checkpoint"},
		{"two paths", []string{"inspect", corrupt, two}, 2, "give one path, not 2"},
		{"two paths after a flag", []string{"inspect", "--last", "2", corrupt, two}, 2, "give one path, not 2"},
		{"missing", []string{"inspect", filepath.Join(dir, "nope.ckpt")}, 1, "no such file"},
		{"corrupt", []string{"inspect", corrupt}, 1, "corrupt"},
		{"not a result", []string{"inspect", notResult}, 1, "not a gpnb result"},
		{"many results", []string{"inspect", two}, 1, "holds 2 results"},
		{"empty dir", []string{"inspect", empty}, 1, "gpnb reproduce --dry-run"},
		{"negative last", []string{"inspect", two, "--last", "-1"}, 1, "--last -1"},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", tc.name, code, stderr, tc.code, tc.want)
		}
	}
}

// TestInspectBackoffs: a run whose SGD solves diverged and backed off to
// half the rate says so in its totals and in each such step's row.
func TestInspectBackoffs(t *testing.T) {
	ds, err := data.Synthetic(200, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	for raw := 1.0; raw < 1e6; raw *= 2 {
		o, err := gpnb.NewOptimiser(ds, gpnb.Config{Solver: solvers.SGD{BatchSize: 50, RawLearningRate: raw, Seed: 1}, Probes: 4, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Run(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
		steps, restarts := o.History().BackoffSteps()
		if steps == 0 {
			continue
		}
		ckpt := filepath.Join(t.TempDir(), "run.ckpt")
		if err := o.Save(ckpt); err != nil {
			t.Fatal(err)
		}
		if in := inspectJSON(t, ckpt); in.BackoffSteps != steps || in.RateBackoffs != restarts {
			t.Errorf("inspect --json: %d steps, %d restarts; the history %d, %d", in.BackoffSteps, in.RateBackoffs, steps, restarts)
		}
		code, out, stderr := runCmd(t, "inspect", ckpt)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("backoffs:  %d of 2 steps' SGD solves diverged", steps)) || !strings.Contains(out, "yes, rate/") {
			t.Errorf("inspect: exit %d %s\n%s", code, stderr, out)
		}
		return
	}
	t.Fatal("no rate diverged")
}
