package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/solvers"
)

// reportResult is a small synthetic run with a closed-form history.
func reportResult(ds, solver string, warm bool, split int) gpnb.Result {
	c := gpnb.Config{WarmStart: warm}
	c.Solver, _ = solvers.ParseMethod(solver)
	r := gpnb.Result{Dataset: ds, Split: split, Solver: solver, WarmStart: warm, D: 2, Config: &c,
		TotalSeconds: 10 + float64(split), SolverSeconds: 9, Test: &gpnb.Eval{TestRMSE: 0.2, TestLLH: 0.5}}
	for s := 1; s <= 4; s++ {
		it := 50 + s
		if warm {
			it = 10 + s
		}
		res := make([][]float64, it+1)
		for k := range res {
			res[k] = []float64{1 / float64(k+1), 2 / float64(k+1), 3 / float64(k+1)}
		}
		r.History = append(r.History, gpnb.StepRecord{Step: s, Noise: 1 / float64(s), Signal: 1, Lengthscales: []float64{1, 2},
			SolverIterations: it, StepSeconds: 2, SolverSeconds: 1.5, Residuals: res, InitDistance: 0.1, ZeroInitDistance: 1})
	}
	return r
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

var panelRe = regexp.MustCompile(`class="gpnb-panel" id="[^"]+" data-title="([^"]*)"`)

func panelTitles(t *testing.T, path string) (string, []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, m := range panelRe.FindAllStringSubmatch(string(b), -1) {
		titles = append(titles, m[1])
	}
	return string(b), titles
}

func TestReportResultsDir(t *testing.T) {
	t.Setenv("GPNB_ECHARTS_NO_INSTALL", "1")
	dir := t.TempDir()
	sub := filepath.Join(dir, "pol")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// Results as single objects in a subdirectory, a list at the top, and a
	// JSON file that is not a result (skipped with a note).
	var list []gpnb.Result
	for split := 0; split < 2; split++ {
		for _, s := range []string{"cg", "ap"} {
			writeJSONFile(t, filepath.Join(sub, s+"-cold-"+string(rune('0'+split))+".json"), reportResult("pol", s, false, split))
			list = append(list, reportResult("bike", s, true, split), reportResult("bike", s, false, split))
		}
		list = append(list, reportResult("pol", "ap", true, split), reportResult("pol", "cg", true, split))
	}
	writeJSONFile(t, filepath.Join(dir, "more.json"), list)
	writeJSONFile(t, filepath.Join(dir, "config.json"), map[string]int{"steps": 3})
	out := filepath.Join(dir, "report.html")
	static := filepath.Join(dir, "figs")
	code, stdout, stderr := runCmd(t, "report", "--in", dir, "--out", out, "--static", static)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "skipping") || !strings.Contains(stderr, "config.json") {
		t.Errorf("stderr should note the skipped non-result file: %q", stderr)
	}
	if !strings.Contains(stdout, "wrote "+out+": 3 figures from 16 run(s)") {
		t.Errorf("stdout %q", stdout)
	}
	page, titles := panelTitles(t, out)
	// Figure 2: one panel per dataset; figure 3: dataset × solver; figure 4:
	// three per dataset × solver.
	want := []string{"pol", "bike",
		"pol — CG", "pol — AP", "bike — CG", "bike — AP",
		"pol — CG: noise σ", "pol — CG: signal s", "pol — CG: length scales ℓ",
		"pol — AP: noise σ", "pol — AP: signal s", "pol — AP: length scales ℓ",
		"bike — CG: noise σ", "bike — CG: signal s", "bike — CG: length scales ℓ",
		"bike — AP: noise σ", "bike — AP: signal s", "bike — AP: length scales ℓ"}
	if strings.Join(titles, "|") != strings.Join(want, "|") {
		t.Errorf("panels\n%q\nwant\n%q", titles, want)
	}
	for _, s := range []string{"Table 1", "Table 2", "<table class=\"gpnb-table\">", "<td>+ ws</td>", "<!DOCTYPE html>"} {
		if !strings.Contains(page, s) {
			t.Errorf("report lacks %q", s)
		}
	}
	for _, name := range []string{"fig2-runtimes", "fig3-iterations", "fig4-hyperparameters"} {
		for _, ext := range []string{".png", ".svg"} {
			if st, err := os.Stat(filepath.Join(static, name+ext)); err != nil || st.Size() < 1000 {
				t.Errorf("%s%s: %v", name, ext, err)
			}
		}
	}
}

