package repro

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/gpnb/results"
	"github.com/gpnb/gpnb/solvers"
)

// Errors returned by this package wrap one of these, so callers can test them
// with errors.Is.
var (
	// ErrGrid: a bad dataset name, split range, solver name or setting.
	ErrGrid = errors.New("repro: bad grid")
	// ErrConfigMismatch: DIR/jobs/<id>/job.json holds a different
	// configuration than the job being run.
	ErrConfigMismatch = errors.New("repro: job configuration differs from the one stored")
	// ErrInterrupted: the run was cancelled (SIGINT); rerun to resume.
	ErrInterrupted = errors.New("repro: interrupted")
)

// The solver names of a grid (Grid.Solvers). Cholesky is the exact
// gradient's reference job: the gradient of eq. (3) by Cholesky
// factorisation, no probes, no warm start.
const (
	SolverCG       = "cg"
	SolverAP       = "ap"
	SolverSGD      = "sgd"
	SolverCholesky = "cholesky"
)

// UCIDatasets are the paper's five datasets in the paper's column order.
var UCIDatasets = func() []string {
	var out []string
	for _, u := range data.UCIDatasets() {
		out = append(out, u.Name)
	}
	return out
}()

// NumSplits is the number of train/test splits of each UCI dataset.
const NumSplits = data.NumSplits

// Job is one training run of the grid: its data (dataset, split, subset),
// its number of Adam steps and its configuration, the one plain-data
// description of a run (gpnb.Config). It is stored as DIR/jobs/<ID>/job.json;
// a rerun whose job differs from the stored one is refused, unless only by
// a larger iteration cap that none of its steps reached (Runner.Run).
type Job struct {
	Dataset string      `json:"dataset"`          // a UCI name or synthetic-N-D-SEED
	Split   int         `json:"split"`            // 0–9
	Subset  int         `json:"subset,omitempty"` // training points kept; 0 = all
	Steps   int         `json:"steps"`            // Adam steps
	Config  gpnb.Config `json:"config"`
}

// Method is the job's method: its solver, estimator, mode and variant,
// which name it (ID) and its rows in the tables.
func (j Job) Method() results.Method { return results.MethodOf(j.Config) }

// ID names the job's directory: <dataset>-s<split>-<solver>-<cold|warm|exact>,
// followed by the method's variant when there is one
// (pol-s0-cg-warm-pathwise-b20) and by -seed<k> for a seed other than 0
// (results.RunID).
func (j Job) ID() string { return results.RunID(j.Dataset, j.Split, j.Config.Seed, j.Method()) }

// Normalize returns j in the form jobs are stored and compared in: the
// defaults of probes, learning rate and tolerances written out (a zero
// Config and gpnb.Paper's give the same jobs), the stopping rules written
// out (gpnb.Config.ApplyRules), and for the exact gradient the settings it
// does not use (probes, solver settings and rules, warm start, precision)
// cleared and its solver set to solvers.Cholesky{}.
func (j Job) Normalize() Job {
	c := &j.Config
	if c.Probes == 0 {
		c.Probes = gpnb.DefaultProbes
	}
	if c.LearningRate == 0 {
		c.LearningRate = gpnb.DefaultLearningRate
	}
	if c.Settings.RelTolMean == 0 {
		c.Settings.RelTolMean = solvers.DefaultRelTolMean
	}
	if c.Settings.RelTolProbes == 0 {
		c.Settings.RelTolProbes = solvers.DefaultRelTolProbes
	}
	if c.Estimator == gpnb.Pathwise && c.Features == 0 {
		c.Features = kernel.DefaultFeatures
	}
	if c.Estimator == gpnb.ExactGradient {
		c.Solver, c.WarmStart, c.FixedProbes, c.Probes, c.ProbeDist, c.Features = solvers.Cholesky{}, false, gpnb.ProbesAuto, 0, gpnb.Gaussian, 0
		c.Settings, c.Rules = solvers.Settings{}, solvers.RulesPaperText // zero rule fields
		c.Operator.Precision = kernel.Float64
	}
	c.Solver = solvers.Canonical(c.Solver)
	if c.Solver == nil {
		c.Solver = solvers.CG{}
	}
	j.Config = j.Config.ApplyRules()
	return j
}

// Equal reports whether j and k are the same job: the same data, steps and
// configuration (bit for bit).
func (j Job) Equal(k Job) bool { return len(j.differences(k)) == 0 }

