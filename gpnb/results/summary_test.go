package results

import (
	"bytes"
	"encoding/csv"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpnb/gpnb/gpnb"
)

// fakeRecord builds a finished run of the paper's settings whose totals are
// the given numbers; its history has 4 converged steps sharing iters solver
// iterations equally. n below the dataset's training split makes it a
// subset run.
func fakeRecord(ds string, split, n, d int, solver string, warm bool, total, solverSec, rmse, llh float64, iters int) Record {
	c, err := gpnb.Paper(solver, ds)
	if err != nil {
		panic(err)
	}
	c.WarmStart = warm && c.Estimator != gpnb.ExactGradient
	h := make(gpnb.History, 4)
	for i := range h {
		h[i].Step = i + 1
		h[i].SolverIterations = iters / 4
		h[i].SolverConverged = true
	}
	h[0].SolverIterations += iters % 4
	return Record{Result: gpnb.Result{Dataset: ds, Split: split, NTrain: n, D: d, Solver: MethodOf(c).Solver, WarmStart: c.WarmStart,
		StepsDone: 4, TotalSeconds: total, SolverSeconds: solverSec, Test: &gpnb.Eval{TestRMSE: rmse, TestLLH: llh}, History: h, Config: &c}}
}

func fakeRecords() []Record {
	var r []Record
	// pol on a 2000-point subset, three splits, CG and AP.
	for k, tot := range []float64{60, 120, 180} {
		r = append(r, fakeRecord("pol", k, 2000, 26, "cg", false, tot, tot-6, 0.1+0.01*float64(k), 1.0+0.2*float64(k), 300))
		r = append(r, fakeRecord("pol", k, 2000, 26, "cg", true, 30, 24, 0.1+0.01*float64(k), 1.0+0.2*float64(k), 100))
		r = append(r, fakeRecord("pol", k, 2000, 26, "ap", false, 90, 80, 0.1, 1.1, 90))
		r = append(r, fakeRecord("pol", k, 2000, 26, "ap", true, 10, 5, 0.1, 1.1, 10))
	}
	// bike at full size, one split, CG only, plus the exact gradient.
	r = append(r, fakeRecord("bike", 0, 15642, 17, "cg", false, 100, 90, 0.03, 2.1, 202))
	r = append(r, fakeRecord("bike", 0, 15642, 17, "cg", true, 50, 40, 0.03, 2.1, 101))
	r = append(r, fakeRecord("bike", 0, 15642, 17, "cholesky", false, 600, 590, 0.031, 2.2, 0))
	return r
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func TestNewStat(t *testing.T) {
	// Mean 5, sample variance 32/7 for this classic set.
	s := NewStat([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	if !near(s.Mean, 5) || !near(s.SE, math.Sqrt(32.0/7)/math.Sqrt(8)) || s.N != 8 {
		t.Errorf("NewStat = %+v", s)
	}
	if s := NewStat([]float64{3}); s.Mean != 3 || !math.IsNaN(s.SE) || s.N != 1 {
		t.Errorf("one value: %+v", s)
	}
	if s := NewStat(nil); !math.IsNaN(s.Mean) || s.N != 0 {
		t.Errorf("no value: %+v", s)
	}
}

func TestSummarise(t *testing.T) {
	rep, err := Summarise(fakeRecords())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Datasets) != 2 || rep.Datasets[0].Name != "pol" || rep.Datasets[1].Name != "bike" {
		t.Fatalf("datasets %+v, want pol then bike (paper order)", rep.Datasets)
	}
	if !rep.Datasets[0].Subset || rep.Datasets[1].Subset || rep.Datasets[0].Label() != "pol (n=2000)" || rep.Datasets[1].Label() != "bike" {
		t.Errorf("subset marks: %+v", rep.Datasets)
	}
	c := rep.Entry("pol", "cg", "cold")
	// totals 60, 120, 180: mean 120, sample sd 60, se 60/√3.
	if !near(c.TotalSeconds.Mean, 120) || !near(c.TotalSeconds.SE, 60/math.Sqrt(3)) {
		t.Errorf("pol cg cold total %+v", c.TotalSeconds)
	}
	// LLH 1.0, 1.2, 1.4: mean 1.2, sd 0.2, se 0.2/√3.
	if !near(c.LLH.Mean, 1.2) || !near(c.LLH.SE, 0.2/math.Sqrt(3)) {
		t.Errorf("pol cg cold LLH %+v", c.LLH)
	}
	if c.Iterations.Mean != 300 || c.Iterations.SE != 0 {
		t.Errorf("pol cg cold iterations %+v", c.Iterations)
	}
	for _, tc := range []struct {
		ds, s        string
		speed, iters float64
	}{{"pol", "cg", 4, 3}, {"pol", "ap", 9, 9}, {"bike", "cg", 2, 2}} {
		k := [2]string{tc.ds, tc.s}
		if !near(rep.SpeedUp[k], tc.speed) || !near(rep.IterationRatio[k], tc.iters) {
			t.Errorf("%v: speed-up %v, iteration ratio %v; want %v, %v", k, rep.SpeedUp[k], rep.IterationRatio[k], tc.speed, tc.iters)
		}
	}
	// Average over datasets of the per-dataset ratios: CG (4+2)/2, AP 9 (pol only).
	if !near(rep.AverageSpeedUp["cg"], 3) || !near(rep.AverageIterationRatio["cg"], 2.5) || !near(rep.AverageSpeedUp["ap"], 9) {
		t.Errorf("averages: %v %v", rep.AverageSpeedUp, rep.AverageIterationRatio)
	}
	if !rep.HasExact || rep.Entry("bike", Exact, Exact) == nil {
		t.Error("exact gradient missing")
	}
	if _, err := Summarise(nil); err == nil {
		t.Error("Summarise(nil) succeeded")
	}
	dup := append(fakeRecords(), fakeRecords()[0])
	if _, err := Summarise(dup); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate job: error = %v", err)
	}
}

// readCSV renders t as CSV and returns its rows keyed by the joined label
// columns, and the header.
func readCSV(t *testing.T, tb *Table) ([]string, [][]string) {
	t.Helper()
	var buf bytes.Buffer
	if err := tb.CSV(&buf); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v\n%s", err, buf.String())
	}
	return recs[0], recs[1:]
}

