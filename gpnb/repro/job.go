package repro

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Errors returned by this package wrap one of these, so callers can test them
// with errors.Is.
var (
	// ErrGrid: a bad dataset name, split range, solver name or setting.
	ErrGrid = errors.New("repro: bad grid")
	// ErrConfigMismatch: DIR/jobs/<id>/job.json holds a different
	// configuration than the job being run.
	ErrConfigMismatch = errors.New("repro: job configuration differs from the one stored")
	// ErrNoResults: a results directory with no finished job.
	ErrNoResults = errors.New("repro: no results")
	// ErrInterrupted: the run was cancelled (SIGINT); rerun to resume.
	ErrInterrupted = errors.New("repro: interrupted")
)

// The solver names a job may use. Cholesky is the exact reference: the
// gradient of eq. (3) by Cholesky factorisation, no probes, no warm start.
const (
	SolverCG       = "cg"
	SolverAP       = "ap"
	SolverSGD      = "sgd"
	SolverCholesky = "cholesky"
)

// UCIDatasets are the paper's five datasets in the paper's column order.
var UCIDatasets = []string{"pol", "elevators", "bike", "protein", "keggdirected"}

// uciRows is the number of rows of each UCI dataset; every split holds one
// tenth of them as test points (data/uci README).
var uciRows = map[string]int{"pol": 15000, "elevators": 16599, "bike": 17379, "protein": 45730, "keggdirected": 48827}

// NumSplits is the number of train/test splits of each UCI dataset.
const NumSplits = 10

// Settings are the knobs of one job besides its dataset, split, solver and
// warm start. DefaultSettings gives the paper's values (appendix B). Settings
// that do not apply to a job's solver are zeroed by Job.Normalize, so that
// changing, say, the AP block size does not invalidate finished CG jobs.
type Settings struct {
	Kernel       string  `json:"kernel"`         // kernel family, "matern32" in the paper
	Probes       int     `json:"probes"`         // s, the number of Gaussian probe vectors (16)
	LearningRate float64 `json:"learning_rate"`  // Adam's learning rate (0.1)
	RelTolMean   float64 `json:"rel_tol_mean"`   // ε_rel for H v_y = y (0.01)
	RelTolProbes float64 `json:"rel_tol_probes"` // ε_rel for H v_j = z_j (0.1)
	Seed         uint64  `json:"seed"`           // seeds probes (and SGD's batches)

	BlockSize       int     `json:"block_size,omitempty"`        // AP block size (2000)
	BatchSize       int     `json:"batch_size,omitempty"`        // SGD mini-batch size (1000)
	Momentum        float64 `json:"momentum,omitempty"`          // SGD momentum (0.9)
	SGDLearningRate float64 `json:"sgd_learning_rate,omitempty"` // SGD step size; 0 = the solver's documented default

	// SGDRawLearningRate is SGD's learning rate in the paper's units
	// (solvers.SGD.RawLearningRate, e.g. 90 for pol); 0 = the normalised
	// SGDLearningRate. At most one of the two may be set.
	SGDRawLearningRate float64 `json:"sgd_raw_learning_rate,omitempty"`

	PrecondRank   int `json:"precond_rank,omitempty"`   // CG pivoted-Cholesky preconditioner rank; 0 = none (the paper)
	MaxIterations int `json:"max_iterations,omitempty"` // cap on solver iterations per step; 0 = solver default

	Float32 bool `json:"float32,omitempty"` // kernel operator in float32 (kernel.Float32)
}

// DefaultSettings returns the paper's settings: Matérn-3/2 ARD kernel, 16
// probes, Adam learning rate 0.1, tolerances 0.01 (mean) and 0.1 (probes),
// AP block size 2000, SGD batch size 1000 and momentum 0.9. The paper's SGD
// learning rates depend on the dataset: see PaperSGDLearningRates.
func DefaultSettings() Settings {
	return Settings{
		Kernel:       "matern32",
		Probes:       16,
		LearningRate: 0.1,
		RelTolMean:   0.01,
		RelTolProbes: 0.1,
		BlockSize:    2000,
		BatchSize:    1000,
		Momentum:     0.9,
	}
}

