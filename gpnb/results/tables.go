package results

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// TimeUnit is the unit of the runtime columns.
type TimeUnit string

// The time units: minutes, like the paper, or seconds.
const (
	Minutes TimeUnit = "min"
	Seconds TimeUnit = "s"
)

// ParseTimeUnit parses "min" or "s".
func ParseTimeUnit(s string) (TimeUnit, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "min", "m", "minutes":
		return Minutes, nil
	case "s", "sec", "seconds":
		return Seconds, nil
	}
	return "", fmt.Errorf("time unit %q: use min or s", s)
}

func (u TimeUnit) scale(sec Stat) Stat {
	if u == Minutes {
		return Stat{Mean: sec.Mean / 60, SE: sec.SE / 60, N: sec.N}
	}
	return sec
}

func (u TimeUnit) digits() int {
	if u == Minutes {
		return 3
	}
	return 2
}

func (s *Summary) splitNote() string {
	type shape struct{ runs, splits, seeds int }
	counts := map[shape]bool{}
	for _, e := range s.Entries {
		counts[shape{e.Runs, len(e.Splits), len(e.Seeds)}] = true
	}
	if len(counts) == 1 {
		for k := range counts {
			switch {
			case k.runs == 1:
				return "one split, so no standard errors"
			case k.seeds > 1 && k.splits == 1:
				return fmt.Sprintf("mean ± standard error over %d seeds of one split", k.seeds)
			case k.seeds > 1:
				return fmt.Sprintf("mean ± standard error over %d runs: %d splits × %d seeds", k.runs, k.splits, k.seeds)
			}
			return fmt.Sprintf("mean ± standard error over %d splits", k.runs)
		}
	}
	return "mean ± standard error over the runs present (splits, seeds), which differ between cells"
}

func (s *Summary) notes(unit TimeUnit) []string {
	notes := []string{
		fmt.Sprintf("Runtimes are wall-clock %s on the machine that ran the jobs; speed-ups and iteration ratios are measured, not copied.", map[TimeUnit]string{Minutes: "minutes", Seconds: "seconds"}[unit]),
		"Speed-up = mean total runtime cold / mean total runtime with warm start (+ ws), per dataset and solver; the average speed-up is the mean over datasets of those ratios (the paper's definition).",
		"Iteration ratio = mean total solver iterations cold / warm: the machine-independent part of the speed-up.",
	}
	for _, d := range s.Datasets {
		if d.Subset {
			notes = append(notes, "A dataset shown with (n=…) was run on a random subset of n training points of each split; the test split is complete.")
			break
		}
	}
	notes = append(notes, s.unlikeNotes()...)
	notes = append(notes, s.rulesNotes()...)
	notes = append(notes, s.variantNotes()...)
	return append(notes, s.unconvergedNotes()...)
}

// unlikeMark follows a speed-up whose cold and warm wall times do not
// compare (Summary.Unlike), or an average that includes one.
const unlikeMark = "†"

// speedUpCell is SpeedUp's cell for a dataset and solver, marked when
// Unlike flags it.
func (s *Summary) speedUpCell(dataset, solver string) Cell {
	c := ratioCell(s.SpeedUp, [2]string{dataset, solver})
	if s.Unlike[[2]string{dataset, solver}] != "" {
		c.Suffix += unlikeMark
	}
	return c
}

// averageSpeedUpCell is AverageSpeedUp's cell for a solver, marked when a
// speed-up it averages is.
func (s *Summary) averageSpeedUpCell(solver string) Cell {
	c := ratioCell(s.AverageSpeedUp, solver)
	if s.averageUnlike(solver) {
		c.Suffix += unlikeMark
	}
	return c
}

// averageUnlike reports whether any of solver's per-dataset speed-ups is
// flagged by Unlike.
func (s *Summary) averageUnlike(solver string) bool {
	for k := range s.Unlike {
		if k[1] == solver {
			return true
		}
	}
	return false
}

// unlikeNotes explains the speed-ups marked with unlikeMark, in table order.
func (s *Summary) unlikeNotes() []string {
	var which []string
	for _, d := range s.Datasets {
		for _, key := range s.Solvers {
			if why := s.Unlike[[2]string{d.Name, key}]; why != "" {
				which = append(which, fmt.Sprintf("%s %s (%s)", d.Name, s.Method(key).SolverLabel(), why))
			}
		}
	}
	if len(which) == 0 {
		return nil
	}
	return []string{unlikeMark + " The cold and warm runs behind this speed-up ran under unlike conditions (their runs.json segments): " +
		strings.Join(which, "; ") + ". Their wall-time ratio mixes the machine's state into the speed-up; read the iteration ratio instead. An average marked " + unlikeMark + " includes such a ratio."}
}