func cell(t *testing.T, head []string, row []string, col string) float64 {
	t.Helper()
	for i, h := range head {
		if h == col {
			if row[i] == "" {
				return math.NaN()
			}
			v, err := strconv.ParseFloat(row[i], 64)
			if err != nil {
				t.Fatalf("column %q: %v", col, err)
			}
			return v
		}
	}
	t.Fatalf("no column %q in %v", col, head)
	return 0
}

// cellWant is a numeric cell a table must hold: the row's index among the
// CSV rows, the column's name and the value (NaN: the cell is empty).
type cellWant struct {
	row  int
	col  string
	want float64
}

// checkCells compares cells of readCSV's rows with their expected values.
func checkCells(t *testing.T, head []string, rows [][]string, wants []cellWant) {
	t.Helper()
	for _, w := range wants {
		v := cell(t, head, rows[w.row], w.col)
		if math.IsNaN(v) != math.IsNaN(w.want) || !math.IsNaN(v) && !near(v, w.want) {
			t.Errorf("row %d (%s) %s = %v, want %v", w.row, rows[w.row][0], w.col, v, w.want)
		}
	}
}

func TestTable1(t *testing.T) {
	rep, _ := Summarise(fakeRecords())
	tb := rep.Table1(Minutes)
	head, rows := readCSV(t, tb)
	if len(rows) != 5 { // CG, + ws, AP, + ws, Cholesky
		t.Fatalf("%d rows, want 5", len(rows))
	}
	if rows[0][0] != "CG" || rows[1][0] != "+ ws" || rows[2][0] != "AP" || rows[4][0] != "exact" {
		t.Errorf("row labels %v %v %v %v", rows[0][0], rows[1][0], rows[2][0], rows[4][0])
	}
	checkCells(t, head, rows, []cellWant{
		{0, "Total runtime (min) pol (n=2000)", 2},
		{1, "Total runtime (min) bike", 50.0 / 60},
		{0, "Test LLH pol (n=2000)", 1.2},
		{1, "Average speed-up", 3},
		{1, "Average iteration ratio", 2.5},
		{0, "Average speed-up", math.NaN()}, // a cold row has none
		{2, "Test LLH bike", math.NaN()},    // AP did not run on bike
	})
	var md bytes.Buffer
	if err := tb.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| + ws | 1.20 | 2.10 | 0.50 | 0.83 | 3.0× | 2.5× |", "| CG | 1.20 | 2.10 | 2.00 | 1.67 | — | — |", "mean over datasets", "(n=…)"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
}

