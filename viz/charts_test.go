package viz

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/results"
)

func TestRuntimesFigure2(t *testing.T) {
	res := synthResults([]string{"elevators", "pol"}, []string{"sgd", "cg", "cholesky"}, 3, 4, 2)
	c, err := Runtimes(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Panels) != 2 || c.Panels[0].Title != "pol" || c.Panels[1].Title != "elevators" {
		t.Fatalf("panels %d, want pol then elevators (paper order)", len(c.Panels))
	}
	opts := options(t, c)
	for pi, ds := range []string{"pol", "elevators"} {
		o := opts[pi]
		if got := axisType(t, o, "xAxis"); got != "category" {
			t.Errorf("x axis type %q, want category", got)
		}
		cats := o["xAxis"].([]any)[0].(map[string]any)["data"].([]any)
		if len(cats) != 2 || cats[0] != "CG" || cats[1] != "SGD" {
			t.Errorf("%s categories %v, want [CG SGD] (cholesky left out)", ds, cats)
		}
		ss := seriesOf(t, o)
		want := []string{"cold: solver", "cold: other", "warm: solver", "warm: other"}
		if !equalStrings(names(ss), want) {
			t.Fatalf("series %v, want %v", names(ss), want)
		}
		// Runtimes are ≥ 120 s, so minutes; mean over splits 0..2.
		for si, s := range ss {
			if s["type"] != "bar" {
				t.Errorf("series %q type %v", s["name"], s["type"])
			}
			warm := si >= 2
			wantStack := map[bool]string{false: "cold", true: "warm"}[warm]
			if s["stack"] != wantStack {
				t.Errorf("series %q stack %v, want %s", s["name"], s["stack"], wantStack)
			}
			for ci, solver := range []string{"cg", "sgd"} {
				var tot, sol float64
				for sp := 0; sp < 3; sp++ {
					tot += totalAt(solver, warm, sp) / 3
					sol += solverTimeAt(solver, warm, sp) / 3
				}
				want := sol / 60
				if si%2 == 1 {
					want = (tot - sol) / 60
				}
				got := num(s["data"].([]any)[ci])
				if !near(got, want, 1e-12) {
					t.Errorf("%s %q %s: %v, want %v", ds, s["name"], solver, got, want)
				}
			}
		}
		if !strings.Contains(c.Panels[pi].YLabel, "min") {
			t.Errorf("y label %q, want minutes", c.Panels[pi].YLabel)
		}
		if o["animation"] != false {
			t.Error("animation not disabled")
		}
	}
}

func TestIterationsFigure3(t *testing.T) {
	res := synthResults([]string{"pol"}, []string{"cg", "ap", "cholesky"}, 2, 5, 1)
	c, err := Iterations(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Panels) != 2 {
		t.Fatalf("%d panels, want 2 (CG, AP)", len(c.Panels))
	}
	opts := options(t, c)
	for pi, solver := range []string{"cg", "ap"} {
		if want := "pol — " + strings.ToUpper(solver); c.Panels[pi].Title != want {
			t.Errorf("panel title %q, want %q", c.Panels[pi].Title, want)
		}
		o := opts[pi]
		if axisType(t, o, "xAxis") != "value" || axisType(t, o, "yAxis") != "value" {
			t.Errorf("axes %s/%s, want value/value", axisType(t, o, "xAxis"), axisType(t, o, "yAxis"))
		}
		ss := seriesOf(t, o)
		wantNames := []string{strings.ToUpper(solver), strings.ToUpper(solver) + " + ws"}
		if !equalStrings(names(ss), wantNames) {
			t.Fatalf("series %v, want %v", names(ss), wantNames)
		}
		for si, warm := range []bool{false, true} {
			xs, ys := xy(t, ss[si])
			if len(xs) != 5 {
				t.Fatalf("%d points, want 5", len(xs))
			}
			for k := range xs {
				step := k + 1
				want := float64(itersAt(warm, 0, step)+itersAt(warm, 1, step)) / 2
				if xs[k] != float64(step) || ys[k] != want {
					t.Errorf("%s warm=%v point %d = (%v, %v), want (%d, %v)", solver, warm, k, xs[k], ys[k], step, want)
				}
			}
		}
	}
}

