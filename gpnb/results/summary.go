package results

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
)

// Entry aggregates the runs (splits × seeds) of one dataset, method and
// mode.
type Entry struct {
	Dataset string
	Method  Method   // Warm as the mode says
	Splits  []int    // the splits of its runs, each once
	Seeds   []uint64 // the seeds of its runs, each once
	Runs    int      // every split × seed present

	RMSE, LLH     Stat // test metrics (Result.Test)
	TotalSeconds  Stat // wall time of the whole run
	SolverSeconds Stat // time spent in the linear solver
	Iterations    Stat // solver iterations summed over all steps
	Epochs        Stat // solver epochs (passes over H) summed over all steps
	// Steps and UnconvergedSteps are totals over the runs: the steps
	// done, and those whose solve stopped unconverged
	// (gpnb.History.UnconvergedSteps). StalledSteps counts the unconverged
	// ones that stalled rather than hit the cap, BudgetSteps those stopped
	// by their budget by design, BackoffSteps those whose SGD solve
	// diverged and started again at half the rate.
	Steps, UnconvergedSteps, StalledSteps, BudgetSteps, BackoffSteps int
	// MaxStepIterations is the most solver iterations one step took.
	MaxStepIterations int
	// SampleRMSE and SampleLLH are the test metrics from the pathwise
	// estimator's posterior samples (gpnb.SampleEval); N = 0 without them.
	SampleRMSE, SampleLLH Stat
	// StopResidualMean and StopResidualProbes are the relative residuals
	// the solves ended with (gpnb.StepRecord.FinalResiduals), averaged over
	// the steps: of the mean system, and the mean over the probe columns.
	// N = 0 where no step recorded them.
	StopResidualMean, StopResidualProbes Stat
	// Conditions pools the runs' segments: machine load per core and
	// backends (NaN and none for runs summarised without segments).
	Conditions Conditions
	// Rules names the stopping rules the runs ran under (Config.Rules;
	// several joined by " and ").
	Rules string
}

// DatasetInfo describes a dataset column of the tables.
type DatasetInfo struct {
	Name   string
	N, D   int  // training points (largest over the runs) and input dimensions
	Subset bool // some run used a random subset of the training split
}

// Label is the dataset's name, with its size when it was run on a subset.
func (d DatasetInfo) Label() string {
	if d.Subset {
		return fmt.Sprintf("%s (n=%d)", d.Name, d.N)
	}
	return d.Name
}

// RowKey names a row of the tables: a dataset (empty in Table1), a
// method's Key and a mode.
type RowKey struct {
	Dataset, Solver, Mode string
}

// Summary is what the tables show, computed from records by Summarise.
type Summary struct {
	Datasets []DatasetInfo // the paper's order, then others by name
	// Solvers lists the Keys of the iterative methods present, in the
	// tables' order (cg, ap, sgd; the paper's method before its variants).
	Solvers  []string
	HasExact bool // some runs of the exact estimator
	Entries  map[RowKey]*Entry

	// SpeedUp[{dataset, key}] = mean cold total time / mean warm total
	// time; IterationRatio the same for total solver iterations. Present
	// only where both cold and warm runs exist.
	SpeedUp        map[[2]string]float64
	IterationRatio map[[2]string]float64
	// AverageSpeedUp[key] is the mean over datasets of SpeedUp, the
	// paper's "average speed-up among datasets"; AverageIterationRatio
	// likewise.
	AverageSpeedUp        map[string]float64
	AverageIterationRatio map[string]float64
	// Unlike[{dataset, key}] says why the cold and warm runs behind SpeedUp
	// ran under conditions too different for their wall-time ratio to be a
	// fair speed-up (backends, or machine loads per core more than 1.25×
	// apart); absent where they compare. The tables mark such speed-ups,
	// and averages that include one, with "†".
	Unlike map[[2]string]string

	methods    map[string]Method // by Key, cold
	maxSeconds float64           // the longest run's TotalSeconds
}

// Entry returns the aggregate of a dataset, method key and mode, or nil.
func (s *Summary) Entry(dataset, key, mode string) *Entry {
	return s.Entries[RowKey{dataset, key, mode}]
}

