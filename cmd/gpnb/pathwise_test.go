package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
)

// TestTrainPathwiseBudget: gpnb train --estimator pathwise --budget runs,
// reports its budget stops and the posterior samples' metrics, and its
// checkpoint resumes without the flags repeated to the bits of a straight
// run; inspect shows the budget (not as the iteration cap) and the samples.
func TestTrainPathwiseBudget(t *testing.T) {
	dir := t.TempDir()
	base := []string{"train", "--data", "synthetic-150-2-0", "--estimator", "pathwise", "--features", "200",
		"--warm-start", "--budget", "3", "--tol-mean", "1e-6", "--tol-probes", "1e-6"}
	straight := filepath.Join(dir, "straight.json")
	code, _, errs := runCmd(t, append(append([]string(nil), base...), "--steps", "4", "--json", straight)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := readJSON[gpnb.Result](t, straight)
	if want.Config == nil || want.Config.Estimator != gpnb.Pathwise || want.Config.Features != 200 || want.Config.Settings.Budget != 3 {
		t.Fatalf("result config %+v", want.Config)
	}
	if want.Test == nil || want.Test.Samples == nil || want.History.BudgetSteps() != 4 || want.History.UnconvergedSteps() != 0 {
		t.Fatalf("evaluation %+v, %d budget stops, %d capped", want.Test, want.History.BudgetSteps(), want.History.UnconvergedSteps())
	}
	for _, r := range want.History {
		if r.SolverIterations != 3 || r.SolverEpochs != 3 || len(r.FinalResiduals) != 17 {
			t.Errorf("step %d: %d iterations, %v epochs, %d residuals; want 3, 3, 17", r.Step, r.SolverIterations, r.SolverEpochs, len(r.FinalResiduals))
		}
	}
	ck := filepath.Join(dir, "run.ckpt")
	if code, _, errs := runCmd(t, append(append([]string(nil), base...), "--steps", "2", "--checkpoint", ck, "--eval=false")...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	resumed := filepath.Join(dir, "resumed.json")
	code, _, errs = runCmd(t, "train", "--data", "synthetic-150-2-0", "--resume", ck, "--steps", "4", "--json", resumed)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	got := readJSON[gpnb.Result](t, resumed)
	if got.Final.Noise != want.Final.Noise || got.Test == nil || got.Test.TestLLH != want.Test.TestLLH || got.Test.Samples == nil || got.Test.Samples.TestLLH != want.Test.Samples.TestLLH {
		t.Errorf("resumed run ends at noise %v, evaluation %+v; straight %v, %+v", got.Final.Noise, got.Test, want.Final.Noise, want.Test)
	}
	if _, _, errs := runCmd(t, "train", "--data", "synthetic-150-2-0", "--resume", ck, "--steps", "4", "--estimator", "hutchinson"); !strings.Contains(errs, "Estimator") {
		t.Errorf("resuming with another estimator: %q", errs)
	}
	code, text, errs := runCmd(t, "inspect", straight)
	if code != 0 {
		t.Fatalf("inspect: %s", errs)
	}
	for _, s := range []string{"pathwise estimator: 16 prior samples of 200 random features", "budget:    4 of 4 steps stopped at the solver budget of 3 epochs",
		"samples:   RMSE", " budget ", "res. at stop"} {
		if !strings.Contains(text, s) {
			t.Errorf("inspect lacks %q:\n%s", s, text)
		}
	}
	if strings.Contains(text, "iteration cap") {
		t.Errorf("inspect calls budget stops the iteration cap:\n%s", text)
	}
	code, text, errs = runCmd(t, "inspect", ck)
	if code != 0 || !strings.Contains(text, "budget 3 epochs a step") || !strings.Contains(text, "16 fixed prior samples of 200 random features") {
		t.Errorf("inspect checkpoint: exit %d %s:\n%s", code, errs, text)
	}
	for _, bad := range [][]string{{"--features", "201"}, {"--estimator", "hutchinson", "--features", "100"}, {"--budget", "-1"}} {
		args := append([]string{"train", "--data", "synthetic-50-2-0", "--estimator", "pathwise"}, bad...)
		if code, _, errs := runCmd(t, args...); code == 0 || (!strings.Contains(errs, "--features") && !strings.Contains(errs, "--budget")) {
			t.Errorf("%v: exit %d, %q: want an error naming the flag", bad, code, errs)
		}
	}
}

// TestReproduceVariants: --estimators and --budgets expand the grid into
// jobs named by their variant, the paper's jobs keep their names, the jobs
// run, and gpnb table renders the variants as rows and the ablation.
func TestReproduceVariants(t *testing.T) {
	dir := t.TempDir()
	grid := []string{"reproduce", "--datasets", "synthetic-80-2-1", "--splits", "0", "--solvers", "cg", "--steps", "3", "--exact", "never",
		"--out", dir, "--estimators", "hutchinson,pathwise", "--budgets", "0,4", "--features", "100", "--modes", "warm"}
	code, out, errs := runCmd(t, append(grid, "--dry-run")...)
	if code != 0 {
		t.Fatalf("dry run: %s", errs)
	}
	for _, id := range []string{"synthetic-80-2-1-s0-cg-warm ", "synthetic-80-2-1-s0-cg-warm-b4 ", "synthetic-80-2-1-s0-cg-warm-pathwise-f100 ", "synthetic-80-2-1-s0-cg-warm-pathwise-f100-b4 "} {
		if !strings.Contains(out, id) {
			t.Errorf("dry run lacks %q:\n%s", id, out)
		}
	}
	if code, _, errs := runCmd(t, grid...); code != 0 {
		t.Fatalf("run: %s", errs)
	}
	code, table, errs := runCmd(t, "table", "--in", dir, "--table", "all", "--unit", "s")
	if code != 0 {
		t.Fatalf("table: %s", errs)
	}
	for _, s := range []string{"CG pathwise (100 features) budget 4 + ws", "CG budget 4 + ws", "Ablation: estimators and budgets", "Test LLH (samples)", "stopped at their budget"} {
		if !strings.Contains(table, s) {
			t.Errorf("table lacks %q:\n%s", s, table)
		}
	}
	var j struct {
		Config gpnb.Config `json:"config"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "jobs", "synthetic-80-2-1-s0-cg-warm-b4", "job.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &j); err != nil || j.Config.Features != 0 || j.Config.Settings.Budget != 4 || j.Config.Estimator != gpnb.Hutchinson {
		t.Errorf("Hutchinson budget job's config %+v (%v)", j.Config, err)
	}
	for _, bad := range [][]string{{"--estimators", "exact"}, {"--budgets", "-3"}} {
		if code, _, errs := runCmd(t, append(grid[:len(grid)-6:len(grid)-6], bad...)...); code == 0 || !strings.Contains(errs, bad[0]) {
			t.Errorf("%v: exit %d, %q", bad, code, errs)
		}
	}
	if code, _, errs := runCmd(t, "table", "--in", dir, "--table", "ablation"); code != 0 {
		t.Errorf("--table ablation: %s", errs)
	}
}
