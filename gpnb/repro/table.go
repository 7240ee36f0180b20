package repro

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

// Stat is a mean and its standard error over splits.
type Stat struct {
	Mean float64
	SE   float64 // sample standard deviation / √N; NaN when N < 2
	N    int
}

// NewStat returns the mean and standard error of xs: SE = s/√N with s the
// sample standard deviation (N−1 in the denominator), as in the paper's
// Table 2. With fewer than two values SE is NaN; with none, Mean is NaN too.
func NewStat(xs []float64) Stat {
	n := len(xs)
	if n == 0 {
		return Stat{Mean: math.NaN(), SE: math.NaN()}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(n)
	if n < 2 {
		return Stat{Mean: mean, SE: math.NaN(), N: 1}
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return Stat{Mean: mean, SE: math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n)), N: n}
}

// Entry aggregates one (dataset, solver, mode) over its runs: its splits
// and seeds. A job with a Variant (the pathwise estimator, a solver
// budget) is its own solver in the tables: Solver is then
// "cg/pathwise-b20" (see SolverKey).
type Entry struct {
	Dataset, Solver, Mode string   // mode: cold, warm or exact
	Splits                []int    // the splits of its runs, each once
	Seeds                 []uint64 // the seeds of its runs, each once
	Runs                  int      // runs: every split × seed present
	RMSE, LLH             Stat
	TotalSeconds          Stat // wall time of the whole run
	SolverSeconds         Stat // time spent in the linear solver
	Iterations            Stat // solver iterations summed over all steps
	Epochs                Stat // solver epochs (passes over H) summed over all steps
	// Steps and UnconvergedSteps are totals over the splits: the steps
	// done, and those whose solve stopped at the iteration cap before its
	// tolerances (gpnb.History.UnconvergedSteps). BudgetSteps counts those
	// stopped by their budget (gpnb.History.BudgetSteps), by design, and
	// StalledSteps the unconverged ones that stalled above their
	// tolerances rather than hit the cap (gpnb.History.StalledSteps).
	Steps, UnconvergedSteps, BudgetSteps, StalledSteps int
	// BackoffSteps counts the steps whose SGD solve diverged and was
	// started again at half the rate (gpnb.History.BackoffSteps), and
	// MaxStepIterations is the most solver iterations one step took.
	BackoffSteps, MaxStepIterations int
	// SampleRMSE and SampleLLH are the test metrics from the pathwise
	// estimator's posterior samples (gpnb.SampleEval); N = 0 without them.
	SampleRMSE, SampleLLH Stat
	// StopResidualMean and StopResidualProbes are the relative residuals
	// the solves ended with (gpnb.StepRecord.FinalResiduals), averaged over
	// the steps: of the mean system, and the mean over the probe columns.
	// N = 0 for results that did not record them.
	StopResidualMean, StopResidualProbes Stat
	// Conditions pools the runs' segments (runs.json): machine load per
	// core and backends. LoadPerCore is NaN and Backends empty for runs
	// summarised without their segments.
	Conditions Conditions
}

// SolverKey is the solver column of the tables for a job: its solver
// name, followed by "/" and its Variant when it has one.
func SolverKey(j Job) string {
	if v := j.Variant(); v != "" {
		return j.Solver() + "/" + v
	}
	return j.Solver()
}

// ResultSolverKey is SolverKey for a training result: its solver
// (lower-cased) and the variant its recorded configuration (Result.Config)
// names; results that recorded none are of the paper's method.
func ResultSolverKey(r gpnb.Result) string {
	s := strings.ToLower(r.Solver)
	if r.Config == nil || s == SolverCholesky || s == "exact" {
		return s
	}
	if v := (Job{Config: *r.Config}).Variant(); v != "" {
		return s + "/" + v
	}
	return s
}

// DatasetInfo describes a dataset column of the tables.
type DatasetInfo struct {
	Name   string
	N, D   int // training points (largest over splits) and input dimensions
	Subset bool
}

// Label is the dataset's name, with its size when it was run on a subset.
func (d DatasetInfo) Label() string {
	if d.Subset {
		return fmt.Sprintf("%s (n=%d)", d.Name, d.N)
	}
	return d.Name
}