// PaperSGDLearningRates returns the SGD learning rates of the paper's
// appendix B, found there by grid search, by dataset name. They are in the
// paper's units (solvers.SGD.RawLearningRate): Grid.SGDRawLearningRates
// takes this map, as gpnb reproduce does by default.
func PaperSGDLearningRates() map[string]float64 {
	return map[string]float64{"pol": 90, "elevators": 20, "bike": 100, "protein": 20, "keggdirected": 30}
}

// Job is one training run of the grid. It is stored as DIR/jobs/<ID>/job.json;
// a rerun whose job differs from the stored one is refused.
type Job struct {
	Dataset   string   `json:"dataset"`          // a UCI name or synthetic-N-D-SEED
	Split     int      `json:"split"`            // 0–9
	Subset    int      `json:"subset,omitempty"` // training points kept; 0 = all
	Solver    string   `json:"solver"`           // cg, ap, sgd or cholesky
	WarmStart bool     `json:"warm_start"`       // fixed probes and previous solutions as initial guesses
	Steps     int      `json:"steps"`            // Adam steps
	Settings  Settings `json:"settings"`
}

// Mode is "warm" or "cold", or "exact" for the Cholesky reference.
func (j Job) Mode() string {
	switch {
	case j.Solver == SolverCholesky:
		return "exact"
	case j.WarmStart:
		return "warm"
	}
	return "cold"
}

// ID names the job's directory: <dataset>-s<split>-<solver>-<cold|warm|exact>.
func (j Job) ID() string {
	return fmt.Sprintf("%s-s%d-%s-%s", j.Dataset, j.Split, j.Solver, j.Mode())
}

// Normalize zeroes the settings that do not apply to the job's solver and
// returns the result. Jobs are stored and compared in this form.
func (j Job) Normalize() Job {
	s := &j.Settings
	if j.Solver != SolverAP {
		s.BlockSize = 0
	}
	if j.Solver != SolverSGD {
		s.BatchSize, s.Momentum, s.SGDLearningRate, s.SGDRawLearningRate = 0, 0, 0, 0
	}
	if j.Solver != SolverCG {
		s.PrecondRank = 0
	}
	if j.Solver == SolverCholesky {
		j.WarmStart = false
		s.Probes, s.RelTolMean, s.RelTolProbes, s.MaxIterations, s.Float32 = 0, 0, 0, 0, false
	}
	return j
}

// Validate reports the first thing wrong with j, saying how to fix it.
func (j Job) Validate() error {
	if _, err := ParseDataset(j.Dataset); err != nil {
		return err
	}
	if j.Split < 0 || j.Split >= NumSplits {
		return fmt.Errorf("%w: split %d: use 0-%d", ErrGrid, j.Split, NumSplits-1)
	}
	if j.Subset < 0 {
		return fmt.Errorf("%w: subset %d: give a positive number of training points, or 0 for all", ErrGrid, j.Subset)
	}
	if _, err := ParseSolvers(j.Solver); err != nil {
		return err
	}
	if j.Steps <= 0 {
		return fmt.Errorf("%w: steps %d: give a positive number of Adam steps (the paper uses 100)", ErrGrid, j.Steps)
	}
	return j.Settings.validate(j.Solver)
}

