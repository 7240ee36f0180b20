package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/gpnb/gpnb/cuda"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/gpnb/repro"
)

func init() {
	register(&command{name: "reproduce", short: "run the paper's experiment grid (resumable) into a results directory", run: runReproduce})
}

func runReproduce(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("reproduce", "--out DIR [--datasets pol,elevators,...] [--solvers cg,ap,sgd] [--splits 0-9] [--subset N] [--steps 100] [flags]", stderr)
	def := repro.DefaultSettings()
	var (
		datasets  = fs.String("datasets", strings.Join(repro.UCIDatasets, ","), "comma-separated datasets: UCI names, or synthetic-N-D-SEED (N training points, D inputs, seed SEED; split k uses SEED+k)")
		solverStr = fs.String("solvers", "cg,ap,sgd", "comma-separated solvers, each run cold and with warm start: cg, ap, sgd")
		splits    = fs.String("splits", "0-9", "splits: a range 0-9, a list 0,3,5, or a mix")
		modes     = fs.String("modes", "cold,warm", "which of cold and warm (warm start) to run for each iterative solver")
		subset    = fs.Int("subset", 0, "keep this many training points of each split (0 = all); the test split stays whole")
		steps     = fs.Int("steps", 100, "Adam steps per job")
		out       = fs.String("out", "", "output directory (required); rerun with the same one to resume")
		exact     = fs.String("exact", "auto", "exact Cholesky reference job per dataset and split: auto (when n ≤ --exact-max-n), always or never")
		exactMaxN = fs.Int("exact-max-n", repro.DefaultExactMaxN, "largest n for which --exact auto adds the Cholesky reference job")
		opMode    = fs.String("operator", "auto", "kernel operator storage: auto (dense when the n×n cache fits the memory budget, else matrix-free), dense or matrixfree")
		memBudget = fs.String("memory-budget", "auto", "bytes the dense kernel cache may use, e.g. 16GiB (auto = half of physical memory)")
		maxJobs   = fs.Int("max-jobs", 0, "stop after running this many jobs (0 = all); rerun to continue")
		kernName  = fs.String("kernel", def.Kernel, "kernel: matern12, matern32, matern52 or rbf")
		probes    = fs.Int("probes", def.Probes, "Gaussian probe vectors s")
		lr        = fs.Float64("lr", def.LearningRate, "Adam learning rate")
		tolMean   = fs.Float64("tol-mean", def.RelTolMean, "relative residual tolerance of the mean system H v = y")
		tolProbes = fs.Float64("tol-probes", def.RelTolProbes, "relative residual tolerance of the probe systems H v = z")
		maxIter   = fs.Int("max-iterations", 0, "cap on solver iterations per step (0 = the solver's default)")
		seed      = fs.Uint64("seed", 0, "seed of the probes and of SGD's mini-batches")
		blockSize = fs.Int("block-size", def.BlockSize, "AP block size")
		batchSize = fs.Int("batch-size", def.BatchSize, "SGD mini-batch size")
		momentum  = fs.Float64("momentum", def.Momentum, "SGD momentum")
		sgdLR     = fs.String("sgd-lr", "paper", "SGD learning rate: paper (the paper's rates in its units: pol 90, elevators 20, bike 100, protein 20, keggdirected 30; the normalised default for other datasets), a number in the solvers package's normalised units for every dataset (0 = its default 1.0), or raw:N (N in the paper's units for every dataset)")
		precond   = fs.Int("precond-rank", 0, "CG pivoted-Cholesky preconditioner rank (0 = none, as in the paper)")
		dryRun    = fs.Bool("dry-run", false, "run nothing: list every job of the grid as done (with its runtime and test LLH), started (the step its checkpoint holds) or not started, and whether another gpnb reproduce is running it now")
		keepRes   = fs.Bool("keep-residuals", false, "record per-iteration residual traces in checkpoints and result.json (large: a cold SGD job adds megabytes a step)")
		dataDir   = fs.String("data-dir", "", "directory of the UCI files (overrides $GPNB_DATA)")
		backend   = fs.String("backend", "cpu", "kernel operator backend: cpu, or cuda (a binary built with -tags cuda and an NVIDIA GPU); keep one backend per --out directory")
		device    = fs.Int("device", 0, "CUDA device ordinal (with --backend cuda)")
		precision precisionFlag
	)
	precision.register(fs, "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		fmt.Fprintln(stderr, "gpnb reproduce: --out DIR is required")
		fs.Usage()
		return errUsage
	}
	ds, err := repro.ParseDatasets(*datasets)
	if err != nil {
		return fmt.Errorf("--datasets: %w", err)
	}
	sv, err := repro.ParseSolvers(*solverStr)
	if err != nil {
		return fmt.Errorf("--solvers: %w", err)
	}
	sp, err := repro.ParseSplits(*splits)
	if err != nil {
		return fmt.Errorf("--splits: %w", err)
	}
	md, err := repro.ParseModes(*modes)
	if err != nil {
		return fmt.Errorf("--modes: %w", err)
	}
	em, err := repro.ParseExactMode(*exact)
	if err != nil {
		return err
	}
	mode, err := kernel.ParseMode(*opMode)
	if err != nil {
		return fmt.Errorf("--operator: %w", err)
	}
	budget, err := kernel.ParseBytes(*memBudget)
	if err != nil {
		return fmt.Errorf("--memory-budget: %w", err)
	}
	if *subset < 0 {
		return fmt.Errorf("--subset %d: give a positive number of training points, or 0 for all", *subset)
	}
	if *maxJobs < 0 {
		return fmt.Errorf("--max-jobs %d: give a number ≥ 0 (0 = all)", *maxJobs)
	}
	prec, err := precision.get()
	if err != nil {
		return err
	}
	set := repro.Settings{Kernel: *kernName, Probes: *probes, LearningRate: *lr, RelTolMean: *tolMean, RelTolProbes: *tolProbes,
		Seed: *seed, BlockSize: *blockSize, BatchSize: *batchSize, Momentum: *momentum,
		PrecondRank: *precond, MaxIterations: *maxIter, Float32: prec == kernel.Float32}
	g := repro.Grid{Datasets: ds, Splits: sp, Solvers: sv, Subset: *subset, Steps: *steps, Exact: em, ExactMaxN: *exactMaxN, Settings: set, Modes: md}
	if err := parseSGDRate(*sgdLR, &g); err != nil {
		return err
	}
	jobs, err := g.Jobs()
	if err != nil {
		return err
	}
	if *dryRun {
		plan, err := (&repro.Runner{Dir: *out}).Plan(jobs)
		if err != nil {
			return err
		}
		count, running := map[string]int{}, 0
		for _, p := range plan {
			fmt.Fprintln(stdout, p)
			count[p.State]++
			if p.RunningBy != "" {
				running++
			}
		}
		fmt.Fprintf(stdout, "%d jobs in %s: %d done, %d started, %d not started", len(plan), *out,
			count[repro.PlanDone], count[repro.PlanStarted], count[repro.PlanNotStarted])
		if running > 0 {
			fmt.Fprintf(stdout, "; %d running now in another process", running)
		}
		fmt.Fprintln(stdout)
		return nil
	}
	trainer := repro.GPTrainer{DataDir: *dataDir, Operator: kernel.Options{Mode: mode, MemoryBudget: budget}, KeepResiduals: *keepRes}
	if trainer.Backend, err = parseBackend(*backend, *device, mode, prec); err != nil {
		return err
	}
	env := reproEnvironment()
	env["backend"] = "cpu"
	if trainer.Backend != nil {
		devs, err := cuda.Devices()
		if err != nil {
			return fmt.Errorf("--backend cuda: %w", err)
		}
		if *device < 0 || *device >= len(devs) {
			return fmt.Errorf("--device %d: this machine has %d CUDA device(s), numbered from 0", *device, len(devs))
		}
		d := devs[*device]
		env["backend"] = "cuda"
		env["gpu"] = fmt.Sprintf("%s (compute capability %d.%d, %d SMs, %.0f GiB, driver API %d)", d.Name, d.Major, d.Minor, d.SMs, float64(d.TotalMemory)/(1<<30), d.Driver)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &repro.Runner{Dir: *out, Trainer: trainer, Log: stderr, TTY: reproIsTerminal(stderr),
		MaxJobs: *maxJobs, KeepResiduals: *keepRes, Command: append([]string{"gpnb", "reproduce"}, args...), Environment: env,
		MachineRate: machineRate}
	fmt.Fprintf(stderr, "gpnb reproduce: %d jobs into %s; ", len(jobs), *out)
	sum, err := r.Run(ctx, jobs)
	if errors.Is(err, repro.ErrInterrupted) {
		return fmt.Errorf("%w\n(gpnb reproduce: rerun with the same flags and --out %s to resume)", err, *out)
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
	fmt.Fprintf(stdout, ".\nRender the tables with: gpnb table --in %s\n", *out)
	return nil
}

// reproIsTerminal reports whether w is a terminal (a character device), where
// progress is one line rewritten in place.
func reproIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// reproEnvironment describes the machine and build for status.json.
func reproEnvironment() map[string]string {
	env := map[string]string{
		"go":         runtime.Version(),
		"goos":       runtime.GOOS,
		"goarch":     runtime.GOARCH,
		"gomaxprocs": strconv.Itoa(runtime.GOMAXPROCS(0)),
		"numcpu":     strconv.Itoa(runtime.NumCPU()),
		"blas":       kernel.BLASName(),
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
	return env
}

// parseSGDRate applies gpnb reproduce's --sgd-lr to g: "paper" sets the
// paper's per-dataset raw rates, a number the normalised rate for every
// dataset, raw:N the raw rate N for every dataset.
func parseSGDRate(v string, g *repro.Grid) error {
	v = strings.ToLower(strings.TrimSpace(v))
	bad := func() error {
		return fmt.Errorf("--sgd-lr %q: use paper, a number ≥ 0 (normalised units; 0 = the default 1.0) or raw:N with N > 0 (the paper's units, e.g. raw:90)", v)
	}
	switch {
	case v == "paper":
		g.SGDRawLearningRates = repro.PaperSGDLearningRates()
	case strings.HasPrefix(v, "raw:"):
		x, err := strconv.ParseFloat(strings.TrimPrefix(v, "raw:"), 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return bad()
		}
		g.Settings.SGDRawLearningRate = x
	default:
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x >= 0) || math.IsInf(x, 0) {
			return bad()
		}
		g.Settings.SGDLearningRate = x
	}
	return nil
}
