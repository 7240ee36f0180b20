package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/solvers"
)

func init() {
	register(&command{
		name:  "demo",
		short: "warm start vs zero init for CG, AP and SGD on a pol subset (or data of its shape)",
		run:   runDemo,
	})
}

// demoRow is one solver's cold and warm runs.
type demoRow struct {
	Solver          string  `json:"solver"`
	ItersCold       int     `json:"solver_iterations_cold"`
	ItersWarm       int     `json:"solver_iterations_warm"`
	SolverSecCold   float64 `json:"solver_seconds_cold"`
	SolverSecWarm   float64 `json:"solver_seconds_warm"`
	TotalSecCold    float64 `json:"total_seconds_cold"`
	TotalSecWarm    float64 `json:"total_seconds_warm"`
	SpeedUp         float64 `json:"solver_speedup"`
	IterationRatio  float64 `json:"iteration_ratio"`
	TestLLHCold     float64 `json:"test_llh_cold"`
	TestLLHWarm     float64 `json:"test_llh_warm"`
	TestRMSECold    float64 `json:"test_rmse_cold"`
	TestRMSEWarm    float64 `json:"test_rmse_warm"`
	FinalNoiseCold  float64 `json:"final_noise_cold"`
	FinalNoiseWarm  float64 `json:"final_noise_warm"`
	FinalSignalCold float64 `json:"final_signal_cold"`
	FinalSignalWarm float64 `json:"final_signal_warm"`
}

// demoResult is what "gpnb demo --json" writes.
type demoResult struct {
	Dataset string    `json:"dataset"`
	NTrain  int       `json:"n_train"`
	NTest   int       `json:"n_test"`
	D       int       `json:"d"`
	Steps   int       `json:"steps"`
	Rows    []demoRow `json:"rows"`
}

// demoSettings are the flags of gpnb demo.
type demoSettings struct {
	n, steps, probes, blockSize, batchSize int
	solvers                                string
	synthetic                              bool
	dataDir, jsonPath                      string
	seed                                   uint64
}

func runDemo(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", "[flags]\n\nEach solver cold (zero initial guess) and warm-started, side by side.", stderr)
	var s demoSettings
	fs.IntVar(&s.n, "n", 2000, "training points: a pol subset, or synthetic data of pol's shape")
	fs.IntVar(&s.steps, "steps", 30, "Adam steps per run")
	fs.StringVar(&s.solvers, "solvers", "cg,ap,sgd", "solvers to compare, comma-separated")
	fs.BoolVar(&s.synthetic, "synthetic", false, "synthetic data even where pol's files are")
	fs.StringVar(&s.dataDir, "data-dir", "", "`DIR` of the UCI files (default $GPNB_DATA, the user cache)")
	fs.IntVar(&s.blockSize, "block-size", 0, "AP block size (0: n/8)")
	fs.IntVar(&s.batchSize, "batch-size", 0, "SGD batch size (0: n/10)")
	fs.IntVar(&s.probes, "probes", gpnb.DefaultProbes, "Hutchinson probes")
	fs.Uint64Var(&s.seed, "seed", 0, "seed of the probes and batches")
	fs.StringVar(&s.jsonPath, "json", "", "write the table as JSON to `FILE` (-: stdout, instead of the table)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if s.n < 10 || s.steps < 1 || s.probes < 1 {
		return fmt.Errorf("--n %d, --steps %d, --probes %d: need n ≥ 10, steps ≥ 1, probes ≥ 1", s.n, s.steps, s.probes)
	}
	ds, err := s.data(stderr)
	if err != nil {
		return err
	}
	res := demoResult{Dataset: ds.String(), NTrain: ds.NTrain(), NTest: ds.NTest(), D: ds.D(), Steps: s.steps}
	fmt.Fprintf(stderr, "gpnb demo: %s; %d Adam steps per run, %d probes\n", ds, s.steps, s.probes)
	for _, name := range strings.Split(s.solvers, ",") {
		m, err := s.method(name, ds.NTrain())
		if err != nil {
			return err
		}
		row, err := s.compare(ds, m, stderr)
		if err != nil {
			return err
		}
		res.Rows = append(res.Rows, row)
	}
	if s.jsonPath == "-" {
		return writeJSON("-", res, stdout)
	}
	if err := res.print(stdout); err != nil {
		return err
	}
	return writeJSON(s.jsonPath, res, stdout)
}

