// Command migrate-results rewrites the JSON files of results directories in
// the formats this version of gpnb writes, once, so that the readers of the
// earlier formats can go:
//
//	go run -tags openblas ./scripts/migrate-results [-data DIR] RESULTS...
//
// For every folder with a job.json (DIR/jobs/<id>/):
//
//   - job.json: the flat form of the first runs and configurations without
//     "rules" become today's {dataset, split, subset, steps, config} with
//     the rules written out (repro.Job's reader, Normalize);
//   - result.json: the test metrics (test_rmse, test_llh, eval_method,
//     samples) become Result.Test, a gpnb.Eval, with the metrics in the
//     data's units computed from the training split's statistics (its
//     subset's for a subset run); a result without a configuration gets its
//     job's, resolved as State.Result records it. Where the run's training
//     set has at most 6000 points, its test metrics are computed again by
//     Cholesky at its final θ, and a difference beyond 1e-8 is an error (it
//     would mean other data than the run's);
//   - partial.json (`gpnb inspect --json` of the checkpoint of a job cut
//     short) becomes the gpnb.Result of the job so far, as State.Result
//     gives it, with the step records the snapshot kept;
//   - status.json (in the folder above jobs/): a job "pending" becomes
//     "started" or "not started", as gpnb reproduce now names it.
//
// Any other *.json file holding a gpnb.Result (gpnb train --json) is
// migrated as a result.json, its configuration made from the result's own
// fields and the paper's settings (gpnb train's defaults when those runs
// were made) where it has none. Files already in today's form are left as
// they are.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/gpnb/repro"
	"github.com/gpnb/gpnb/gpnb/results"
	"github.com/gpnb/gpnb/internal/atomicfile"
	"github.com/gpnb/gpnb/solvers"
)

var dataDir = flag.String("data", os.Getenv("GPNB_DATA"), "directory of the UCI files")

func main() {
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: migrate-results [-data DIR] RESULTS...")
		os.Exit(2)
	}
	var n int
	for _, root := range flag.Args() {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
				return err
			}
			changed, err := migrate(path)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if changed {
				n++
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "migrate-results:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("migrate-results: %d files rewritten\n", n)
}

