package repro

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/solvers"
)

// parseCase is one input of a parser of this package and what it must
// give: want, or, when err is set, an ErrGrid error whose text contains err.
type parseCase[T any] struct {
	in   string
	want T
	err  string
}

// checkParse runs parse, named name in the messages, on every case.
func checkParse[T any](t *testing.T, name string, parse func(string) (T, error), cases []parseCase[T]) {
	t.Helper()
	for _, tc := range cases {
		got, err := parse(tc.in)
		switch {
		case tc.err != "":
			if !errors.Is(err, ErrGrid) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s(%q) error = %v, want ErrGrid saying %q", name, tc.in, err, tc.err)
			}
		case err != nil || !reflect.DeepEqual(got, tc.want):
			t.Errorf("%s(%q) = %+v, %v; want %+v", name, tc.in, got, err, tc.want)
		}
	}
}

// TestParsers: the command line's lists and names (gpnb reproduce
// --datasets, --splits, --solvers, --modes, --estimators, --budgets,
// --exact) parse to their values, and a bad one is ErrGrid saying what is
// wrong.
func TestParsers(t *testing.T) {
	checkParse(t, "ParseSplits", ParseSplits, []parseCase[[]int]{
		{"0-9", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, ""},
		{"3", []int{3}, ""},
		{"0,3,5", []int{0, 3, 5}, ""},
		{"5,0-2,2", []int{0, 1, 2, 5}, ""},
		{" 1 - 2 ", []int{1, 2}, ""},
		{"3-1", nil, "is empty"},
		{"0-10", nil, "splits are 0-9"},
		{"-1", nil, "write a range"},
		{"a", nil, "write a range"},
		{"", nil, "no split"},
	})
	checkParse(t, "ParseSeeds", ParseSeeds, []parseCase[[]uint64]{
		{"0-4", []uint64{0, 1, 2, 3, 4}, ""},
		{"7,3,3", []uint64{3, 7}, ""},
		{"4-2", nil, "is empty"},
		{"x", nil, "write a range"},
		{"", nil, "no seed"},
	})
	checkParse(t, "ParseDataset", ParseDataset, []parseCase[DatasetSpec]{
		{"pol", DatasetSpec{Name: "pol", UCI: true, N: 13500, D: 26}, ""}, // 15000 rows, a tenth for testing
		{"keggdirected", DatasetSpec{Name: "keggdirected", UCI: true, N: 43945, D: 20}, ""},
		{"synthetic-200-3-7", DatasetSpec{Name: "synthetic-200-3-7", N: 200, D: 3, Seed: 7}, ""},
		{"synthetic-200-3", DatasetSpec{}, "synthetic-N-D-SEED"},
		{"synthetic-1-3-0", DatasetSpec{}, "N ≥ 2"},
		{"synthetic-10-0-0", DatasetSpec{}, "D ≥ 1"},
		{"Pol", DatasetSpec{}, "unknown dataset"},
		{"mnist", DatasetSpec{}, "unknown dataset"},
	})
	checkParse(t, "ParseDatasets", ParseDatasets, []parseCase[[]string]{
		{"pol,,bike,pol", []string{"pol", "bike"}, ""},
		{" , ", nil, "no dataset given"},
	})
	checkParse(t, "ParseSolvers", ParseSolvers, []parseCase[[]string]{
		{"CG, ap,sgd,cg", []string{"cg", "ap", "sgd"}, ""},
		{"cg,lbfgs", nil, `unknown solver "lbfgs"`},
		{"", nil, "no solver given"},
	})
	checkParse(t, "ParseModes", ParseModes, []parseCase[[]string]{
		{"warm, Cold,warm", []string{"warm", "cold"}, ""},
		{"warm,hot", nil, `unknown mode "hot"`},
	})
	checkParse(t, "ParseEstimators", ParseEstimators, []parseCase[[]gpnb.EstimatorKind]{
		{"Pathwise, hutchinson,pathwise", []gpnb.EstimatorKind{gpnb.Pathwise, gpnb.Hutchinson}, ""},
		{"exact", nil, `unknown estimator "exact"`},
		{"cholesky", nil, `unknown estimator "cholesky"`},
		{"foo", nil, `unknown estimator "foo"`},
		{"", nil, "no estimator given"},
	})
	checkParse(t, "ParseBudgets", ParseBudgets, []parseCase[[]float64]{
		{"none,10, 20,0,50", []float64{0, 10, 20, 50}, ""},
		{"-1", nil, `budget "-1"`},
		{"x", nil, `budget "x"`},
		{"inf", nil, `budget "inf"`},
		{"", nil, "no budget given"},
	})
	checkParse(t, "ParseExactMode", ParseExactMode, []parseCase[ExactMode]{
		{" Always", ExactAlways, ""},
		{"never", ExactNever, ""},
		{"maybe", "", "use auto, always or never"},
	})
}