func TestTable2(t *testing.T) {
	rep, _ := Summarise(fakeRecords())
	tb := rep.Table2(Seconds)
	head, rows := readCSV(t, tb)
	if len(rows) != 7 {
		t.Fatalf("%d rows, want 7", len(rows))
	}
	r := rows[0] // pol CG cold
	if r[0] != "pol (subset n=2000, d=26)" || r[1] != "CG" || r[2] != "0-2" {
		t.Errorf("labels %v", r[:3])
	}
	if bikeWarm := rows[5]; bikeWarm[0] != "bike (n=15642, d=17)" || bikeWarm[1] != "+ ws" {
		t.Errorf("bike row %v", bikeWarm[:2])
	}
	checkCells(t, head, rows, []cellWant{
		{0, "Total runtime (s)", 120}, {0, "Total runtime (s) se", 60 / math.Sqrt(3)},
		{0, "Solver runtime (s)", 114}, {0, "Test LLH", 1.2}, {0, "Test LLH se", 0.2 / math.Sqrt(3)},
		{0, "Test RMSE", 0.11}, {0, "Test RMSE se", 0.01 / math.Sqrt(3)}, {0, "Solver iterations", 300},
		{1, "Speed-up", 4},
		{5, "Test LLH se", math.NaN()}, // bike, + ws: one split has no se
	})
	var md bytes.Buffer
	tb.Markdown(&md)
	if !strings.Contains(md.String(), "| 0.110 ± 0.006 | 1.200 ± 0.115 | 120.00 ± 34.64 |") {
		t.Errorf("Markdown mean ± se cells:\n%s", md.String())
	}
	// Merged dataset label: only the first row of a group names it.
	if strings.Count(md.String(), "pol (subset n=2000, d=26)") != 1 {
		t.Errorf("dataset label not merged:\n%s", md.String())
	}
	// HTML draws the same cells, and a rule above each dataset's group.
	var h bytes.Buffer
	if err := tb.HTML(&h); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), "<td>120.00 ± 34.64</td>") || strings.Count(h.String(), `<tr class="gpnb-rule">`) != 2 {
		t.Errorf("HTML: want the cell 120.00 ± 34.64 and a rule above pol's and bike's rows:\n%s", h.String())
	}
}

func TestPaperComparison(t *testing.T) {
	rep, _ := Summarise(fakeRecords())
	head, rows := readCSV(t, rep.PaperComparison())
	// Rows grouped by solver: CG pol, CG bike, CG average, AP pol, AP average
	// (AP did not run on bike, so it has no row).
	if len(rows) != 5 {
		t.Fatalf("%d rows: %v", len(rows), rows)
	}
	if rows[0][0] != "pol (n=2000)" || rows[0][1] != "CG" || rows[2][0] != "average over 2 dataset(s)" {
		t.Errorf("labels %v %v", rows[0][:2], rows[2][:2])
	}
	checkCells(t, head, rows, []cellWant{
		{0, "Paper test LLH cold", 1.268},
		{0, "Speed-up", 4},
		// Averages over pol and bike: ours (4+2)/2, the paper's (3.9+3.5)/2.
		{2, "Speed-up", 3},
		{2, "Paper speed-up", 3.7},
		{4, "Paper speed-up", 22.6}, // AP: pol alone
	})
}