// Report holds everything Table 1 and Table 2 show, computed from records.
type Report struct {
	Datasets []DatasetInfo // paper order, then others by name
	Solvers  []string      // iterative solvers present: cg, ap, sgd order
	HasExact bool          // some Cholesky reference jobs present
	Entries  map[[3]string]*Entry

	// SpeedUp[{dataset, solver}] = mean cold total time / mean warm total
	// time; IterationRatio the same for total solver iterations. Present
	// only where both cold and warm runs exist.
	SpeedUp        map[[2]string]float64
	IterationRatio map[[2]string]float64
	// AverageSpeedUp[solver] is the mean over datasets of SpeedUp, the
	// paper's "average speed-up among datasets"; AverageIterationRatio
	// likewise.
	AverageSpeedUp        map[string]float64
	AverageIterationRatio map[string]float64
	// Unlike[{dataset, solver}] says why the cold and warm runs behind
	// SpeedUp ran under conditions too different for their wall-time ratio
	// to be a fair speed-up (backends, or machine loads per core more than
	// 1.25× apart); absent where they compare. The tables mark such
	// speed-ups, and averages that include one, with "†".
	Unlike map[[2]string]string
}

// Entry returns the aggregate for a dataset, solver and mode, or nil.
func (r *Report) Entry(dataset, solver, mode string) *Entry {
	return r.Entries[[3]string{dataset, solver, mode}]
}