func TestGridJobs(t *testing.T) {
	g := Grid{Datasets: []string{"synthetic-50-2-1", "pol"}, Splits: []int{0, 1}, Solvers: []string{"cg", "sgd"},
		Steps: 5, Config: paperBase()}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	// synthetic (n=50 ≤ 6000) gets the exact job under auto, full pol (n=13500) does not.
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID())
	}
	want := []string{
		"synthetic-50-2-1-s0-cg-cold", "synthetic-50-2-1-s0-cg-warm", "synthetic-50-2-1-s0-sgd-cold", "synthetic-50-2-1-s0-sgd-warm", "synthetic-50-2-1-s0-cholesky-exact",
		"synthetic-50-2-1-s1-cg-cold", "synthetic-50-2-1-s1-cg-warm", "synthetic-50-2-1-s1-sgd-cold", "synthetic-50-2-1-s1-sgd-warm", "synthetic-50-2-1-s1-cholesky-exact",
		"pol-s0-cg-cold", "pol-s0-cg-warm", "pol-s0-sgd-cold", "pol-s0-sgd-warm",
		"pol-s1-cg-cold", "pol-s1-cg-warm", "pol-s1-sgd-cold", "pol-s1-sgd-warm",
	}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("ids =\n%v\nwant\n%v", ids, want)
	}
	// Normalisation: CG jobs carry no SGD or AP settings, SGD jobs keep theirs.
	// Each solver carries its own parameters, the paper's by default.
	if m := jobs[0].Config.Solver; m != (solvers.CG{}) {
		t.Errorf("CG job's solver: %+v", m)
	}
	// The default rules, the authors', set SGD's rule fields too.
	if m := jobs[2].Config.Solver; m != (solvers.SGD{BatchSize: 1000, Momentum: 0.9, ResidualStart: solvers.ResidualB, NoVerify: true}) {
		t.Errorf("SGD job's solver: %+v", m)
	}
	if j := jobs[4]; j.Config.Probes != 0 || j.Config.WarmStart || j.Config.Solver != (solvers.Cholesky{}) || j.Config.Estimator != gpnb.ExactGradient {
		t.Errorf("exact job: %+v", j)
	}

	g.Subset = 2000
	if jobs, _ = g.Jobs(); len(jobs) != 20 {
		t.Errorf("subset 2000: %d jobs, want 20 (exact job for pol too)", len(jobs))
	}
	g.Exact = ExactNever
	if jobs, _ = g.Jobs(); len(jobs) != 16 {
		t.Errorf("exact never: %d jobs, want 16", len(jobs))
	}
	g.Exact, g.Subset = ExactAlways, 0
	if jobs, _ = g.Jobs(); len(jobs) != 20 {
		t.Errorf("exact always: %d jobs, want 20", len(jobs))
	}
	g.Modes = []string{"warm"}
	if jobs, _ = g.Jobs(); len(jobs) != 12 || !jobs[0].Config.WarmStart || jobs[0].ID() != "synthetic-50-2-1-s0-cg-warm" {
		t.Errorf("warm only: %d jobs, first %s", len(jobs), jobs[0].ID())
	}
	g.Modes = nil
	g.Steps = 0
	if _, err := g.Jobs(); err == nil || !strings.Contains(err.Error(), "steps") {
		t.Errorf("steps 0: error = %v", err)
	}
	g.Steps, g.Exact = 5, "sometimes"
	if _, err := g.Jobs(); err == nil || !strings.Contains(err.Error(), "auto, always or never") {
		t.Errorf("bad exact mode: error = %v", err)
	}
}

func TestJobValidate(t *testing.T) {
	base, err := PaperJob("pol", 0, "sgd", false, 1)
	if err != nil {
		t.Fatal(err)
	}
	sgd := func(j *Job, f func(*solvers.SGD)) {
		m := j.Config.Solver.(solvers.SGD)
		f(&m)
		j.Config.Solver = m
	}
	for _, tc := range []struct {
		name string
		mod  func(*Job)
		err  string
	}{
		{"ok", func(*Job) {}, ""},
		{"momentum", func(j *Job) { sgd(j, func(m *solvers.SGD) { m.Momentum = 1 }) }, "Momentum"},
		{"batch", func(j *Job) { sgd(j, func(m *solvers.SGD) { m.BatchSize = -1 }) }, "BatchSize"},
		{"probes", func(j *Job) { j.Config.Probes = -1 }, "Probes"},
		{"lr", func(j *Job) { j.Config.LearningRate = -1 }, "LearningRate"},
		{"split", func(j *Job) { j.Split = 10 }, "split 10"},
		{"subset", func(j *Job) { j.Subset = -3 }, "subset"},
		{"ap block", func(j *Job) { j.Config.Solver = solvers.AP{BlockSize: -2} }, "BlockSize"},
		{"raw lr negative", func(j *Job) { sgd(j, func(m *solvers.SGD) { m.RawLearningRate = -1 }) }, "RawLearningRate"},
		{"raw lr NaN", func(j *Job) { sgd(j, func(m *solvers.SGD) { m.RawLearningRate = math.NaN() }) }, "RawLearningRate"},
		{"raw and normalised", func(j *Job) { sgd(j, func(m *solvers.SGD) { m.LearningRate = 2 }) }, "set one of them"},
		{"steps", func(j *Job) { j.Steps = 0 }, "steps"},
	} {
		j := base
		tc.mod(&j)
		err := j.Validate()
		if tc.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error = %v, want %q", tc.name, err, tc.err)
		}
	}
}

