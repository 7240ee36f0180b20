package results

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpnb/gpnb/gpnb"
)

// DefaultRunColumns are RunsTable's columns when none are asked for.
const DefaultRunColumns = "dataset,solver,mode,set,steps,iterations,epochs,capped,solver_s,total_s,load,test_llh,test_rmse,sigma"

// RunsTable is one row per run of runs (read by Sets) that show keeps (nil:
// all), but for the runs of sets that only columns refer to, ordered by
// dataset, method, mode and set, with the given columns (ParseColumns). A
// column of a reference set (name@set) shows the matching run of that set:
// the one with the same RunID, or "—"; name@cold, a warm run's cold run of
// its set. evals gives test metrics to runs that have none.
func RunsTable(runs []Run, cols []ColumnSpec, evals Evals, show func(Run) bool) (*Table, error) {
	sets := setsOf(runs)
	for _, c := range cols {
		if c.Ref != "" && c.Ref != "cold" && !slices.Contains(sets, c.Ref) {
			return nil, fmt.Errorf("column %s@%s: no set %q among %s", c.Name, c.Ref, c.Ref, strings.Join(sets, ", "))
		}
	}
	ctx := &runCtx{runs: runs, evals: evals}
	var rows []Run
	for _, r := range runs {
		if !refOnly(r.Set, cols, sets) && (show == nil || show(r)) {
			rows = append(rows, r)
		}
	}
	sortRuns(rows, sets)
	t := &Table{Title: "Runs"}
	for _, c := range cols {
		rc := runColumns[c.Name]
		h := rc.header
		if c.Ref != "" {
			h += " (" + c.Ref + ")"
		}
		if c.Header != "" {
			h = c.Header
		}
		t.Columns = append(t.Columns, Column{Name: h})
	}
	for _, r := range rows {
		var row Row
		for _, c := range cols {
			row = append(row, ctx.cell(r, c))
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// refOnly reports whether set is only a reference of the columns: a set
// that some column names (name@set) and that is not the first set.
func refOnly(set string, cols []ColumnSpec, sets []string) bool {
	if len(sets) > 0 && set == sets[0] {
		return false
	}
	for _, c := range cols {
		if c.Ref == set {
			return true
		}
	}
	return false
}

// cell is column c's cell for run r.
func (c *runCtx) cell(r Run, col ColumnSpec) Cell {
	rc := runColumns[col.Name]
	d := rc.digits
	if col.Digits >= 0 {
		d = col.Digits
	}
	var ref *Run
	if col.Ref != "" {
		ref = c.match(r, col.Ref)
		if ref == nil {
			return Missing()
		}
		if !isRatio(col.Name) {
			return rc.cell(c, *ref, nil, d)
		}
	}
	return rc.cell(c, r, ref, d)
}

// isRatio reports whether a column compares a run with its reference run
// (rather than showing the reference run's value).
func isRatio(name string) bool {
	switch name {
	case "speedup", "solver_ratio", "iteration_ratio", "s_per_iteration_ratio", "dllh", "dllh_abs", "solver_min_at_iterations":
		return true
	}
	return false
}

// match returns the run of set (or, for "cold", of r's set, cold) with r's
// dataset, split, seed and method, or nil.
func (c *runCtx) match(r Run, set string) *Run {
	want := r.Method()
	cold := set == "cold"
	if cold {
		if !want.Warm {
			return nil
		}
		want.Warm, set = false, r.Set
	}
	id := RunID(r.Result.Dataset, r.Result.Split, r.Result.Config.Seed, want)
	for i := range c.runs {
		o := c.runs[i]
		if o.Set != set || o.RunID() != id || (o.Set == r.Set && o.Path == r.Path) {
			continue
		}
		// A cold/warm ratio compares like with like: the same precision
		// of K (a float32 run's iterations and time are not a float64's).
		if cold && o.Result.Config.Operator.Precision != r.Result.Config.Operator.Precision {
			continue
		}
		return &c.runs[i]
	}
	return nil
}

// DefaultTraceSteps are the steps Traces shows: every tenth from the
// first, and the last of a 100-step run.
var DefaultTraceSteps = []int{1, 11, 21, 31, 41, 51, 61, 71, 81, 91, 100}

// Traces is, for each dataset, iterative method and mode, a table of the
// runs' noise σ and solver iterations at the given steps, a column each
// per set (a step that stopped unconverged marked "(cap)"), beside the σ
// of the exact estimator's run of the dataset when there is one; in the
// order SGD, CG, AP, then by dataset, cold before warm.
func Traces(runs []Run, steps []int) []*Table {
	sortRuns(runs, setsOf(runs))
	var out []*Table
	for _, solver := range []string{"sgd", "cg", "ap"} {
		for _, ds := range datasetsOf(runs) {
			for _, warm := range []bool{false, true} {
				var group []Run
				var exact *Run
				for i, r := range runs {
					m := r.Method()
					switch {
					case r.Result.Dataset != ds:
					case m.Mode() == Exact && exact == nil:
						exact = &runs[i]
					case m.Solver == solver && m.Mode() != Exact && m.Warm == warm && m.Variant() == "":
						group = append(group, r)
					}
				}
				if len(group) > 0 {
					out = append(out, trace(group, exact, steps))
				}
			}
		}
	}
	return out
}

// setsOf returns the sets of runs, each once, in order.
func setsOf(runs []Run) []string {
	var out []string
	for _, r := range runs {
		if !slices.Contains(out, r.Set) {
			out = append(out, r.Set)
		}
	}
	return out
}

func datasetsOf(runs []Run) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range runs {
		if !seen[r.Result.Dataset] {
			seen[r.Result.Dataset] = true
			out = append(out, r.Result.Dataset)
		}
	}
	return out
}

// trace is Traces' table of one group of runs.
func trace(group []Run, exact *Run, steps []int) *Table {
	m := group[0].Method()
	t := &Table{Title: fmt.Sprintf("%s %s %s: σ and solver iterations by step", group[0].Result.Dataset, strings.ToUpper(m.Solver), m.Mode()),
		Columns: []Column{{Name: "step"}}}
	for _, r := range group {
		t.Columns = append(t.Columns, Column{Name: "σ " + r.Set})
	}
	if exact != nil {
		t.Columns = append(t.Columns, Column{Name: "σ exact"})
	}
	for _, r := range group {
		t.Columns = append(t.Columns, Column{Name: "iterations " + r.Set})
	}
	sigma := func(h gpnb.History, s int) Cell {
		if s > len(h) {
			return Text("")
		}
		return Number(h[s-1].Noise, 4, "")
	}
	for _, s := range steps {
		row := Row{Number(float64(s), 0, "")}
		for _, r := range group {
			row = append(row, sigma(r.Result.History, s))
		}
		if exact != nil {
			row = append(row, sigma(exact.Result.History, s))
		}
		for _, r := range group {
			h := r.Result.History
			switch {
			case s > len(h):
				row = append(row, Text(""))
			case !h[s-1].SolverConverged:
				row = append(row, Text(fmt.Sprintf("%d (cap)", h[s-1].SolverIterations)))
			default:
				row = append(row, Number(float64(h[s-1].SolverIterations), 0, ""))
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// TimeSplit is where the steps' time of a run went, from its step records:
// the kernel build, the gradient reduction, the solver's start (a warm
// start's product, and the build of CG's preconditioner where it has one),
// the block updates that factorised their block, the other solver
// iterations and the rest, in seconds summed over the steps and as shares
// of the summed step time.
func TimeSplit(r Run) *Table {
	var step, solver, build, start, factor, reduce float64
	var updates, factorisations, rank int
	for _, s := range r.Result.History {
		rank = max(rank, s.PrecondRank)
		step, solver, build, start = step+s.StepSeconds, solver+s.SolverSeconds, build+s.BuildSeconds, start+s.StartSeconds
		factor, reduce = factor+s.FactorSeconds, reduce+s.ReduceSeconds
		updates, factorisations = updates+s.SolverIterations, factorisations+s.BlockFactorisations
	}
	startName := "solver Start (the warm start's B − H·V0: one product of all columns)"
	if rank > 0 {
		startName = fmt.Sprintf("solver Start (B − H·V0, and the preconditioner's build, rank ≤ %d)", rank)
	}
	t := &Table{Title: fmt.Sprintf("Where a step's time goes: %s, %s, n = %d, %d steps (%s)", r.Result.Dataset, r.Method().Label(), r.Result.NTrain, len(r.Result.History), r.Name),
		Caption: fmt.Sprintf("%d solver iterations (block updates) and %d block factorisations in all; seconds summed over the steps and their shares of the summed step time.", updates, factorisations),
		Columns: []Column{{Name: "part"}, {Name: "seconds"}, {Name: "share"}}}
	for _, p := range []struct {
		name string
		sec  float64
	}{
		{"kernel build (SetKernel: the dense n² cache for the new θ)", build},
		{"gradient reduction (Reduce: n²(d+2) over pairs)", reduce},
		{startName, start},
		{"block updates that factorised their block (Cholesky of H_II, k³/3, plus the update)", factor},
		{"other solver iterations (block updates)", solver - start - factor},
		{"the rest (probes, copies, Adam)", step - solver - build - reduce},
		{"step total", step},
	} {
		t.Rows = append(t.Rows, Row{Text(p.name), Number(p.sec, 1, ""), Number(100*p.sec/step, 0, " %")})
	}
	return t
}