// data returns a pol subset, or synthetic data of pol's shape when asked
// for or when pol's files are not on this machine (data.OpenOrSynthetic).
func (s demoSettings) data(stderr io.Writer) (*data.Dataset, error) {
	pol, _ := data.LookupUCI("pol")
	if s.synthetic {
		return pol.Synthetic(0, s.n)
	}
	opts := []data.Option{data.Split(0), data.Subset(s.n)}
	if s.dataDir != "" {
		opts = append(opts, data.Dir(s.dataDir))
	}
	ds, synthetic, err := data.OpenOrSynthetic(pol.Name, opts...)
	if synthetic {
		fmt.Fprintln(stderr, "gpnb demo: pol's files are not on this machine (--data-dir, $GPNB_DATA, the user cache): synthetic data of its shape")
	}
	return ds, err
}

// method returns the solver named name, its block or batch for n points.
func (s demoSettings) method(name string, n int) (solvers.Method, error) {
	switch strings.TrimSpace(strings.ToLower(name)) {
	case "cg":
		return solvers.CG{}, nil
	case "ap":
		if s.blockSize > 0 {
			return solvers.AP{BlockSize: s.blockSize}, nil
		}
		return solvers.AP{BlockSize: max(n/8, 1)}, nil
	case "sgd":
		if s.batchSize > 0 {
			return solvers.SGD{BatchSize: s.batchSize, Seed: s.seed}, nil
		}
		return solvers.SGD{BatchSize: max(n/10, 1), Seed: s.seed}, nil
	}
	return nil, fmt.Errorf("--solvers: unknown solver %q: use cg, ap, sgd", name)
}

// compare trains m cold and warm on ds and returns the row of the two.
func (s demoSettings) compare(ds *data.Dataset, m solvers.Method, stderr io.Writer) (demoRow, error) {
	row := demoRow{Solver: m.Name()}
	for _, warm := range []bool{false, true} {
		o, err := gpnb.NewOptimiser(ds, gpnb.Config{Solver: m, WarmStart: warm, Probes: s.probes, Seed: s.seed})
		if err != nil {
			return row, err
		}
		t0 := time.Now()
		if err := o.Run(context.Background(), s.steps); err != nil {
			if errors.Is(err, context.Canceled) {
				return row, fmt.Errorf("gpnb demo: interrupted during %s (%s); nothing to resume, run it again", m.Name(), map[bool]string{true: "warm", false: "cold"}[warm])
			}
			return row, err
		}
		ev, err := o.Evaluate()
		if err != nil {
			return row, err
		}
		h, hp := o.History(), o.Hyper()
		label := "cold (resampled probes, zero init)"
		if warm {
			label = "warm (fixed probes, warm start)"
			row.ItersWarm, row.SolverSecWarm, row.TotalSecWarm = h.TotalSolverIterations(), h.TotalSolverSeconds(), h.TotalSeconds()
			row.TestLLHWarm, row.TestRMSEWarm, row.FinalNoiseWarm, row.FinalSignalWarm = ev.TestLLH, ev.TestRMSE, hp.Noise, hp.Signal
		} else {
			row.ItersCold, row.SolverSecCold, row.TotalSecCold = h.TotalSolverIterations(), h.TotalSolverSeconds(), h.TotalSeconds()
			row.TestLLHCold, row.TestRMSECold, row.FinalNoiseCold, row.FinalSignalCold = ev.TestLLH, ev.TestRMSE, hp.Noise, hp.Signal
		}
		fmt.Fprintf(stderr, "  %-4s %-36s %6d solver iterations  %7.2fs solver  %7.2fs wall  test LLH %.3f\n", m.Name(), label, h.TotalSolverIterations(), h.TotalSolverSeconds(), time.Since(t0).Seconds(), ev.TestLLH)
	}
	if row.SolverSecWarm > 0 {
		row.SpeedUp = row.SolverSecCold / row.SolverSecWarm
	}
	if row.ItersWarm > 0 {
		row.IterationRatio = float64(row.ItersCold) / float64(row.ItersWarm)
	}
	return row, nil
}

// print writes the table of the rows.
func (res demoResult) print(w io.Writer) error {
	fmt.Fprintf(w, "\nWarm start vs zero init on %s, %d steps (ratios measured in this run)\n\n", res.Dataset, res.Steps)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "solver\titers cold\titers warm\tsolver s cold\tsolver s warm\tspeed-up\ttest LLH cold\ttest LLH warm\t")
	for _, r := range res.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.2f\t%.1f×\t%.3f\t%.3f\t\n", r.Solver, r.ItersCold, r.ItersWarm, r.SolverSecCold, r.SolverSecWarm, r.SpeedUp, r.TestLLHCold, r.TestLLHWarm)
	}
	return tw.Flush()
}