// Summarise aggregates records into a Report. Records of the same job id
// (the same dataset, split, solver and mode) must not repeat.
func Summarise(recs []Record) (*Report, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: nothing to summarise", ErrNoResults)
	}
	type acc struct {
		splits                              []int
		seeds                               []uint64
		rmse, llh, total, solver, iters     []float64
		srmse, sllh, resMean, resProbes     []float64
		epochs                              []float64
		steps, unconverged, budget, stalled int
		backoff, maxStep                    int
		conds                               []Conditions
	}
	accs := map[[3]string]*acc{}
	infos := map[string]*DatasetInfo{}
	seen := map[string]bool{}
	solverSeen := map[string]Job{}
	rep := &Report{Entries: map[[3]string]*Entry{}, SpeedUp: map[[2]string]float64{}, IterationRatio: map[[2]string]float64{},
		AverageSpeedUp: map[string]float64{}, AverageIterationRatio: map[string]float64{}, Unlike: map[[2]string]string{}}
	for _, rc := range recs {
		j, r := rc.Job, rc.Result
		if seen[j.ID()] {
			return nil, fmt.Errorf("repro: job %s appears twice: summarise one results directory at a time", j.ID())
		}
		seen[j.ID()] = true
		k := [3]string{j.Dataset, SolverKey(j), j.Mode()}
		a := accs[k]
		if a == nil {
			a = &acc{}
			accs[k] = a
		}
		a.splits = append(a.splits, j.Split)
		a.seeds = append(a.seeds, j.Config.Seed)
		if r.Test != nil {
			a.rmse = append(a.rmse, r.Test.TestRMSE)
			a.llh = append(a.llh, r.Test.TestLLH)
			if s := r.Test.Samples; s != nil {
				a.srmse = append(a.srmse, s.TestRMSE)
				a.sllh = append(a.sllh, s.TestLLH)
			}
		}
		a.total = append(a.total, r.TotalSeconds)
		a.solver = append(a.solver, r.SolverSeconds)
		a.iters = append(a.iters, float64(r.History.TotalSolverIterations()))
		a.epochs = append(a.epochs, r.History.TotalSolverEpochs())
		a.steps += len(r.History)
		a.unconverged += r.History.UnconvergedSteps()
		a.budget += r.History.BudgetSteps()
		a.stalled += r.History.StalledSteps()
		b, _ := r.History.BackoffSteps()
		a.backoff += b
		for _, st := range r.History {
			a.maxStep = max(a.maxStep, st.SolverIterations)
		}
		if c, ok := JobConditions(rc.Segments, r.History); ok {
			a.conds = append(a.conds, c)
		}
		if m, p, ok := stopResiduals(r.History); ok {
			a.resMean = append(a.resMean, m)
			a.resProbes = append(a.resProbes, p)
		}
		in := infos[j.Dataset]
		if in == nil {
			in = &DatasetInfo{Name: j.Dataset}
			infos[j.Dataset] = in
		}
		in.N = max(in.N, r.NTrain)
		in.D = r.D
		if j.Subset > 0 {
			if spec, err := ParseDataset(j.Dataset); err == nil && (j.Subset < ApproxTrainSize(spec, 0)) {
				in.Subset = true
			}
		}
		if j.Solver() == SolverCholesky {
			rep.HasExact = true
		} else {
			solverSeen[SolverKey(j)] = j
		}
	}
	for k, a := range accs {
		runs := len(a.splits)
		slices.Sort(a.splits)
		slices.Sort(a.seeds)
		rep.Entries[k] = &Entry{Dataset: k[0], Solver: k[1], Mode: k[2], Splits: slices.Compact(a.splits), Seeds: slices.Compact(a.seeds), Runs: runs,
			BackoffSteps: a.backoff, MaxStepIterations: a.maxStep,
			RMSE: NewStat(a.rmse), LLH: NewStat(a.llh), TotalSeconds: NewStat(a.total),
			SolverSeconds: NewStat(a.solver), Iterations: NewStat(a.iters), Epochs: NewStat(a.epochs), Steps: a.steps, UnconvergedSteps: a.unconverged, StalledSteps: a.stalled,
			BudgetSteps: a.budget, SampleRMSE: NewStat(a.srmse), SampleLLH: NewStat(a.sllh),
			StopResidualMean: NewStat(a.resMean), StopResidualProbes: NewStat(a.resProbes), Conditions: mergeConditions(a.conds)}
	}
	rep.Solvers = solverOrder(solverSeen)
	var names []string
	for n := range infos {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool {
		ia, ib := datasetOrder(names[a]), datasetOrder(names[b])
		if ia != ib {
			return ia < ib
		}
		return names[a] < names[b]
	})
	for _, n := range names {
		rep.Datasets = append(rep.Datasets, *infos[n])
	}
	for _, s := range rep.Solvers {
		var sp, it []float64
		for _, d := range rep.Datasets {
			c, w := rep.Entry(d.Name, s, "cold"), rep.Entry(d.Name, s, "warm")
			if c == nil || w == nil {
				continue
			}
			k := [2]string{d.Name, s}
			rep.SpeedUp[k] = c.TotalSeconds.Mean / w.TotalSeconds.Mean
			rep.IterationRatio[k] = c.Iterations.Mean / w.Iterations.Mean
			if why := unlike(c.Conditions, w.Conditions); why != "" {
				rep.Unlike[k] = why
			}
			sp = append(sp, rep.SpeedUp[k])
			it = append(it, rep.IterationRatio[k])
		}
		if len(sp) > 0 {
			rep.AverageSpeedUp[s] = NewStat(sp).Mean
			rep.AverageIterationRatio[s] = NewStat(it).Mean
		}
	}
	return rep, nil
}

// stopResiduals returns the residuals at the solves' stops averaged over
// the steps that recorded them (gpnb.StepRecord.FinalResiduals): of the
// mean system, and the mean over the probe columns; ok is false when no
// step recorded them.
func stopResiduals(h gpnb.History) (mean, probes float64, ok bool) {
	n := 0
	for _, r := range h {
		f := r.FinalResiduals
		if len(f) < 2 {
			continue
		}
		p := 0.0
		for _, v := range f[1:] {
			p += v
		}
		mean += f[0]
		probes += p / float64(len(f)-1)
		n++
	}
	if n == 0 {
		return 0, 0, false
	}
	return mean / float64(n), probes / float64(n), true
}

// solverOrder sorts the solver keys seen (SolverKey) into the tables' row
// order: cg, ap, sgd, each with the paper's method first, then the
// Hutchinson variants by budget, then the pathwise ones by budget.
func solverOrder(seen map[string]Job) []string {
	rank := func(j Job) (int, int, int, float64) {
		so := map[string]int{SolverCG: 0, SolverAP: 1, SolverSGD: 2}[j.Solver()]
		est := 0
		if j.Config.Estimator == gpnb.Pathwise {
			est = 1
		}
		return so, est, j.Config.Features, j.Config.Settings.Budget
	}
	var keys []string
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		a1, a2, a3, a4 := rank(seen[keys[a]])
		b1, b2, b3, b4 := rank(seen[keys[b]])
		switch {
		case a1 != b1:
			return a1 < b1
		case a2 != b2:
			return a2 < b2
		case a3 != b3:
			return a3 < b3
		case a4 != b4:
			return a4 < b4
		}
		return keys[a] < keys[b]
	})
	return keys
}

