package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/gpnb/gpnb/cuda"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/gpnb/repro"
)

func init() {
	register(&command{name: "reproduce", short: "run the paper's experiment grid (resumable) into a results directory", run: runReproduce})
}

// reproduceFlags are gpnb reproduce's flags beyond the run flags.
type reproduceFlags struct {
	datasets, solvers, splits, modes, estimators, budgets, seeds, exact *string
	out, dataDir, shard                                                 *string
	subset, steps, exactMaxN, maxJobs                                   *int
	dryRun, status                                                      *bool
	rf                                                                  runFlags
	bf                                                                  backendFlags

	g       repro.Grid  // the grid, once grid has made it
	machine gpnb.Config // the machine's share of the configuration (runFlags.grid)
}

func (f *reproduceFlags) register(fs *flag.FlagSet, stderr io.Writer) {
	f.datasets = fs.String("datasets", strings.Join(repro.UCIDatasets, ","), "UCI names or synthetic-N-D-SEED, comma-separated")
	f.solvers = fs.String("solvers", "cg,ap,sgd", "cg, ap, sgd, each cold and warm (cholesky: the exact reference)")
	f.splits = fs.String("splits", "0-9", "a range 0-9, a list 0,3,5 or a mix")
	f.modes = fs.String("modes", "cold,warm", "cold, warm or both for each solver")
	f.estimators = fs.String("estimators", "hutchinson", "hutchinson and/or pathwise (jobs ...-pathwise)")
	f.budgets = fs.String("budgets", "0", "budgets a step in passes over H, a job each (...-bB; 0: none)")
	f.subset = fs.Int("subset", 0, "training points kept of each split (0: all)")
	f.steps = fs.Int("steps", 100, "Adam steps a job")
	f.out = fs.String("out", "", "output `DIR` (required); the same one resumes")
	f.exact = fs.String("exact", "auto", "Cholesky reference jobs: auto (n ≤ --exact-max-n), always or never")
	f.exactMaxN = fs.Int("exact-max-n", repro.DefaultExactMaxN, "largest n of --exact auto")
	f.maxJobs = fs.Int("max-jobs", 0, "stop after this many jobs (0: all)")
	f.dryRun = fs.Bool("dry-run", false, "run nothing: list each job as done, started (at which step) or not")
	f.dataDir = fs.String("data-dir", "", "`DIR` of the UCI files (default $GPNB_DATA)")
	f.shard = fs.String("shard", "", "`K/N`: run shard K of N, dealt by cost (a cluster array's task)")
	f.status = fs.Bool("status", false, "run nothing: list each shard's jobs in --out")
	f.seeds = fs.String("seeds", "", "seeds or ranges (0-4), a job each (...-seedK; empty: --seed)")
	def := defaultTarget()
	def.Config.DropResidualTraces = true
	f.rf.register(fs, stderr, def, except("solver", "warm-start", "checkpoint", "estimator", "budget", "noise", "signal", "lengthscales", "until", "converged-tol", "converged-steps"))
	f.bf.register(fs)
}

func runReproduce(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("reproduce", "--out DIR [flags]\n\nThe paper's grid of jobs, resumable; each job starts from the paper's settings (gpnb.Paper).", stderr)
	var f reproduceFlags
	f.register(fs, stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "out DIR", *f.out); err != nil {
		return err
	}
	if *f.status {
		return reproduceStatus(*f.out, stdout)
	}
	jobs, err := f.jobs(stderr)
	if err != nil {
		return err
	}
	if *f.dryRun {
		return reproducePlan(*f.out, jobs, stdout)
	}
	return f.run(jobs, args, stdout, stderr)
}

// grid is the grid the flags describe; it sets f.g and f.machine.
func (f *reproduceFlags) grid() (repro.Grid, error) {
	g, machine, err := f.rf.grid()
	if err != nil {
		return g, err
	}
	f.machine = machine
	for _, p := range []struct {
		flag string
		err  error
	}{
		{"--datasets", setParsed(&g.Datasets, *f.datasets, repro.ParseDatasets)},
		{"--solvers", setParsed(&g.Solvers, *f.solvers, repro.ParseSolvers)},
		{"--splits", setParsed(&g.Splits, *f.splits, repro.ParseSplits)},
		{"--modes", setParsed(&g.Modes, *f.modes, repro.ParseModes)},
		{"--estimators", setParsed(&g.Estimators, *f.estimators, repro.ParseEstimators)},
		{"--budgets", setParsed(&g.Budgets, *f.budgets, repro.ParseBudgets)},
	} {
		if p.err != nil {
			return g, fmt.Errorf("%s: %w", p.flag, p.err)
		}
	}
	if g.Exact, err = repro.ParseExactMode(*f.exact); err != nil {
		return g, err
	}
	if *f.subset < 0 {
		return g, fmt.Errorf("--subset %d: give a positive number of training points, or 0 for all", *f.subset)
	}
	if *f.seeds != "" {
		if f.rf.given("seed") || f.rf.given("sgd-seed") {
			return g, errors.New("--seeds gives every job its seed (of the probes and SGD's batches): leave out --seed and --sgd-seed")
		}
		if g.Seeds, err = repro.ParseSeeds(*f.seeds); err != nil {
			return g, fmt.Errorf("--seeds: %w", err)
		}
	}
	g.Subset, g.Steps, g.ExactMaxN = *f.subset, *f.steps, *f.exactMaxN
	f.g = g
	return g, nil
}