// TestTable2WarmWithoutCold names the solver on a warm row that has no cold
// row above it (full-size grids fill in over several sessions).
func TestTable2WarmWithoutCold(t *testing.T) {
	recs := []Record{
		fakeRecord("pol", 0, 13500, 26, "cg", false, 600, 500, 0.08, 1.2, 900),
		fakeRecord("pol", 0, 13500, 26, "cg", true, 200, 150, 0.08, 1.2, 300),
		fakeRecord("pol", 0, 13500, 26, "ap", true, 100, 60, 0.08, 1.2, 800),
	}
	rep, err := Summarise(recs)
	if err != nil {
		t.Fatal(err)
	}
	_, rows := readCSV(t, rep.Table2(Minutes))
	var got []string
	for _, r := range rows {
		got = append(got, r[1])
	}
	if want := []string{"CG", "+ ws", "AP + ws"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("solver labels %q, want %q", got, want)
	}
}

// TestUnconvergedNotes: an entry whose steps stopped at the iteration cap is
// counted over its splits, named in the notes of every table (a capped cold
// run makes the speed-up a lower bound, a capped warm run an upper one) and
// in the plan line; converged entries get no such note.
func TestUnconvergedNotes(t *testing.T) {
	recs := fakeRecords()
	if rep, _ := Summarise(recs); len(rep.unconvergedNotes()) != 0 {
		t.Fatalf("converged records gave notes %q", rep.unconvergedNotes())
	}
	withCapped := func(r Record, steps ...int) Record {
		r.Result.History = append(gpnb.History(nil), r.Result.History...)
		for _, s := range steps {
			r.Result.History[s].SolverConverged = false
		}
		return r
	}
	// pol CG cold: 2 capped steps on split 0 and 1 on split 2 (of 3×4);
	// bike CG warm: 1 of 4.
	for i, r := range recs {
		switch r.ID() {
		case "pol-s0-cg-cold":
			recs[i] = withCapped(r, 1, 3)
		case "pol-s2-cg-cold":
			recs[i] = withCapped(r, 0)
		case "bike-s0-cg-warm":
			recs[i] = withCapped(r, 2)
		}
	}
	rep, err := Summarise(recs)
	if err != nil {
		t.Fatal(err)
	}
	if e := rep.Entry("pol", "cg", "cold"); e.Steps != 12 || e.UnconvergedSteps != 3 {
		t.Fatalf("pol cg cold: %d of %d steps unconverged, want 3 of 12", e.UnconvergedSteps, e.Steps)
	}
	if e := rep.Entry("pol", "cg", "warm"); e.Steps != 12 || e.UnconvergedSteps != 0 {
		t.Fatalf("pol cg warm: %d of %d steps unconverged, want 0 of 12", e.UnconvergedSteps, e.Steps)
	}
	want := []string{
		"pol CG cold: 3 of 12 steps (splits 0-2) stopped at the solver's iteration cap",
		"bike CG warm: 1 of 4 steps (split 0) stopped at the solver's iteration cap",
	}
	for name, tb := range map[string]*Table{"table 1": rep.Table1(Minutes), "table 2": rep.Table2(Minutes), "paper": rep.PaperComparison()} {
		notes := strings.Join(tb.Notes, "\n")
		for _, w := range want {
			if !strings.Contains(notes, w) {
				t.Errorf("%s: notes lack %q:\n%s", name, w, notes)
			}
		}
		if !strings.Contains(notes, "as lower bounds") || !strings.Contains(notes, "as upper bounds") {
			t.Errorf("%s: notes should say the capped cold run's ratios are lower bounds, the capped warm run's upper bounds:\n%s", name, notes)
		}
		if strings.Count(notes, "iteration cap") != 2 {
			t.Errorf("%s: want exactly two capped entries in the notes:\n%s", name, notes)
		}
	}
	var md bytes.Buffer
	if err := rep.Table2(Minutes).Markdown(&md); err != nil || !strings.Contains(md.String(), want[0]) {
		t.Errorf("Markdown of table 2 lacks the note (err %v):\n%s", err, md.String())
	}
}

