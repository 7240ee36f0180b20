package results

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

// cells renders t as CSV and returns its rows, keyed by the columns' names.
func cells(t *testing.T, tb *Table) []map[string]string {
	t.Helper()
	head, rows := readCSV(t, tb)
	var out []map[string]string
	for _, r := range rows {
		m := map[string]string{}
		for i, h := range head {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

func markdown(t *testing.T, tb *Table) string {
	t.Helper()
	var b bytes.Buffer
	if err := tb.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// sgdRun is an SGD run of pol on n points with batches of 250: four steps
// of the given iterations, the last unconverged when capped.
func sgdRun(set string, warm bool, n int, iters []int, total, solver float64, capped bool) Run {
	r := fakeRecord("pol", 0, n, 26, "sgd", warm, total, solver, 0.1, 1.0, 0)
	r.Result.Config.Solver = solvers.SGD{BatchSize: 250}
	for i, it := range iters {
		r.Result.History[i].SolverIterations, r.Result.History[i].StepSeconds = it, total/4
	}
	r.Result.History[3].SolverConverged = !capped
	r.Segments = []Segment{{FromStep: 0, ToStep: 1, LoadMean: 4, Environment: map[string]string{"vcs.revision": "0123456789", "vcs.modified": "true"},
		Started: time.Date(2026, 11, 3, 1, 0, 0, 0, time.UTC)},
		{FromStep: 1, ToStep: 4, LoadMean: 2, Environment: map[string]string{"vcs.revision": "abcdef0123"}}}
	return Run{Set: set, Name: r.ID(), Path: set + "/" + r.ID(), Record: r, Planned: 4}
}

// TestRunsTable checks the runs table's columns against values worked out
// by hand, with a reference set, a warm run's cold pair and the metrics of
// an evaluation made apart.
func TestRunsTable(t *testing.T) {
	runs := []Run{
		sgdRun("a", false, 1000, []int{4001, 100, 100, 100}, 80, 60, true),
		sgdRun("a", true, 1000, []int{4001, 20, 20, 20}, 20, 15, false),
		sgdRun("b", true, 1000, []int{100, 10, 10, 10}, 10, 5, false),
	}
	runs[2].Result.Test = nil // evaluated apart
	cols, err := ParseColumns("set,mode,steps,iterations,epochs,capped,over_1000_epochs,load:2,build,day,test_llh,speedup@cold:2,iteration_ratio@cold,total_s@a:1=a total,speedup@a=a / this,dllh@a")
	if err != nil {
		t.Fatal(err)
	}
	evals := Evals{"b/pol-s0-sgd-warm": gpnb.Eval{TestLLH: 1.5, TestRMSE: 0.09}}
	tb, err := RunsTable(runs, cols, evals, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := cells(t, tb)
	if len(got) != 3 {
		t.Fatalf("%d rows, want 3", len(got))
	}
	// Epochs: iterations × 250 / 1000; over 1000 epochs: a step of more
	// than 4000 iterations; load: (1·4 + 3·2)/4 steps.
	for i, want := range []map[string]string{
		{"set": "a", "mode": "cold", "steps": "4 of 4", "solver iterations": "4301", "epochs": "1075.25", "capped": "1 of 4",
			"over 1000 epochs": "1", "load": "2.5", "build": "0123456+, abcdef0", "day": "2026-11-03", "speed-up (cold)": "", "a total": ""},
		{"set": "a", "mode": "warm", "solver iterations": "4061", "capped": "0 of 4", "speed-up (cold)": "4", "iteration ratio (cold)": strval(4301.0 / 4061),
			"a total": "", "test LLH": "1"},
		{"set": "b", "mode": "warm", "solver iterations": "130", "test LLH": "1.5", "a total": "20", "a / this": "2", "Δ test LLH (a)": "0.5"},
	} {
		for k, v := range want {
			if got[i][k] != v {
				t.Errorf("row %d %s = %q, want %q", i, k, got[i][k], v)
			}
		}
	}
	w, _ := RunsTable(runs[:1], []ColumnSpec{{Name: "where", Digits: -1}}, nil, nil)
	if got := cells(t, w)[0]["where the steps ran"]; got != "steps 0–4: 80 s on cpu (2 segments, mean load 2.5)" {
		t.Errorf("where: %q", got)
	}
	if _, err := RunsTable(runs, []ColumnSpec{{Name: "total_s", Ref: "c", Digits: -1}}, nil, nil); err == nil {
		t.Error("a column of a set that is not there: no error")
	}
	// A warm run in float32 has no cold pair in float64: their ratio would
	// mix the precision into the warm start's.
	f32 := sgdRun("a", true, 1000, []int{10, 10, 10, 10}, 5, 4, false)
	f32.Path += "-float32"
	f32.Result.Config.Operator.Precision = kernel.Float32
	p, err := RunsTable([]Run{runs[0], f32}, []ColumnSpec{{Name: "mode", Digits: -1}, {Name: "iteration_ratio", Ref: "cold", Digits: -1}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := cells(t, p); len(c) != 2 || c[1]["iteration ratio (cold)"] != "" {
		t.Errorf("a float32 warm run against a float64 cold one: %v, want two rows, no ratio", c)
	}
	if _, err := ParseColumns("iterations,nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown column: %v", err)
	}
}

func strval(v float64) string { return strings.TrimRight(strings.TrimRight(formatG(v), "0"), ".") }

func formatG(v float64) string { b, _ := json.Marshal(v); return string(b) }

// TestReadRuns reads a results directory with a finished job and one cut
// short (its PartialFile), and a folder of gpnb train results.
func TestReadRuns(t *testing.T) {
	recs := fakeRecords()[:2]
	dir := writeDir(t, recs)
	cut := sgdRun("x", false, 1000, []int{10, 10, 10, 10}, 8, 4, false)
	cut.Result.History, cut.Result.StepsDone, cut.Result.Test = cut.Result.History[:2], 2, nil
	jd := filepath.Join(dir, JobsDir, cut.ID())
	os.MkdirAll(jd, 0o755)
	b, _ := json.Marshal(cut.Result)
	os.WriteFile(filepath.Join(jd, PartialFile), b, 0o644)
	os.WriteFile(filepath.Join(jd, "job.json"), []byte(`{"dataset": "pol", "steps": 100}`), 0o644)
	runs, err := ReadRuns("r", dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || !runs[2].Partial || runs[2].Planned != 100 || runs[0].Partial || runs[0].Planned != 4 {
		t.Fatalf("runs %+v", runs)
	}
	tb, _ := RunsTable(runs, []ColumnSpec{{Name: "steps", Digits: -1}}, nil, nil)
	if s := markdown(t, tb); !strings.Contains(s, "| 2 of 100 (cut) |") {
		t.Errorf("cut job's steps:\n%s", s)
	}
	train := t.TempDir()
	os.MkdirAll(filepath.Join(train, "pol-warm"), 0o755)
	b, _ = json.Marshal(recs[1].Result)
	os.WriteFile(filepath.Join(train, "pol-warm", ResultFile), b, 0o644)
	if runs, err := ReadRuns("t", train); err != nil || len(runs) != 1 || runs[0].Name != "pol-warm" || runs[0].RunID() != recs[1].ID() {
		t.Errorf("train folder: %+v, %v", runs, err)
	}
	if _, err := ReadRuns("e", t.TempDir()); err == nil {
		t.Error("an empty folder gave runs")
	}
}

// TestTraces: σ and iterations at the asked steps, a column per set, the
// exact run's σ beside, "(cap)" at an unconverged step, blank past the end.
func TestTraces(t *testing.T) {
	a := sgdRun("a", false, 1000, []int{4001, 100, 100, 100}, 80, 60, true)
	b := sgdRun("b", false, 1000, []int{30, 20, 10, 5}, 8, 4, false)
	b.Result.History = b.Result.History[:3]
	ex := Run{Set: "a", Record: fakeRecord("pol", 0, 1000, 26, "cholesky", false, 9, 9, 0.1, 1, 0)}
	for i := range a.Result.History {
		a.Result.History[i].Noise, b.Result.History[min(i, 2)].Noise, ex.Result.History[i].Noise = 1/float64(i+1), 2/float64(i+1), 0.5
	}
	ts := Traces([]Run{a, b, ex}, []int{1, 4})
	if len(ts) != 1 || ts[0].Title != "pol SGD cold: σ and solver iterations by step" {
		t.Fatalf("%d tables: %+v", len(ts), ts)
	}
	got := cells(t, ts[0])
	want := []map[string]string{
		{"step": "1", "σ a": "1", "σ b": "2", "σ exact": "0.5", "iterations a": "4001", "iterations b": "30"},
		{"step": "4", "σ a": "0.25", "σ b": "", "σ exact": "0.5", "iterations a": "100 (cap)", "iterations b": ""},
	}
	for i := range want {
		for k, v := range want[i] {
			if got[i][k] != v {
				t.Errorf("step row %d %s = %q, want %q", i, k, got[i][k], v)
			}
		}
	}
}

// TestTimeSplit: the parts of the step time add up to it.
func TestTimeSplit(t *testing.T) {
	r := sgdRun("a", true, 1000, []int{10, 10, 10, 10}, 40, 24, false)
	for i := range r.Result.History {
		h := &r.Result.History[i]
		h.StepSeconds, h.SolverSeconds, h.BuildSeconds, h.ReduceSeconds, h.StartSeconds, h.FactorSeconds = 10, 6, 2, 1.5, 0.5, 3
		h.BlockFactorisations = 2
	}
	got := cells(t, TimeSplit(r))
	for i, want := range []string{"8", "6", "2", "12", "10", "2", "40"} { // build, reduce, start, factor, other 24-2-12, rest 40-24-8-6, total
		if got[i]["seconds"] != want {
			t.Errorf("part %d (%s): %s s, want %s", i, got[i]["part"], got[i]["seconds"], want)
		}
	}
	if s := markdown(t, TimeSplit(r)); !strings.Contains(s, "| 20 % |") || !strings.Contains(s, "8 block factorisations") || strings.Contains(s, "preconditioner") {
		t.Errorf("split:\n%s", s)
	}
	r.Result.History[2].PrecondRank = 512
	if got := cells(t, TimeSplit(r))[2]["part"]; !strings.Contains(got, "preconditioner's build, rank ≤ 512") {
		t.Errorf("start row with a preconditioner: %q", got)
	}
}

func TestBenchAndTests(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	a := write("a.log", "goos: linux\nBenchmarkMul/n=10/dense-16   \t      20\t    918787 ns/op\t        32.96 %bandwidth\t         0.9191 ms/product\nBenchmarkReduce-16 \t 20\t 1 ns/op\t 17.17 ms/reduce\nPASS\n")
	b := write("b.log", "BenchmarkMul/n=10/dense-16   \t      10\t    1 ns/op\t         1.8382 ms/product\n")
	ba, err := ReadBenchmarks("new", a)
	if err != nil {
		t.Fatal(err)
	}
	bb, _ := ReadBenchmarks("old", b)
	got := cells(t, BenchTable(append(ba, bb...), ParseBenchColumns("ms/product|ms/reduce=ms,ms/product@old=old ms,ms/product@old:ratio=old / new,%bandwidth")))
	if len(got) != 2 || got[0]["benchmark"] != "Mul/n=10/dense" || got[0]["ms"] != "0.9191" || got[0]["old ms"] != "1.8382" ||
		got[0]["old / new"] != "2" || got[0]["%bandwidth"] != "32.96" || got[1]["ms"] != "17.17" || got[1]["old ms"] != "" {
		t.Errorf("bench rows %v", got)
	}
	if _, err := ReadBenchmarks("x", write("c.log", "ok\n")); err == nil {
		t.Error("a log without benchmarks: no error")
	}
	tl := write("t.log", "=== RUN   TestA\n--- PASS: TestA (0.00s)\n    --- PASS: TestA/sub (0.00s)\n--- SKIP: TestB (0.00s)\n--- FAIL: TestC (0.00s)\n")
	tt, err := TestsTable([]string{"t"}, []string{tl})
	if got := cells(t, tt); err != nil || got[0]["passed"] != "2" || got[0]["skipped"] != "1" || got[0]["failed"] != "1" {
		t.Errorf("tests %v, %v", got, err)
	}
}

func TestJSONLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.jsonl")
	os.WriteFile(p, []byte(`{"dataset": "pol", "train_seconds": 12.04, "n": 3}`+"\n\n"+`{"dataset": "kegg", "error": "OutOfMemoryError: CUDA out of memory. Tried"}`+"\n"), 0o644)
	rows, err := ReadJSONLines(p)
	if err != nil || len(rows) != 2 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	tb, err := JSONLinesTable(rows, "dataset,train_seconds:1=train s,n,outcome")
	if err != nil {
		t.Fatal(err)
	}
	if s := markdown(t, tb); !strings.Contains(s, "| pol | 12.0 | 3 | finished |") || !strings.Contains(s, "| kegg | — | — | OutOfMemoryError: CUDA out of memory |") {
		t.Errorf("JSON lines table:\n%s", s)
	}
	if _, err := JSONLinesTable(rows, ""); err == nil {
		t.Error("no columns: no error")
	}
	// One object over several lines, as gpnb solve --json writes it.
	os.WriteFile(p, []byte("{\n  \"precond_rank\": 400,\n  \"iteration\": 46\n}\n"), 0o644)
	if rows, err := ReadJSONLines(p); err != nil || len(rows) != 1 || rows[0]["iteration"] != 46.0 {
		t.Errorf("an indented object: %v, %v", rows, err)
	}
}

// TestBudgetPairs compares the worst residual over tolerance at the stop,
// warm against cold, where either stopped at its budget.
func TestBudgetPairs(t *testing.T) {
	w := variantRecord(true, gpnb.Pathwise, 20, 80, 1)
	c := variantRecord(false, gpnb.Pathwise, 20, 80, 1)
	for i := range c.Result.History {
		c.Result.History[i].FinalResiduals = []float64{0.002, 0.05, 0.3} // worst 3 (0.3/0.1)
	}
	w.Result.History[1].FinalResiduals = []float64{0.05, 0.01, 0.01} // worst 5: not below the cold one
	w.Result.History[0].BudgetStop, c.Result.History[0].BudgetStop = false, false
	w.Result.Config.Settings.RelTolMean, w.Result.Config.Settings.RelTolProbes = 0.01, 0.1
	got := cells(t, BudgetPairs([]Record{w, c, fakeRecords()[0]}))
	want := map[string]string{"job (warm vs cold)": "pol-s0-cg-pathwise-b20", "steps with a budget stop": "3", "first such step": "2",
		"steps where warm ≥ cold": "1", "which": "2"}
	for k, v := range want {
		if len(got) != 1 || got[0][k] != v {
			t.Errorf("%s = %q, want %q (rows %v)", k, got[0][k], v, got)
		}
	}
	if BudgetPairs(fakeRecords()) != nil {
		t.Error("no budget runs: a table")
	}
}

// TestTable1Paper: each row is followed by the paper's, from its Table 2,
// and the runs' rules are named when they differ.
func TestTable1Paper(t *testing.T) {
	recs := fakeRecords()[12:14] // bike CG cold and warm, full size
	sgd := fakeRecord("bike", 0, 15642, 17, "sgd", true, 50, 40, 0.03, 2.1, 101)
	sgd.Result.Config.Rules = solvers.RulesPaperText
	s, err := Summarise(append(recs, sgd))
	if err != nil {
		t.Fatal(err)
	}
	tb := s.Table1Paper()
	got := cells(t, tb)
	if len(got) != 8 || got[1]["Solver"] != "CG (paper)" || got[1]["Test LLH bike"] != "2.15" || got[1]["Total runtime (min) bike"] != "7.689" ||
		got[3]["Solver"] != "+ ws (paper)" || got[3]["Total runtime (min) bike"] != "2.18" || got[3]["Average speed-up"] != "3.2" || got[7]["Average speed-up"] != "8.8" ||
		got[4]["Test LLH bike"] != "" || got[5]["Test LLH bike"] != "2.179" {
		t.Errorf("rows %v", got)
	}
	if n := strings.Join(tb.Notes, " "); !strings.Contains(n, "ran under the stopping rules authors (Config.Rules), but for bike SGD warm (paper-text)") {
		t.Errorf("notes %q", n)
	}
	if math.IsNaN(s.AverageSpeedUp["cg"]) {
		t.Error("no speed-up")
	}
}