// Method returns the method of a key of the summary (cold: set Warm for
// the warm rows).
func (s *Summary) Method(key string) Method { return s.methods[key] }

// label names a row's method: the method's Label in its mode.
func (s *Summary) label(key, mode string) string {
	m := s.methods[key]
	m.Warm = mode == Warm
	return m.Label()
}

// accumulator gathers one entry's runs.
type accumulator struct {
	e                                       *Entry
	rmse, llh, total, solver, iters, epochs []float64
	srmse, sllh, resMean, resProbes         []float64
	conds                                   []Conditions
}

func (a *accumulator) add(rc Record) {
	r := rc.Result
	if rules := r.Config.Rules.String(); a.e.Rules == "" {
		a.e.Rules = rules
	} else if !strings.Contains(a.e.Rules, rules) {
		a.e.Rules += " and " + rules
	}
	a.e.Splits = append(a.e.Splits, r.Split)
	a.e.Seeds = append(a.e.Seeds, r.Config.Seed)
	a.e.Runs++
	if r.Test != nil {
		a.rmse = append(a.rmse, r.Test.TestRMSE)
		a.llh = append(a.llh, r.Test.TestLLH)
		if sm := r.Test.Samples; sm != nil {
			a.srmse = append(a.srmse, sm.TestRMSE)
			a.sllh = append(a.sllh, sm.TestLLH)
		}
	}
	a.total = append(a.total, r.TotalSeconds)
	a.solver = append(a.solver, r.SolverSeconds)
	a.iters = append(a.iters, float64(r.History.TotalSolverIterations()))
	a.epochs = append(a.epochs, r.History.TotalSolverEpochs())
	a.e.Steps += len(r.History)
	a.e.UnconvergedSteps += r.History.UnconvergedSteps()
	a.e.BudgetSteps += r.History.BudgetSteps()
	a.e.StalledSteps += r.History.StalledSteps()
	b, _ := r.History.BackoffSteps()
	a.e.BackoffSteps += b
	for _, st := range r.History {
		a.e.MaxStepIterations = max(a.e.MaxStepIterations, st.SolverIterations)
	}
	if c, ok := JobConditions(rc.Segments, r.History); ok {
		a.conds = append(a.conds, c)
	}
	if m, p, ok := stopResiduals(r.History); ok {
		a.resMean = append(a.resMean, m)
		a.resProbes = append(a.resProbes, p)
	}
}

func (a *accumulator) finish() *Entry {
	e := a.e
	slices.Sort(e.Splits)
	slices.Sort(e.Seeds)
	e.Splits, e.Seeds = slices.Compact(e.Splits), slices.Compact(e.Seeds)
	e.RMSE, e.LLH, e.TotalSeconds, e.SolverSeconds = NewStat(a.rmse), NewStat(a.llh), NewStat(a.total), NewStat(a.solver)
	e.Iterations, e.Epochs = NewStat(a.iters), NewStat(a.epochs)
	e.SampleRMSE, e.SampleLLH = NewStat(a.srmse), NewStat(a.sllh)
	e.StopResidualMean, e.StopResidualProbes = NewStat(a.resMean), NewStat(a.resProbes)
	e.Conditions = mergeConditions(a.conds)
	return e
}