// hasVariants reports whether any row is of a variant (SolverKey with a
// "/"): the tables then show the columns that only variants fill (samples'
// metrics, residuals at the stop), and the earlier tables keep their form.
func (r *Report) hasVariants() bool {
	for _, s := range r.Solvers {
		if strings.Contains(s, "/") {
			return true
		}
	}
	return false
}

// RecordsOf turns results of training runs (gpnb.Result values, as `gpnb
// train --json` prints them or a notebook collects them) into Records, so
// that Summarise and the Report's tables can be computed for them as for a
// reproduce results directory. Each Job is rebuilt from its Result: Dataset,
// Split, Solver (lower-cased; "exact" is taken as SolverCholesky, the exact
// reference, whose Mode is "exact" whatever WarmStart says), WarmStart,
// Steps = StepsDone, and Settings.Kernel, Probes and Seed. Subset is set to
// NTrain when the result evidently ran on a subset: NTrain is below the
// dataset's full training size by more than ApproxTrainSize's one-point
// slack for a UCI dataset, or below N for synthetic-N-D-SEED; otherwise (and
// for datasets ParseDataset does not know, or NTrain 0) it is 0. The
// Results are copied unchanged.
//
// It is an error, naming both results, when two results are the same job
// (the same dataset, split, solver, mode and seed: Summarise averages over
// splits and seeds, so a repeat would be counted twice), and when a result
// has no dataset name or a solver other than cg, ap, sgd or cholesky.
func RecordsOf(results []gpnb.Result) ([]Record, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("%w: no results given", ErrNoResults)
	}
	recs := make([]Record, 0, len(results))
	first := map[string]int{}
	for i, r := range results {
		if strings.TrimSpace(r.Dataset) == "" {
			return nil, fmt.Errorf("%w: result %d (solver %q, split %d) has no dataset name: set Result.Dataset", ErrGrid, i, r.Solver, r.Split)
		}
		solver := strings.ToLower(strings.TrimSpace(r.Solver))
		if solver == "exact" {
			solver = SolverCholesky
		}
		switch solver {
		case SolverCG, SolverAP, SolverSGD, SolverCholesky:
		default:
			return nil, fmt.Errorf("%w: result %d (dataset %s, split %d) has solver %q: the tables know cg, ap, sgd and cholesky", ErrGrid, i, r.Dataset, r.Split, r.Solver)
		}
		var fam kernel.Family // "" (unrecorded): the default
		if r.Kernel != "" {
			if err := fam.UnmarshalText([]byte(r.Kernel)); err != nil {
				return nil, fmt.Errorf("%w: result %d (dataset %s, split %d): %v", ErrGrid, i, r.Dataset, r.Split, err)
			}
		}
		c := gpnb.Config{Kernel: fam, Probes: r.Probes, Seed: r.Seed, WarmStart: r.WarmStart}
		if rc := r.Config; rc != nil && rc.Estimator == gpnb.Pathwise {
			c.Estimator, c.Features = rc.Estimator, rc.Features
		}
		if rc := r.Config; rc != nil && solver != SolverCholesky {
			c.Settings.Budget = rc.Settings.Budget
		}
		if solver == SolverCholesky {
			c.Estimator = gpnb.ExactGradient
		} else {
			c.Solver, _ = solvers.ParseMethod(solver)
		}
		j := Job{Dataset: r.Dataset, Split: r.Split, Subset: subsetOf(r), Steps: r.StepsDone, Config: c}.Normalize()
		if k, ok := first[j.ID()]; ok {
			return nil, fmt.Errorf("repro: results %d and %d are both job %s (dataset %s, split %d, solver %s, %s): the tables average over splits and seeds, so each dataset, split, solver, mode and seed may appear only once; drop the repeat or summarise the runs separately",
				k, i, j.ID(), j.Dataset, j.Split, j.Solver(), j.Mode())
		}
		first[j.ID()] = i
		recs = append(recs, Record{Job: j, Result: r})
	}
	return recs, nil
}

