package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
)

// TestTrainExactPath: gpnb train --preset fast on a small CSV file takes
// the exact path (Cholesky + L-BFGS) and says so in one line, stops
// converged, and records the path in its JSON result; gpnb inspect shows
// the path of the checkpoint and of the result; --exact-up-to below n
// takes the exact path by the preset's --exact-work-up-to, and with that
// below n·(d+2) too, or --max-exact-n below n, or n beyond
// gpnb.ExactWorkMaxN, the iterative path, each saying why.
func TestTrainExactPath(t *testing.T) {
	dir := t.TempDir()
	out, ckpt := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.ckpt")
	code, stdout, errs := runCmd(t, "train", "--data", housesCSV, "--target", "price", "--preset", "fast", "--quiet", "--json", out, "--checkpoint", ckpt)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	r := readJSON[gpnb.Result](t, out)
	line := fmt.Sprintf("path: exact (Cholesky + L-BFGS, n = %d ≤ --exact-up-to %d; %d starts (--exact-starts), the highest L kept)\n", r.NTrain, gpnb.FastExactUpTo, gpnb.FastExactStarts)
	if !strings.Contains(stdout, line) || strings.Count(stdout, "path: ") != 1 {
		t.Errorf("stdout does not say the path once as %q:\n%s", line, stdout)
	}
	if r.Path != gpnb.PathExact || !r.Converged || !strings.Contains(stdout, fmt.Sprintf("converged after %d steps", r.StepsDone)) {
		t.Errorf("result: path %v, converged %v after %d steps; stdout %s", r.Path, r.Converged, r.StepsDone, stdout)
	}
	if ev := r.History.TotalEvaluations(); ev < r.StepsDone || r.History.TotalSolverIterations() != 0 {
		t.Errorf("%d evaluations and %d solver iterations in %d steps", ev, r.History.TotalSolverIterations(), r.StepsDone)
	}
	for _, p := range []string{ckpt, out} {
		_, text, _ := runCmd(t, "inspect", p, "--last", "1")
		if !strings.Contains(text, "path:      exact (Cholesky + L-BFGS") || !strings.Contains(text, "evaluations") {
			t.Errorf("gpnb inspect %s does not show the exact path:\n%s", filepath.Base(p), text)
		}
	}

	// A subset stage: its steps and size in the same line.
	code, stdout, errs = runCmd(t, "train", "--data", "synthetic-300-1-1", "--preset", "fast", "--exact-subset", "10", "--quiet", "--json", out)
	if code != 0 {
		t.Fatalf("--exact-subset 10: exit %d: %s", code, errs)
	}
	rs := readJSON[gpnb.Result](t, out)
	k, sub := rs.History.SubsetSteps()
	line = fmt.Sprintf("path: exact (Cholesky + L-BFGS, n = %d ≤ --exact-up-to %d; its first %d steps on a subset of %d points, n ≥ 2 × --exact-subset 10)\n", rs.NTrain, gpnb.FastExactUpTo, k, sub)
	if k == 0 || sub != max(rs.NTrain/gpnb.ExactSubsetDiv, gpnb.ExactSubsetPerInput) || !rs.Converged || !strings.Contains(stdout, line) {
		t.Errorf("--exact-subset 10: %d steps on %d points, converged %v; stdout does not say %q:\n%s", k, sub, rs.Converged, line, stdout)
	}

	work := r.NTrain * (r.D + 2)
	code, stdout, errs = runCmd(t, "train", "--data", housesCSV, "--target", "price", "--preset", "fast", "--exact-up-to", "10", "--steps", "2", "--quiet")
	if code != 0 {
		t.Fatalf("--exact-up-to 10: exit %d: %s", code, errs)
	}
	if want := fmt.Sprintf("path: exact (Cholesky + L-BFGS, n·(d+2) = %d ≤ --exact-work-up-to %d)\n", work, gpnb.FastExactWorkUpTo); !strings.Contains(stdout, want) {
		t.Errorf("--exact-up-to 10: stdout does not say %q:\n%s", want, stdout)
	}
	code, stdout, errs = runCmd(t, "train", "--data", housesCSV, "--target", "price", "--preset", "fast", "--exact-up-to", "10", "--exact-work-up-to", fmt.Sprint(work-1), "--steps", "2", "--quiet")
	if code != 0 {
		t.Fatalf("--exact-work-up-to %d: exit %d: %s", work-1, code, errs)
	}
	if want := fmt.Sprintf("path: iterative (cg + warm start, Adam; n = %d > --exact-up-to 10, n·(d+2) = %d > --exact-work-up-to %d)", r.NTrain, work, work-1); !strings.Contains(stdout, want) {
		t.Errorf("--exact-up-to 10 --exact-work-up-to %d: stdout does not say %q:\n%s", work-1, want, stdout)
	}
	code, stdout, errs = runCmd(t, "train", "--data", housesCSV, "--target", "price", "--preset", "fast", "--exact-up-to", "10", "--max-exact-n", "10", "--finish-exact-up-to", "0", "--steps", "2", "--quiet")
	if code != 0 {
		t.Fatalf("--max-exact-n 10: exit %d: %s", code, errs)
	}
	if want := fmt.Sprintf("n·(d+2) = %d ≤ --exact-work-up-to %d but n > --max-exact-n)", work, gpnb.FastExactWorkUpTo); !strings.Contains(stdout, want) || !strings.Contains(stdout, "path: iterative") {
		t.Errorf("--max-exact-n 10: stdout does not say %q on the iterative path:\n%s", want, stdout)
	}
	m := gpnb.ExactWorkMaxN + 1
	code, stdout, errs = runCmd(t, "train", "--data", fmt.Sprintf("synthetic-%d-1-1", m), "--preset", "fast", "--steps", "1", "--eval=false", "--quiet")
	if code != 0 {
		t.Fatalf("%d points: exit %d: %s", m, code, errs)
	}
	if want := fmt.Sprintf("n·(d+2) = %d ≤ --exact-work-up-to %d but n > %d)", 3*m, gpnb.FastExactWorkUpTo, gpnb.ExactWorkMaxN); !strings.Contains(stdout, want) || !strings.Contains(stdout, "path: iterative") {
		t.Errorf("%d points, 1 input: stdout does not say %q on the iterative path:\n%s", m, want, stdout)
	}
}
