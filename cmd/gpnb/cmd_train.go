package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/cuda"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

func init() {
	register(&command{
		name:  "train",
		short: "optimise the marginal likelihood (Adam + Hutchinson, warm start)",
		run:   runTrain,
	})
}

// trainFlags are the optimiser and solver flags of train (and demo).
type trainFlags struct {
	solver      string
	warmStart   bool
	fixedProbes string
	probes      int
	probeDist   string
	steps       int
	lr          float64
	seed        uint64
	blockSize   int
	batchSize   int
	sgdLR       float64
	momentum    float64
	maxIters    int
	tolMean     float64
	tolProbes   float64
	precision   precisionFlag
	mode        string
	memBudget   string
	trackMLL    bool
	backend     string
	device      int
}

func (t *trainFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.solver, "solver", "cg", "linear solver: cg, ap, sgd, or cholesky (the exact gradient)")
	fs.BoolVar(&t.warmStart, "warm-start", false, "start each solve at the previous solution, with fixed probes (the paper's method)")
	fs.StringVar(&t.fixedProbes, "fixed-probes", "auto", "auto (fixed exactly when --warm-start), true or false")
	fs.IntVar(&t.probes, "probes", gpnb.DefaultProbes, "number of Hutchinson probe vectors s")
	fs.StringVar(&t.probeDist, "probe-dist", "gaussian", "probe distribution: gaussian or rademacher")
	fs.IntVar(&t.steps, "steps", 100, "Adam steps (with --resume: the total to reach)")
	fs.Float64Var(&t.lr, "lr", gpnb.DefaultLearningRate, "Adam learning rate")
	fs.Uint64Var(&t.seed, "seed", 0, "seed of the probe vectors")
	fs.IntVar(&t.blockSize, "block-size", 0, "AP block size (0: 2000, capped at n)")
	fs.IntVar(&t.batchSize, "batch-size", 0, "SGD mini-batch size (0: 1000, capped at n)")
	fs.Float64Var(&t.sgdLR, "sgd-lr", 0, fmt.Sprintf("SGD normalised learning rate (0: the solver's default %v)", solvers.DefaultLearningRate))
	fs.Float64Var(&t.momentum, "momentum", 0, "SGD momentum (0: 0.9; negative: none)")
	fs.IntVar(&t.maxIters, "max-iters", 0, "solver iterations per step at most (0: the solver's default)")
	fs.Float64Var(&t.tolMean, "tol-mean", solvers.DefaultRelTolMean, "relative residual tolerance of the mean system H v = y")
	fs.Float64Var(&t.tolProbes, "tol-probes", solvers.DefaultRelTolProbes, "relative residual tolerance of the probe systems")
	t.precision.register(fs, "")
	fs.StringVar(&t.mode, "operator", "auto", "kernel operator storage: auto, dense or matrixfree")
	fs.StringVar(&t.memBudget, "memory-budget", "auto", "bytes the dense kernel cache may use, e.g. 16GiB (auto: half of physical memory)")
	fs.StringVar(&t.backend, "backend", "cpu", "kernel operator backend: cpu, or cuda (a binary built with -tags cuda and an NVIDIA GPU)")
	fs.IntVar(&t.device, "device", 0, "CUDA device ordinal (with --backend cuda)")
	fs.BoolVar(&t.trackMLL, "track-mll", false, "record the exact (Cholesky) log marginal likelihood at every step (O(n³) per step)")
}