// TestStalledNotes: steps whose solve stalled (StepRecord.SolverStalled)
// are unconverged, and the notes and the plan line split them from the
// iteration cap's.
func TestStalledNotes(t *testing.T) {
	recs := fakeRecords()
	i := slices.IndexFunc(recs, func(r Record) bool { return r.ID() == "pol-s0-cg-cold" })
	h := append(gpnb.History(nil), recs[i].Result.History...)
	h[0].SolverConverged = false                           // the cap
	h[1].SolverConverged, h[1].SolverStalled = false, true // stalls
	h[3].SolverConverged, h[3].SolverStalled = false, true
	recs[i].Result.History = h
	rep, err := Summarise(recs)
	if err != nil {
		t.Fatal(err)
	}
	if e := rep.Entry("pol", "cg", "cold"); e.UnconvergedSteps != 3 || e.StalledSteps != 2 {
		t.Fatalf("pol cg cold: %d unconverged, %d stalled; want 3 and 2", e.UnconvergedSteps, e.StalledSteps)
	}
	want := "pol CG cold: 3 of 12 steps (splits 0-2) stopped (1 at the solver's iteration cap, 2 stalled: their true residual stopped falling) before reaching the tolerances"
	if notes := strings.Join(rep.Table2(Minutes).Notes, "\n"); !strings.Contains(notes, want) {
		t.Errorf("notes lack %q:\n%s", want, notes)
	}
}

// segs returns one segment per (seconds, load, backend) triple on a machine
// of the given cores.
func segs(cores int, parts ...any) []Segment {
	var out []Segment
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i+2 < len(parts); i += 3 {
		sec, load, backend := parts[i].(float64), parts[i+1].(float64), parts[i+2].(string)
		t1 := t0.Add(time.Duration(sec * float64(time.Second)))
		out = append(out, Segment{Started: t0, Updated: t1, LoadMean: load, LoadSamples: 3,
			Environment: map[string]string{"numcpu": strconv.Itoa(cores), "backend": backend}})
		t0 = t1
	}
	return out
}

func TestJobConditions(t *testing.T) {
	// 100 s at load 12 and 300 s at load 2 on 2 cores: (100·6 + 300·1)/400.
	c, ok := JobConditions(segs(2, 100.0, 12.0, "cpu", 300.0, 2.0, "cuda"), nil)
	if !ok || !near(c.LoadPerCore, 2.25) || !slices.Equal(c.Backends, []string{"cpu", "cuda"}) {
		t.Errorf("conditions %+v (ok %v), want load 2.25 on cpu+cuda", c, ok)
	}
	// A segment without load samples names its backend but no load; no
	// segments at all: no conditions.
	s := segs(4, 50.0, 3.0, "")
	s[0].LoadSamples = 0
	if c, ok := JobConditions(s, nil); !ok || !math.IsNaN(c.LoadPerCore) || !slices.Equal(c.Backends, []string{"cpu"}) {
		t.Errorf("unsampled segment: %+v (ok %v)", c, ok)
	}
	if _, ok := JobConditions(nil, nil); ok {
		t.Error("no segments gave conditions")
	}
	// Steps 1-2 ran on the GPU outside the runner (no segment covers them:
	// their step records name the operator), steps 3-4 in a CPU segment.
	h := gpnb.History{{Operator: "gpu dense float64"}, {Operator: "gpu dense float64"}, {Operator: "dense float64"}, {Operator: "dense float64"}}
	s = segs(2, 100.0, 2.0, "cpu")
	s[0].FromStep, s[0].ToStep = 2, 4
	if c, ok := JobConditions(s, h); !ok || !near(c.LoadPerCore, 1) || !slices.Equal(c.Backends, []string{"cpu", "cuda"}) {
		t.Errorf("steps outside the segments: %+v (ok %v), want load 1 on cpu+cuda", c, ok)
	}
	// The same segment over every step: the records add nothing.
	s[0].FromStep = 0
	if c, ok := JobConditions(s, h); !ok || !slices.Equal(c.Backends, []string{"cpu"}) {
		t.Errorf("covered steps: %+v (ok %v), want cpu", c, ok)
	}
	// No segments: the records alone name the backends (no load); records
	// that name no operator (older checkpoints) say nothing.
	if c, ok := JobConditions(nil, h[:2]); !ok || !math.IsNaN(c.LoadPerCore) || !slices.Equal(c.Backends, []string{"cuda"}) {
		t.Errorf("records only: %+v (ok %v), want cuda without a load", c, ok)
	}
	if _, ok := JobConditions(nil, make(gpnb.History, 3)); ok {
		t.Error("records without operators gave conditions")
	}
}