// variantNotes explains the rows of variants, when there are any: the
// pathwise estimator and its samples' metrics, the budgets and how many
// steps each stopped at its budget.
func (s *Summary) variantNotes() []string {
	if !s.hasVariants() {
		return nil
	}
	notes := []string{"Rows named pathwise use the pathwise gradient estimator (probes ξ ~ N(0, H) from random-feature prior samples, Lin et al. 2024) instead of Hutchinson's; their Test RMSE/LLH (samples) come from the posterior samples the last solve gives at no further solve, at the θ of that solve (one Adam step behind the exact evaluation's). Residual at stop: the relative residuals ‖Hv − b‖/‖b‖ each solve ended with, averaged over the steps (mean system; mean over the probe columns)."}
	var budget []string
	for _, k := range s.Table2Rows() {
		e := s.Entry(k.Dataset, k.Solver, k.Mode)
		if e.BudgetSteps > 0 {
			budget = append(budget, fmt.Sprintf("%s %s %s %d of %d", k.Dataset, s.Method(k.Solver).SolverLabel(), k.Mode, e.BudgetSteps, e.Steps))
		}
	}
	if len(budget) > 0 {
		notes = append(notes, "Rows named budget B stop each solve after B epochs (passes over the rows of H: one per CG iteration, |I|/n per AP block or SGD batch) by design, not at a tolerance; with warm start the next step continues from there. Steps that stopped at their budget: "+strings.Join(budget, "; ")+".")
	}
	return notes
}

// unconvergedNotes says, for every entry with steps whose solve stopped at
// the iteration cap, how many, and what that does to the entry's numbers: a
// capped solve gives an inexact gradient, and its iterations and time are
// what the cap allowed, less than convergence would have taken (so a capped
// cold run's speed-up is a lower bound, a capped warm run's an upper one).
func (s *Summary) unconvergedNotes() []string {
	var notes []string
	for _, k := range s.Table2Rows() {
		e := s.Entry(k.Dataset, k.Solver, k.Mode)
		if e.UnconvergedSteps == 0 {
			continue
		}
		bound := "lower"
		if k.Mode == Warm {
			bound = "upper"
		}
		splits := "split"
		if len(e.Splits) > 1 {
			splits = "splits"
		}
		where := "at the solver's iteration cap"
		if e.StalledSteps > 0 {
			where = fmt.Sprintf("(%d at the solver's iteration cap, %d stalled: their true residual stopped falling)", e.UnconvergedSteps-e.StalledSteps, e.StalledSteps)
		}
		notes = append(notes, fmt.Sprintf("%s %s %s: %d of %d steps (%s %s) stopped %s before reaching the tolerances. Their gradients came from inexact solves, so the run followed its own hyperparameter path and its test metrics need not match a converged run's; its iterations and runtimes are what the cap allowed, less than convergence would have taken: read the speed-up and iteration ratio computed from them as %s bounds, not measurements.",
			k.Dataset, s.Method(k.Solver).SolverLabel(), k.Mode, e.UnconvergedSteps, e.Steps, splits, splitList(e.Splits), where, bound))
	}
	return notes
}

