package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
)

// TestVersusTable: fits read from another tool's JSON and from gpnb
// results, with and without a meta file, each compared with the first fit
// of its n; the ratios and differences worked out by hand.
func TestVersusTable(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, v any) string {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sk := write("sklearn-2000.json", ExternalFit{N: 2000, FitSeconds: 400, Evaluations: 75, TestLLH: 0.82})
	write("meta-sklearn-2000.json", Meta{LoadBefore: 3, LoadAfter: 5})
	fast := fakeRecord("pol", 0, 2000, 26, "cg", true, 40, 30, 0.13, 0.8175, 1000)
	gp := write("gpnb-2000.json", fast.Result)
	slow := fakeRecord("pol", 0, 4000, 26, "cg", true, 90, 80, 0.12, 0.9, 3000)
	gp4 := write("gpnb-4000.json", slow.Result)
	var fits []Fit
	for _, in := range [][2]string{{"scikit-learn", sk}, {"gpnb fast", gp}, {"gpnb 4000", gp4}} {
		f, err := ReadFit(in[0], in[1])
		if err != nil {
			t.Fatal(err)
		}
		fits = append(fits, f)
	}
	got := cells(t, VersusTable(fits))
	want := []map[string]string{
		{"run": "scikit-learn", "n": "2000", "load": "4", "fit s": "400", "steps": "", "solver iterations": "", "MLL evaluations": "75", "test LLH": "0.82", "Δ test LLH": "0", "time: reference / this": "1", "reference": "scikit-learn"},
		{"run": "gpnb fast", "n": "2000", "load": "", "fit s": "40", "steps": "4", "solver iterations": "1000", "MLL evaluations": "", "test LLH": "0.8175", "Δ test LLH": "-0.0025", "time: reference / this": "10", "reference": "scikit-learn"},
		{"run": "gpnb 4000", "n": "4000", "load": "", "fit s": "90", "steps": "4", "solver iterations": "3000", "MLL evaluations": "", "test LLH": "0.9", "Δ test LLH": "0", "time: reference / this": "1", "reference": "gpnb 4000"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		for k, v := range want[i] {
			g := got[i][k]
			gf, errG := strconv.ParseFloat(g, 64)
			vf, errV := strconv.ParseFloat(v, 64)
			if g != v && !(errG == nil && errV == nil && near(gf, vf)) {
				t.Errorf("row %d, %s: %q, want %q", i, k, g, v)
			}
		}
	}
	// Named "data set: run", fits compare within their data set, whatever
	// their n.
	var named []Fit
	for _, in := range [][2]string{{"pol: scikit-learn", sk}, {"bike: gpnb", gp4}, {"pol: gpnb", gp}} {
		f, err := ReadFit(in[0], in[1])
		if err != nil {
			t.Fatal(err)
		}
		named = append(named, f)
	}
	ng := cells(t, VersusTable(named))
	for i, w := range []struct{ ratio, ref string }{{"1", "pol: scikit-learn"}, {"1", "bike: gpnb"}, {"10", "pol: scikit-learn"}} {
		if r, _ := strconv.ParseFloat(ng[i]["time: reference / this"], 64); !near(r, mustFloat(w.ratio)) || ng[i]["reference"] != w.ref {
			t.Errorf("named row %d: ratio %s against %q, want %s against %q", i, ng[i]["time: reference / this"], ng[i]["reference"], w.ratio, w.ref)
		}
	}
	// A run that finished on the exact path after 2 of its 4 steps: Adam's
	// solver iterations and the finish's evaluations.
	fin := fakeRecord("pol", 0, 2000, 26, "cg", true, 40, 30, 0.13, 0.8175, 1000).Result
	fin.Path, fin.ExactFrom = gpnb.PathExact, 2
	for i := 2; i < 4; i++ {
		fin.History[i].SolverIterations, fin.History[i].Evaluations = 0, 3
	}
	ff, err := ReadFit("finished", write("finished.json", fin))
	if err != nil {
		t.Fatal(err)
	}
	if ff.Iterations != 500 || ff.Evaluations != 6 {
		t.Errorf("a run finished on the exact path: %v solver iterations and %d evaluations, want 500 and 6", ff.Iterations, ff.Evaluations)
	}
	if _, err := ReadFit("x", filepath.Join(dir, "none.json")); err == nil {
		t.Error("a missing file: no error")
	}
}

func mustFloat(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err)
	}
	return f
}