// differences lists the fields in which j and k differ.
func (j Job) differences(k Job) []string {
	var out []string
	if j.Dataset != k.Dataset {
		out = append(out, "dataset")
	}
	if j.Split != k.Split {
		out = append(out, "split")
	}
	if j.Subset != k.Subset {
		out = append(out, "subset")
	}
	if j.Steps != k.Steps {
		out = append(out, "steps")
	}
	for _, f := range j.Config.Differences(k.Config, false) {
		out = append(out, "config."+f)
	}
	return out
}

// Validate reports the first thing wrong with j, saying how to fix it.
func (j Job) Validate() error {
	spec, err := ParseDataset(j.Dataset)
	if err != nil {
		return err
	}
	if j.Split < 0 || j.Split >= NumSplits {
		return fmt.Errorf("%w: split %d: use 0-%d", ErrGrid, j.Split, NumSplits-1)
	}
	if j.Subset < 0 {
		return fmt.Errorf("%w: subset %d: give a positive number of training points, or 0 for all", ErrGrid, j.Subset)
	}
	if j.Steps <= 0 {
		return fmt.Errorf("%w: steps %d: give a positive number of Adam steps (the paper uses 100)", ErrGrid, j.Steps)
	}
	d := spec.D
	if d == 0 {
		d = 1
	}
	c := j.Config
	c.Init = kernel.Hyper{} // validated against the data's dimension when it runs
	if j.Config.Init.Lengthscales != nil {
		c.Init = j.Config.Init
		d = len(c.Init.Lengthscales)
	}
	if _, err := c.Resolve(d); err != nil {
		return fmt.Errorf("%w: job %s: %v", ErrGrid, j.ID(), err)
	}
	return nil
}

// DatasetSpec is a parsed dataset name.
type DatasetSpec struct {
	Name string // as given
	UCI  bool   // one of UCIDatasets
	// N training points (for a UCI dataset its split's, to within one) and
	// D input dimensions; for synthetic-N-D-SEED also its SEED.
	N, D int
	Seed uint64
}

// ParseDataset parses a UCI dataset name (pol, elevators, bike, protein,
// keggdirected) or synthetic-N-D-SEED, a synthetic problem with N training
// points in D dimensions drawn with seed SEED (split k uses seed SEED+k).
func ParseDataset(name string) (DatasetSpec, error) {
	if u, ok := data.LookupUCI(name); ok && u.Name == name {
		return DatasetSpec{Name: name, UCI: true, N: u.TrainSize(), D: u.D}, nil
	}
	n, d, seed, ok, err := data.ParseSynthetic(name)
	if err != nil {
		return DatasetSpec{}, fmt.Errorf("%w: %v", ErrGrid, err)
	}
	if ok {
		return DatasetSpec{Name: name, N: n, D: d, Seed: seed}, nil
	}
	return DatasetSpec{}, fmt.Errorf("%w: unknown dataset %q: use %s, or synthetic-N-D-SEED", ErrGrid, name, strings.Join(UCIDatasets, ", "))
}

// ApproxTrainSize returns the number of training points of a job's dataset
// after its subset, exact for synthetic data and to within one point for the
// UCI splits (nine tenths of the rows).
func ApproxTrainSize(spec DatasetSpec, subset int) int {
	n := spec.N
	if subset > 0 && subset < n {
		n = subset
	}
	return n
}

// ParseDatasets parses a comma-separated list of dataset names.
func ParseDatasets(s string) ([]string, error) {
	return parseList(s, false, func(f string) error {
		_, err := ParseDataset(f)
		return err
	}, "no dataset given: use a comma-separated list such as pol,elevators")
}

// ParseSolvers parses a comma-separated list of solver names: cg, ap, sgd
// (and cholesky).
func ParseSolvers(s string) ([]string, error) {
	return parseList(s, true, func(f string) error {
		switch f {
		case SolverCG, SolverAP, SolverSGD, SolverCholesky:
			return nil
		}
		return fmt.Errorf("%w: unknown solver %q: use cg, ap, sgd or cholesky", ErrGrid, f)
	}, "no solver given: use a comma-separated list such as cg,ap,sgd")
}

// ParseSplits parses a split list: a range "0-9", single splits "0,3,5", or
// a mix "0-2,7". Splits are 0–9; the result is sorted without duplicates.
func ParseSplits(s string) ([]int, error) {
	v, err := parseRanges(s, "split", NumSplits-1)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out, nil
}

