package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

func TestTrainCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	code, _, errs := runCmd(t, "train", "--data", "synthetic-200-2-0", "--steps", "5", "--warm-start", "--json", out, "--residuals=false")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	r := readJSON[map[string]any](t, out)
	for _, key := range []string{"dataset", "split", "n_train", "n_test", "d", "solver", "warm_start", "steps_done", "total_seconds", "solver_seconds", "test", "final", "history"} {
		if _, ok := r[key]; !ok {
			t.Errorf("JSON lacks %q", key)
		}
	}
	if r["steps_done"].(float64) != 5 || r["solver"] != "cg" || r["warm_start"] != true || len(r["history"].([]any)) != 5 {
		t.Errorf("JSON %v", r)
	}
	if ev, _ := r["test"].(map[string]any); ev["test_llh"] == nil || ev["test_rmse"] == nil || ev["method"] != "cholesky" {
		t.Errorf("test evaluation %v", r["test"])
	}
	h0 := r["history"].([]any)[0].(map[string]any)
	for _, key := range []string{"step", "solver_iterations", "solver_seconds", "step_seconds", "noise", "signal", "lengthscales"} {
		if _, ok := h0[key]; !ok {
			t.Errorf("history record lacks %q", key)
		}
	}
}

// TestTrainPrecision checks that --precision float32 and mixed reach the
// operator: result.json's history names it.
func TestTrainPrecision(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--precision", "float32"}, "dense float32"}, {[]string{"--precision", "mixed"}, "dense mixed"},
	} {
		out := filepath.Join(t.TempDir(), "r.json")
		args := append([]string{"train", "--data", "synthetic-100-2-0", "--steps", "2", "--warm-start", "--json", out}, tc.flags...)
		if code, _, errs := runCmd(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.flags, code, errs)
		}
		b, _ := os.ReadFile(out)
		if !strings.Contains(string(b), `"operator":"`+tc.want+`"`) && !strings.Contains(string(b), `"operator": "`+tc.want+`"`) {
			t.Errorf("%v: result.json does not name a %s operator", tc.flags, tc.want)
		}
	}
}

// TestTrainExactResume: the exact-gradient run, saved after 2 steps and
// resumed to 4, ends where a straight 4-step run ends (bit for bit).
func TestTrainExactResume(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "e.ckpt")
	base := []string{"train", "--data", "synthetic-80-2-0", "--solver", "cholesky", "--eval=false"}
	code, _, errs := runCmd(t, append(append([]string(nil), base...), "--steps", "2", "--checkpoint", ck)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	resumed, errs := runJSON[gpnb.Result](t, append(append([]string(nil), base...), "--steps", "4", "--resume", ck, "--json", "-", "--verbose")...)
	if !strings.Contains(errs, "step 3:") || !strings.Contains(errs, "step 4:") || strings.Contains(errs, "step 2:") {
		t.Errorf("--verbose lines: %q", errs)
	}
	straight, _ := runJSON[gpnb.Result](t, append(append([]string(nil), base...), "--steps", "4", "--json", "-")...)
	if resumed.Solver != "cholesky" || resumed.StepsDone != 4 || resumed.Final.Noise != straight.Final.Noise || resumed.Final.Signal != straight.Final.Signal {
		t.Errorf("resumed %+v\nstraight %+v", resumed.Final, straight.Final)
	}
	for i := range straight.Final.Lengthscales {
		if resumed.Final.Lengthscales[i] != straight.Final.Lengthscales[i] {
			t.Errorf("length scale %d: resumed %v, straight %v", i, resumed.Final.Lengthscales[i], straight.Final.Lengthscales[i])
		}
	}
}

func TestTrainCommandBadInput(t *testing.T) {
	base := []string{"train", "--data", "synthetic-50-4-0", "--steps", "1"}
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--solver", "lu"}, "--solver"},
		{[]string{"--probes", "0"}, "--probes"},
		{[]string{"--lr", "-1"}, "--lr"},
		{[]string{"--probe-dist", "uniform"}, "--probe-dist"},
		{[]string{"--lengthscales", "1,2"}, "length scales"},
		{[]string{"--resume", "/nonexistent/x.ckpt"}, "--resume"},
		{[]string{"--backend", "tpu"}, "--backend"},
		{[]string{"--precision", "half"}, "--precision"},
	} {
		code, _, errs := runCmd(t, append(append([]string(nil), base...), c.extra...)...)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 mentioning %q", c.extra, code, errs, c.want)
		}
	}
	// Resuming with another solver or other data is refused.
	dir := t.TempDir()
	ck := filepath.Join(dir, "c.ckpt")
	if code, _, errs := runCmd(t, append(append([]string(nil), base...), "--checkpoint", ck, "--eval=false")...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, _, errs := runCmd(t, "train", "--data", "synthetic-50-4-0", "--steps", "2", "--resume", ck, "--solver", "ap")
	if code != 1 || !strings.Contains(errs, "configuration differs") {
		t.Errorf("other solver: exit %d, %q", code, errs)
	}
	code, _, errs = runCmd(t, "train", "--data", "synthetic-60-4-0", "--steps", "2", "--resume", ck)
	if code != 1 || !strings.Contains(errs, "other data") {
		t.Errorf("other data: exit %d, %q", code, errs)
	}
}