func TestHyperparametersFigure4(t *testing.T) {
	const d = 3
	res := synthResults([]string{"bike"}, []string{"cg", "cholesky"}, 2, 6, d)
	c, err := Hyperparameters(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Panels) != 3 {
		t.Fatalf("%d panels, want 3 (noise, signal, length scales)", len(c.Panels))
	}
	opts := options(t, c)
	// Narrow ranges (max/min ≤ 20) get linear axes.
	for pi, o := range opts {
		if axisType(t, o, "yAxis") != "value" {
			t.Errorf("panel %q y axis %q, want value", c.Panels[pi].Title, axisType(t, o, "yAxis"))
		}
	}
	// A length scale that falls a thousandfold gets a log axis there only.
	wide := append([]gpnb.Result(nil), res...)
	for i := 0; i < 2; i++ { // both splits of CG cold
		wide[i].History = append(gpnb.History(nil), wide[i].History...)
		wide[i].History[5].Lengthscales = []float64{1e-3, 1, 1}
	}
	cw, err := Hyperparameters(wide)
	if err != nil {
		t.Fatal(err)
	}
	ow := options(t, cw)
	if axisType(t, ow[0], "yAxis") != "value" || axisType(t, ow[2], "yAxis") != "log" {
		t.Errorf("axes %s, %s; want value for noise, log for length scales", axisType(t, ow[0], "yAxis"), axisType(t, ow[2], "yAxis"))
	}
	methods := []string{"exact", "CG", "CG + ws"}
	if got := c.Panels[0].SeriesNames(); !equalStrings(got, methods) {
		t.Errorf("noise series %v, want %v", got, methods)
	}
	ls := seriesOf(t, opts[2])
	if len(ls) != 3*d {
		t.Fatalf("%d length-scale series, want %d", len(ls), 3*d)
	}
	if got := c.Panels[2].SeriesNames(); !equalStrings(got, methods) {
		t.Errorf("length-scale legend %v, want %v (one entry per method)", got, methods)
	}
	// Noise of the warm runs: mean over splits 0 and 1.
	_, ys := xy(t, seriesOf(t, opts[0])[2])
	for k, y := range ys {
		want := (noiseAt(true, 0, k+1) + noiseAt(true, 1, k+1)) / 2
		if !near(y, want, 1e-14) {
			t.Errorf("warm noise at step %d = %v, want %v", k+1, y, want)
		}
	}
	// Exact runs (cholesky, cold) length scale 2 (index 1), series 1.
	_, ys = xy(t, ls[1])
	for k, y := range ys {
		want := (lengthscaleAt(1, 0, k+1) + lengthscaleAt(1, 1, k+1)) / 2
		if !near(y, want, 1e-14) {
			t.Errorf("exact ℓ2 at step %d = %v, want %v", k+1, y, want)
		}
	}
	if ls[0]["lineStyle"].(map[string]any)["type"] != "dashed" {
		t.Error("exact series should be dashed")
	}
}