// config builds the optimiser configuration; init is the initial θ.
func (t *trainFlags) config(fam kernel.Family, init kernel.Hyper) (gpnb.Config, error) {
	cfg := gpnb.Config{
		Kernel:        fam,
		WarmStart:     t.warmStart,
		Probes:        t.probes,
		LearningRate:  t.lr,
		Seed:          t.seed,
		Init:          init,
		TrackExactMLL: t.trackMLL,
		Settings:      solvers.Settings{RelTolMean: t.tolMean, RelTolProbes: t.tolProbes, MaxIterations: t.maxIters},
	}
	if t.probes < 1 {
		return cfg, fmt.Errorf("--probes %d: need at least 1 (the paper uses 16)", t.probes)
	}
	if !(t.lr > 0) {
		return cfg, fmt.Errorf("--lr %v: must be > 0 (the paper uses 0.1)", t.lr)
	}
	if !(t.tolMean > 0) || !(t.tolProbes > 0) {
		return cfg, fmt.Errorf("--tol-mean %v / --tol-probes %v: must be > 0", t.tolMean, t.tolProbes)
	}
	if t.maxIters < 0 || t.blockSize < 0 || t.batchSize < 0 || t.sgdLR < 0 {
		return cfg, errors.New("--max-iters, --block-size, --batch-size and --sgd-lr must be ≥ 0 (0 means the default)")
	}
	switch strings.ToLower(t.solver) {
	case "cg":
		cfg.Solver = solvers.CG{}
	case "ap":
		cfg.Solver = solvers.AP{BlockSize: t.blockSize}
	case "sgd":
		cfg.Solver = solvers.SGD{BatchSize: t.batchSize, LearningRate: t.sgdLR, Momentum: t.momentum, Seed: t.seed}
	case "cholesky", "exact":
		cfg.Solver = solvers.CG{}
		cfg.Gradient = gpnb.ExactGradient
	default:
		return cfg, fmt.Errorf("--solver %q: use cg, ap, sgd or cholesky", t.solver)
	}
	switch strings.ToLower(t.fixedProbes) {
	case "auto", "":
	case "true", "yes", "1":
		cfg.FixedProbes = gpnb.ProbesFixed
	case "false", "no", "0":
		cfg.FixedProbes = gpnb.ProbesResampled
	default:
		return cfg, fmt.Errorf("--fixed-probes %q: use auto, true or false", t.fixedProbes)
	}
	switch strings.ToLower(t.probeDist) {
	case "gaussian", "normal":
	case "rademacher":
		cfg.ProbeDist = gpnb.Rademacher
	default:
		return cfg, fmt.Errorf("--probe-dist %q: use gaussian or rademacher", t.probeDist)
	}
	mode, err := kernel.ParseMode(t.mode)
	if err != nil {
		return cfg, fmt.Errorf("--operator: %w", err)
	}
	budget, err := kernel.ParseBytes(t.memBudget)
	if err != nil {
		return cfg, fmt.Errorf("--memory-budget: %w", err)
	}
	prec, err := t.precision.get()
	if err != nil {
		return cfg, err
	}
	cfg.Operator = kernel.Options{Mode: mode, Precision: prec, MemoryBudget: budget}
	cfg.Backend, err = parseBackend(t.backend, t.device, mode, prec)
	return cfg, err
}

// precisionFlag is --precision float64|float32 and its older spelling
// --float32 (train, reproduce, bench).
type precisionFlag struct {
	fs      *flag.FlagSet
	name    string
	float32 bool
}

// register adds the flags to fs; usage, when not "", replaces the
// description of --precision.
func (p *precisionFlag) register(fs *flag.FlagSet, usage string) {
	p.fs = fs
	if usage == "" {
		usage = "kernel operator precision: float64, or float32 (K stored and multiplied in single precision: half the memory, about twice as fast products, accurate to ~1e-6, enough for the paper's tolerances; CG may need more iterations late in training)"
	}
	fs.StringVar(&p.name, "precision", "float64", usage)
	fs.BoolVar(&p.float32, "float32", false, "the same as --precision float32")
}

// get returns the precision the flags ask for.
func (p *precisionFlag) get() (kernel.Precision, error) {
	prec, err := kernel.ParsePrecision(p.name)
	if err != nil {
		return 0, fmt.Errorf("--precision: %w", err)
	}
	if !p.float32 {
		return prec, nil
	}
	explicit := false
	p.fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "precision" })
	if explicit && prec != kernel.Float32 {
		return 0, fmt.Errorf("--float32 and --precision %s contradict each other: give one of them", p.name)
	}
	return kernel.Float32, nil
}