// TestTrainSIGINT builds the binary, interrupts a run with SIGINT, checks it
// exits within 5 s leaving a valid checkpoint, and resumes it to the end.
func TestTrainSIGINT(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "gpnb")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ck := filepath.Join(dir, "run.ckpt")
	// Tight tolerances make each step long, so the signal lands mid-solve.
	dataArgs := []string{"--data", "synthetic-1200-3-0", "--tol-mean", "1e-8", "--tol-probes", "1e-8"}
	cmd := exec.Command(bin, append([]string{"train", "--steps", "500", "--checkpoint", ck, "--eval=false"}, dataArgs...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the first checkpoint, then a little more to land mid-solve.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(ck); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no checkpoint after 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(150 * time.Millisecond)
	sent := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatal("did not exit within 5 s of SIGINT")
	}
	t.Logf("exited %v after SIGINT: %s", time.Since(sent).Round(time.Millisecond), strings.TrimSpace(stderr.String()))
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(stderr.String(), "resume with: gpnb train --resume "+ck) {
		t.Fatalf("exit %d, stderr %q", cmd.ProcessState.ExitCode(), stderr.String())
	}
	st, err := gpnb.ReadCheckpoint(ck)
	if err != nil {
		t.Fatalf("checkpoint after SIGINT: %v", err)
	}
	total := st.Step + 2
	out, err := exec.Command(bin, append([]string{"train", "--resume", ck, "--steps", strconv.Itoa(total), "--json", "-", "--residuals=false"}, dataArgs...)...).Output()
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	var r gpnb.Result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("resume JSON: %v", err)
	}
	if r.StepsDone != total || len(r.History) != total {
		t.Errorf("resumed run did %d steps (history %d), want %d", r.StepsDone, len(r.History), total)
	}
}

// TestTrainPreset: --preset fast on its iterative path trains until
// converged (well before its cap of gpnb.ConvergedMaxSteps steps, reported
// on stdout and in the JSON)
// with the preset's choices, and every step records its preconditioner's
// rank; a flag given beside the preset wins over it.
func TestTrainPreset(t *testing.T) {
	dir := t.TempDir()
	out, ckpt := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.ckpt")
	// --exact-up-to 0 and --finish-exact-up-to 0: the iterative path alone
	// (TestTrainExactPath has the exact one, TestTrainExactFinish the
	// finish).
	code, stdout, errs := runCmd(t, "train", "--data", "synthetic-150-2-1", "--preset", "fast", "--precision", "float64", "--exact-up-to", "0", "--finish-exact-up-to", "0", "--json", out, "--checkpoint", ckpt)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	r := readJSON[gpnb.Result](t, out)
	if !r.Converged || r.StepsDone >= gpnb.ConvergedMaxSteps || !strings.Contains(stdout, fmt.Sprintf("converged after %d steps", r.StepsDone)) {
		t.Errorf("converged %v after %d steps; stdout %q", r.Converged, r.StepsDone, stdout)
	}
	c := r.Config
	if c.Until != gpnb.UntilConverged || c.Param != gpnb.ParamLog || !c.WarmStart || c.Probes != gpnb.FastProbes || c.Operator.Precision != kernel.Float64 {
		t.Errorf("config %+v: want the fast preset with float64 as given", c)
	}
	if cg, ok := c.Solver.(solvers.CG); !ok || cg.PrecondRank != solvers.PrecondRankAuto {
		t.Errorf("solver %#v, want CG with the automatic preconditioner", c.Solver)
	}
	for _, h := range r.History {
		if k := h.PrecondRank; k < 1 || k > solvers.AutoRankCap(150) {
			t.Fatalf("step %d used a preconditioner of rank %d, want 1..%d", h.Step, k, solvers.AutoRankCap(150))
		}
	}
	// gpnb inspect says so too: the run's description and a rank column.
	_, text, _ := runCmd(t, "inspect", ckpt, "--last", "1")
	for _, want := range []string{"automatic rank", "in log θ", "until converged", "precond rank"} {
		if !strings.Contains(text, want) {
			t.Errorf("gpnb inspect does not say %q:\n%s", want, text)
		}
	}
	if code, _, errs := runCmd(t, "train", "--data", "synthetic-150-2-1", "--preset", "slow"); code == 0 || !strings.Contains(errs, "unknown preset") {
		t.Errorf("--preset slow: exit %d, %q", code, errs)
	}
}