// subsetOf returns r.NTrain when r evidently ran on a subset of its
// dataset's training split, else 0 (all points, or unknown).
func subsetOf(r gpnb.Result) int {
	spec, err := ParseDataset(r.Dataset)
	if err != nil || r.NTrain <= 0 {
		return 0
	}
	full := ApproxTrainSize(spec, 0)
	if spec.UCI {
		full-- // ApproxTrainSize is within one point of a UCI split's size
	}
	if r.NTrain < full {
		return r.NTrain
	}
	return 0
}

func datasetOrder(name string) int {
	for i, n := range UCIDatasets {
		if n == name {
			return i
		}
	}
	return len(UCIDatasets)
}

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
	return "", fmt.Errorf("%w: time unit %q: use min or s", ErrGrid, s)
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

var solverNames = map[string]string{SolverCG: "CG", SolverAP: "AP", SolverSGD: "SGD", SolverCholesky: "Cholesky (exact)"}

// SolverLabel names a solver key (SolverKey) in a table: "CG", or with a
// variant "CG pathwise", "CG budget 20", "CG pathwise (500 features) budget 20".
func SolverLabel(key string) string {
	base, variant, _ := strings.Cut(key, "/")
	label := solverNames[base]
	if label == "" {
		label = base
	}
	for _, part := range strings.Split(variant, "-") {
		switch {
		case part == "":
		case part == "pathwise":
			label += " pathwise"
		case strings.HasPrefix(part, "f"):
			label += fmt.Sprintf(" (%s features)", part[1:])
		case strings.HasPrefix(part, "b"):
			label += " budget " + part[1:]
		default:
			label += " " + part
		}
	}
	return label
}

func modeLabel(solver, mode string) string {
	if mode == "warm" {
		return "+ ws"
	}
	return SolverLabel(solver)
}