// parseBackend turns the --backend and --device flags (of train and
// reproduce) into a gpnb.Config.Backend: nil for the CPU operator, the GPU
// operator of package cuda for "cuda", with mode and precision as for the
// CPU. A cuda backend in a build without the cuda tag is an error that says
// how to rebuild.
func parseBackend(name string, device int, mode kernel.Mode, prec kernel.Precision) (func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error), error) {
	switch strings.ToLower(name) {
	case "cpu", "":
		return nil, nil
	case "cuda", "gpu":
		if err := cuda.Available(); err != nil {
			return nil, fmt.Errorf("--backend cuda: %w", err)
		}
		return cuda.Backend(cuda.Options{Device: device, Mode: mode, Precision: prec}), nil
	}
	return nil, fmt.Errorf("--backend %q: use cpu or cuda", name)
}

// ttyWriter reports whether w is a character device (a terminal).
func ttyWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress draws "step k/N" lines on a terminal.
type progress struct {
	w      io.Writer
	total  int
	start  time.Time
	first  int // steps done when the bar started
	iters  int // solver iterations so far in the current step
	total0 int // solver iterations of the completed steps
	last   time.Time
	active bool
}

func (p *progress) iteration(step, iter int, _ []float64) {
	p.iters = iter
	if time.Since(p.last) > 200*time.Millisecond {
		p.draw(step - 1)
	}
}

func (p *progress) step(r gpnb.StepRecord) {
	p.iters = 0
	p.total0 += r.SolverIterations
	p.draw(r.Step)
}