func TestReportSingleResultAndCheckpoint(t *testing.T) {
	t.Setenv("GPNB_ECHARTS_NO_INSTALL", "1")
	dir := t.TempDir()
	in := filepath.Join(dir, "r.json")
	writeJSONFile(t, in, reportResult("pol", "cg", true, 0))
	out := filepath.Join(dir, "one.html")
	code, _, stderr := runCmd(t, "report", "--in", in, "--out", out, "--last", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, titles := panelTitles(t, out)
	want := "pol — CG: noise σ|pol — CG: signal s|pol — CG: length scales ℓ|pol — CG|step 3|step 4|Distance from initialisation to solution"
	if strings.Join(titles, "|") != want {
		t.Errorf("panels %q\nwant %q", strings.Join(titles, "|"), want)
	}

	// A real checkpoint from `gpnb train`.
	ckpt := filepath.Join(dir, "run.ckpt")
	code, _, stderr = runCmd(t, "train", "--data", "synthetic-120-2-0", "--steps", "3", "--warm-start", "--checkpoint", ckpt)
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	out = filepath.Join(dir, "ckpt.html")
	code, _, stderr = runCmd(t, "report", "--in", ckpt, "--out", out)
	if code != 0 {
		t.Fatalf("report of checkpoint: exit %d: %s", code, stderr)
	}
	page, titles := panelTitles(t, out)
	if len(titles) < 6 || !strings.Contains(page, "<td>checkpoint</td>") || !strings.Contains(page, "<td>CG + ws</td>") {
		t.Errorf("checkpoint report panels %q", titles)
	}
}

func TestReportBadInput(t *testing.T) {
	t.Setenv("GPNB_ECHARTS_NO_INSTALL", "1")
	dir := t.TempDir()
	notResult := filepath.Join(dir, "x.json")
	writeJSONFile(t, notResult, map[string]int{"a": 1})
	bad := filepath.Join(dir, "bad.ckpt")
	if err := os.WriteFile(bad, []byte("GPNBCKPT truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no --in", []string{"report"}, 2, "--in is required"},
		{"missing file", []string{"report", "--in", filepath.Join(dir, "nope.json")}, 1, "no such file"},
		{"not a result", []string{"report", "--in", notResult, "--out", filepath.Join(dir, "o.html")}, 1, "not a gpnb result"},
		{"corrupt checkpoint", []string{"report", "--in", bad, "--out", filepath.Join(dir, "o.html")}, 1, "corrupt"},
		{"empty dir", []string{"report", "--in", empty, "--out", filepath.Join(dir, "o.html")}, 1, "no result JSON files"},
		{"bad --last", []string{"report", "--in", notResult, "--last", "0"}, 1, "--last"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.msg) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.msg)
			}
		})
	}
}

// A `gpnb reproduce` directory keeps job.json beside each result.json. The
// job file names a dataset and a solver too, but it is not a result: read as
// one it would be averaged in with zero metrics (halving every mean).
func TestReportReproduceLayout(t *testing.T) {
	t.Setenv("GPNB_ECHARTS_NO_INSTALL", "1")
	dir := t.TempDir()
	for _, warm := range []bool{false, true} {
		job := filepath.Join(dir, "jobs", fmt.Sprintf("pol-s0-cg-%v", warm))
		if err := os.MkdirAll(job, 0o755); err != nil {
			t.Fatal(err)
		}
		writeJSONFile(t, filepath.Join(job, "job.json"), map[string]any{
			"dataset": "pol", "split": 0, "solver": "cg", "warm_start": warm, "steps": 4,
			"settings": map[string]any{"kernel": "matern32", "probes": 16},
		})
		writeJSONFile(t, filepath.Join(job, "result.json"), reportResult("pol", "cg", warm, 0))
	}
	out := filepath.Join(dir, "report.html")
	code, stdout, stderr := runCmd(t, "report", "--in", dir, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "from 2 run(s)") {
		t.Errorf("stdout %q: want the 2 results and neither job.json", stdout)
	}
	if n := strings.Count(stderr, "job.json"); n != 2 {
		t.Errorf("stderr mentions job.json %d times, want 2 skips:\n%s", n, stderr)
	}
	if _, err := parseResults([]byte(`{"dataset":"pol","solver":"cg","steps":4}`)); err == nil {
		t.Error("a job.json-like object parsed as a result")
	}
}

// A checkpoint's report is titled with its dataset, split and method, as
// its panels are, not with the checkpoint's file name.
func TestReportCheckpointTitledByDataset(t *testing.T) {
	t.Setenv("GPNB_ECHARTS_NO_INSTALL", "1")
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "c.ckpt")
	code, _, stderr := runCmd(t, "train", "--data", "synthetic-100-2-0", "--steps", "2", "--warm-start", "--checkpoint", ckpt)
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	out := filepath.Join(dir, "r.html")
	if code, _, stderr = runCmd(t, "report", "--in", ckpt, "--out", out); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	st, err := gpnb.ReadCheckpoint(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	name := st.Dataset // the name `gpnb train` gives synthetic data
	if !strings.HasPrefix(name, "synthetic") {
		t.Fatalf("checkpoint names its data %q", name)
	}
	page, titles := panelTitles(t, out)
	want := "gpnb report: " + name + " split 0, CG + ws, step 2 (c.ckpt)"
	if !strings.Contains(page, "<title>"+want+"</title>") || !strings.Contains(page, "<h1>"+want+"</h1>") {
		t.Errorf("page is not titled %q", want)
	}
	if !strings.Contains(page, "<td>dataset</td><td>"+name+"</td>") {
		t.Error("the run table should name the dataset")
	}
	for _, s := range titles {
		if strings.Contains(s, "c.ckpt") {
			t.Errorf("panel %q is titled with the file name", s)
		}
	}
	if !slices.Contains(titles, name+" — CG") {
		t.Errorf("panels %q: want the iterations panel titled with the dataset", titles)
	}
}
