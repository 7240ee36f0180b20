package repro

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/data"
)

func TestParseSplits(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  string // substring of the error; "" for success
	}{
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
	} {
		got, err := ParseSplits(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrGrid) {
				t.Errorf("ParseSplits(%q) error = %v, want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseSplits(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseDataset(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want DatasetSpec
		err  string
	}{
		{"pol", DatasetSpec{Name: "pol", UCI: true}, ""},
		{"keggdirected", DatasetSpec{Name: "keggdirected", UCI: true}, ""},
		{"synthetic-200-3-7", DatasetSpec{Name: "synthetic-200-3-7", N: 200, D: 3, Seed: 7}, ""},
		{"synthetic-200-3", DatasetSpec{}, "synthetic-N-D-SEED"},
		{"synthetic-1-3-0", DatasetSpec{}, "N ≥ 2"},
		{"synthetic-10-0-0", DatasetSpec{}, "D ≥ 1"},
		{"Pol", DatasetSpec{}, "unknown dataset"},
		{"mnist", DatasetSpec{}, "unknown dataset"},
	} {
		got, err := ParseDataset(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseDataset(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseDataset(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParseDatasets("pol,,bike,pol"); err != nil {
		t.Error(err)
	}
	if _, err := ParseDatasets(" , "); err == nil {
		t.Error("empty dataset list accepted")
	}
}

func TestParseSolvers(t *testing.T) {
	got, err := ParseSolvers("CG, ap,sgd,cg")
	if err != nil || !reflect.DeepEqual(got, []string{"cg", "ap", "sgd"}) {
		t.Errorf("ParseSolvers = %v, %v", got, err)
	}
	if _, err := ParseSolvers("cg,lbfgs"); err == nil || !strings.Contains(err.Error(), `unknown solver "lbfgs"`) {
		t.Errorf("unknown solver: error = %v", err)
	}
	if _, err := ParseSolvers(""); err == nil {
		t.Error("empty solver list accepted")
	}
}

func TestGridJobs(t *testing.T) {
	g := Grid{Datasets: []string{"synthetic-50-2-1", "pol"}, Splits: []int{0, 1}, Solvers: []string{"cg", "sgd"},
		Steps: 5, Settings: DefaultSettings()}
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
	if s := jobs[0].Settings; s.BlockSize != 0 || s.BatchSize != 0 || s.Momentum != 0 {
		t.Errorf("CG job keeps foreign settings: %+v", s)
	}
	if s := jobs[2].Settings; s.BatchSize != 1000 || s.Momentum != 0.9 {
		t.Errorf("SGD job settings: %+v", s)
	}
	if j := jobs[4]; j.Settings.Probes != 0 || j.WarmStart {
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
	if jobs, _ = g.Jobs(); len(jobs) != 12 || !jobs[0].WarmStart || jobs[0].ID() != "synthetic-50-2-1-s0-cg-warm" {
		t.Errorf("warm only: %d jobs, first %s", len(jobs), jobs[0].ID())
	}
	if _, err := ParseModes("warm,hot"); err == nil || !strings.Contains(err.Error(), `unknown mode "hot"`) {
		t.Errorf("bad mode: %v", err)
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

func TestSettingsValidate(t *testing.T) {
	base := Job{Dataset: "pol", Solver: "sgd", Steps: 1, Settings: DefaultSettings()}
	for _, tc := range []struct {
		name string
		mod  func(*Job)
		err  string
	}{
		{"ok", func(*Job) {}, ""},
		{"momentum", func(j *Job) { j.Settings.Momentum = 1 }, "momentum"},
		{"batch", func(j *Job) { j.Settings.BatchSize = 0 }, "batch size"},
		{"probes", func(j *Job) { j.Settings.Probes = 0 }, "probes"},
		{"lr", func(j *Job) { j.Settings.LearningRate = -1 }, "learning rate"},
		{"split", func(j *Job) { j.Split = 10 }, "split 10"},
		{"subset", func(j *Job) { j.Subset = -3 }, "subset"},
		{"ap block", func(j *Job) { j.Solver = "ap"; j.Settings.BlockSize = 0 }, "block size"},
		{"raw lr", func(j *Job) { j.Settings.SGDRawLearningRate = 90 }, ""},
		{"raw lr negative", func(j *Job) { j.Settings.SGDRawLearningRate = -1 }, "SGD raw learning rate"},
		{"raw lr NaN", func(j *Job) { j.Settings.SGDRawLearningRate = math.NaN() }, "SGD raw learning rate"},
		{"raw and normalised", func(j *Job) { j.Settings.SGDRawLearningRate, j.Settings.SGDLearningRate = 90, 2 }, "set only one"},
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

// The paper's SGD learning rates reach SGD jobs of the paper's datasets in
// its units; other datasets and other solvers carry none, and a dataset may
// not have both kinds of rate.
func TestGridPaperSGDRates(t *testing.T) {
	g := Grid{Datasets: []string{"pol", "bike", "synthetic-50-2-1"}, Splits: []int{0}, Solvers: []string{"cg", "sgd"},
		Steps: 5, Exact: ExactNever, Settings: DefaultSettings(), SGDRawLearningRates: PaperSGDLearningRates()}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"pol-s0-sgd-cold": 90, "pol-s0-sgd-warm": 90, "bike-s0-sgd-cold": 100, "bike-s0-sgd-warm": 100}
	for _, j := range jobs {
		if got := j.Settings.SGDRawLearningRate; got != want[j.ID()] {
			t.Errorf("%s: raw SGD learning rate %v, want %v", j.ID(), got, want[j.ID()])
		}
		if j.Settings.SGDLearningRate != 0 {
			t.Errorf("%s: normalised rate %v set beside the raw one", j.ID(), j.Settings.SGDLearningRate)
		}
	}
	if p := PaperSGDLearningRates(); len(p) != 5 || p["elevators"] != 20 || p["protein"] != 20 || p["keggdirected"] != 30 {
		t.Errorf("paper rates %v, want pol 90, elevators 20, bike 100, protein 20, keggdirected 30 (appendix B)", p)
	}
	g.SGDLearningRates = map[string]float64{"bike": 2}
	if _, err := g.Jobs(); err == nil || !strings.Contains(err.Error(), "both a normalised and a raw") {
		t.Errorf("bike with both rates: error = %v", err)
	}
}

// InputDims agrees with the UCI files where they are on this machine, and
// with the name of synthetic data.
func TestInputDims(t *testing.T) {
	if spec, _ := ParseDataset("synthetic-200-3-7"); InputDims(spec) != 3 {
		t.Errorf("synthetic-200-3-7: %d inputs", InputDims(spec))
	}
	dir := os.Getenv("GPNB_DATA")
	if dir == "" {
		t.Skip("GPNB_DATA is unset: the UCI shapes cannot be checked against the files")
	}
	for _, name := range UCIDatasets {
		if _, err := os.Stat(filepath.Join(dir, name, data.DataFile)); err != nil {
			t.Logf("%s: %v", name, err)
			continue
		}
		ds, err := data.Load(name, data.Dir(dir), data.Subset(10))
		if err != nil {
			t.Fatal(err)
		}
		spec, _ := ParseDataset(name)
		if got := InputDims(spec); got != ds.D() {
			t.Errorf("%s: InputDims %d, the files have %d inputs", name, got, ds.D())
		}
	}
}