func TestResidualsLogAxisAndSummaries(t *testing.T) {
	rows := [][]float64{
		{1, 1, 0.5, 2, 4},
		{0.1, 0.3, 0.2, 0.9, 0.4},
		{0.01, 0.05, math.NaN(), 0.02, 0.03},
		{0, 0.001, 0.002, 0.003, 0.004}, // 0 cannot be drawn on a log axis
	}
	c, err := Residuals(gpnb.StepRecord{Step: 7, Residuals: rows})
	if err != nil {
		t.Fatal(err)
	}
	if c.Panels[0].Title != "step 7" {
		t.Errorf("title %q", c.Panels[0].Title)
	}
	o := options(t, c)[0]
	if axisType(t, o, "yAxis") != "log" {
		t.Errorf("y axis %q, want log", axisType(t, o, "yAxis"))
	}
	ss := seriesOf(t, o)
	want := []string{"mean system (column 0)", "probes: max of 4", "probes: median of 4", "tolerance 0.01 (mean)", "tolerance 0.1 (probes)"}
	if !equalStrings(names(ss), want) {
		t.Fatalf("series %v, want %v", names(ss), want)
	}
	_, mean := xy(t, ss[0])
	_, mx := xy(t, ss[1])
	_, med := xy(t, ss[2])
	for i, row := range rows {
		if i == 3 {
			if !math.IsNaN(mean[i]) {
				t.Errorf("residual 0 drawn as %v on a log axis, want a gap", mean[i])
			}
		} else if mean[i] != row[0] {
			t.Errorf("mean[%d] = %v, want %v", i, mean[i], row[0])
		}
		var p []float64
		for _, v := range row[1:] {
			if !math.IsNaN(v) {
				p = append(p, v)
			}
		}
		sort.Float64s(p)
		wmed := p[len(p)/2]
		if len(p)%2 == 0 {
			wmed = (p[len(p)/2-1] + p[len(p)/2]) / 2
		}
		if mx[i] != p[len(p)-1] || !near(med[i], wmed, 1e-15) {
			t.Errorf("row %d: max %v median %v, want %v %v", i, mx[i], med[i], p[len(p)-1], wmed)
		}
	}
	if !strings.Contains(noteText(c.Panels[0].Notes), "1 non-finite residuals not drawn") {
		t.Errorf("notes %q should count the NaN", c.Panels[0].Notes)
	}

	// ResidualsLast picks the last k steps in order.
	r := synthResult("pol", "cg", true, 0, 5, 1, 3)
	c, err = ResidualsLast(r.History, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Panels) != 2 || c.Panels[0].Title != "step 4" || c.Panels[1].Title != "step 5" {
		t.Errorf("ResidualsLast panels %v", []string{c.Panels[0].Title})
	}
}

func TestDistances(t *testing.T) {
	r := synthResult("pol", "cg", true, 0, 4, 1, 2)
	c, err := Distances(r.History)
	if err != nil {
		t.Fatal(err)
	}
	o := options(t, c)[0]
	ss := seriesOf(t, o)
	if !equalStrings(names(ss), []string{"zero init", "warm start"}) || axisType(t, o, "yAxis") != "log" {
		t.Fatalf("series %v axis %s", names(ss), axisType(t, o, "yAxis"))
	}
	_, zero := xy(t, ss[0])
	_, warm := xy(t, ss[1])
	for k := range zero {
		if zero[k] != 2 || warm[k] != 1/float64(k+1) {
			t.Errorf("step %d: zero %v warm %v, want 2 and %v", k+1, zero[k], warm[k], 1/float64(k+1))
		}
	}
}

func TestBuildersRejectBadInput(t *testing.T) {
	res := synthResults([]string{"pol"}, []string{"cg"}, 1, 2, 1)
	noHist := []gpnb.Result{{Dataset: "pol", Solver: "cg"}}
	for _, tc := range []struct {
		name string
		err  func() error
	}{
		{"Runtimes empty", func() error { _, err := Runtimes(nil); return err }},
		{"Runtimes exact only", func() error {
			_, err := Runtimes([]gpnb.Result{{Dataset: "pol", Solver: "cholesky"}})
			return err
		}},
		{"Runtimes no solver name", func() error { _, err := Runtimes([]gpnb.Result{{Dataset: "pol"}}); return err }},
		{"Iterations no history", func() error { _, err := Iterations(noHist); return err }},
		{"Hyperparameters no history", func() error { _, err := Hyperparameters(noHist); return err }},
		{"Distances empty", func() error { _, err := Distances(nil); return err }},
		{"Residuals none", func() error { _, err := Residuals(); return err }},
		{"Residuals empty record", func() error { _, err := Residuals(gpnb.StepRecord{Step: 1}); return err }},
		{"Residuals ragged", func() error {
			_, err := ResidualTrace("x", [][]float64{{1, 2}, {1}})
			return err
		}},
		{"ResidualsLast k=0", func() error { _, err := ResidualsLast(res[0].History, 0); return err }},
		{"Chart without panels", func() error { _, err := (&Chart{}).Options(); return err }},
		{"Series length mismatch", func() error {
			_, err := (&Chart{Panels: []*Panel{{Series: []Series{{Name: "a", X: []float64{1}, Y: []float64{1, 2}}}}}}).Options()
			return err
		}},
		{"Bar without categories", func() error {
			_, err := (&Chart{Panels: []*Panel{{Series: []Series{{Name: "a", Kind: Bar, Y: []float64{1}}}}}}).Options()
			return err
		}},
		{"Save unknown format", func() error {
			c, _ := Iterations(res)
			return c.Save(t.TempDir() + "/fig.jpg")
		}},
		{"WriteImage unknown format", func() error {
			c, _ := Iterations(res)
			return c.WriteImage(&strings.Builder{}, "bmp")
		}},
		{"ResultsTable empty", func() error { _, err := ResultsTable(nil); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if !errors.Is(err, ErrChart) {
				t.Fatalf("err = %v, want an ErrChart", err)
			}
		})
	}
	// A chart that fails validation renders its error, not a broken page.
	if h := (&Chart{}).HTML(); !strings.Contains(h, "gpnb-error") {
		t.Errorf("invalid chart HTML = %q", h)
	}
}