// migrate rewrites one file when it is in an earlier form.
func migrate(path string) (bool, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	inJob := fileExists(filepath.Join(dir, repro.JobFile)) && filepath.Base(filepath.Dir(dir)) == results.JobsDir
	switch {
	case base == repro.JobFile && inJob:
		return migrateJob(path)
	case base == results.ResultFile && inJob:
		return migrateResult(path, false)
	case base == "partial.json" && inJob:
		return migratePartial(path)
	case base == repro.StatusFile:
		return migrateStatus(path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(b, &probe) != nil || probe["history"] == nil || probe["steps_done"] == nil {
		return false, nil // not a result
	}
	return migrateResult(path, true)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// readJob reads the job.json beside a file, in its earlier forms too.
func readJob(dir string) (repro.Job, error) {
	b, err := os.ReadFile(filepath.Join(dir, repro.JobFile))
	if err != nil {
		return repro.Job{}, err
	}
	var j repro.Job
	if err := json.Unmarshal(b, &j); err != nil {
		return repro.Job{}, err
	}
	return j.Normalize(), nil
}

func migrateJob(path string) (bool, error) {
	j, err := readJob(filepath.Dir(path))
	if err != nil {
		return false, err
	}
	return write(path, j, true)
}

// write writes v as the runner would and reports whether the bytes changed.
func write(path string, v any, indent bool) (bool, error) {
	old, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var b []byte
	if indent {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return false, err
	}
	if bytes.Equal(old, append(b, '\n')) {
		return false, nil
	}
	return true, atomicfile.WriteJSON(path, v, indent)
}

// oldTest is a result's test metrics in the earlier form.
type oldTest struct {
	RMSE    *float64         `json:"test_rmse"`
	LLH     *float64         `json:"test_llh"`
	Method  string           `json:"eval_method"`
	Samples *gpnb.SampleEval `json:"samples"`
}

func migrateResult(path string, standalone bool) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return false, err
	}
	var old oldTest
	if err := json.Unmarshal(b, &old); err != nil {
		return false, err
	}
	for _, k := range []string{"test_rmse", "test_llh", "eval_method", "samples"} {
		delete(fields, k)
	}
	rest, _ := json.Marshal(fields)
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	var r gpnb.Result
	if err := dec.Decode(&r); err != nil {
		return false, err
	}
	var job *repro.Job
	if !standalone {
		j, err := readJob(filepath.Dir(path))
		if err != nil {
			return false, err
		}
		job = &j
	}
	if r.Config == nil {
		c, err := configOf(r, job)
		if err != nil {
			return false, err
		}
		r.Config = &c
	}
	if r.Test == nil && old.LLH != nil && old.RMSE != nil && old.Method != "" && old.Method != "not evaluated" {
		ev, err := evaluation(r, job, old)
		if err != nil {
			return false, err
		}
		r.Test = &ev
	}
	return write(path, r, standalone)
}

// configOf is the configuration of a result that recorded none: its job's,
// or for a gpnb train run the paper's settings with the result's solver,
// warm start, probes and seed, under the paper's-text rules (the only rules
// then); resolved and stripped as State.Result records it.
func configOf(r gpnb.Result, job *repro.Job) (gpnb.Config, error) {
	var c gpnb.Config
	if job != nil {
		c = job.Config
	} else {
		p, err := gpnb.Paper(r.Solver, r.Dataset)
		if err != nil {
			return c, err
		}
		c = p
		c.WarmStart, c.Probes, c.Seed, c.Rules = r.WarmStart, r.Probes, r.Seed, solvers.RulesPaperText
		if f, err := kernel.ParseFamily(r.Kernel); err == nil {
			c.Kernel = f
		}
	}
	c, err := c.Resolve(r.D)
	if err != nil {
		return c, err
	}
	c.CheckpointPath, c.Operator.MemoryBudget, c.Operator.Workers, c.DropResidualTraces = "", 0, 0, false
	// A capped step ran to the cap: the resolved cap must be the one the
	// run had.
	for _, s := range r.History {
		if !s.SolverConverged && !s.BudgetStop && !s.SolverStalled && s.SolverIterations != c.Settings.MaxIterations && c.Estimator != gpnb.ExactGradient {
			return c, fmt.Errorf("step %d stopped unconverged after %d iterations, but the resolved cap is %d", s.Step, s.SolverIterations, c.Settings.MaxIterations)
		}
	}
	return c, nil
}

// evaluation is the old metrics as a gpnb.Eval, with those in the data's
// units from the training data's statistics, checked against a Cholesky
// evaluation at the final θ where n ≤ 6000.
func evaluation(r gpnb.Result, job *repro.Job, old oldTest) (gpnb.Eval, error) {
	ev := gpnb.Eval{TestRMSE: *old.RMSE, TestLLH: *old.LLH, NTest: r.NTest, Method: old.Method, Samples: old.Samples}
	subset := 0
	if job != nil {
		subset = job.Subset
	}
	ds, err := load(r.Dataset, r.Split, subset)
	if err == nil && job == nil && ds.NTrain() > r.NTrain {
		ds, err = load(r.Dataset, r.Split, r.NTrain) // gpnb train --subset
	}
	if err != nil {
		return ev, err
	}
	if ds.NTrain() != r.NTrain || ds.NTest() != r.NTest {
		return ev, fmt.Errorf("the data have %d training and %d test points, the result %d and %d", ds.NTrain(), ds.NTest(), r.NTrain, r.NTest)
	}
	ev.DataRMSE, ev.DataLLH = ev.TestRMSE, ev.TestLLH
	if st := ds.Stats; st.Normalised {
		ev.DataRMSE, ev.DataLLH = ev.TestRMSE*st.YStd, ev.TestLLH-math.Log(st.YStd)
	}
	if r.NTrain <= 6000 {
		if err := check(ds, r, ev); err != nil {
			return ev, err
		}
	}
	return ev, nil
}

var loaded = map[string]*data.Dataset{}

func load(name string, split, subset int) (*data.Dataset, error) {
	key := fmt.Sprint(name, split, subset)
	if ds, ok := loaded[key]; ok {
		return ds, nil
	}
	opts := []data.Option{data.Split(split)}
	if subset > 0 {
		opts = append(opts, data.Subset(subset))
	}
	if *dataDir != "" {
		opts = append(opts, data.Dir(*dataDir))
	}
	ds, err := data.Open(name, opts...)
	if err == nil {
		loaded[key] = ds
	}
	return ds, err
}

// check evaluates the result's final θ by Cholesky and compares.
func check(ds *data.Dataset, r gpnb.Result, ev gpnb.Eval) error {
	fam, err := kernel.ParseFamily(r.Kernel)
	if err != nil {
		return err
	}
	k := kernel.Kernel{Family: fam, Hyper: kernel.Hyper{Lengthscales: r.Final.Lengthscales, Signal: r.Final.Signal, Noise: r.Final.Noise}}
	e, err := gpnb.NewExact(ds.XTrain, ds.YTrain, k)
	if err != nil {
		return err
	}
	mean, variance, err := e.Predict(ds.XTest)
	if err != nil {
		return err
	}
	rmse, llh := gpnb.TestRMSE(mean, ds.YTest), gpnb.TestLLH(mean, variance, ds.YTest)
	if math.Abs(rmse-ev.TestRMSE) > 1e-8*math.Abs(rmse) || math.Abs(llh-ev.TestLLH) > 1e-8*math.Max(1, math.Abs(llh)) {
		return fmt.Errorf("evaluated again: RMSE %.12g LLH %.12g; recorded %.12g %.12g", rmse, llh, ev.TestRMSE, ev.TestLLH)
	}
	return nil
}

// inspection is the part of `gpnb inspect --json` a partial.json holds.
type inspection struct {
	Kind          string       `json:"kind"`
	Data          string       `json:"data"`
	N             int          `json:"n_train"`
	D             int          `json:"d"`
	Config        *gpnb.Config `json:"config"`
	Steps         int          `json:"steps"`
	Theta         []float64    `json:"theta"`
	TotalSeconds  float64      `json:"total_seconds"`
	SolverSeconds float64      `json:"solver_seconds"`
	History       []struct {
		Step             int     `json:"step"`
		SolverIterations int     `json:"solver_iterations"`
		SolverConverged  bool    `json:"solver_converged"`
		SolverStalled    bool    `json:"solver_stalled"`
		BudgetStop       bool    `json:"budget_stop"`
		StepSeconds      float64 `json:"step_seconds"`
		SolverSeconds    float64 `json:"solver_seconds"`
		Noise            float64 `json:"noise"`
		Signal           float64 `json:"signal"`
		InitDistance     float64 `json:"init_distance"`
		ZeroInitDistance float64 `json:"zero_init_distance"`
	} `json:"history"`
}

var nTestRe = regexp.MustCompile(`(\d+) test`)

func migratePartial(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var in inspection
	if err := json.Unmarshal(b, &in); err != nil {
		return false, err
	}
	if in.Kind != "checkpoint" {
		return false, nil // already a result
	}
	job, err := readJob(filepath.Dir(path))
	if err != nil {
		return false, err
	}
	if in.Config == nil || len(in.Theta) != in.D+2 || len(in.History) != in.Steps {
		return false, errors.New("not a checkpoint's inspection with its configuration, θ and history")
	}
	c := *in.Config
	c.CheckpointPath, c.Operator.MemoryBudget, c.Operator.Workers, c.DropResidualTraces = "", 0, 0, false
	h := kernel.HyperFromVector(in.Theta)
	r := gpnb.Result{Dataset: job.Dataset, Split: job.Split, NTrain: in.N, D: in.D, Kernel: c.Kernel.String(),
		Solver: job.Method().Solver, WarmStart: c.WarmStart, Probes: c.Probes, Seed: c.Seed, StepsDone: in.Steps,
		TotalSeconds: in.TotalSeconds, SolverSeconds: in.SolverSeconds,
		Final: gpnb.Final{Noise: h.Noise, Signal: h.Signal, Lengthscales: h.Lengthscales}, Config: &c}
	if m := nTestRe.FindStringSubmatch(in.Data); m != nil {
		r.NTest, _ = strconv.Atoi(m[1])
	}
	for _, s := range in.History {
		r.History = append(r.History, gpnb.StepRecord{Step: s.Step, SolverIterations: s.SolverIterations, SolverConverged: s.SolverConverged,
			SolverStalled: s.SolverStalled, BudgetStop: s.BudgetStop, StepSeconds: s.StepSeconds, SolverSeconds: s.SolverSeconds,
			Noise: s.Noise, Signal: s.Signal, InitDistance: s.InitDistance, ZeroInitDistance: s.ZeroInitDistance})
	}
	return write(path, r, true)
}

func migrateStatus(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var st repro.Status
	if err := json.Unmarshal(b, &st); err != nil {
		return false, err
	}
	for i, j := range st.Jobs {
		if j.State != "pending" {
			continue
		}
		jd := filepath.Join(filepath.Dir(path), results.JobsDir, j.ID)
		st.Jobs[i].State = "not started"
		if fileExists(filepath.Join(jd, repro.CheckpointFile)) || fileExists(filepath.Join(jd, "partial.json")) {
			st.Jobs[i].State = "started"
		}
	}
	return write(path, st, true)
}