func (s Settings) validate(solver string) error {
	bad := func(name string, v any, want string) error {
		return fmt.Errorf("%w: %s = %v: %s", ErrGrid, name, v, want)
	}
	pos := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
	if s.Kernel == "" {
		return bad("kernel", `""`, "name a kernel family such as matern32")
	}
	if !pos(s.LearningRate) {
		return bad("learning rate", s.LearningRate, "must be a positive finite number (the paper uses 0.1)")
	}
	if s.MaxIterations < 0 {
		return bad("max iterations", s.MaxIterations, "must be ≥ 0 (0 = solver default)")
	}
	if solver == SolverCholesky {
		return nil
	}
	if s.Probes <= 0 {
		return bad("probes", s.Probes, "must be positive (the paper uses 16)")
	}
	if !pos(s.RelTolMean) || !pos(s.RelTolProbes) {
		return bad("tolerances", fmt.Sprint(s.RelTolMean, s.RelTolProbes), "must be positive finite numbers (the paper uses 0.01 and 0.1)")
	}
	switch solver {
	case SolverAP:
		if s.BlockSize <= 0 {
			return bad("AP block size", s.BlockSize, "must be positive (the paper uses 2000)")
		}
	case SolverSGD:
		if s.BatchSize <= 0 {
			return bad("SGD batch size", s.BatchSize, "must be positive (the paper uses 1000)")
		}
		if !(s.Momentum >= 0 && s.Momentum < 1) {
			return bad("SGD momentum", s.Momentum, "must be in [0, 1) (the paper uses 0.9)")
		}
		if s.SGDLearningRate < 0 || math.IsNaN(s.SGDLearningRate) || math.IsInf(s.SGDLearningRate, 0) {
			return bad("SGD learning rate", s.SGDLearningRate, "must be a positive finite number, or 0 for the solver's default")
		}
		if s.SGDRawLearningRate < 0 || math.IsNaN(s.SGDRawLearningRate) || math.IsInf(s.SGDRawLearningRate, 0) {
			return bad("SGD raw learning rate", s.SGDRawLearningRate, "must be a positive finite number in the paper's units (pol 90), or 0 for the normalised rate")
		}
		if s.SGDRawLearningRate > 0 && s.SGDLearningRate > 0 {
			return bad("SGD raw learning rate", s.SGDRawLearningRate, fmt.Sprintf("is set together with the normalised SGD learning rate %v: set only one", s.SGDLearningRate))
		}
	case SolverCG:
		if s.PrecondRank < 0 {
			return bad("preconditioner rank", s.PrecondRank, "must be ≥ 0 (0 = no preconditioner, as in the paper)")
		}
	}
	return nil
}

// DatasetSpec is a parsed dataset name.
type DatasetSpec struct {
	Name string // as given
	UCI  bool   // one of UCIDatasets
	// For synthetic-N-D-SEED: N training points, D input dimensions, SEED.
	N, D int
	Seed uint64
}

// ParseDataset parses a UCI dataset name (pol, elevators, bike, protein,
// keggdirected) or synthetic-N-D-SEED, a synthetic problem with N training
// points in D dimensions drawn with seed SEED (split k uses seed SEED+k).
func ParseDataset(name string) (DatasetSpec, error) {
	if _, ok := uciRows[name]; ok {
		return DatasetSpec{Name: name, UCI: true}, nil
	}
	if rest, ok := strings.CutPrefix(name, "synthetic-"); ok {
		p := strings.Split(rest, "-")
		if len(p) == 3 {
			n, e1 := strconv.Atoi(p[0])
			d, e2 := strconv.Atoi(p[1])
			seed, e3 := strconv.ParseUint(p[2], 10, 64)
			if e1 == nil && e2 == nil && e3 == nil && n >= 2 && d >= 1 {
				return DatasetSpec{Name: name, N: n, D: d, Seed: seed}, nil
			}
		}
		return DatasetSpec{}, fmt.Errorf("%w: dataset %q: write synthetic-N-D-SEED with N ≥ 2 training points, D ≥ 1 dimensions and a seed, e.g. synthetic-200-3-1", ErrGrid, name)
	}
	return DatasetSpec{}, fmt.Errorf("%w: unknown dataset %q: use %s, or synthetic-N-D-SEED", ErrGrid, name, strings.Join(UCIDatasets, ", "))
}