func TestNonFiniteRecordValuesAreNotedNotDropped(t *testing.T) {
	r := synthResult("pol", "cg", false, 0, 3, 1, 1)
	r.History[1].SolverIterations = 0
	r.History[2].Noise = math.Inf(1)
	c, err := Hyperparameters([]gpnb.Result{r})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(noteText(c.Panels[2].Notes), "1 non-finite values not drawn") {
		t.Errorf("notes %q", c.Panels[2].Notes)
	}
	o := options(t, c)[0]
	_, ys := xy(t, seriesOf(t, o)[0])
	if !math.IsNaN(ys[2]) {
		t.Errorf("Inf noise drawn as %v, want a gap", ys[2])
	}
	if _, err := c.Page(); err != nil {
		t.Errorf("page with a gap: %v", err)
	}
}

// byHand computes, independently of package repro, the statistics the
// tables show for the results of one dataset, solver and warm-start
// setting: the mean over runs and its standard error, the sample standard
// deviation (N−1) over √N.
func byHand(res []gpnb.Result, ds, solver string, warm bool, f func(gpnb.Result) float64) (mean, se float64) {
	var xs []float64
	for _, r := range res {
		if r.Dataset == ds && r.Solver == solver && r.WarmStart == warm {
			xs = append(xs, f(r))
		}
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/float64(len(xs)-1)) / math.Sqrt(float64(len(xs)))
}

func total(r gpnb.Result) float64 { return r.TotalSeconds }
func iterations(r gpnb.Result) float64 {
	return float64(r.History.TotalSolverIterations())
}

// speedUpByHand is mean cold total time over mean warm total time.
func speedUpByHand(res []gpnb.Result, ds, solver string) float64 {
	c, _ := byHand(res, ds, solver, false, total)
	w, _ := byHand(res, ds, solver, true, total)
	return c / w
}

func iterationRatioByHand(res []gpnb.Result, ds, solver string) float64 {
	c, _ := byHand(res, ds, solver, false, iterations)
	w, _ := byHand(res, ds, solver, true, iterations)
	return c / w
}

// tableResults: pol (on a 2000-point subset) and bike (its full 15642-point
// training split), CG and AP cold and warm, splits 0-2. bike's warm runs
// take twice as long, so the two datasets' speed-ups differ.
func tableResults() []gpnb.Result {
	res := synthResults([]string{"pol", "bike"}, []string{"cg", "ap"}, 3, 2, 1)
	for i := range res {
		switch res[i].Dataset {
		case "pol":
			res[i].NTrain = 2000
		case "bike":
			res[i].NTrain = 15642
			if res[i].WarmStart {
				res[i].TotalSeconds *= 2
			}
		}
	}
	return res
}

