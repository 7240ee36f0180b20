package viz

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
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
		{"Table ragged", func() error { return (&Table{Header: []string{"a", "b"}, Rows: [][]string{{"1"}}}).Validate() }},
		{"Table no header", func() error { return (&Table{}).Validate() }},
		{"Table bad rule", func() error { return (&Table{Header: []string{"a"}, Rules: []int{3}}).Validate() }},
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

func TestTables(t *testing.T) {
	res := synthResults([]string{"pol", "bike"}, []string{"cg", "ap"}, 3, 2, 1)
	tb, err := ResultsTable(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(tb.Rows) != 8 || len(tb.Rules) != 2 || tb.Rules[0] != 0 || tb.Rules[1] != 4 {
		t.Fatalf("%d rows, rules %v; want 8 rows and 2 groups", len(tb.Rows), tb.Rules)
	}
	// Row 1: pol, CG + ws. Total runtime mean ± se over splits 0..2, in minutes.
	row := tb.Rows[1]
	if row[0] != "pol" || row[1] != "CG + ws" || row[2] != "3" {
		t.Fatalf("row 1 = %v", row)
	}
	xs := []float64{totalAt("cg", true, 0) / 60, totalAt("cg", true, 1) / 60, totalAt("cg", true, 2) / 60}
	m := (xs[0] + xs[1] + xs[2]) / 3
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	se := math.Sqrt(ss / 2 / 3)
	if want := fmt.Sprintf("%.3f ± %.3f", m, se); row[5] != want {
		t.Errorf("total runtime cell %q, want %q", row[5], want)
	}
	cold := (totalAt("cg", false, 0) + totalAt("cg", false, 1) + totalAt("cg", false, 2)) / 3
	if want := fmt.Sprintf("%.1f×", cold/(m*60)); row[7] != want {
		t.Errorf("speed-up %q, want %q", row[7], want)
	}
	if tb.Rows[0][7] != "—" {
		t.Errorf("cold row speed-up %q, want —", tb.Rows[0][7])
	}
	h := tb.HTML()
	for _, s := range []string{"<table class=\"gpnb-table\">", "<caption>", "<th>Speed-up</th>", "<tr class=\"gpnb-rule\">", "<td>CG + ws</td>"} {
		if !strings.Contains(h, s) {
			t.Errorf("table HTML lacks %q", s)
		}
	}
	if txt := tb.String(); !strings.Contains(txt, "CG + ws") || strings.Count(txt, "\n") < 10 {
		t.Errorf("text table:\n%s", txt)
	}

	t1, err := SpeedupTable(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(t1.Rows) != 4 || t1.Header[len(t1.Header)-1] != "Average speed-up" || len(t1.Header) != 1+2+2+1 {
		t.Fatalf("table 1 shape: header %v, %d rows", t1.Header, len(t1.Rows))
	}
	// AP + ws: speed-up averaged over the two datasets (equal here).
	apCold := (totalAt("ap", false, 0) + totalAt("ap", false, 1) + totalAt("ap", false, 2)) / 3
	apWarm := (totalAt("ap", true, 0) + totalAt("ap", true, 1) + totalAt("ap", true, 2)) / 3
	if got, want := t1.Rows[3][5], fmt.Sprintf("%.1f×", apCold/apWarm); t1.Rows[3][0] != "AP + ws" || got != want {
		t.Errorf("row %v: speed-up %q, want %q", t1.Rows[3], got, want)
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
