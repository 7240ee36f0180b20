package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/solvers"
)

// TestMethod: every name of a run comes from its estimator and solver, and
// "exact" names the exact estimator alone: the Cholesky solver with
// Hutchinson's probes is a solver like the others.
func TestMethod(t *testing.T) {
	for _, tc := range []struct {
		c                         gpnb.Config
		mode, variant, key, label string
		id                        string
	}{
		{gpnb.Config{}, Cold, "", "cg", "CG", "pol-s0-cg-cold"},
		{gpnb.Config{Solver: solvers.AP{}, WarmStart: true}, Warm, "", "ap", "AP + ws", "pol-s0-ap-warm"},
		{gpnb.Config{Estimator: gpnb.ExactGradient, WarmStart: true, Solver: solvers.SGD{}}, Exact, "", "exact", "exact", "pol-s0-cholesky-exact"},
		{gpnb.Config{Solver: solvers.Cholesky{}}, Cold, "", "cholesky", "Cholesky", "pol-s0-cholesky-cold"},
		{gpnb.Config{Solver: solvers.Cholesky{}, WarmStart: true}, Warm, "", "cholesky", "Cholesky + ws", "pol-s0-cholesky-warm"},
		{gpnb.Config{Estimator: gpnb.Pathwise, Features: 2000, WarmStart: true}, Warm, "pathwise", "cg/pathwise", "CG pathwise + ws", "pol-s0-cg-warm-pathwise"},
		{gpnb.Config{Estimator: gpnb.Pathwise, Features: 500, Settings: solvers.Settings{Budget: 20}}, Cold, "pathwise-f500-b20", "cg/pathwise-f500-b20",
			"CG pathwise (500 features) budget 20", "pol-s0-cg-cold-pathwise-f500-b20"},
		{gpnb.Config{Solver: solvers.SGD{}, Settings: solvers.Settings{Budget: 2.5}, Seed: 3}, Cold, "b2.5", "sgd/b2.5", "SGD budget 2.5", "pol-s0-sgd-cold-b2.5-seed3"},
	} {
		m := MethodOf(tc.c)
		got := []string{m.Mode(), m.Variant(), m.Key(), m.Label(), RunID("pol", 0, tc.c.Seed, m)}
		if want := []string{tc.mode, tc.variant, tc.key, tc.label, tc.id}; !reflect.DeepEqual(got, want) {
			t.Errorf("%+v: mode, variant, key, label, ID %q, want %q", tc.c, got, want)
		}
	}
}

// results returns the Results of recs.
func resultsOf(recs []Record) []gpnb.Result {
	var out []gpnb.Result
	for _, r := range recs {
		out = append(out, r.Result)
	}
	return out
}

func TestFromResults(t *testing.T) {
	recs, err := FromResults(resultsOf(fakeRecords()))
	if err != nil {
		t.Fatal(err)
	}
	if recs[0].ID() != "pol-s0-cg-cold" || !recs[0].Subset() || recs[12].ID() != "bike-s0-cg-cold" || recs[12].Subset() || recs[14].ID() != "bike-s0-cholesky-exact" {
		t.Errorf("records %s (subset %v), %s (subset %v), %s", recs[0].ID(), recs[0].Subset(), recs[12].ID(), recs[12].Subset(), recs[14].ID())
	}
	if _, err := FromResults(nil); !errors.Is(err, ErrNoResults) {
		t.Errorf("no results: err = %v, want ErrNoResults", err)
	}
	a := fakeRecord("pol", 3, 2000, 26, "cg", true, 1, 1, 0.1, 1, 4).Result
	b := a
	b.TotalSeconds = 2 // a second run of the same job
	cold := fakeRecord("pol", 3, 2000, 26, "cg", false, 1, 1, 0.1, 1, 4).Result
	if _, err := FromResults([]gpnb.Result{a, cold, b}); !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "results 0 and 2") ||
		!strings.Contains(err.Error(), "pol-s3-cg-warm") {
		t.Errorf("duplicate run: err = %v, want one naming results 0 and 2 and run pol-s3-cg-warm", err)
	}
	// The exact gradient has no warm start: a "warm" exact run repeats the
	// cold one.
	c := fakeRecord("pol", 0, 2000, 26, "cholesky", false, 1, 1, 0.1, 1, 0).Result
	cw := c
	cw.WarmStart, cw.Config = true, &gpnb.Config{Estimator: gpnb.ExactGradient, WarmStart: true}
	if _, err := FromResults([]gpnb.Result{c, cw}); err == nil || !strings.Contains(err.Error(), "pol-s0-cholesky-exact") {
		t.Errorf("two exact runs: err = %v", err)
	}
	if _, err := FromResults([]gpnb.Result{{Solver: "cg", Config: &gpnb.Config{}}}); !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "dataset") {
		t.Errorf("no dataset: err = %v", err)
	}
	if _, err := FromResults([]gpnb.Result{{Dataset: "pol", Solver: "cg"}}); !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "configuration") {
		t.Errorf("no configuration: err = %v", err)
	}
}