func TestTables(t *testing.T) {
	res := tableResults()
	tb, err := ResultsTable(res)
	if err != nil {
		t.Fatal(err)
	}
	head, rows, rules := textTable(t, tb)
	// AP cold runs take 300 s and more, so runtimes are in minutes.
	wantHead := []string{"Dataset", "Solver", "Splits", "Test RMSE", "Test LLH", "Total runtime (min)", "Solver runtime (min)",
		"Solver iterations", "Speed-up", "Iteration ratio"}
	if !equalStrings(head, wantHead) {
		t.Fatalf("header %q, want %q", head, wantHead)
	}
	if len(rows) != 8 || len(rules) != 2 || rules[0] != 0 || rules[1] != 4 {
		t.Fatalf("%d rows, rules %v; want 8 rows and 2 groups", len(rows), rules)
	}
	// The dataset is named once per group, with its size and dimension.
	if rows[0][0] != "pol (subset n=2000, d=1)" || rows[1][0] != "" || rows[4][0] != "bike (n=15642, d=1)" {
		t.Errorf("dataset labels %q, %q, %q", rows[0][0], rows[1][0], rows[4][0])
	}
	for i, want := range []string{"CG", "+ ws", "AP", "+ ws", "CG", "+ ws", "AP", "+ ws"} {
		if rows[i][1] != want || rows[i][2] != "0-2" {
			t.Errorf("row %d: method %q, splits %q; want %q, 0-2", i, rows[i][1], rows[i][2], want)
		}
	}
	// Row 1: pol, CG + ws; mean ± se over splits 0-2, runtimes in minutes.
	row := rows[1]
	pm := func(ds, solver string, warm bool, f func(gpnb.Result) float64, digits int) string {
		m, se := byHand(res, ds, solver, warm, f)
		return fmt.Sprintf("%.*f ± %.*f", digits, m, digits, se)
	}
	for _, c := range []struct {
		col  int
		want string
	}{
		{3, pm("pol", "cg", true, func(r gpnb.Result) float64 { return r.Test.TestRMSE }, 3)},
		{4, pm("pol", "cg", true, func(r gpnb.Result) float64 { return r.Test.TestLLH }, 3)},
		{5, pm("pol", "cg", true, func(r gpnb.Result) float64 { return r.TotalSeconds / 60 }, 3)},
		{6, pm("pol", "cg", true, func(r gpnb.Result) float64 { return r.SolverSeconds / 60 }, 3)},
		{7, pm("pol", "cg", true, iterations, 0)},
		{8, fmt.Sprintf("%.1f×", speedUpByHand(res, "pol", "cg"))},
		{9, fmt.Sprintf("%.1f×", iterationRatioByHand(res, "pol", "cg"))},
	} {
		if row[c.col] != c.want {
			t.Errorf("pol CG + ws %s = %q, want %q", head[c.col], row[c.col], c.want)
		}
	}
	// Totals 25, 26, 27 s: mean 26 s = 0.433 min, sd 1 s, se 1/√3 s = 0.010 min.
	if row[5] != "0.433 ± 0.010" {
		t.Errorf("total runtime %q, want 0.433 ± 0.010", row[5])
	}
	// bike AP + ws: cold 301 s over warm 2·76 s.
	if got, want := rows[7][8], fmt.Sprintf("%.1f×", 301.0/152); got != want || want != "2.0×" {
		t.Errorf("bike AP speed-up %q, want %q", got, want)
	}
	if rows[0][8] != "—" || rows[0][9] != "—" {
		t.Errorf("cold row speed-up %q, iteration ratio %q; want —", rows[0][8], rows[0][9])
	}
	if !strings.Contains(tb.Title, "Table 2") || !strings.Contains(tb.Caption, "3 splits") || !strings.Contains(strings.Join(tb.Notes, " "), "Speed-up = mean total runtime cold") {
		t.Errorf("title %q, caption %q, notes %q", tb.Title, tb.Caption, tb.Notes)
	}

	t1, err := SpeedupTable(res)
	if err != nil {
		t.Fatal(err)
	}
	head1, rows1, rules1 := textTable(t, t1)
	wantHead = []string{"Solver", "Test LLH pol (n=2000)", "Test LLH bike", "Total runtime (min) pol (n=2000)", "Total runtime (min) bike",
		"Average speed-up", "Average iteration ratio"}
	if !equalStrings(head1, wantHead) || len(rows1) != 4 {
		t.Fatalf("table 1: header %q, %d rows; want %q, 4 rows", head1, len(rows1), wantHead)
	}
	if len(rules1) != 2 || rules1[0] != 0 || rules1[1] != 2 {
		t.Errorf("table 1 rules %v, want one above each solver: [0 2]", rules1)
	}
	// AP + ws: means without standard errors, and the speed-up averaged
	// over the two datasets (4.0× on pol, 2.0× on bike), not the ratio of
	// pooled means.
	row = rows1[3]
	llh, _ := byHand(res, "pol", "ap", true, func(r gpnb.Result) float64 { return r.Test.TestLLH })
	rt, _ := byHand(res, "bike", "ap", true, total)
	sp := (speedUpByHand(res, "pol", "ap") + speedUpByHand(res, "bike", "ap")) / 2
	it := (iterationRatioByHand(res, "pol", "ap") + iterationRatioByHand(res, "bike", "ap")) / 2
	for _, c := range []struct {
		col  int
		want string
	}{
		{0, "+ ws"}, {1, fmt.Sprintf("%.2f", llh)}, {4, fmt.Sprintf("%.2f", rt/60)},
		{5, fmt.Sprintf("%.1f×", sp)}, {6, fmt.Sprintf("%.1f×", it)},
	} {
		if row[c.col] != c.want {
			t.Errorf("table 1 AP + ws %s = %q, want %q", head1[c.col], row[c.col], c.want)
		}
	}
	if row[5] != "3.0×" {
		t.Errorf("AP average speed-up %q, want (301/76 + 301/152)/2 = 3.0×", row[5])
	}
	if rows1[0][0] != "CG" || rows1[0][5] != "—" {
		t.Errorf("cold row %q", rows1[0])
	}
}

