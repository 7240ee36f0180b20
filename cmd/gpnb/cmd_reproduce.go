package main

import (
	"context"
	"errors"
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
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/gpnb/repro"
)

func init() {
	register(&command{name: "reproduce", short: "run the paper's experiment grid (resumable) into a results directory", run: runReproduce})
}

func runReproduce(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("reproduce", "--out DIR [--datasets pol,elevators,...] [--solvers cg,ap,sgd] [--splits 0-9] [--seeds 0-4] [--subset N] [--steps 100] [--estimators hutchinson,pathwise] [--budgets 0,10,20] [flags]\n\nEvery job runs with the paper's settings (appendix B) and the authors' stopping rules unless a flag changes them; the run flags are those of gpnb train.", stderr)
	var (
		datasets  = fs.String("datasets", strings.Join(repro.UCIDatasets, ","), "comma-separated datasets: UCI names, or synthetic-N-D-SEED (N training points, D inputs, seed SEED; split k uses SEED+k)")
		solverStr = fs.String("solvers", "cg,ap,sgd", "comma-separated solvers, each run cold and with warm start: cg, ap, sgd (cholesky: the exact reference)")
		splits    = fs.String("splits", "0-9", "splits: a range 0-9, a list 0,3,5, or a mix")
		modes     = fs.String("modes", "cold,warm", "which of cold and warm (warm start) to run for each iterative solver")
		estimStr  = fs.String("estimators", "hutchinson", "comma-separated gradient estimators each iterative solver runs with: hutchinson (the paper's), pathwise (probes from random-feature prior samples; --features sets their number); jobs other than hutchinson are named ...-pathwise")
		budgetStr = fs.String("budgets", "0", "comma-separated solver budgets per step in epochs (passes over H: a CG iteration 1, an AP block or SGD batch |I|/n), each a job of its own named ...-bB; 0 (or none): no budget, solve to the tolerances")
		subset    = fs.Int("subset", 0, "keep this many training points of each split (0 = all); the test split stays whole")
		steps     = fs.Int("steps", 100, "Adam steps per job")
		out       = fs.String("out", "", "output directory (required); rerun with the same one to resume")
		exact     = fs.String("exact", "auto", "exact Cholesky reference job per dataset and split: auto (when n ≤ --exact-max-n), always or never")
		exactMaxN = fs.Int("exact-max-n", repro.DefaultExactMaxN, "largest n for which --exact auto adds the Cholesky reference job")
		maxJobs   = fs.Int("max-jobs", 0, "stop after running this many jobs (0 = all); rerun to continue")
		dryRun    = fs.Bool("dry-run", false, "run nothing: list every job of the grid as done (with its runtime and test LLH), started (the step its checkpoint holds) or not started, and whether another gpnb reproduce is running it now")
		dataDir   = fs.String("data-dir", "", "directory of the UCI files (overrides $GPNB_DATA)")
		shardStr  = fs.String("shard", "", "K/N: run only shard K (0 ≤ K < N) of the grid dealt into N parts balanced by estimated cost, as one task of a cluster's array job (scripts/slurm/reproduce.sbatch); the shards share --out, whose shards.json keeps the deal, so a grown grid moves no job")
		status    = fs.Bool("status", false, "run nothing: list every shard's jobs of the sharded run in --out (done, running now and where, started at step k, not started); reads the grid from --out/shards.json")
	)
	seedStr := fs.String("seeds", "", "comma-separated seeds (of the probes and SGD's batches) or ranges such as 0-4, each a job of its own named ...-seedK (seed 0 keeps the paper's names); empty: --seed alone")
	var rf runFlags
	var bf backendFlags
	def := defaultTarget()
	def.Config.DropResidualTraces = true
	rf.register(fs, stderr, def, except("solver", "warm-start", "checkpoint", "estimator", "budget", "noise", "signal", "lengthscales"))
	bf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "out DIR", *out); err != nil {
		return err
	}
	if *status {
		return reproduceStatus(*out, stdout)
	}
	var shard *repro.Shard
	if *shardStr != "" {
		s, err := repro.ParseShard(*shardStr)
		if err != nil {
			return err
		}
		shard = &s
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
	ests, err := repro.ParseEstimators(*estimStr)
	if err != nil {
		return fmt.Errorf("--estimators: %w", err)
	}
	budgets, err := repro.ParseBudgets(*budgetStr)
	if err != nil {
		return fmt.Errorf("--budgets: %w", err)
	}
	if *subset < 0 {
		return fmt.Errorf("--subset %d: give a positive number of training points, or 0 for all", *subset)
	}
	if *maxJobs < 0 {
		return fmt.Errorf("--max-jobs %d: give a number ≥ 0 (0 = all)", *maxJobs)
	}
	g, machine, err := rf.grid()
	if err != nil {
		return err
	}
	if *seedStr != "" {
		if rf.given("seed") || rf.given("sgd-seed") {
			return errors.New("--seeds gives every job its seed (of the probes and SGD's batches): leave out --seed and --sgd-seed")
		}
		if g.Seeds, err = repro.ParseSeeds(*seedStr); err != nil {
			return fmt.Errorf("--seeds: %w", err)
		}
	}
	g.Datasets, g.Splits, g.Solvers, g.Subset, g.Steps, g.Exact, g.ExactMaxN, g.Modes = ds, sp, sv, *subset, *steps, em, *exactMaxN, md
	g.Estimators, g.Budgets = ests, budgets
	jobs, err := g.Jobs()
	if err != nil {
		return err
	}
	if shard != nil {
		// A dry run deals without recording the deal.
		if jobs, err = (&repro.Runner{Dir: *out}).ShardJobs(jobs, *shard, !*dryRun); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "gpnb reproduce: shard %s: %s of the grid\n", shard, nJobs(len(jobs)))
	}
	if *dryRun {
		plan, err := (&repro.Runner{Dir: *out}).Plan(jobs)
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
		fmt.Fprintf(stdout, "%d jobs in %s: %d done, %d started, %d not started", len(plan), *out,
			count[repro.Done], count[repro.Started], count[repro.NotStarted])
		if running > 0 {
			fmt.Fprintf(stdout, "; %d running now in another process", running)
		}
		fmt.Fprintln(stdout)
		return nil
	}
	trainer := repro.GPTrainer{DataDir: *dataDir, MemoryBudget: machine.Operator.MemoryBudget, Workers: machine.Operator.Workers, KeepResiduals: !machine.DropResidualTraces}
	if trainer.Backend, err = bf.backend(g.Config.Operator.Mode, g.Config.Operator.Precision); err != nil {
		return err
	}
	env := reproEnvironment()
	env["backend"] = "cpu"
	if trainer.Backend != nil {
		devs, err := cuda.Devices()
		if err != nil {
			return fmt.Errorf("--backend cuda: %w", err)
		}
		if bf.device < 0 || bf.device >= len(devs) {
			return fmt.Errorf("--device %d: this machine has %d CUDA device(s), numbered from 0", bf.device, len(devs))
		}
		d := devs[bf.device]
		env["backend"] = "cuda"
		env["gpu"] = fmt.Sprintf("%s (compute capability %d.%d, %d SMs, %.0f GiB, driver API %d)", d.Name, d.Major, d.Minor, d.SMs, float64(d.TotalMemory)/(1<<30), d.Driver)
	}
	// SIGTERM as SIGINT: Slurm sends it on scancel, preemption and at the
	// time limit, and the job then checkpoints before it exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &repro.Runner{Dir: *out, Trainer: trainer, Log: stderr, TTY: ttyWriter(stderr),
		MaxJobs: *maxJobs, KeepResiduals: trainer.KeepResiduals, Command: append([]string{"gpnb", "reproduce"}, args...), Environment: env,
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