// writeDir writes recs as a results directory: jobs/<id>/result.json and
// runs.json.
func writeDir(t *testing.T, recs []Record) string {
	t.Helper()
	dir := t.TempDir()
	for _, r := range recs {
		jd := filepath.Join(dir, JobsDir, r.ID())
		if err := os.MkdirAll(jd, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]any{ResultFile: r.Result, SegmentsFile: r.Segments} {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(jd, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// TestLoad: a results directory loads as the records it was written from,
// and summarises to the same tables as FromResults of their Results; a
// result of another version or in another job's folder is an error naming
// the file.
func TestLoad(t *testing.T) {
	recs := fakeRecords()
	recs[0].Segments = segs(2, 60.0, 2.0, "cpu")
	dir := writeDir(t, recs)
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != len(recs) || loaded[0].ID() != "bike-s0-cg-cold" || len(loaded[len(loaded)-1].Segments) != 0 {
		t.Fatalf("%d records, first %s", len(loaded), loaded[0].ID())
	}
	fromDir, err := Summarise(loaded)
	if err != nil {
		t.Fatal(err)
	}
	recs[0].Segments = nil
	fromResults, err := Summarise(recs)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	fromDir.Table2(Seconds).Markdown(&a)
	fromResults.Table2(Seconds).Markdown(&b)
	if a.String() != b.String() {
		t.Errorf("Table 2 from the directory:\n%s\nfrom the results:\n%s", a.String(), b.String())
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, ErrNoResults) {
		t.Errorf("empty directory: %v", err)
	}

	// An old field, and a result in another job's folder.
	path := filepath.Join(dir, JobsDir, "pol-s0-cg-cold", ResultFile)
	b0, _ := os.ReadFile(path)
	os.WriteFile(path, append(b0[:len(b0)-1], []byte(`,"test_llh":1.2}`)...), 0o644)
	if _, err := Load(dir); !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "test_llh") {
		t.Errorf("unknown field: %v", err)
	}
	os.WriteFile(path, b0, 0o644)
	other := filepath.Join(dir, JobsDir, "pol-s0-cg-warm", ResultFile)
	b1, _ := os.ReadFile(other)
	os.WriteFile(path, b1, 0o644)
	if _, err := Load(dir); !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "pol-s0-cg-warm, not of job pol-s0-cg-cold") {
		t.Errorf("result in another job's folder: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, ErrNoResults) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing dir: %v", err)
	}
	empty := t.TempDir()
	if _, err := Load(empty); !errors.Is(err, ErrNoResults) {
		t.Errorf("empty dir: %v", err)
	}
	os.MkdirAll(filepath.Join(empty, JobsDir, "x"), 0o755)
	if _, err := Load(empty); !errors.Is(err, ErrNoResults) || !strings.Contains(err.Error(), "gpnb reproduce") {
		t.Errorf("no finished job: %v", err)
	}
	os.WriteFile(filepath.Join(empty, JobsDir, "x", ResultFile), []byte("{"), 0o644)
	if _, err := Load(empty); err == nil || !strings.Contains(err.Error(), ResultFile) {
		t.Errorf("corrupt result: %v", err)
	}
}

func TestRowKeysMatchTableRows(t *testing.T) {
	rep, err := Summarise(fakeRecords())
	if err != nil {
		t.Fatal(err)
	}
	k1, t1 := rep.Table1Rows(), rep.Table1(Minutes)
	want1 := []RowKey{{"", "cg", Cold}, {"", "cg", Warm}, {"", "ap", Cold}, {"", "ap", Warm}, {"", Exact, Exact}}
	if !reflect.DeepEqual(k1, want1) || len(t1.Rows) != len(want1) {
		t.Fatalf("Table1: keys %v (%d rows), want %v", k1, len(t1.Rows), want1)
	}
	if want := []int{0, 2, 4}; !reflect.DeepEqual(t1.Groups, want) {
		t.Errorf("Table1 groups %v, want %v (a method's cold row, the exact row)", t1.Groups, want)
	}
	// Table2: pol has CG and AP cold and warm, bike CG cold, warm and exact.
	k2, t2 := rep.Table2Rows(), rep.Table2(Seconds)
	want2 := []RowKey{{"pol", "cg", Cold}, {"pol", "cg", Warm}, {"pol", "ap", Cold}, {"pol", "ap", Warm},
		{"bike", "cg", Cold}, {"bike", "cg", Warm}, {"bike", Exact, Exact}}
	if !reflect.DeepEqual(k2, want2) || len(t2.Rows) != len(want2) {
		t.Fatalf("Table2: keys %v (%d rows), want %v", k2, len(t2.Rows), want2)
	}
	for i := range k2 {
		if !strings.HasPrefix(t2.Rows[i][0].Text, k2[i].Dataset+" (") {
			t.Errorf("Table2 row %d is labelled %q, key %+v", i, t2.Rows[i][0].Text, k2[i])
		}
	}
}

// variantRecord is fakeRecord for a variant run: pathwise results carry
// their samples' metrics, budget runs their budget stops, and every step
// its residuals at the stop.
func variantRecord(warm bool, est gpnb.EstimatorKind, budget float64, iters int, llh float64) Record {
	r := fakeRecord("pol", 0, 2000, 26, "cg", warm, 10, 8, 0.1, llh, iters)
	r.Result.Config.Estimator, r.Result.Config.Settings.Budget = est, budget
	for i := range r.Result.History {
		h := &r.Result.History[i]
		h.FinalResiduals = []float64{0.001 * float64(i+1), 0.01, 0.03}
		h.SolverEpochs = float64(h.SolverIterations)
		if budget > 0 {
			h.SolverConverged, h.BudgetStop = false, true
		}
	}
	if est == gpnb.Pathwise {
		r.Result.Test.Samples = &gpnb.SampleEval{TestRMSE: 0.11, TestLLH: llh - 0.01, Samples: 16}
	}
	return r
}

// TestVariantTables: variants are their own rows, after the paper's
// method, with the samples' metrics and residuals at the stop in extra
// columns; budget stops are noted as such, not as iteration caps; the
// ablation table compares iterations and LLH with Hutchinson + ws; reports
// without variants keep their columns.
func TestVariantTables(t *testing.T) {
	recs := []Record{
		variantRecord(false, gpnb.Hutchinson, 0, 400, 1.0),
		variantRecord(true, gpnb.Hutchinson, 0, 200, 1.0),
		variantRecord(true, gpnb.Pathwise, 0, 100, 1.01),
		variantRecord(false, gpnb.Pathwise, 0, 300, 1.0),
		variantRecord(true, gpnb.Pathwise, 20, 80, 0.98),
	}
	rep, err := Summarise(recs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cg", "cg/pathwise", "cg/pathwise-b20"}; !reflect.DeepEqual(rep.Solvers, want) {
		t.Fatalf("solvers %v, want %v", rep.Solvers, want)
	}
	e := rep.Entry("pol", "cg/pathwise-b20", Warm)
	if e == nil || e.BudgetSteps != 4 || e.UnconvergedSteps != 0 || e.SampleLLH.N != 1 || !near(e.StopResidualMean.Mean, 0.0025) || !near(e.StopResidualProbes.Mean, 0.02) {
		t.Fatalf("budget entry %+v", e)
	}
	if !near(rep.IterationRatio[[2]string{"pol", "cg/pathwise"}], 3) {
		t.Errorf("pathwise cold/warm iteration ratio %v, want 3", rep.IterationRatio[[2]string{"pol", "cg/pathwise"}])
	}
	var md bytes.Buffer
	if err := rep.Table2(Minutes).Markdown(&md); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{"| CG pathwise |", "| CG pathwise budget 20 + ws |", "Test LLH (samples)", "Residual at stop (probes)",
		"pol CG pathwise budget 20 warm 4 of 4", "| 1.000 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("Table 2 lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "iteration cap") {
		t.Errorf("budget stops reported as iteration caps:\n%s", out)
	}
	ab := rep.Ablation()
	if ab == nil || len(ab.Rows) != 3 {
		t.Fatalf("ablation rows: %+v", ab)
	}
	for i, want := range []float64{1, 2, 2.5} {
		if c := ab.Rows[i][3]; !near(c.Value, want) {
			t.Errorf("ablation row %d (%s): ratio %v, want %v", i, ab.Rows[i][1].Text, c.Value, want)
		}
	}
	if d := ab.Rows[2][6].Value; math.Abs(d-(-0.02)) > 1e-12 {
		t.Errorf("Δ LLH %v, want -0.02", d)
	}
	plain, err := Summarise(fakeRecords())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(plain.Table2(Minutes).Columns); n != 10 || plain.Ablation() != nil {
		t.Errorf("a summary without variants has %d Table 2 columns (want 10) and ablation %v", n, plain.Ablation() != nil)
	}
}
