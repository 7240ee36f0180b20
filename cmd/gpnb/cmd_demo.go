package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
		short: "warm start vs zero init for CG, AP and SGD on a pol subset (or synthetic data)",
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

// polAvailable reports whether pol's files are on disk ($GPNB_DATA or the
// user cache), so the demo never downloads.
func polAvailable(dir string) (string, bool) {
	var dirs []string
	if dir != "" {
		dirs = append(dirs, dir)
	}
	if env := os.Getenv("GPNB_DATA"); env != "" {
		dirs = append(dirs, env)
	}
	if c, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(c, "gpnb", "uci"))
	}
	for _, d := range dirs {
		_, e1 := os.Stat(filepath.Join(d, "pol", "data.csv.gz"))
		_, e2 := os.Stat(filepath.Join(d, "pol", "test_mask.csv.gz"))
		if e1 == nil && e2 == nil {
			return d, true
		}
	}
	return "", false
}

func runDemo(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", "[--n 2000] [--steps 30] [--solvers cg,ap,sgd] [--synthetic] [--json FILE|-]", stderr)
	n := fs.Int("n", 2000, "training points: a pol subset of this size (split 0), or synthetic data")
	steps := fs.Int("steps", 30, "Adam steps per run")
	list := fs.String("solvers", "cg,ap,sgd", "comma-separated solvers to compare")
	synthetic := fs.Bool("synthetic", false, "use synthetic data even when the pol files are present")
	dataDir := fs.String("data-dir", "", "directory of the UCI files (default $GPNB_DATA, then the user cache)")
	blockSize := fs.Int("block-size", 0, "AP block size (0: n/8)")
	batchSize := fs.Int("batch-size", 0, "SGD mini-batch size (0: n/10)")
	probes := fs.Int("probes", gpnb.DefaultProbes, "Hutchinson probes")
	seed := fs.Uint64("seed", 0, "probe seed")
	jsonPath := fs.String("json", "", "write the table as JSON to this file (- for stdout, replacing the table)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 10 || *steps < 1 || *probes < 1 {
		return fmt.Errorf("--n %d, --steps %d, --probes %d: need n ≥ 10, steps ≥ 1, probes ≥ 1", *n, *steps, *probes)
	}
	var ds *data.Dataset
	var err error
	if dir, ok := polAvailable(*dataDir); ok && !*synthetic {
		ds, err = data.Load("pol", data.Split(0), data.Subset(*n), data.Dir(dir))
	} else {
		if !*synthetic {
			fmt.Fprintln(stderr, "gpnb demo: pol files not found ($GPNB_DATA or the user cache): using synthetic data")
		}
		ds, err = data.Synthetic(*n, 8, 1)
	}
	if err != nil {
		return err
	}
	nt := ds.NTrain()
	bs := *blockSize
	if bs == 0 {
		bs = max(nt/8, 1)
	}
	mb := *batchSize
	if mb == 0 {
		mb = max(nt/10, 1)
	}
	res := demoResult{Dataset: ds.String(), NTrain: nt, NTest: ds.NTest(), D: ds.D(), Steps: *steps}
	fmt.Fprintf(stderr, "gpnb demo: %s; %d Adam steps per run, %d probes\n", ds, *steps, *probes)
	for _, name := range strings.Split(*list, ",") {
		var m solvers.Method
		switch strings.TrimSpace(strings.ToLower(name)) {
		case "cg":
			m = solvers.CG{}
		case "ap":
			m = solvers.AP{BlockSize: bs}
		case "sgd":
			m = solvers.SGD{BatchSize: mb, Seed: *seed}
		default:
			return fmt.Errorf("--solvers: unknown solver %q: use cg, ap, sgd", name)
		}
		row := demoRow{Solver: m.Name()}
		for _, warm := range []bool{false, true} {
			o, err := gpnb.NewOptimiser(ds, gpnb.Config{Solver: m, WarmStart: warm, Probes: *probes, Seed: *seed})
			if err != nil {
				return err
			}
			t0 := time.Now()
			if err := o.Run(context.Background(), *steps); err != nil {
				if errors.Is(err, context.Canceled) {
					return fmt.Errorf("gpnb demo: interrupted during %s (%s); nothing to resume, run it again", m.Name(), map[bool]string{true: "warm", false: "cold"}[warm])
				}
				return err
			}
			ev, err := o.Evaluate()
			if err != nil {
				return err
			}
			h := o.History()
			hp := o.Hyper()
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
		res.Rows = append(res.Rows, row)
	}
	if *jsonPath == "-" {
		return writeJSON("-", res, stdout)
	}
	fmt.Fprintf(stdout, "\nWarm start vs zero init on %s, %d steps (ratios measured in this run)\n\n", res.Dataset, res.Steps)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "solver\titers cold\titers warm\tsolver s cold\tsolver s warm\tspeed-up\ttest LLH cold\ttest LLH warm\t")
	for _, r := range res.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.2f\t%.1f×\t%.3f\t%.3f\t\n", r.Solver, r.ItersCold, r.ItersWarm, r.SolverSecCold, r.SolverSecWarm, r.SpeedUp, r.TestLLHCold, r.TestLLHWarm)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeJSON(*jsonPath, res, stdout)
}