// ParseSeeds parses a seed list as ParseSplits parses splits ("0-4",
// "0,3,5" or a mix), for Grid.Seeds: any seeds ≥ 0, sorted without
// duplicates.
func ParseSeeds(s string) ([]uint64, error) {
	return parseRanges(s, "seed", math.MaxUint32)
}

// parseRanges parses a list of what (split, seed) values and ranges lo-hi,
// each in 0..max, into sorted distinct values.
func parseRanges(s, what string, max uint64) ([]uint64, error) {
	seen := map[uint64]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		lo, hi := f, f
		if a, b, ok := strings.Cut(f, "-"); ok {
			lo, hi = a, b
		}
		l, e1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		h, e2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
		if e1 != nil || e2 != nil {
			return nil, fmt.Errorf("%w: %ss %q: write a range such as 0-9 or a list such as 0,3,5", ErrGrid, what, f)
		}
		if l > h {
			return nil, fmt.Errorf("%w: %s range %q is empty: write low-high with low ≤ high, e.g. 0-9", ErrGrid, what, f)
		}
		if h > max {
			return nil, fmt.Errorf("%w: %ss %q: %ss are 0-%d", ErrGrid, what, f, what, max)
		}
		if h-l > 1<<16 {
			return nil, fmt.Errorf("%w: %ss %q: more than %d of them", ErrGrid, what, f, 1<<16)
		}
		for k := l; ; k++ {
			seen[k] = true
			if k == h {
				break
			}
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("%w: no %s given: use a range such as 0-9", ErrGrid, what)
	}
	out := make([]uint64, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out, nil
}

// ExactMode says when the grid adds the exact Cholesky reference job.
type ExactMode string

// The exact modes: ExactAuto adds it when the training set has at most
// Grid.ExactMaxN points.
const (
	ExactAuto   ExactMode = "auto"
	ExactAlways ExactMode = "always"
	ExactNever  ExactMode = "never"
)

// DefaultExactMaxN is the largest training set for which ExactAuto adds the
// exact reference job: a dense Cholesky factorisation plus the gradient's
// O(n²d) reductions per step stay within minutes there on a small CPU.
const DefaultExactMaxN = 6000

// ParseExactMode parses auto, always or never.
func ParseExactMode(s string) (ExactMode, error) {
	switch m := ExactMode(strings.ToLower(strings.TrimSpace(s))); m {
	case ExactAuto, ExactAlways, ExactNever:
		return m, nil
	}
	return "", fmt.Errorf("%w: --exact %q: use auto, always or never", ErrGrid, s)
}

// Grid is the set of jobs of a reproduction run.
type Grid struct {
	Datasets  []string
	Splits    []int
	Solvers   []string // cg, ap, sgd; each runs cold and warm (cholesky: the exact reference)
	Subset    int      // training points kept per dataset; 0 = all
	Steps     int      // Adam steps per job (100)
	Exact     ExactMode
	ExactMaxN int // for ExactAuto; 0 means DefaultExactMaxN
	// Config is every job's configuration, but for its solver and warm
	// start, which each job sets (Config.Solver and WarmStart are ignored).
	Config gpnb.Config
	// Methods gives each solver's parameters by name (cg, ap, sgd); a
	// solver without an entry runs with the paper's (gpnb.Paper), SGD at
	// the rate SGDRates gives.
	Methods map[string]solvers.Method
	// SGDRates says where SGD's learning rate comes from (see SGDRates).
	SGDRates SGDRates
	// Seeds lists the seeds (Config.Seed, and SGD's batches) each job runs
	// with, a job each; nil means Config.Seed alone. Jobs of a seed other
	// than 0 are named ...-seed<k> (Job.ID); the tables average over seeds
	// as over splits. An SGD method's batch seed is each job's seed.
	Seeds []uint64
	// Modes selects "cold", "warm" or both (nil: both) for the iterative
	// solvers.
	Modes []string
	// Estimators lists the gradient estimators each iterative solver runs
	// with (gpnb.Hutchinson, gpnb.Pathwise); nil means Config.Estimator
	// alone. Budgets lists per-step solver budgets in epochs
	// (solvers.Settings.Budget; 0 is no budget); nil means
	// Config.Settings.Budget alone. Every (estimator, mode, budget)
	// combination is a job, named by Job.Variant.
	Estimators []gpnb.EstimatorKind
	Budgets    []float64
}

// SGDRates says where the SGD jobs of a grid take their learning rate.
type SGDRates int

const (
	// SGDRatesAuto, the zero value: the paper's rate where a job is the
	// paper's run (gpnb.PaperSGDRate: a dataset it names, all of the
	// training split, batches of 1000) and its SGD method sets no rate
	// (or the grid has no Methods["sgd"]); elsewhere the method's rate, 0
	// meaning the normalised default, which does not diverge on subsets
	// where the paper's rates can.
	SGDRatesAuto SGDRates = iota
	// SGDRatesPaper: the paper's rate for every dataset the paper names,
	// subsets included, replacing the method's.
	SGDRatesPaper
	// SGDRatesGiven: Methods["sgd"]'s rate as it is (gpnb.Paper's without
	// an entry).
	SGDRatesGiven
)

// method returns the solver of a grid's job on a dataset with n training
// points.
func (g Grid) method(solver, dataset string, n int) (solvers.Method, error) {
	m, ok := g.Methods[solver]
	if !ok {
		p, err := gpnb.Paper(solver, dataset)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrGrid, err)
		}
		m = p.Solver
		if sgd, ok := m.(solvers.SGD); ok && g.SGDRates == SGDRatesAuto {
			sgd.RawLearningRate = 0 // the paper's only where the run is
			m = sgd
		}
	}
	if sgd, ok := solvers.Canonical(m).(solvers.SGD); ok {
		switch g.SGDRates {
		case SGDRatesAuto:
			if sgd.LearningRate == 0 && sgd.RawLearningRate == 0 {
				sgd.RawLearningRate = gpnb.PaperSGDRate(dataset, n, sgd.BatchSize)
			}
		case SGDRatesPaper:
			if raw, ok := gpnb.PaperSGDLearningRates()[dataset]; ok {
				sgd.LearningRate, sgd.RawLearningRate = 0, raw
			}
		}
		m = sgd
	}
	if m == nil || m.Name() != solver {
		return nil, fmt.Errorf("%w: Methods[%q] is a %v method", ErrGrid, solver, m)
	}
	return m, nil
}