// ApproxTrainSize returns the number of training points of a job's dataset
// after its subset, exact for synthetic data and to within one point for the
// UCI splits (nine tenths of the rows).
func ApproxTrainSize(spec DatasetSpec, subset int) int {
	n := spec.N
	if spec.UCI {
		r := uciRows[spec.Name]
		n = r - r/NumSplits
	}
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
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		lo, hi := f, f
		if a, b, ok := strings.Cut(f, "-"); ok {
			lo, hi = a, b
		}
		l, e1 := strconv.Atoi(strings.TrimSpace(lo))
		h, e2 := strconv.Atoi(strings.TrimSpace(hi))
		if e1 != nil || e2 != nil {
			return nil, fmt.Errorf("%w: splits %q: write a range such as 0-9 or a list such as 0,3,5", ErrGrid, f)
		}
		if l > h {
			return nil, fmt.Errorf("%w: split range %q is empty: write low-high with low ≤ high, e.g. 0-9", ErrGrid, f)
		}
		if l < 0 || h >= NumSplits {
			return nil, fmt.Errorf("%w: splits %q: splits are 0-%d", ErrGrid, f, NumSplits-1)
		}
		for k := l; k <= h; k++ {
			seen[k] = true
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("%w: no split given: use a range such as 0-9", ErrGrid)
	}
	out := make([]int, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Ints(out)
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
	Solvers   []string // cg, ap, sgd; each runs cold and warm
	Subset    int      // training points kept per dataset; 0 = all
	Steps     int      // Adam steps per job (100)
	Exact     ExactMode
	ExactMaxN int // for ExactAuto; 0 means DefaultExactMaxN
	Settings  Settings
	// SGDLearningRates overrides Settings.SGDLearningRate per dataset name.
	SGDLearningRates map[string]float64
	// SGDRawLearningRates sets Settings.SGDRawLearningRate per dataset name
	// (clearing the normalised rate for that dataset);
	// PaperSGDLearningRates gives the paper's. A dataset in both maps is an
	// error.
	SGDRawLearningRates map[string]float64
	// Modes selects "cold", "warm" or both (nil: both) for the iterative
	// solvers.
	Modes []string
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
// solver cold then warm, then the exact reference job if the grid asks for
// one. Jobs are normalised and validated.
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
	var jobs []Job
	for _, ds := range g.Datasets {
		spec, err := ParseDataset(ds)
		if err != nil {
			return nil, err
		}
		for _, split := range g.Splits {
			base := Job{Dataset: ds, Split: split, Subset: g.Subset, Steps: g.Steps, Settings: g.Settings}
			if lr, ok := g.SGDLearningRates[ds]; ok {
				base.Settings.SGDLearningRate = lr
			}
			if raw, ok := g.SGDRawLearningRates[ds]; ok {
				if _, both := g.SGDLearningRates[ds]; both {
					return nil, fmt.Errorf("%w: dataset %s has both a normalised and a raw SGD learning rate: give one", ErrGrid, ds)
				}
				base.Settings.SGDLearningRate, base.Settings.SGDRawLearningRate = 0, raw
			}
			for _, solver := range g.Solvers {
				if solver == SolverCholesky {
					continue // added below, once
				}
				for _, warm := range []bool{false, true} {
					if !g.wantMode(warm) {
						continue
					}
					j := base
					j.Solver, j.WarmStart = solver, warm
					jobs = append(jobs, j.Normalize())
				}
			}
			hasChol := false
			for _, s := range g.Solvers {
				hasChol = hasChol || s == SolverCholesky
			}
			if exact == ExactAlways || hasChol || (exact == ExactAuto && ApproxTrainSize(spec, g.Subset) <= maxN) {
				if exact != ExactNever || hasChol {
					j := base
					j.Solver = SolverCholesky
					jobs = append(jobs, j.Normalize())
				}
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