func TestTablesSecondsOneSplitAndRepeats(t *testing.T) {
	// CG alone: every run under 120 s, so runtimes are in seconds; one
	// split, so no standard errors.
	res := synthResults([]string{"elevators"}, []string{"cg"}, 1, 3, 2)
	tb, err := ResultsTable(res)
	if err != nil {
		t.Fatal(err)
	}
	head, rows, _ := textTable(t, tb)
	if head[5] != "Total runtime (s)" || len(rows) != 2 {
		t.Fatalf("header %q, %d rows", head, len(rows))
	}
	if got, want := rows[1][5], fmt.Sprintf("%.2f", res[1].TotalSeconds); got != want {
		t.Errorf("one split: total %q, want %q (no ±)", got, want)
	}
	if got, want := rows[1][8], fmt.Sprintf("%.1f×", res[0].TotalSeconds/res[1].TotalSeconds); got != want {
		t.Errorf("speed-up %q, want %q", got, want)
	}
	t1, err := SpeedupTable(res)
	if err != nil {
		t.Fatal(err)
	}
	if head1, rows1, _ := textTable(t, t1); head1[2] != "Total runtime (s) elevators" || rows1[0][2] != fmt.Sprintf("%.2f", res[0].TotalSeconds) {
		t.Errorf("table 1 %q %q", head1, rows1[0])
	}

	// The same dataset, split, solver and mode twice cannot be averaged
	// over splits.
	dup := append(res, res[0])
	for name, f := range map[string]func([]gpnb.Result) (*results.Table, error){"ResultsTable": ResultsTable, "SpeedupTable": SpeedupTable} {
		if _, err := f(dup); !errors.Is(err, ErrChart) || !strings.Contains(err.Error(), "elevators-s0-cg-cold") {
			t.Errorf("%s of a repeated run: err = %v", name, err)
		}
	}
}

func TestCombineKeepsPanelsInOrder(t *testing.T) {
	r := synthResult("pol", "cg", true, 0, 3, 1, 2)
	a, _ := Distances(r.History)
	b, _ := Residuals(r.History[0])
	c := Combine("both", a, nil, b)
	if len(c.Panels) != 2 || c.Panels[0] != a.Panels[0] || c.Panels[1] != b.Panels[0] {
		t.Fatal("Combine lost or reordered panels")
	}
}