func (g Grid) wantMode(warm bool) bool {
	if len(g.Modes) == 0 {
		return true
	}
	want := map[bool]string{false: "cold", true: "warm"}[warm]
	for _, m := range g.Modes {
		if m == want {
			return true
		}
	}
	return false
}

// ParseEstimators parses a comma-separated list of iterative gradient
// estimators: hutchinson and pathwise.
func ParseEstimators(s string) ([]gpnb.EstimatorKind, error) {
	names, err := parseList(s, true, func(f string) error {
		var e gpnb.EstimatorKind
		if err := e.UnmarshalText([]byte(f)); err != nil || e == gpnb.ExactGradient {
			return fmt.Errorf("%w: unknown estimator %q: use hutchinson, pathwise or hutchinson,pathwise (the exact reference is --solvers cholesky)", ErrGrid, f)
		}
		return nil
	}, "no estimator given: use hutchinson, pathwise or hutchinson,pathwise")
	if err != nil {
		return nil, err
	}
	out := make([]gpnb.EstimatorKind, len(names))
	for i, n := range names {
		_ = out[i].UnmarshalText([]byte(n))
	}
	return out, nil
}

// ParseBudgets parses a comma-separated list of per-step solver budgets in
// epochs (solvers.Settings.Budget): numbers ≥ 0, where 0 (or "none") is no
// budget, in the order given, without repeats.
func ParseBudgets(s string) ([]float64, error) {
	names, err := parseList(s, true, func(f string) error {
		if f == "none" {
			return nil
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: budget %q: give epochs per step as a number ≥ 0 (0 or none: no budget), e.g. 0,10,20,50", ErrGrid, f)
		}
		return nil
	}, "no budget given: use a list such as 0,10,20,50 (0: no budget)")
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, n := range names {
		v := 0.0
		if n != "none" {
			v, _ = strconv.ParseFloat(n, 64)
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// ParseModes parses a comma-separated list of cold and warm.
func ParseModes(s string) ([]string, error) {
	return parseList(s, true, func(f string) error {
		if f != "cold" && f != "warm" {
			return fmt.Errorf("%w: unknown mode %q: use cold, warm or cold,warm", ErrGrid, f)
		}
		return nil
	}, "no mode given: use cold, warm or cold,warm")
}

// parseList splits a comma-separated list, trims each entry (and, with fold,
// lower-cases it), checks it, and drops empty entries and repeats, keeping
// the first occurrence's order. An empty result is ErrGrid with the message
// none.
func parseList(s string, fold bool, check func(string) error, none string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if fold {
			f = strings.ToLower(f)
		}
		if f == "" {
			continue
		}
		if err := check(f); err != nil {
			return nil, err
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrGrid, none)
	}
	return out, nil
}

// Jobs expands the grid in run order: for each dataset and split, each
// solver, each estimator, cold then warm, each budget, then the exact
// reference job if the grid asks for one. Jobs are normalised and
// validated.
func (g Grid) Jobs() ([]Job, error) {
	if len(g.Datasets) == 0 || len(g.Splits) == 0 || len(g.Solvers) == 0 {
		return nil, fmt.Errorf("%w: the grid needs at least one dataset, split and solver", ErrGrid)
	}
	exact := g.Exact
	if exact == "" {
		exact = ExactAuto
	}
	if _, err := ParseExactMode(string(exact)); err != nil {
		return nil, err
	}
	maxN := g.ExactMaxN
	if maxN <= 0 {
		maxN = DefaultExactMaxN
	}
	hasChol := slices.Contains(g.Solvers, SolverCholesky)
	ests := g.Estimators
	if len(ests) == 0 {
		ests = []gpnb.EstimatorKind{g.Config.Estimator}
	}
	for _, e := range ests {
		if e == gpnb.ExactGradient {
			return nil, fmt.Errorf("%w: the exact gradient is the cholesky solver's reference job, not an estimator of the iterative solvers: use --solvers cholesky", ErrGrid)
		}
	}
	budgets := g.Budgets
	if len(budgets) == 0 {
		budgets = []float64{g.Config.Settings.Budget}
	}
	seeds := g.Seeds
	if len(seeds) == 0 {
		seeds = []uint64{g.Config.Seed}
	}
	var jobs []Job
	for _, ds := range g.Datasets {
		spec, err := ParseDataset(ds)
		if err != nil {
			return nil, err
		}
		for _, split := range g.Splits {
			for _, seed := range seeds {
				base := Job{Dataset: ds, Split: split, Subset: g.Subset, Steps: g.Steps, Config: g.Config}
				base.Config.Seed = seed
				js, err := g.splitJobs(base, spec, ests, budgets, hasChol, exact, maxN)
				if err != nil {
					return nil, err
				}
				jobs = append(jobs, js...)
			}
		}
	}
	for _, j := range jobs {
		if err := j.Validate(); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

// splitJobs returns the jobs of one dataset, split and seed (base), in the
// order Jobs lists them.
func (g Grid) splitJobs(base Job, spec DatasetSpec, ests []gpnb.EstimatorKind, budgets []float64, hasChol bool, exact ExactMode, maxN int) ([]Job, error) {
	var jobs []Job
	ds := base.Dataset
	for _, solver := range g.Solvers {
		if solver == SolverCholesky {
			continue // added below, once
		}
		m, err := g.method(solver, ds, ApproxTrainSize(spec, g.Subset))
		if err != nil {
			return nil, err
		}
		if sgd, ok := m.(solvers.SGD); ok && len(g.Seeds) > 0 {
			sgd.Seed = base.Config.Seed // one seed fixes a job
			m = sgd
		}
		for _, est := range ests {
			for _, warm := range []bool{false, true} {
				if !g.wantMode(warm) {
					continue
				}
				for _, b := range budgets {
					j := base
					j.Config.Solver, j.Config.WarmStart, j.Config.Estimator = m, warm, est
					j.Config.Settings.Budget = b
					if est != gpnb.Pathwise {
						j.Config.Features = 0 // the grid's features are the pathwise jobs'
					}
					jobs = append(jobs, j.Normalize())
				}
			}
		}
	}
	if hasChol || exact == ExactAlways || (exact == ExactAuto && ApproxTrainSize(spec, g.Subset) <= maxN) {
		j := base
		j.Config.Estimator, j.Config.Settings.Budget, j.Config.Features = gpnb.ExactGradient, 0, 0
		jobs = append(jobs, j.Normalize())
	}
	return jobs, nil
}

// PaperJob returns the job that runs solver (cg, ap, sgd, or cholesky for
// the exact reference) on a split of dataset with the paper's settings
// (gpnb.Paper), cold or with warm start, for steps Adam steps.
func PaperJob(dataset string, split int, solver string, warm bool, steps int) (Job, error) {
	c, err := gpnb.Paper(solver, dataset)
	if err != nil {
		return Job{}, fmt.Errorf("%w: %v", ErrGrid, err)
	}
	c.WarmStart = warm
	j := Job{Dataset: dataset, Split: split, Steps: steps, Config: c}.Normalize()
	return j, j.Validate()
}