// SGDRatesPaper: the paper's SGD learning rates reach SGD jobs of the
// paper's datasets in its units, subsets included; other datasets keep the
// grid's SGD rate.
func TestGridPaperSGDRates(t *testing.T) {
	g := Grid{Datasets: []string{"pol", "bike", "synthetic-50-2-1"}, Splits: []int{0}, Solvers: []string{"cg", "sgd"},
		Steps: 5, Exact: ExactNever, Config: paperBase(), SGDRates: SGDRatesPaper, Subset: 500,
		Methods: map[string]solvers.Method{"sgd": solvers.SGD{BatchSize: 100, LearningRate: 2}}}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"pol-s0-sgd-cold": 90, "pol-s0-sgd-warm": 90, "bike-s0-sgd-cold": 100, "bike-s0-sgd-warm": 100}
	for _, j := range jobs {
		m, ok := j.Config.Solver.(solvers.SGD)
		if !ok {
			continue
		}
		if m.RawLearningRate != want[j.ID()] {
			t.Errorf("%s: raw SGD learning rate %v, want %v", j.ID(), m.RawLearningRate, want[j.ID()])
		}
		if norm := map[bool]float64{true: 0, false: 2}[want[j.ID()] > 0]; m.LearningRate != norm || m.BatchSize != 100 {
			t.Errorf("%s: normalised rate %v, batch %d: want %v, 100", j.ID(), m.LearningRate, m.BatchSize, norm)
		}
	}
	if p := gpnb.PaperSGDLearningRates(); len(p) != 5 || p["elevators"] != 20 || p["protein"] != 20 || p["keggdirected"] != 30 {
		t.Errorf("paper rates %v, want pol 90, elevators 20, bike 100, protein 20, keggdirected 30 (appendix B)", p)
	}
}

// TestGridAutoSGDRates: SGDRatesAuto, the default, gives SGD the paper's
// rate only where a job is the paper's run (all of the training split of a
// dataset the paper names, batches of 1000, no rate of the grid's own), and
// the normalised default on subsets, with other batches, on other
// datasets; a rate the grid's method sets stands.
func TestGridAutoSGDRates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		subset int
		sgd    solvers.Method // nil: no Methods entry (gpnb.Paper's)
		want   map[string]float64
	}{
		{"whole split", 0, nil, map[string]float64{"pol": 90, "elevators": 20, "synthetic-50-2-1": 0}},
		{"whole split, batch 1000", 0, solvers.SGD{BatchSize: 1000}, map[string]float64{"pol": 90, "elevators": 20, "synthetic-50-2-1": 0}},
		{"subset", 1500, nil, map[string]float64{"pol": 0, "elevators": 0, "synthetic-50-2-1": 0}},
		{"other batch", 0, solvers.SGD{BatchSize: 500}, map[string]float64{"pol": 0, "elevators": 0, "synthetic-50-2-1": 0}},
		{"rate given", 0, solvers.SGD{LearningRate: 2}, map[string]float64{"pol": 0, "elevators": 0, "synthetic-50-2-1": 0}},
	} {
		g := Grid{Datasets: []string{"pol", "elevators", "synthetic-50-2-1"}, Splits: []int{0}, Solvers: []string{"sgd"},
			Steps: 5, Exact: ExactNever, Config: paperBase(), Subset: tc.subset}
		if tc.sgd != nil {
			g.Methods = map[string]solvers.Method{"sgd": tc.sgd}
		}
		jobs, err := g.Jobs()
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			m := j.Config.Solver.(solvers.SGD)
			if m.RawLearningRate != tc.want[j.Dataset] {
				t.Errorf("%s: %s: raw rate %v, want %v", tc.name, j.ID(), m.RawLearningRate, tc.want[j.Dataset])
			}
		}
	}
}

// TestGridSeeds: a grid's seeds are jobs of their own, named ...-seed<k>
// but for seed 0, each with its seed for the probes and SGD's batches.
func TestGridSeeds(t *testing.T) {
	g := Grid{Datasets: []string{"pol"}, Splits: []int{0}, Solvers: []string{"ap", "sgd"}, Steps: 5, Exact: ExactNever,
		Config: paperBase(), Subset: 1500, Seeds: []uint64{0, 3}, Modes: []string{"cold"}}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID())
		if m, ok := j.Config.Solver.(solvers.SGD); ok && m.Seed != j.Config.Seed {
			t.Errorf("%s: SGD seed %d, job seed %d", j.ID(), m.Seed, j.Config.Seed)
		}
	}
	if want := "pol-s0-ap-cold pol-s0-sgd-cold pol-s0-ap-cold-seed3 pol-s0-sgd-cold-seed3"; strings.Join(ids, " ") != want {
		t.Errorf("jobs %v, want %s", ids, want)
	}
}
