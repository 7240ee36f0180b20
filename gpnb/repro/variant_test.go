package repro

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
)

// TestVariantIDs: the paper's jobs keep their IDs; the pathwise estimator,
// other feature counts and budgets name theirs.
func TestVariantIDs(t *testing.T) {
	j := testJob("pol", 0, 0, "cg", true)
	if j.ID() != "pol-s0-cg-warm" || j.Variant() != "" {
		t.Errorf("paper job: %s, variant %q", j.ID(), j.Variant())
	}
	for _, tc := range []struct {
		est      gpnb.EstimatorKind
		features int
		budget   float64
		want     string
	}{
		{gpnb.Pathwise, 0, 0, "pol-s0-cg-warm-pathwise"},
		{gpnb.Pathwise, 2000, 20, "pol-s0-cg-warm-pathwise-b20"},
		{gpnb.Pathwise, 500, 0.5, "pol-s0-cg-warm-pathwise-f500-b0.5"},
		{gpnb.Hutchinson, 0, 10, "pol-s0-cg-warm-b10"},
	} {
		k := j
		k.Config.Estimator, k.Config.Features, k.Config.Settings.Budget = tc.est, tc.features, tc.budget
		k = k.Normalize()
		if k.ID() != tc.want {
			t.Errorf("%v %d %v: %s, want %s", tc.est, tc.features, tc.budget, k.ID(), tc.want)
		}
		if err := k.Validate(); err != nil {
			t.Errorf("%s: %v", k.ID(), err)
		}
	}
}

// TestGridVariants: Estimators and Budgets multiply the jobs, in order;
// without them the grid is the paper's, with the IDs it always had.
func TestGridVariants(t *testing.T) {
	g := Grid{Datasets: []string{"pol"}, Splits: []int{0}, Solvers: []string{"cg"}, Steps: 10, Exact: ExactNever}
	plain, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	if ids := jobIDs(plain); !reflect.DeepEqual(ids, []string{"pol-s0-cg-cold", "pol-s0-cg-warm"}) {
		t.Errorf("plain grid: %v", ids)
	}
	g.Estimators = []gpnb.EstimatorKind{gpnb.Hutchinson, gpnb.Pathwise}
	g.Budgets = []float64{0, 20}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pol-s0-cg-cold", "pol-s0-cg-cold-b20", "pol-s0-cg-warm", "pol-s0-cg-warm-b20",
		"pol-s0-cg-cold-pathwise", "pol-s0-cg-cold-pathwise-b20", "pol-s0-cg-warm-pathwise", "pol-s0-cg-warm-pathwise-b20"}
	if ids := jobIDs(jobs); !reflect.DeepEqual(ids, want) {
		t.Errorf("grid: %v\nwant %v", ids, want)
	}
	for _, j := range jobs[4:] {
		if j.Config.Features != 2000 {
			t.Errorf("%s: features %d, want the default written out", j.ID(), j.Config.Features)
		}
	}
	g.Estimators = []gpnb.EstimatorKind{gpnb.ExactGradient}
	if _, err := g.Jobs(); !errors.Is(err, ErrGrid) {
		t.Errorf("exact as an estimator: %v", err)
	}
}

func jobIDs(js []Job) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.ID())
	}
	return out
}

// variantRecord is fakeRecord for a variant job: pathwise results carry
// their samples' metrics, budget runs their budget stops, and every step
// its residuals at the stop.
func variantRecord(warm bool, est gpnb.EstimatorKind, budget float64, iters int, llh float64) Record {
	r := fakeRecord("pol", 0, 2000, 2000, 26, "cg", warm, 10, 8, 0.1, llh, iters)
	r.Job.Config.Estimator, r.Job.Config.Settings.Budget = est, budget
	r.Job = r.Job.Normalize()
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
	e := rep.Entry("pol", "cg/pathwise-b20", "warm")
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
		t.Errorf("a report without variants has %d Table 2 columns (want 10) and ablation %v", n, plain.Ablation() != nil)
	}
}
