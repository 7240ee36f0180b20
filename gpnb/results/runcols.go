package results

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/solvers"
)

// runColumn is a column RunsTable can show: its header, the digits of its
// numbers, and its cell for a run r, with ref the run of the column's
// reference set (name@set) that matches r, or r's cold run for the cold_
// columns; ref is nil for the columns that need none.
type runColumn struct {
	header string
	digits int
	cell   func(c *runCtx, r Run, ref *Run, digits int) Cell
}

// runCtx is what the cells of a runs table may look up.
type runCtx struct {
	runs  []Run
	evals Evals
}

// num is a number cell; NaN is missing.
func numCell(v float64, digits int, suffix string) Cell { return Number(v, digits, suffix) }

// textCell is a label cell.
func textCell(s string) Cell { return Text(s) }

// ratio is a/b as a cell with a "×" suffix, missing without ref.
func ratio(ref *Run, f func(Run) float64, r Run, digits int) Cell {
	if ref == nil {
		return Missing()
	}
	return numCell(f(*ref)/f(r), digits, "×")
}

var runColumns = map[string]runColumn{
	"set":     {"set", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell { return textCell(r.Set) }},
	"name":    {"run", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell { return textCell(r.Name) }},
	"dataset": {"dataset", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell { return textCell(r.Result.Dataset) }},
	"solver":  {"solver", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell { return textCell(r.Method().Solver) }},
	"method":  {"method", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell { return textCell(r.Method().Label()) }},
	"mode":    {"mode", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell { return textCell(r.Method().Mode()) }},
	"rules":   {"rules", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell { return textCell(r.Result.Config.Rules.String()) }},
	"steps": {"steps", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell {
		s := fmt.Sprintf("%d of %d", len(r.Result.History), max(r.Planned, r.Result.StepsDone))
		if r.Partial {
			s += " (cut)"
		}
		return textCell(s)
	}},
	"iterations": {"solver iterations", 0, func(_ *runCtx, r Run, _ *Run, d int) Cell { return numCell(iterations(r), d, "") }},
	"epochs":     {"epochs", 0, func(_ *runCtx, r Run, _ *Run, d int) Cell { return numCell(epochs(r), d, "") }},
	"capped": {"capped", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell {
		return textCell(fmt.Sprintf("%d of %d", r.Result.History.UnconvergedSteps(), len(r.Result.History)))
	}},
	"stalled": {"stalled", 0, func(_ *runCtx, r Run, _ *Run, d int) Cell {
		return numCell(float64(r.Result.History.StalledSteps()), 0, "")
	}},
	"over_1000_epochs": {"over 1000 epochs", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell { return numCell(float64(overEpochs(r, 1000)), 0, "") }},
	"solver_s":         {"solver s", 0, func(_ *runCtx, r Run, _ *Run, d int) Cell { return numCell(r.Result.SolverSeconds, d, "") }},
	"total_s":          {"total s", 0, func(_ *runCtx, r Run, _ *Run, d int) Cell { return numCell(r.Result.TotalSeconds, d, "") }},
	"solver_min":       {"solver min", 1, func(_ *runCtx, r Run, _ *Run, d int) Cell { return numCell(r.Result.SolverSeconds/60, d, "") }},
	"total_min":        {"total min", 1, func(_ *runCtx, r Run, _ *Run, d int) Cell { return numCell(r.Result.TotalSeconds/60, d, "") }},
	"step_h": {"step time", 2, func(_ *runCtx, r Run, _ *Run, d int) Cell {
		return numCell(r.Result.History.TotalSeconds()/3600, d, " h")
	}},
	"load":      {"load", 1, func(_ *runCtx, r Run, _ *Run, d int) Cell { return numCell(stepLoad(r.Segments), d, "") }},
	"test_llh":  {"test LLH", 3, func(c *runCtx, r Run, _ *Run, d int) Cell { return numCell(c.test(r).TestLLH, d, "") }},
	"test_rmse": {"test RMSE", 4, func(c *runCtx, r Run, _ *Run, d int) Cell { return numCell(c.test(r).TestRMSE, d, "") }},
	"paper_llh": {"paper test LLH", 3, paperColumn(PaperTestLLH)},
	"paper_min": {"paper min", 2, paperColumn(PaperTotalMinutes)},
	"sigma":     {"final σ", 4, func(_ *runCtx, r Run, _ *Run, d int) Cell { return numCell(r.Result.Final.Noise, d, "") }},
	"n_train":   {"n", 0, func(_ *runCtx, r Run, _ *Run, d int) Cell { return numCell(float64(r.Result.NTrain), 0, "") }},
	"n_test":    {"n test", 0, func(_ *runCtx, r Run, _ *Run, d int) Cell { return numCell(float64(r.Result.NTest), 0, "") }},
	"d":         {"d", 0, func(_ *runCtx, r Run, _ *Run, d int) Cell { return numCell(float64(r.Result.D), 0, "") }},
	"precision": {"precision", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell {
		return textCell(r.Result.Config.Operator.Precision.String())
	}},
	"operator":  {"operator", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell { return textCell(orDash(r.Result.Operator)) }},
	"build":     {"build", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell { return textCell(builds(r.Segments)) }},
	"day":       {"day", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell { return textCell(day(r.Segments)) }},
	"machine":   {"machine", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell { return textCell(machine(r.Segments)) }},
	"where":     {"where the steps ran", 0, func(_ *runCtx, r Run, _ *Run, _ int) Cell { return textCell(where(r)) }},
	"evaluated": {"evaluated on", 0, func(c *runCtx, r Run, _ *Run, _ int) Cell { return textCell(evaluatedOn(c, r)) }},
	"s_per_iteration": {"solver s per iteration", 4, func(_ *runCtx, r Run, _ *Run, d int) Cell {
		return numCell(r.Result.SolverSeconds/iterations(r), d, "")
	}},
	"non_solver_share": {"non-solver share", 0, func(_ *runCtx, r Run, _ *Run, d int) Cell {
		return numCell(100*(r.Result.TotalSeconds-r.Result.SolverSeconds)/r.Result.TotalSeconds, d, " %")
	}},
	"build_s_per_step":  {"K build s per step", 2, stepMean(func(s stepTimes) float64 { return s.build })},
	"reduce_s_per_step": {"reduction s per step", 2, stepMean(func(s stepTimes) float64 { return s.reduce })},
	"build_s":           {"build s", 2, stepSum(func(s stepTimes) float64 { return s.build })},
	"start_s":           {"start s", 2, stepSum(func(s stepTimes) float64 { return s.start })},
	"reduce_s":          {"reduce s", 2, stepSum(func(s stepTimes) float64 { return s.reduce })},
	// Against the matching run of a reference set (name@set), or a warm
	// run's cold run (cold_...).
	"speedup": {"speed-up", 1, func(_ *runCtx, r Run, ref *Run, d int) Cell {
		return ratio(ref, func(x Run) float64 { return x.Result.TotalSeconds }, r, d)
	}},
	"solver_ratio": {"solver time ratio", 2, func(_ *runCtx, r Run, ref *Run, d int) Cell {
		return ratio(ref, func(x Run) float64 { return x.Result.SolverSeconds }, r, d)
	}},
	"iteration_ratio":       {"iteration ratio", 2, func(_ *runCtx, r Run, ref *Run, d int) Cell { return ratio(ref, iterations, r, d) }},
	"s_per_iteration_ratio": {"s per iteration ratio", 2, func(_ *runCtx, r Run, ref *Run, d int) Cell { return ratio(ref, perIteration, r, d) }},
	"dllh": {"Δ test LLH", 4, func(c *runCtx, r Run, ref *Run, d int) Cell {
		if ref == nil {
			return Missing()
		}
		return numCell(c.test(r).TestLLH-c.test(*ref).TestLLH, d, "")
	}},
	"dllh_abs": {"|Δ test LLH|", 4, func(c *runCtx, r Run, ref *Run, d int) Cell {
		if ref == nil {
			return Missing()
		}
		return numCell(math.Abs(c.test(r).TestLLH-c.test(*ref).TestLLH), d, "")
	}},
	"solver_min_at_iterations": {"solver min at its iterations", 1, func(_ *runCtx, r Run, ref *Run, d int) Cell {
		if ref == nil {
			return Missing()
		}
		return numCell(iterations(*ref)*perIteration(r)/60, d, "")
	}},
}