// Table1 is the paper's main table: test log-likelihood and total runtime per
// dataset, and the average speed-up due to warm start, per method (cold and
// "+ ws" rows, a group each), plus the average iteration ratio and, when
// present, the exact estimator's row.
func (s *Summary) Table1(unit TimeUnit) *Table {
	t := &Table{Title: "Table 1: test log-likelihood, total runtime and average warm-start speed-up",
		Caption: fmt.Sprintf("Predictive test log-likelihoods and total runtimes (%s) after marginal likelihood optimisation, and average speed-up among datasets due to warm start (%s).", unit, strings.Replace(s.splitNote(), "mean ± standard error", "mean", 1)),
		Notes:   s.notes(unit)}
	t.Columns = append(t.Columns, Column{Name: "Solver"})
	for _, d := range s.Datasets {
		t.Columns = append(t.Columns, Column{Name: "Test LLH " + d.Label()})
	}
	for _, d := range s.Datasets {
		t.Columns = append(t.Columns, Column{Name: fmt.Sprintf("Total runtime (%s) %s", unit, d.Label())})
	}
	t.Columns = append(t.Columns, Column{Name: "Average speed-up"}, Column{Name: "Average iteration ratio"})
	for i, k := range s.Table1Rows() {
		solver, mode := k.Solver, k.Mode
		if mode != Warm {
			t.Groups = append(t.Groups, i)
		}
		row := Row{Text(s.rowLabel(solver, mode))}
		for _, d := range s.Datasets {
			row = append(row, statCell(s.Entry(d.Name, solver, mode), func(e *Entry) Stat { return e.LLH }, 2, false))
		}
		for _, d := range s.Datasets {
			row = append(row, statCell(s.Entry(d.Name, solver, mode), func(e *Entry) Stat { return unit.scale(e.TotalSeconds) }, 2, false))
		}
		if mode == Warm {
			row = append(row, s.averageSpeedUpCell(solver), ratioCell(s.AverageIterationRatio, solver))
		} else {
			row = append(row, Missing(), Missing())
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// Table1Rows returns what each row of Table1 shows, in order: per method
// cold then warm, then the exact estimator when present.
func (s *Summary) Table1Rows() []RowKey {
	var keys []RowKey
	for _, key := range s.Solvers {
		keys = append(keys, RowKey{Solver: key, Mode: Cold}, RowKey{Solver: key, Mode: Warm})
	}
	if s.HasExact {
		keys = append(keys, RowKey{Solver: Exact, Mode: Exact})
	}
	return keys
}

// Table2Rows returns what each row of Table2 shows, in order: per dataset,
// per solver cold then warm, then the exact reference, each only where it
// ran.
func (s *Summary) Table2Rows() []RowKey {
	var keys []RowKey
	for _, d := range s.Datasets {
		var list []RowKey
		for _, key := range s.Solvers {
			list = append(list, RowKey{d.Name, key, Cold}, RowKey{d.Name, key, Warm})
		}
		list = append(list, RowKey{d.Name, Exact, Exact})
		for _, k := range list {
			if s.Entry(k.Dataset, k.Solver, k.Mode) != nil {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// Table2 is the appendix table: per dataset, solver and mode the test RMSE,
// test LLH, total and solver runtime, total solver iterations (mean ±
// standard error over splits), and the speed-up and iteration ratio due to
// warm start.
func (s *Summary) Table2(unit TimeUnit) *Table {
	t := &Table{Title: "Table 2: per-dataset results",
		Caption: fmt.Sprintf("Test root-mean-square errors, test log-likelihoods, total runtimes and solver runtimes in %s after marginal likelihood optimisation, and speed-up per dataset due to warm start (%s).",
			map[TimeUnit]string{Minutes: "minutes", Seconds: "seconds"}[unit], s.splitNote()),
		Notes: s.notes(unit)}
	t.Columns = []Column{{Name: "Dataset", Merge: true}, {Name: "Solver"}, {Name: "Splits"},
		{Name: "Test RMSE", SE: true}, {Name: "Test LLH", SE: true},
		{Name: fmt.Sprintf("Total runtime (%s)", unit), SE: true}, {Name: fmt.Sprintf("Solver runtime (%s)", unit), SE: true},
		{Name: "Solver iterations", SE: true}, {Name: "Speed-up"}, {Name: "Iteration ratio"}}
	variants := s.hasVariants()
	if variants {
		t.Columns = append(t.Columns, Column{Name: "Test RMSE (samples)", SE: true}, Column{Name: "Test LLH (samples)", SE: true},
			Column{Name: "Residual at stop (mean)", SE: true}, Column{Name: "Residual at stop (probes)", SE: true})
	}
	labels := map[string]string{}
	for _, d := range s.Datasets {
		labels[d.Name] = fmt.Sprintf("%s (n=%d, d=%d)", d.Name, d.N, d.D)
		if d.Subset {
			labels[d.Name] = fmt.Sprintf("%s (subset n=%d, d=%d)", d.Name, d.N, d.D)
		}
	}
	for _, x := range s.Table2Rows() {
		e := s.Entry(x.Dataset, x.Solver, x.Mode)
		label := s.rowLabel(x.Solver, x.Mode)
		if x.Mode == Warm && s.Entry(x.Dataset, x.Solver, Cold) == nil {
			label = s.label(x.Solver, x.Mode) // no cold row above to name the solver
		}
		row := Row{Text(labels[x.Dataset]), Text(label), Text(splitList(e.Splits)),
			num(e.RMSE, 3, ""), num(e.LLH, 3, ""),
			num(unit.scale(e.TotalSeconds), unit.digits(), ""), num(unit.scale(e.SolverSeconds), unit.digits(), ""),
			num(e.Iterations, 0, "")}
		if x.Mode == Warm {
			row = append(row, s.speedUpCell(x.Dataset, x.Solver), ratioCell(s.IterationRatio, [2]string{x.Dataset, x.Solver}))
		} else {
			row = append(row, Missing(), Missing())
		}
		if variants {
			row = append(row, optStat(e.SampleRMSE, 3), optStat(e.SampleLLH, 3), optStat(e.StopResidualMean, 4), optStat(e.StopResidualProbes, 4))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// optStat is a number cell, missing when s has no values.
func optStat(s Stat, digits int) Cell {
	if s.N == 0 {
		return Missing()
	}
	return num(s, digits, "")
}

func splitList(s []int) string {
	if len(s) == 0 {
		return ""
	}
	contiguous := true
	for i := 1; i < len(s); i++ {
		contiguous = contiguous && s[i] == s[i-1]+1
	}
	if contiguous && len(s) > 2 {
		return fmt.Sprintf("%d-%d", s[0], s[len(s)-1])
	}
	p := make([]string, len(s))
	for i, k := range s {
		p[i] = fmt.Sprint(k)
	}
	return strings.Join(p, ",")
}

func statCell(e *Entry, f func(*Entry) Stat, digits int, se bool) Cell {
	if e == nil {
		return Missing()
	}
	s := f(e)
	if !se {
		s.SE = math.NaN()
	}
	return num(s, digits, "")
}

func num(s Stat, digits int, suffix string) Cell {
	return Cell{Num: true, Value: s.Mean, SE: s.SE, Digits: digits, Suffix: suffix}
}

func ratioCell[K comparable](m map[K]float64, k K) Cell {
	v, ok := m[k]
	if !ok {
		return Missing()
	}
	return Cell{Num: true, Value: v, SE: math.NaN(), Digits: 1, Suffix: "×"}
}

// Convergence shows how the solves of each dataset, solver and mode ended,
// over its runs (splits × seeds): the steps done, those that stopped at the
// iteration cap, stalled, or had their SGD rate halved after diverging, the
// most iterations one step took, the solver iterations of a run, the
// iteration ratio cold / warm, and the test log-likelihood with the warm
// rows' difference from the cold ones'. unfinished lists the jobs of the
// directory that left no result (a run that died, or one not finished:
// repro.Unfinished); they are counted in their rows, and named in a note.
func (s *Summary) Convergence(unfinished []Unfinished) *Table {
	t := &Table{Title: "How the solves ended",
		Caption: fmt.Sprintf("Per dataset, solver and mode: steps at the iteration cap, stalled, or with the SGD rate halved after a divergence; the most solver iterations of one step; solver iterations per run and test log-likelihood (%s); the warm-start iteration ratio.", s.splitNote()),
		Columns: []Column{{Name: "Dataset", Merge: true}, {Name: "Solver"}, {Name: "Runs"}, {Name: "Runs without a result"},
			{Name: "Steps"}, {Name: "Steps at the cap"}, {Name: "Steps stalled"}, {Name: "Steps with the rate halved"},
			{Name: "Iterations of a step (max)"}, {Name: "Solver iterations", SE: true}, {Name: "Iteration ratio"},
			{Name: "Test LLH", SE: true}, {Name: "Δ test LLH (warm − cold)"}}}
	missing := map[RowKey]int{}
	var names []string
	for _, u := range unfinished {
		missing[RowKey{u.Dataset, u.Method.Key(), u.Method.Mode()}]++
		names = append(names, u.ID)
	}
	count := func(n int) Cell { return Cell{Num: true, Value: float64(n), SE: math.NaN()} }
	for _, k := range s.Table2Rows() {
		e := s.Entry(k.Dataset, k.Solver, k.Mode)
		ratio, dllh := Missing(), Missing()
		if c := s.Entry(k.Dataset, k.Solver, Cold); k.Mode == Warm && c != nil {
			ratio = ratioCell(s.IterationRatio, [2]string{k.Dataset, k.Solver})
			dllh = Cell{Num: true, Value: e.LLH.Mean - c.LLH.Mean, SE: math.NaN(), Digits: 4}
		}
		label := Text(s.datasetLabel(k.Dataset))
		t.Rows = append(t.Rows, Row{label, Text(s.rowLabel(k.Solver, k.Mode)), count(e.Runs), count(missing[k]),
			count(e.Steps), count(e.UnconvergedSteps - e.StalledSteps), count(e.StalledSteps), count(e.BackoffSteps),
			count(e.MaxStepIterations), num(e.Iterations, 0, ""), ratio, num(e.LLH, 4, ""), dllh})
	}
	t.Notes = []string{
		"Runs without a result are jobs of the results directory with no result.json: a run that failed (a job that dies leaves none) or one not finished when the table was made.",
		"Steps at the cap stopped at the solver's iteration cap before their tolerances; stalled steps stopped there because their true residual stopped falling (solvers.State.Stalled); either way their gradients were inexact. A step with the rate halved had an SGD solve diverge and start again from its initial guess at half the learning rate (gpnb.MaxRateBackoffs); its abandoned attempts count in its iterations.",
		"Iteration ratio = mean solver iterations of a cold run / of a warm run; Δ test LLH = mean test log-likelihood warm − cold (exact evaluation by Cholesky at the final θ, on the z-scored scale).",
	}
	if len(names) > 0 {
		sort.Strings(names)
		t.Notes = append(t.Notes, "Without a result: "+strings.Join(names, ", ")+".")
	}
	return t
}

// datasetLabel is the label of a dataset of the summary (DatasetInfo.Label).
func (s *Summary) datasetLabel(name string) string {
	for _, d := range s.Datasets {
		if d.Name == name {
			return d.Label()
		}
	}
	return name
}

// Ablation compares, per dataset and solver, every warm-started run of a
// variant (the pathwise estimator, a budget) with the paper's method, the
// Hutchinson estimator with warm start and no budget: its total solver
// iterations and the ratio of the reference's to its (above 1: fewer
// iterations than the reference), total solver epochs (passes over H, the
// unit of budgets), its test LLH and the difference from the reference's.
// It is nil when the summary holds no variant.
func (s *Summary) Ablation() *Table {
	if !s.hasVariants() {
		return nil
	}
	t := &Table{Title: "Ablation: estimators and budgets with warm start",
		Caption: fmt.Sprintf("Each warm-started variant against the paper's method (Hutchinson + warm start, no budget) on the same dataset and solver (%s).", s.splitNote()),
		Columns: []Column{{Name: "Dataset", Merge: true}, {Name: "Solver"}, {Name: "Solver iterations"}, {Name: "Iteration ratio to Hutchinson + ws"},
			{Name: "Solver epochs"}, {Name: "Test LLH"}, {Name: "Δ test LLH"}, {Name: "Test LLH (samples)"}}}
	for _, d := range s.Datasets {
		for _, base := range []string{"cg", "ap", "sgd"} {
			ref := s.Entry(d.Name, base, Warm)
			for _, key := range s.Solvers {
				if s.Method(key).Solver != base {
					continue
				}
				e := s.Entry(d.Name, key, Warm)
				if e == nil {
					continue
				}
				ratio, dllh := Missing(), Missing()
				if ref != nil {
					ratio = Cell{Num: true, Value: ref.Iterations.Mean / e.Iterations.Mean, SE: math.NaN(), Digits: 2, Suffix: "×"}
					dllh = Cell{Num: true, Value: e.LLH.Mean - ref.LLH.Mean, SE: math.NaN(), Digits: 3}
				}
				t.Rows = append(t.Rows, Row{Text(d.Label()), Text(s.label(key, Warm)), num(e.Iterations, 0, ""), ratio,
					statCell(e, func(e *Entry) Stat { return e.Epochs }, 1, false),
					num(Stat{Mean: e.LLH.Mean, SE: math.NaN()}, 3, ""), dllh, optStat(Stat{Mean: e.SampleLLH.Mean, SE: math.NaN(), N: e.SampleLLH.N}, 3)})
			}
		}
	}
	t.Notes = []string{
		"Iteration ratio = total solver iterations of Hutchinson + ws / those of the row (the reference row shows 1.00×): above 1 the variant needed fewer iterations. An iteration is one CG step, one AP block update or one SGD batch, so compare ratios within a solver; solver epochs (passes over the rows of H) compare across solvers.",
		"Δ test LLH = the row's test log-likelihood minus the reference's (exact evaluation by Cholesky at the final θ).",
	}
	t.Notes = append(t.Notes, s.variantNotes()...)
	return t
}

// Unfinished is a job of a results directory that left no result (one that
// failed, or one not finished), as Convergence counts it.
type Unfinished struct {
	ID, Dataset string
	Method      Method
}

// rowLabel names a row in the tables: the method's SolverLabel for a cold
// or exact row, "+ ws" for a warm row (below its cold row).
func (s *Summary) rowLabel(key, mode string) string {
	if mode == Warm {
		return "+ ws"
	}
	return s.label(key, mode)
}

// Table1Paper is Table 1 with the paper's values beside ours: each method's
// row (cold, then "+ ws") followed by the paper's row of the same method:
// its test log-likelihoods and total runtimes in minutes as its Table 2
// gives them, and its average speed-up over its five datasets (Table 1).
// The exact estimator's row, which the paper does not have, comes last.
func (s *Summary) Table1Paper() *Table {
	t := s.Table1(Minutes)
	t.Title = "Table 1 beside the paper's"
	t.Caption += " Each row is followed by the paper's (its Table 2, on an A100 GPU, mean over 10 splits of the full datasets; the average speed-up over its five datasets)."
	keys := s.Table1Rows()
	var rows []Row
	var groups []int
	for i, k := range keys {
		if k.Mode != Warm {
			groups = append(groups, len(rows))
		}
		rows = append(rows, t.Rows[i])
		if k.Mode == Exact {
			continue
		}
		rows = append(rows, s.paperRow(k))
	}
	t.Rows, t.Groups = rows, groups
	t.Notes = append(t.Notes, "The paper's average speed-ups are over all five of its datasets; ours are over the datasets above that have both a cold and a warm run.")
	return t
}

// paperRow is the paper's row of Table1Paper for a method and mode.
func (s *Summary) paperRow(k RowKey) Row {
	m := s.Method(k.Solver)
	w := map[string]int{Cold: 0, Warm: 1}[k.Mode]
	label := "+ ws (paper)"
	if k.Mode == Cold {
		label = m.SolverLabel() + " (paper)"
	}
	row := Row{Text(label)}
	for _, d := range s.Datasets {
		v, ok := PaperTestLLH[[2]string{d.Name, k.Solver}]
		row = append(row, paperCell(v[w], ok && !d.Subset, 3, ""))
	}
	for _, d := range s.Datasets {
		v, ok := PaperTotalMinutes[[2]string{d.Name, k.Solver}]
		row = append(row, paperCell(v[w], ok && !d.Subset, 3, ""))
	}
	avg, ok := PaperAverageSpeedUp[k.Solver]
	return append(row, paperCell(avg, ok && k.Mode == Warm, 1, "×"), Missing())
}

func paperCell(v float64, ok bool, digits int, suffix string) Cell {
	if !ok {
		return Missing()
	}
	return Number(v, digits, suffix)
}

// rulesNotes names the stopping rules of the rows when they differ between
// rows: those of the rows under other rules than most, by row.
func (s *Summary) rulesNotes() []string {
	count := map[string]int{}
	for _, e := range s.Entries {
		if e.Method.Mode() != Exact {
			count[e.Rules]++
		}
	}
	if len(count) < 2 {
		return nil
	}
	most := ""
	for r, n := range count {
		if n > count[most] || n == count[most] && r < most {
			most = r
		}
	}
	var which []string
	for _, k := range s.Table2Rows() {
		if e := s.Entry(k.Dataset, k.Solver, k.Mode); k.Mode != Exact && e.Rules != most {
			which = append(which, fmt.Sprintf("%s %s %s (%s)", k.Dataset, s.Method(k.Solver).SolverLabel(), k.Mode, e.Rules))
		}
	}
	return []string{"The runs ran under the stopping rules " + most + " (Config.Rules), but for " + strings.Join(which, "; ") + "."}
}