// TestTrainExactFinish: --preset fast on 150 points with --exact-up-to 0
// finishes on the exact path (the preset's --finish-exact-up-to), and
// gpnb train and gpnb inspect say from which step and why, with a table
// each for Adam's steps and the L-BFGS steps.
func TestTrainExactFinish(t *testing.T) {
	dir := t.TempDir()
	out, ckpt := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.ckpt")
	code, stdout, errs := runCmd(t, "train", "--data", "synthetic-150-2-1", "--preset", "fast", "--exact-up-to", "0", "--json", out, "--checkpoint", ckpt)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	r := readJSON[gpnb.Result](t, out)
	k := r.ExactFrom
	if !r.Converged || k == 0 || r.Path != gpnb.PathExact || r.History[k-1].Evaluations != 0 || r.History[k].Evaluations == 0 {
		t.Fatalf("converged %v, exact from %d, path %v", r.Converged, k, r.Path)
	}
	why := r.Config.FinishCause(r.History[:k], r.NTrain)
	if why == "" {
		t.Fatalf("no cause for the switch after step %d", k)
	}
	for _, want := range []string{fmt.Sprintf("then exact from step %d once %s", k+1, why), fmt.Sprintf("%d steps: ", k), fmt.Sprintf("then %d L-BFGS steps", r.StepsDone-k)} {
		if !strings.Contains(stdout, want) {
			t.Errorf("gpnb train does not say %q:\n%s", want, stdout)
		}
	}
	_, text, _ := runCmd(t, "inspect", ckpt)
	for _, want := range []string{fmt.Sprintf("then exact from step %d once %s", k+1, why), fmt.Sprintf("%d Adam steps", k), "evaluations", "precond rank"} {
		if !strings.Contains(text, want) {
			t.Errorf("gpnb inspect does not say %q:\n%s", want, text)
		}
	}
}

// TestTrainStallWarning: SGD steps whose solves stall (here at float64's
// rounding floor, below a tolerance of 1e-16) end as stalled, not at the
// cap; gpnb train warns with the cause for SGD, and gpnb inspect counts
// them and marks their rows.
func TestTrainStallWarning(t *testing.T) {
	res := filepath.Join(t.TempDir(), "run.json")
	code, _, stderr := runCmd(t, "train", "--data", "synthetic-100-2-1", "--solver", "sgd", "--batch-size", "50", "--probes", "2",
		"--tol-mean", "1e-16", "--tol-probes", "1e-16", "--steps", "1", "--quiet", "--json", res)
	if code != 0 || !strings.Contains(stderr, "1 of 1 steps' solves stalled above their tolerances") || !strings.Contains(stderr, "a lower --sgd-lr") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	code, out, stderr := runCmd(t, "inspect", res)
	if code != 0 || !strings.Contains(out, "stalled:   1 of 1 steps") || !strings.Contains(out, "stalled") {
		t.Errorf("inspect: exit %d %s\n%s", code, stderr, out)
	}
}

// TestTrainNearNoiseless: on a target with no noise the fast preset's σ
// falls to its floor on the iterative path; gpnb train says that σ ends there and that steps
// switched from a mixed to a float64 K, and gpnb inspect counts and marks
// those steps.
func TestTrainNearNoiseless(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("x1,x2,y\n")
	for i := 0; i < 200; i++ {
		x1, x2 := math.Sin(float64(i)*1.7), math.Cos(float64(i)*0.37)
		fmt.Fprintf(&b, "%.17g,%.17g,%.17g\n", x1, x2, math.Sin(3*x1)+x2*x2)
	}
	csv := filepath.Join(dir, "noiseless.csv")
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "r.ckpt")
	code, stdout, errs := runCmd(t, "train", "--data", csv, "--preset", "fast", "--exact-up-to", "0", "--precision", "mixed", "--until", "steps", "--steps", "90", "--eval=false", "--checkpoint", ckpt)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"steps multiplied with a float64 K", "σ ends on its floor"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("gpnb train does not say %q:\n%s", want, stdout)
		}
	}
	_, text, _ := runCmd(t, "inspect", ckpt, "--last", "1")
	for _, want := range []string{"float64:", ", float64"} {
		if !strings.Contains(text, want) {
			t.Errorf("gpnb inspect does not say %q:\n%s", want, text)
		}
	}
}
