package results

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// BudgetPairs compares, step by step, each warm-started run that has a
// solver budget with the cold run of the same job: the steps where either
// stopped at its budget, the first of them, and those where the warm
// solve's worst relative residual at the stop, over its tolerance (mean
// system, probes), is not below the cold one's. nil when no warm budget
// run has a cold pair.
func BudgetPairs(recs []Record) *Table {
	byID := map[string]Record{}
	for _, r := range recs {
		byID[r.ID()] = r
	}
	t := &Table{Title: "Under a budget: warm against cold at each step",
		Caption: "For each step where the warm or the cold solve stopped at its budget, the worst relative residual at the stop divided by its tolerance: the warm run should be below the cold one.",
		Columns: []Column{{Name: "job (warm vs cold)"}, {Name: "steps with a budget stop"}, {Name: "first such step"}, {Name: "steps where warm ≥ cold"}, {Name: "which"}}}
	for _, w := range recs {
		m := w.Method()
		if !m.Warm || m.Budget == 0 {
			continue
		}
		m.Warm = false
		c, ok := byID[RunID(w.Result.Dataset, w.Result.Split, w.Result.Config.Seed, m)]
		if !ok {
			continue
		}
		t.Rows = append(t.Rows, budgetRow(w, c))
	}
	if len(t.Rows) == 0 {
		return nil
	}
	slices.SortFunc(t.Rows, func(a, b Row) int { return strings.Compare(a[0].Text, b[0].Text) })
	return t
}

func budgetRow(w, c Record) Row {
	s := w.Result.Config.Settings
	worst := func(f []float64) float64 {
		if len(f) == 0 {
			return math.NaN()
		}
		v := f[0] / s.RelTolMean
		for _, p := range f[1:] {
			v = max(v, p/s.RelTolProbes)
		}
		return v
	}
	var stops, bad []int
	first := -1
	for i := range min(len(w.Result.History), len(c.Result.History)) {
		a, b := w.Result.History[i], c.Result.History[i]
		if !a.BudgetStop && !b.BudgetStop {
			continue
		}
		stops = append(stops, a.Step)
		if first < 0 {
			first = a.Step
		}
		if worst(a.FinalResiduals) >= worst(b.FinalResiduals) {
			bad = append(bad, a.Step)
		}
	}
	which := "—"
	if len(bad) > 0 {
		which = strings.Trim(strings.Join(strings.Fields(fmt.Sprint(bad)), ", "), "[]")
	}
	firstCell := Text("None")
	if first >= 0 {
		firstCell = Number(float64(first), 0, "")
	}
	name := strings.Replace(w.ID(), "-warm", "", 1)
	return Row{Text(name), Number(float64(len(stops)), 0, ""), firstCell, Number(float64(len(bad)), 0, ""), Text(which)}
}
