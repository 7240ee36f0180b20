package repro

import (
	"errors"
	"reflect"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/solvers"
)

// TestVariantIDs: the paper's jobs keep their IDs; the pathwise estimator,
// other feature counts and budgets name theirs.
func TestVariantIDs(t *testing.T) {
	j := testJob("pol", 0, 0, "cg", true)
	if j.ID() != "pol-s0-cg-warm" || j.Method().Variant() != "" {
		t.Errorf("paper job: %s, variant %q", j.ID(), j.Method().Variant())
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

// TestCholeskySolverIsNotExact: a job of the Cholesky solver with
// Hutchinson's probes keeps its probes and warm start and is named by its
// mode, not "exact"; the exact estimator's job is, whatever its solver.
func TestCholeskySolverIsNotExact(t *testing.T) {
	j := testJob("pol", 0, 0, "cg", true)
	j.Config.Solver = solvers.Cholesky{}
	if j = j.Normalize(); j.ID() != "pol-s0-cholesky-warm" || j.Config.Probes != gpnb.DefaultProbes || !j.Config.WarmStart {
		t.Errorf("Cholesky solver, Hutchinson: %s, probes %d, warm %v", j.ID(), j.Config.Probes, j.Config.WarmStart)
	}
	j.Config.Estimator = gpnb.ExactGradient
	if j = j.Normalize(); j.ID() != "pol-s0-cholesky-exact" || j.Config.Probes != 0 || j.Config.WarmStart {
		t.Errorf("exact estimator: %s, probes %d, warm %v", j.ID(), j.Config.Probes, j.Config.WarmStart)
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