func (p *progress) draw(done int) {
	p.last = time.Now()
	el := time.Since(p.start)
	eta := "?"
	if k := done - p.first; k > 0 {
		eta = (time.Duration(float64(el) / float64(k) * float64(p.total-done))).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r\033[Kstep %d/%d  solver iterations %d (this step %d)  elapsed %s  ETA %s", done, p.total, p.total0+p.iters, p.iters, el.Round(time.Second), eta)
	p.active = true
}

func (p *progress) finish() {
	if p.active {
		fmt.Fprintln(p.w)
	}
}

func runTrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("train", "--data D [--split K] [--subset N] [--kernel matern32] --solver cg|ap|sgd|cholesky [--warm-start] [--probes 16] [--steps 100] [--lr 0.1] [--seed S] [--checkpoint FILE] [--resume FILE] [--json FILE|-]\n\n--noise, --signal and --lengthscales give the initial hyperparameters (the paper: all 1.0).", stderr)
	var df dataFlags
	var hf hyperFlags
	var tf trainFlags
	df.register(fs)
	hf.register(fs)
	tf.register(fs)
	ckpt := fs.String("checkpoint", "", "save a checkpoint to this file after every step and on interrupt")
	resume := fs.String("resume", "", "continue the run saved in this checkpoint (same data flags) up to --steps in total")
	jsonPath := fs.String("json", "", "write the result as JSON to this file (- for stdout)")
	eval := fs.Bool("eval", true, "compute test RMSE and log-likelihood at the end")
	residuals := fs.Bool("residuals", true, "record per-iteration residual traces in the history (JSON and checkpoint); false keeps both small")
	quiet := fs.Bool("quiet", false, "no progress bar")
	verbose := fs.Bool("verbose", false, "print one line per step to stderr (hyperparameters, solver iterations, seconds)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if tf.steps < 0 {
		return fmt.Errorf("--steps %d: must be ≥ 0", tf.steps)
	}
	ds, err := df.load()
	if err != nil {
		return err
	}
	k, err := hf.build(ds.D())
	if err != nil {
		return err
	}
	cfg, err := tf.config(k.Family, k.Hyper)
	if err != nil {
		return err
	}
	path := *ckpt
	if path == "" {
		path = *resume
	}
	cfg.CheckpointPath = path
	cfg.DropResidualTraces = !*residuals
	var opt *gpnb.Optimiser
	if *resume != "" {
		opt, err = gpnb.Resume(*resume, ds, gpnb.WithConfig(cfg))
		if err != nil {
			return fmt.Errorf("--resume %s: %w", *resume, err)
		}
		fmt.Fprintf(stderr, "gpnb train: resumed %s at step %d of %d\n", *resume, opt.Steps(), tf.steps)
	} else {
		opt, err = gpnb.NewOptimiser(ds, cfg)
		if err != nil {
			return err
		}
	}
	defer opt.Close()
	var bar *progress
	if !*quiet && ttyWriter(stderr) {
		bar = &progress{w: stderr, total: tf.steps, start: time.Now(), first: opt.Steps(), total0: opt.History().TotalSolverIterations()}
		opt.OnIteration(bar.iteration)
		opt.OnStep(bar.step)
	}
	if *verbose {
		prev := opt.Config().OnStep
		opt.OnStep(func(r gpnb.StepRecord) {
			if prev != nil {
				prev(r)
			}
			if bar != nil {
				fmt.Fprint(stderr, "\r\033[K")
			}
			fmt.Fprintf(stderr, "step %d: %d solver iterations (converged %v) %.3fs solver %.3fs step; noise %.4g signal %.4g lengthscales %.3g\n",
				r.Step, r.SolverIterations, r.SolverConverged, r.SolverSeconds, r.StepSeconds, r.Noise, r.Signal, r.Lengthscales)
			if bar != nil {
				bar.step(r)
			}
		})
	}
	err = opt.RunTo(context.Background(), tf.steps)
	if bar != nil {
		bar.finish()
	}
	if errors.Is(err, context.Canceled) {
		st := opt.State()
		where := fmt.Sprintf("after %d of %d steps", st.Step, tf.steps)
		if st.Pending != nil {
			where += fmt.Sprintf(" (%d solver iterations into step %d)", st.Pending.Iteration, st.Step+1)
		}
		if path == "" {
			return fmt.Errorf("gpnb train: interrupted %s; nothing was saved (give --checkpoint FILE to be able to resume)", where)
		}
		return fmt.Errorf("gpnb train: interrupted %s; checkpoint saved to %s; resume with: gpnb train --resume %s --steps %d (and the same --data flags)", where, path, path, tf.steps)
	}
	if err != nil {
		return err
	}
	var ev *gpnb.Eval
	if *eval && ds.NTest() > 0 {
		e, err := opt.Evaluate()
		if err != nil {
			return err
		}
		ev = &e
	}
	res := opt.Result(ev)
	if !*residuals {
		for i := range res.History {
			res.History[i].Residuals = nil
		}
	}
	if *jsonPath != "-" {
		fmt.Fprintf(stdout, "%s, %s%s, %d steps: %d solver iterations, %.2fs solver / %.2fs total\n",
			ds, res.Solver, map[bool]string{true: " + warm start", false: ""}[res.WarmStart], res.StepsDone,
			res.History.TotalSolverIterations(), res.SolverSeconds, res.TotalSeconds)
		fmt.Fprintf(stdout, "noise %.4g  signal %.4g  lengthscales %.4g\n", res.Final.Noise, res.Final.Signal, res.Final.Lengthscales)
		if ev != nil {
			fmt.Fprintf(stdout, "test RMSE %.4f  test LLH %.4f  (%s)\n", res.TestRMSE, res.TestLLH, res.EvalMethod)
		}
	}
	return writeJSON(*jsonPath, jsonSafe(res), stdout)
}

// trainJSON is gpnb.Result with the test metrics written as null when they
// were not computed (--eval=false or no test part).
type trainJSON struct {
	gpnb.Result
	TestRMSE *float64 `json:"test_rmse"`
	TestLLH  *float64 `json:"test_llh"`
}

func jsonSafe(r gpnb.Result) trainJSON {
	out := trainJSON{Result: r}
	if r.EvalMethod != gpnb.NotEvaluated {
		out.TestRMSE, out.TestLLH = &r.TestRMSE, &r.TestLLH
	}
	return out
}