// Summarise aggregates records into a Summary: per dataset, method and
// mode, over the splits and seeds present. Two records of the same run
// (RunID) are an error.
func Summarise(recs []Record) (*Summary, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: nothing to summarise", ErrNoResults)
	}
	s := &Summary{Entries: map[RowKey]*Entry{}, SpeedUp: map[[2]string]float64{}, IterationRatio: map[[2]string]float64{},
		AverageSpeedUp: map[string]float64{}, AverageIterationRatio: map[string]float64{}, Unlike: map[[2]string]string{},
		methods: map[string]Method{}}
	accs := map[RowKey]*accumulator{}
	infos := map[string]*DatasetInfo{}
	seen := map[string]bool{}
	for _, rc := range recs {
		if err := rc.check(); err != nil {
			return nil, err
		}
		if id := rc.ID(); seen[id] {
			return nil, fmt.Errorf("%w: run %s appears twice: summarise one results directory at a time", ErrBadRecord, id)
		} else {
			seen[id] = true
		}
		m, r := rc.Method(), rc.Result
		k := RowKey{r.Dataset, m.Key(), m.Mode()}
		a := accs[k]
		if a == nil {
			a = &accumulator{e: &Entry{Dataset: r.Dataset, Method: m}}
			accs[k] = a
		}
		a.add(rc)
		in := infos[r.Dataset]
		if in == nil {
			in = &DatasetInfo{Name: r.Dataset}
			infos[r.Dataset] = in
		}
		in.N, in.D = max(in.N, r.NTrain), r.D
		in.Subset = in.Subset || rc.Subset()
		cold := m
		cold.Warm = false
		s.methods[m.Key()] = cold
		s.HasExact = s.HasExact || m.Mode() == Exact
		if !math.IsNaN(r.TotalSeconds) && !math.IsInf(r.TotalSeconds, 0) {
			s.maxSeconds = max(s.maxSeconds, r.TotalSeconds)
		}
	}
	for k, a := range accs {
		s.Entries[k] = a.finish()
	}
	s.Solvers = s.iterativeKeys()
	s.Datasets = sortedDatasets(infos)
	s.speedUps()
	return s, nil
}

// iterativeKeys returns the keys of the iterative methods, in the tables'
// order.
func (s *Summary) iterativeKeys() []string {
	var keys []string
	for k, m := range s.methods {
		if m.Mode() != Exact {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(a, b int) bool {
		ma, mb := s.methods[keys[a]], s.methods[keys[b]]
		if ma.less(mb) != mb.less(ma) {
			return ma.less(mb)
		}
		return keys[a] < keys[b]
	})
	return keys
}

// speedUps fills SpeedUp, IterationRatio, their averages and Unlike.
func (s *Summary) speedUps() {
	for _, key := range s.Solvers {
		var sp, it []float64
		for _, d := range s.Datasets {
			c, w := s.Entry(d.Name, key, Cold), s.Entry(d.Name, key, Warm)
			if c == nil || w == nil {
				continue
			}
			k := [2]string{d.Name, key}
			s.SpeedUp[k] = c.TotalSeconds.Mean / w.TotalSeconds.Mean
			s.IterationRatio[k] = c.Iterations.Mean / w.Iterations.Mean
			if why := unlike(c.Conditions, w.Conditions); why != "" {
				s.Unlike[k] = why
			}
			sp = append(sp, s.SpeedUp[k])
			it = append(it, s.IterationRatio[k])
		}
		if len(sp) > 0 {
			s.AverageSpeedUp[key] = NewStat(sp).Mean
			s.AverageIterationRatio[key] = NewStat(it).Mean
		}
	}
}

// sortedDatasets returns the datasets in the paper's order, then others by
// name.
func sortedDatasets(infos map[string]*DatasetInfo) []DatasetInfo {
	order := func(name string) int {
		for i, u := range data.UCIDatasets() {
			if u.Name == name {
				return i
			}
		}
		return len(data.UCIDatasets())
	}
	var names []string
	for n := range infos {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool {
		if ia, ib := order(names[a]), order(names[b]); ia != ib {
			return ia < ib
		}
		return names[a] < names[b]
	})
	var out []DatasetInfo
	for _, n := range names {
		out = append(out, *infos[n])
	}
	return out
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

// hasVariants reports whether a row is of a variant (a Key with a "/"):
// the tables then show the columns only variants fill (samples' metrics,
// residuals at the stop).
func (s *Summary) hasVariants() bool {
	for _, k := range s.Solvers {
		if strings.Contains(k, "/") {
			return true
		}
	}
	return false
}

// Unit is the time unit the summary's runtimes read best in: minutes when
// a run took 120 s or more, else seconds.
func (s *Summary) Unit() TimeUnit {
	if s.maxSeconds >= 120 {
		return Minutes
	}
	return Seconds
}