// TestUnlikeSpeedUps marks the speed-ups whose cold and warm runs ran under
// machine loads more than 1.25× apart, or on different backends, in Table 1,
// Table 2 and the paper comparison, and names them in a note.
func TestUnlikeSpeedUps(t *testing.T) {
	recs := fakeRecords()
	for i := range recs {
		r, m := recs[i].Result, recs[i].Method()
		switch {
		case r.Dataset == "pol" && m.Solver == "cg" && !m.Warm:
			recs[i].Segments = segs(2, 60.0, 2.0, "cpu") // alone: 1.0 per core
		case r.Dataset == "pol" && m.Solver == "cg":
			recs[i].Segments = segs(2, 60.0, 8.0, "cpu") // 4.0 per core
		case r.Dataset == "pol" && m.Solver == "ap":
			// Both below one per core, or 1.2 against 1.0: comparable.
			load := map[bool]float64{false: 0.6, true: 2.4}[m.Warm]
			recs[i].Segments = segs(2, 60.0, load, "cpu")
		case r.Dataset == "bike" && m.Warm:
			recs[i].Segments = segs(2, 60.0, 2.0, "cuda")
		case r.Dataset == "bike":
			recs[i].Segments = segs(2, 60.0, 2.0, "cpu")
		}
	}
	rep, err := Summarise(recs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]string]string{
		{"pol", "cg"}:  "mean load per core 1.0 cold, 4.0 warm",
		{"bike", "cg"}: "cold ran on cpu, warm on cuda",
	}
	if !maps.Equal(rep.Unlike, want) {
		t.Errorf("Unlike %v, want %v", rep.Unlike, want)
	}
	for name, tb := range map[string]*Table{"Table1": rep.Table1(Seconds), "Table2": rep.Table2(Seconds), "PaperComparison": rep.PaperComparison()} {
		var md bytes.Buffer
		if err := tb.Markdown(&md); err != nil {
			t.Fatal(err)
		}
		s := md.String()
		// Table 2: pol CG 4.0×†, bike CG 2.0×†, AP 9.0× unmarked; Table 1
		// and the comparison: CG's average marked, AP's not.
		marks := map[string][]string{
			"Table2":          {"| 4.0×† |", "| 2.0×† |", "| 9.0× |"},
			"Table1":          {"| 3.0×† |", "| 9.0× |"},
			"PaperComparison": {"| 4.0×† |", "| 3.0×† |", "| 9.0× |"},
		}[name]
		for _, m := range marks {
			if !strings.Contains(s, m) {
				t.Errorf("%s lacks %q:\n%s", name, m, s)
			}
		}
		if !strings.Contains(s, "pol CG (mean load per core 1.0 cold, 4.0 warm); bike CG (cold ran on cpu, warm on cuda)") {
			t.Errorf("%s: no note naming the unlike pairs:\n%s", name, s)
		}
	}
	// Without segments (FromResults) nothing is marked.
	if rep, _ := Summarise(fakeRecords()); len(rep.Unlike) != 0 {
		t.Errorf("records without segments flagged: %v", rep.Unlike)
	}
	// A cold run whose first steps ran on the GPU outside the runner (gpnb
	// train, then resumed by the runner on the CPU) against a warm run all
	// on the CPU: marked, although both runs' segments say cpu.
	recs = fakeRecords()
	for i := range recs {
		if m := recs[i].Method(); recs[i].Result.Dataset == "pol" && m.Solver == "ap" {
			h := recs[i].Result.History
			for k := range h {
				h[k].Operator = "dense float64"
			}
			recs[i].Segments = segs(2, 60.0, 2.0, "cpu")
			recs[i].Segments[0].ToStep = len(h)
			if !m.Warm {
				h[0].Operator, h[1].Operator = "gpu dense float64", "gpu dense float64"
				recs[i].Segments[0].FromStep = 2
			}
		}
	}
	rep, err = Summarise(recs)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[[2]string]string{{"pol", "ap"}: "cold ran on cpu+cuda, warm on cpu"}; !maps.Equal(rep.Unlike, want) {
		t.Errorf("GPU steps outside the runner: Unlike %v, want %v", rep.Unlike, want)
	}
}