func (r *Report) splitNote() string {
	type shape struct{ runs, splits, seeds int }
	counts := map[shape]bool{}
	for _, e := range r.Entries {
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

func (r *Report) notes(unit TimeUnit) []string {
	notes := []string{
		fmt.Sprintf("Runtimes are wall-clock %s on the machine that ran the jobs; speed-ups and iteration ratios are measured, not copied.", map[TimeUnit]string{Minutes: "minutes", Seconds: "seconds"}[unit]),
		"Speed-up = mean total runtime cold / mean total runtime with warm start (+ ws), per dataset and solver; the average speed-up is the mean over datasets of those ratios (the paper's definition).",
		"Iteration ratio = mean total solver iterations cold / warm: the machine-independent part of the speed-up.",
	}
	for _, d := range r.Datasets {
		if d.Subset {
			notes = append(notes, "A dataset shown with (n=…) was run on a random subset of n training points of each split; the test split is complete.")
			break
		}
	}
	notes = append(notes, r.unlikeNotes()...)
	notes = append(notes, r.variantNotes()...)
	return append(notes, r.unconvergedNotes()...)
}

// unlikeMark follows a speed-up whose cold and warm wall times do not
// compare (Report.Unlike), or an average that includes one.
const unlikeMark = "†"

// speedUpCell is SpeedUp's cell for a dataset and solver, marked when
// Unlike flags it.
func (r *Report) speedUpCell(dataset, solver string) Cell {
	c := ratioCell(r.SpeedUp, [2]string{dataset, solver})
	if r.Unlike[[2]string{dataset, solver}] != "" {
		c.Suffix += unlikeMark
	}
	return c
}

// averageSpeedUpCell is AverageSpeedUp's cell for a solver, marked when a
// speed-up it averages is.
func (r *Report) averageSpeedUpCell(solver string) Cell {
	c := ratioCell(r.AverageSpeedUp, solver)
	if r.averageUnlike(solver) {
		c.Suffix += unlikeMark
	}
	return c
}

// averageUnlike reports whether any of solver's per-dataset speed-ups is
// flagged by Unlike.
func (r *Report) averageUnlike(solver string) bool {
	for k := range r.Unlike {
		if k[1] == solver {
			return true
		}
	}
	return false
}

// unlikeNotes explains the speed-ups marked with unlikeMark, in table order.
func (r *Report) unlikeNotes() []string {
	var which []string
	for _, d := range r.Datasets {
		for _, s := range r.Solvers {
			if why := r.Unlike[[2]string{d.Name, s}]; why != "" {
				which = append(which, fmt.Sprintf("%s %s (%s)", d.Name, SolverLabel(s), why))
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
func (r *Report) variantNotes() []string {
	if !r.hasVariants() {
		return nil
	}
	notes := []string{"Rows named pathwise use the pathwise gradient estimator (probes ξ ~ N(0, H) from random-feature prior samples, Lin et al. 2024) instead of Hutchinson's; their Test RMSE/LLH (samples) come from the posterior samples the last solve gives at no further solve, at the θ of that solve (one Adam step behind the exact evaluation's). Residual at stop: the relative residuals ‖Hv − b‖/‖b‖ each solve ended with, averaged over the steps (mean system; mean over the probe columns)."}
	var budget []string
	for _, k := range r.Table2Rows() {
		e := r.Entry(k.Dataset, k.Solver, k.Mode)
		if e.BudgetSteps > 0 {
			budget = append(budget, fmt.Sprintf("%s %s %s %d of %d", k.Dataset, SolverLabel(k.Solver), k.Mode, e.BudgetSteps, e.Steps))
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
func (r *Report) unconvergedNotes() []string {
	var notes []string
	for _, k := range r.Table2Rows() {
		e := r.Entry(k.Dataset, k.Solver, k.Mode)
		if e.UnconvergedSteps == 0 {
			continue
		}
		bound := "lower"
		if k.Mode == "warm" {
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
			k.Dataset, SolverLabel(k.Solver), k.Mode, e.UnconvergedSteps, e.Steps, splits, splitList(e.Splits), where, bound))
	}
	return notes
}

// Table1 is the paper's main table: test log-likelihood and total runtime per
// dataset, and the average speed-up due to warm start, per solver (cold and
// "+ ws" rows), plus the average iteration ratio and, when present, the exact
// Cholesky reference.
func (r *Report) Table1(unit TimeUnit) *Table {
	t := &Table{Title: "Table 1: test log-likelihood, total runtime and average warm-start speed-up",
		Caption: fmt.Sprintf("Predictive test log-likelihoods and total runtimes (%s) after marginal likelihood optimisation, and average speed-up among datasets due to warm start (%s).", unit, strings.Replace(r.splitNote(), "mean ± standard error", "mean", 1)),
		Notes:   r.notes(unit)}
	t.Columns = append(t.Columns, Column{Name: "Solver"})
	for _, d := range r.Datasets {
		t.Columns = append(t.Columns, Column{Name: "Test LLH " + d.Label()})
	}
	for _, d := range r.Datasets {
		t.Columns = append(t.Columns, Column{Name: fmt.Sprintf("Total runtime (%s) %s", unit, d.Label())})
	}
	t.Columns = append(t.Columns, Column{Name: "Average speed-up"}, Column{Name: "Average iteration ratio"})
	for _, k := range r.Table1Rows() {
		solver, mode := k.Solver, k.Mode
		row := Row{Text(modeLabel(solver, mode))}
		for _, d := range r.Datasets {
			row = append(row, statCell(r.Entry(d.Name, solver, mode), func(e *Entry) Stat { return e.LLH }, 2, false))
		}
		for _, d := range r.Datasets {
			row = append(row, statCell(r.Entry(d.Name, solver, mode), func(e *Entry) Stat { return unit.scale(e.TotalSeconds) }, 2, false))
		}
		if mode == "warm" {
			row = append(row, r.averageSpeedUpCell(solver), ratioCell(r.AverageIterationRatio, solver))
		} else {
			row = append(row, Missing(), Missing())
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// RowKey says what a row of Table1 or Table2 shows: a dataset (empty in
// Table1), a solver and a mode (cold, warm or exact).
type RowKey struct {
	Dataset, Solver, Mode string
}

// Table1Rows returns what each row of Table1 shows, in order: per solver
// cold then warm, then the exact reference when present. Renderers that
// label rows in their own way (package viz) zip it with Table1's rows.
func (r *Report) Table1Rows() []RowKey {
	var keys []RowKey
	for _, s := range r.Solvers {
		keys = append(keys, RowKey{Solver: s, Mode: "cold"}, RowKey{Solver: s, Mode: "warm"})
	}
	if r.HasExact {
		keys = append(keys, RowKey{Solver: SolverCholesky, Mode: "exact"})
	}
	return keys
}

// Table2Rows returns what each row of Table2 shows, in order: per dataset,
// per solver cold then warm, then the exact reference, each only where it
// ran.
func (r *Report) Table2Rows() []RowKey {
	var keys []RowKey
	for _, d := range r.Datasets {
		var list []RowKey
		for _, s := range r.Solvers {
			list = append(list, RowKey{d.Name, s, "cold"}, RowKey{d.Name, s, "warm"})
		}
		list = append(list, RowKey{d.Name, SolverCholesky, "exact"})
		for _, k := range list {
			if r.Entry(k.Dataset, k.Solver, k.Mode) != nil {
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
func (r *Report) Table2(unit TimeUnit) *Table {
	t := &Table{Title: "Table 2: per-dataset results",
		Caption: fmt.Sprintf("Test root-mean-square errors, test log-likelihoods, total runtimes and solver runtimes in %s after marginal likelihood optimisation, and speed-up per dataset due to warm start (%s).",
			map[TimeUnit]string{Minutes: "minutes", Seconds: "seconds"}[unit], r.splitNote()),
		Notes: r.notes(unit)}
	t.Columns = []Column{{Name: "Dataset", Merge: true}, {Name: "Solver"}, {Name: "Splits"},
		{Name: "Test RMSE", SE: true}, {Name: "Test LLH", SE: true},
		{Name: fmt.Sprintf("Total runtime (%s)", unit), SE: true}, {Name: fmt.Sprintf("Solver runtime (%s)", unit), SE: true},
		{Name: "Solver iterations", SE: true}, {Name: "Speed-up"}, {Name: "Iteration ratio"}}
	variants := r.hasVariants()
	if variants {
		t.Columns = append(t.Columns, Column{Name: "Test RMSE (samples)", SE: true}, Column{Name: "Test LLH (samples)", SE: true},
			Column{Name: "Residual at stop (mean)", SE: true}, Column{Name: "Residual at stop (probes)", SE: true})
	}
	labels := map[string]string{}
	for _, d := range r.Datasets {
		labels[d.Name] = fmt.Sprintf("%s (n=%d, d=%d)", d.Name, d.N, d.D)
		if d.Subset {
			labels[d.Name] = fmt.Sprintf("%s (subset n=%d, d=%d)", d.Name, d.N, d.D)
		}
	}
	for _, x := range r.Table2Rows() {
		e := r.Entry(x.Dataset, x.Solver, x.Mode)
		label := modeLabel(x.Solver, x.Mode)
		if x.Mode == "warm" && r.Entry(x.Dataset, x.Solver, "cold") == nil {
			// No cold row above to name the solver.
			label = SolverLabel(x.Solver) + " " + label
		}
		row := Row{Text(labels[x.Dataset]), Text(label), Text(splitList(e.Splits)),
			num(e.RMSE, 3, ""), num(e.LLH, 3, ""),
			num(unit.scale(e.TotalSeconds), unit.digits(), ""), num(unit.scale(e.SolverSeconds), unit.digits(), ""),
			num(e.Iterations, 0, "")}
		if x.Mode == "warm" {
			row = append(row, r.speedUpCell(x.Dataset, x.Solver), ratioCell(r.IterationRatio, [2]string{x.Dataset, x.Solver}))
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
// Unfinished); they are counted in their rows, and named in a note.
func (r *Report) Convergence(unfinished []Job) *Table {
	t := &Table{Title: "How the solves ended",
		Caption: fmt.Sprintf("Per dataset, solver and mode: steps at the iteration cap, stalled, or with the SGD rate halved after a divergence; the most solver iterations of one step; solver iterations per run and test log-likelihood (%s); the warm-start iteration ratio.", r.splitNote()),
		Columns: []Column{{Name: "Dataset", Merge: true}, {Name: "Solver"}, {Name: "Runs"}, {Name: "Runs without a result"},
			{Name: "Steps"}, {Name: "Steps at the cap"}, {Name: "Steps stalled"}, {Name: "Steps with the rate halved"},
			{Name: "Iterations of a step (max)"}, {Name: "Solver iterations", SE: true}, {Name: "Iteration ratio"},
			{Name: "Test LLH", SE: true}, {Name: "Δ test LLH (warm − cold)"}}}
	missing := map[[3]string]int{}
	var names []string
	for _, j := range unfinished {
		missing[[3]string{j.Dataset, SolverKey(j), j.Mode()}]++
		names = append(names, j.ID())
	}
	count := func(n int) Cell { return Cell{Num: true, Value: float64(n), SE: math.NaN()} }
	for _, k := range r.Table2Rows() {
		e := r.Entry(k.Dataset, k.Solver, k.Mode)
		ratio, dllh := Missing(), Missing()
		if c := r.Entry(k.Dataset, k.Solver, "cold"); k.Mode == "warm" && c != nil {
			ratio = ratioCell(r.IterationRatio, [2]string{k.Dataset, k.Solver})
			dllh = Cell{Num: true, Value: e.LLH.Mean - c.LLH.Mean, SE: math.NaN(), Digits: 4}
		}
		label := Text(r.datasetLabel(k.Dataset))
		t.Rows = append(t.Rows, Row{label, Text(modeLabel(k.Solver, k.Mode)), count(e.Runs), count(missing[[3]string{k.Dataset, k.Solver, k.Mode}]),
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

// datasetLabel is the label of a dataset of the report (DatasetInfo.Label).
func (r *Report) datasetLabel(name string) string {
	for _, d := range r.Datasets {
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
// It is nil when the report holds no variant.
func (r *Report) Ablation() *Table {
	if !r.hasVariants() {
		return nil
	}
	t := &Table{Title: "Ablation: estimators and budgets with warm start",
		Caption: fmt.Sprintf("Each warm-started variant against the paper's method (Hutchinson + warm start, no budget) on the same dataset and solver (%s).", r.splitNote()),
		Columns: []Column{{Name: "Dataset", Merge: true}, {Name: "Solver"}, {Name: "Solver iterations"}, {Name: "Iteration ratio to Hutchinson + ws"},
			{Name: "Solver epochs"}, {Name: "Test LLH"}, {Name: "Δ test LLH"}, {Name: "Test LLH (samples)"}}}
	for _, d := range r.Datasets {
		for _, base := range []string{SolverCG, SolverAP, SolverSGD} {
			ref := r.Entry(d.Name, base, "warm")
			for _, s := range r.Solvers {
				if b, _, _ := strings.Cut(s, "/"); b != base {
					continue
				}
				e := r.Entry(d.Name, s, "warm")
				if e == nil {
					continue
				}
				ratio, dllh := Missing(), Missing()
				if ref != nil {
					ratio = Cell{Num: true, Value: ref.Iterations.Mean / e.Iterations.Mean, SE: math.NaN(), Digits: 2, Suffix: "×"}
					dllh = Cell{Num: true, Value: e.LLH.Mean - ref.LLH.Mean, SE: math.NaN(), Digits: 3}
				}
				t.Rows = append(t.Rows, Row{Text(d.Label()), Text(SolverLabel(s) + " + ws"), num(e.Iterations, 0, ""), ratio,
					statCell(e, func(e *Entry) Stat { return e.Epochs }, 1, false),
					num(Stat{Mean: e.LLH.Mean, SE: math.NaN()}, 3, ""), dllh, optStat(Stat{Mean: e.SampleLLH.Mean, SE: math.NaN(), N: e.SampleLLH.N}, 3)})
			}
		}
	}
	t.Notes = []string{
		"Iteration ratio = total solver iterations of Hutchinson + ws / those of the row (the reference row shows 1.00×): above 1 the variant needed fewer iterations. An iteration is one CG step, one AP block update or one SGD batch, so compare ratios within a solver; solver epochs (passes over the rows of H) compare across solvers.",
		"Δ test LLH = the row's test log-likelihood minus the reference's (exact evaluation by Cholesky at the final θ).",
	}
	t.Notes = append(t.Notes, r.variantNotes()...)
	return t
}