// paperColumn is a column of the paper's value {cold, warm} for the run's
// dataset and method.
func paperColumn(values map[[2]string][2]float64) func(*runCtx, Run, *Run, int) Cell {
	return func(_ *runCtx, r Run, _ *Run, d int) Cell {
		m := r.Method()
		p, ok := values[[2]string{r.Result.Dataset, m.Key()}]
		if !ok {
			return Missing()
		}
		if m.Warm {
			return numCell(p[1], d, "")
		}
		return numCell(p[0], d, "")
	}
}

// test returns the run's test evaluation: its own, else one made apart
// (Evals), else NaN metrics.
func (c *runCtx) test(r Run) gpnb.Eval {
	if r.Result.Test != nil {
		return *r.Result.Test
	}
	if ev, ok := c.evals.of(r); ok {
		return ev
	}
	return gpnb.Eval{TestRMSE: math.NaN(), TestLLH: math.NaN()}
}

func iterations(r Run) float64   { return float64(r.Result.History.TotalSolverIterations()) }
func perIteration(r Run) float64 { return r.Result.SolverSeconds / iterations(r) }

// rowsPerIteration is the rows of H one solver iteration touches: n for
// CG, AP's block or SGD's batch (at most n).
func rowsPerIteration(r Run) int {
	n := r.Result.NTrain
	switch m := r.Result.Config.Solver.(type) {
	case solvers.AP:
		return min(orDefault(m.BlockSize, solvers.DefaultBlockSize), n)
	case solvers.SGD:
		return min(orDefault(m.BatchSize, solvers.DefaultBatchSize), n)
	}
	return n
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// epochs is the run's solver iterations × rows per iteration / n: passes
// over H.
func epochs(r Run) float64 {
	return iterations(r) * float64(rowsPerIteration(r)) / float64(r.Result.NTrain)
}

// overEpochs counts the steps whose solve took more than e epochs (what
// the authors' code's max_epochs e would have capped).
func overEpochs(r Run, e int) int {
	if r.Method().Mode() == Exact {
		return 0
	}
	rows, n := rowsPerIteration(r), r.Result.NTrain
	limit := (e*n + rows - 1) / rows
	k := 0
	for _, s := range r.Result.History {
		if s.SolverIterations > limit {
			k++
		}
	}
	return k
}

// stepLoad is the segments' mean 1-minute load, weighted by their steps;
// NaN when none recorded one.
func stepLoad(segs []Segment) float64 {
	var sum, steps float64
	for _, s := range segs {
		w := float64(s.ToStep - s.FromStep)
		sum += w * s.LoadMean
		steps += w
	}
	if steps == 0 {
		return math.NaN()
	}
	return sum / steps
}

// builds names the builds that ran the segments: each revision's first 7
// characters, "+" where its tree had changes; "unrecorded" for none.
func builds(segs []Segment) string {
	seen := map[string]bool{}
	for _, s := range segs {
		rev := s.Environment["vcs.revision"]
		if len(rev) > 7 {
			rev = rev[:7]
		}
		if rev == "" {
			rev = "unrecorded"
		} else if s.Environment["vcs.modified"] == "true" {
			rev += "+"
		}
		seen[rev] = true
	}
	if len(seen) == 0 {
		return "unrecorded"
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// day is the date the first segment began, "not recorded" without one.
func day(segs []Segment) string {
	if len(segs) == 0 {
		return "not recorded"
	}
	return segs[0].Started.UTC().Format("2006-01-02")
}

// machine describes the machines of the segments: CPU model, cores, BLAS
// and backend (with the GPU), each distinct one once.
func machine(segs []Segment) string {
	var out []string
	seen := map[string]bool{}
	for _, s := range segs {
		e := s.Environment
		m := fmt.Sprintf("%s, %s cores, %s", orDash(e["cpu"]), orDash(e["numcpu"]), orDash(e["blas"]))
		if g := e["gpu"]; g != "" {
			m += ", " + g
		}
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return "not recorded"
	}
	return strings.Join(out, "; ")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// stepTimes are a step's times outside the solver iterations.
type stepTimes struct{ build, start, reduce float64 }

func timesOf(s gpnb.StepRecord) stepTimes {
	return stepTimes{s.BuildSeconds, s.StartSeconds, s.ReduceSeconds}
}

// stepMean is a column of the mean of f over the steps that recorded it.
func stepMean(f func(stepTimes) float64) func(*runCtx, Run, *Run, int) Cell {
	return func(_ *runCtx, r Run, _ *Run, d int) Cell {
		var sum float64
		n := 0
		for _, s := range r.Result.History {
			if v := f(timesOf(s)); v > 0 {
				sum += v
				n++
			}
		}
		if n == 0 {
			return Missing()
		}
		return numCell(sum/float64(n), d, "")
	}
}

// stepSum is a column of the sum of f over the steps.
func stepSum(f func(stepTimes) float64) func(*runCtx, Run, *Run, int) Cell {
	return func(_ *runCtx, r Run, _ *Run, d int) Cell {
		var sum float64
		for _, s := range r.Result.History {
			sum += f(timesOf(s))
		}
		return numCell(sum, d, "")
	}
}

// evaluatedOn says how the run's test metrics were computed and, from its
// last segment, on which backend, cores and build.
func evaluatedOn(c *runCtx, r Run) string {
	s := c.test(r).Method
	if len(r.Segments) > 0 {
		e := r.Segments[len(r.Segments)-1].Environment
		rev := e["vcs.revision"]
		if len(rev) > 7 {
			rev = rev[:7]
		}
		s += fmt.Sprintf(": %s backend, %s cores, %s", orDash(e["backend"]), orDash(e["numcpu"]), orDash(rev))
	}
	return s
}

// where says where a run's steps ran, from its segments: "steps a–b: S s
// on BACKEND (k segments, mean load L)" for each stretch of adjacent
// segments on one backend, with the steps' summed wall time, and the
// steps no segment covers (run outside the runner, e.g. by gpnb train,
// then resumed from that checkpoint) with the operator their records name.
func where(r Run) string {
	h := r.Result.History
	type span struct {
		from, to, segs int
		backend        string
		loadSteps      float64
	}
	var spans []span
	covered := make([]bool, len(h))
	for _, g := range r.Segments {
		a, b := g.FromStep, min(g.ToStep, len(h))
		if b <= a {
			continue
		}
		be := g.Environment["backend"]
		if be == "" {
			be = "cpu" // a segment that names none ran on the CPU
		}
		for i := a; i < b; i++ {
			covered[i] = true
		}
		if n := len(spans); n > 0 && spans[n-1].to == a && spans[n-1].backend == be {
			spans[n-1].to, spans[n-1].segs, spans[n-1].loadSteps = b, spans[n-1].segs+1, spans[n-1].loadSteps+float64(b-a)*g.LoadMean
			continue
		}
		spans = append(spans, span{a, b, 1, be, float64(b-a) * g.LoadMean})
	}
	for i := 0; i < len(h); i++ {
		if covered[i] {
			continue
		}
		j := i
		for j < len(h) && !covered[j] {
			j++
		}
		spans = append(spans, span{from: i, to: j})
		i = j
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].from < spans[b].from })
	var parts []string
	for _, s := range spans {
		var sec float64
		ops := map[string]bool{}
		for _, x := range h[s.from:s.to] {
			sec += x.StepSeconds
			if x.Operator != "" {
				ops[x.Operator] = true
			}
		}
		if s.segs == 0 {
			on := ""
			if len(ops) > 0 {
				names := make([]string, 0, len(ops))
				for o := range ops {
					names = append(names, o)
				}
				sort.Strings(names)
				on = " on " + strings.Join(names, " and ") + " (the step records' operator)"
			}
			parts = append(parts, fmt.Sprintf("steps %d–%d: %.0f s%s, not run by the runner (no runs.json segment)", s.from, s.to, sec, on))
			continue
		}
		plural := ""
		if s.segs > 1 {
			plural = "s"
		}
		parts = append(parts, fmt.Sprintf("steps %d–%d: %.0f s on %s (%d segment%s, mean load %.1f)", s.from, s.to, sec, s.backend, s.segs, plural, s.loadSteps/float64(s.to-s.from)))
	}
	return strings.Join(parts, "; ")
}

// ColumnSpec is a column of RunsTable: a name of RunColumns, with an
// optional reference set (name@set: the column of the run of that set with
// the same RunID; for the ratio columns the ratio of that run's value to
// this run's), or "cold" for a warm run's cold run of the same set
// (name@cold); decimals (name:digits) and header (name=Header).
type ColumnSpec struct {
	Name, Ref, Header string
	Digits            int // -1: the column's own
}

// ParseColumns parses a comma-separated list of column specs,
// name[@set][:digits][=header].
func ParseColumns(s string) ([]ColumnSpec, error) {
	var out []ColumnSpec
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		c := ColumnSpec{Digits: -1}
		f, c.Header, _ = strings.Cut(f, "=")
		if a, b, ok := strings.Cut(f, ":"); ok {
			d, err := strconv.Atoi(b)
			if err != nil || d < 0 || d > 12 {
				return nil, fmt.Errorf("column %q: write decimals as name:2", f)
			}
			f, c.Digits = a, d
		}
		c.Name, c.Ref, _ = strings.Cut(f, "@")
		if _, ok := runColumns[c.Name]; !ok {
			return nil, fmt.Errorf("unknown column %q: use %s", c.Name, strings.Join(RunColumnNames(), ", "))
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no column given: use a comma-separated list of %s", strings.Join(RunColumnNames(), ", "))
	}
	return out, nil
}

// RunColumnNames lists the columns RunsTable can show, sorted.
func RunColumnNames() []string {
	out := make([]string, 0, len(runColumns))
	for n := range runColumns {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