// TestConvergenceTable: the convergence table counts, per dataset, solver
// and mode over its seeds, the runs, the unfinished jobs it is given, the
// steps at the cap, stalled and backed off, the most iterations of one
// step, and gives the iteration ratio and the warm rows' Δ test LLH.
func TestConvergenceTable(t *testing.T) {
	var recs []Record
	for seed := uint64(0); seed < 3; seed++ {
		for _, warm := range []bool{false, true} {
			iters, llh := 400, 1.0+0.1*float64(seed)
			if warm {
				iters, llh = 100, llh+0.002
			}
			r := fakeRecord("pol", 0, 1500, 26, "sgd", warm, 60, 50, 0.1, llh, iters)
			r.Result.Config.Seed = seed
			if !warm && seed == 1 {
				r.Result.History[2].SolverConverged = false // at the cap
				r.Result.History[3].SolverConverged, r.Result.History[3].SolverStalled = false, true
				r.Result.History[1].RateBackoffs, r.Result.History[1].SolverIterations = 2, 250
			}
			recs = append(recs, r)
		}
	}
	rep, err := Summarise(recs)
	if err != nil {
		t.Fatal(err)
	}
	died := Unfinished{ID: "pol-s0-sgd-cold-seed4", Dataset: "pol", Method: Method{Solver: "sgd"}}
	head, rows := readCSV(t, rep.Convergence([]Unfinished{died}))
	if len(rows) != 2 || rows[0][0] != "pol (n=1500)" {
		t.Fatalf("rows %v", rows)
	}
	// Cold: seed 1's history has 100+100+100+100 iterations but for
	// step 2's 250; 400·2 + 550 over 3 runs.
	checkCells(t, head, rows, []cellWant{
		{0, "Runs", 3}, {0, "Runs without a result", 1}, {0, "Steps", 12}, {0, "Steps at the cap", 1}, {0, "Steps stalled", 1},
		{0, "Steps with the rate halved", 1}, {0, "Iterations of a step (max)", 250}, {0, "Solver iterations", 1350.0 / 3},
		{0, "Iteration ratio", math.NaN()}, {0, "Test LLH", 1.1}, {0, "Δ test LLH (warm − cold)", math.NaN()},
		{1, "Runs", 3}, {1, "Runs without a result", 0}, {1, "Steps at the cap", 0}, {1, "Iterations of a step (max)", 25},
		{1, "Iteration ratio", 1350.0 / 3 / 100}, {1, "Δ test LLH (warm − cold)", 0.002},
	})
	var md bytes.Buffer
	if err := rep.Convergence([]Unfinished{died}).Markdown(&md); err != nil || !strings.Contains(md.String(), "Without a result: "+died.ID) ||
		!strings.Contains(md.String(), "mean ± standard error over 3 seeds of one split") {
		t.Errorf("markdown: %v\n%s", err, md.String())
	}
}