// setParsed sets *dst to parse(s).
func setParsed[T any](dst *T, s string, parse func(string) (T, error)) error {
	v, err := parse(s)
	if err == nil {
		*dst = v
	}
	return err
}

// jobs returns the grid's jobs, those of one shard with --shard (dealt and
// recorded in --out's shards.json, except in a dry run).
func (f *reproduceFlags) jobs(stderr io.Writer) ([]repro.Job, error) {
	if *f.maxJobs < 0 {
		return nil, fmt.Errorf("--max-jobs %d: give a number ≥ 0 (0 = all)", *f.maxJobs)
	}
	g, err := f.grid()
	if err != nil {
		return nil, err
	}
	jobs, err := g.Jobs()
	if err != nil || *f.shard == "" {
		return jobs, err
	}
	s, err := repro.ParseShard(*f.shard)
	if err != nil {
		return nil, err
	}
	if jobs, err = (&repro.Runner{Dir: *f.out}).ShardJobs(jobs, s, !*f.dryRun); err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "gpnb reproduce: shard %s: %s of the grid\n", s, nJobs(len(jobs)))
	return jobs, nil
}

// reproducePlan prints, for --dry-run, where every job stands in dir.
func reproducePlan(dir string, jobs []repro.Job, stdout io.Writer) error {
	plan, err := (&repro.Runner{Dir: dir}).Plan(jobs)
	if err != nil {
		return err
	}
	count, running := map[repro.JobState]int{}, 0
	for _, p := range plan {
		fmt.Fprintln(stdout, p)
		count[p.State]++
		if p.RunningBy != "" {
			running++
		}
	}
	fmt.Fprintf(stdout, "%d jobs in %s: %d done, %d started, %d not started", len(plan), dir,
		count[repro.Done], count[repro.Started], count[repro.NotStarted])
	if running > 0 {
		fmt.Fprintf(stdout, "; %d running now in another process", running)
	}
	fmt.Fprintln(stdout)
	return nil
}

// run runs the jobs with the flags' trainer and backend, until done or
// interrupted (SIGINT, or SIGTERM as Slurm sends it on scancel, preemption
// and at the time limit: the job checkpoints before the process exits).
func (f *reproduceFlags) run(jobs []repro.Job, args []string, stdout, stderr io.Writer) error {
	m := f.machine
	trainer := repro.GPTrainer{DataDir: *f.dataDir, MemoryBudget: m.Operator.MemoryBudget, Workers: m.Operator.Workers, KeepResiduals: !m.DropResidualTraces}
	var err error
	if trainer.Backend, err = f.bf.backend(f.g.Config.Operator.Mode, f.g.Config.Operator.Precision); err != nil {
		return err
	}
	env, err := reproEnvironment(trainer.Backend != nil, f.bf.device)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &repro.Runner{Dir: *f.out, Trainer: trainer, Log: stderr, TTY: ttyWriter(stderr),
		MaxJobs: *f.maxJobs, KeepResiduals: trainer.KeepResiduals, Command: append([]string{"gpnb", "reproduce"}, args...), Environment: env,
		MachineRate: machineRate}
	fmt.Fprintf(stderr, "gpnb reproduce: %d jobs into %s; ", len(jobs), *f.out)
	sum, err := r.Run(ctx, jobs)
	if errors.Is(err, repro.ErrInterrupted) {
		return fmt.Errorf("%w\n(gpnb reproduce: rerun with the same flags and --out %s to resume)", err, *f.out)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d of %d jobs finished (%d run now, %d already done)", sum.Total-sum.Pending, sum.Total, sum.Ran, sum.Skipped)
	if sum.Pending > 0 {
		fmt.Fprintf(stdout, "; %d remain: rerun the same command to continue", sum.Pending)
	}
	if len(sum.Elsewhere) > 0 {
		fmt.Fprintf(stdout, " (%d of them being run by another gpnb reproduce now: %s)", len(sum.Elsewhere), strings.Join(sum.Elsewhere, ", "))
	}
	fmt.Fprintf(stdout, ".\nRender the tables with: gpnb table --in %s\n", *f.out)
	return nil
}

// reproEnvironment describes the machine and build for status.json and
// runs.json, with the CUDA device when gpu is true.
func reproEnvironment(gpu bool, device int) (map[string]string, error) {
	env := map[string]string{
		"go":         runtime.Version(),
		"goos":       runtime.GOOS,
		"goarch":     runtime.GOARCH,
		"gomaxprocs": strconv.Itoa(runtime.GOMAXPROCS(0)),
		"numcpu":     strconv.Itoa(runtime.NumCPU()),
		"blas":       kernel.BLASName(),
		"backend":    "cpu",
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "-tags", "vcs.revision", "vcs.modified", "CGO_ENABLED":
				env[s.Key] = s.Value
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				env["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if h, err := os.Hostname(); err == nil {
		env["host"] = h
	}
	if gpu {
		devs, err := cuda.Devices()
		if err != nil {
			return nil, fmt.Errorf("--backend cuda: %w", err)
		}
		if device < 0 || device >= len(devs) {
			return nil, fmt.Errorf("--device %d: this machine has %d CUDA device(s), numbered from 0", device, len(devs))
		}
		d := devs[device]
		env["backend"] = "cuda"
		env["gpu"] = fmt.Sprintf("%s (compute capability %d.%d, %d SMs, %.0f GiB, driver API %d)", d.Name, d.Major, d.Minor, d.SMs, float64(d.TotalMemory)/(1<<30), d.Driver)
	}
	return env, nil
}
