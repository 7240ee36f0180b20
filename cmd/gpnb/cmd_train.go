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

	"github.com/gpnb/gpnb/cuda"
	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
)

func init() {
	register(&command{
		name:  "train",
		short: "optimise the marginal likelihood (Adam + Hutchinson or pathwise, warm start, budgets; L-BFGS + Cholesky on small data)",
		run:   runTrain,
	})
}

// backendFlags are --backend and --device of train and reproduce: where the
// kernel operator runs, which is the machine's choice, not part of a run.
type backendFlags struct {
	name   string
	device int
}

func (b *backendFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.name, "backend", "cpu", "or cuda (a build with -tags cuda)")
	fs.IntVar(&b.device, "device", 0, "CUDA device")
}

// backend turns the --backend and --device flags (of train and
// reproduce) into a gpnb.Backend: nil for the CPU operator, the GPU
// operator of package cuda for "cuda", with mode and precision as for
// the CPU. A cuda backend in a build without the cuda tag is an error that
// says how to rebuild.
func (b *backendFlags) backend(mode kernel.Mode, prec kernel.Precision) (gpnb.Backend, error) {
	name, device := b.name, b.device
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

// describe names the GPU of --device for the log: cuda.DeviceInfo's
// summary (name, memory, driver, ...).
func (b *backendFlags) describe() string {
	ds, err := cuda.Devices()
	if err != nil || b.device < 0 || b.device >= len(ds) {
		return fmt.Sprintf("GPU %d", b.device)
	}
	return ds[b.device].String()
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

// progress draws "step k/N" lines on a terminal: a gpnb.Recorder.
type progress struct {
	w      io.Writer
	ds     *data.Dataset
	total  int
	start  time.Time
	first  int // steps done when the bar started
	iters  int // solver iterations so far in the current step
	total0 int // solver iterations of the completed steps
	hyper  string
	last   time.Time
	active bool
}

// newProgress returns the bar for o, to reach total steps.
func newProgress(w io.Writer, o *gpnb.Optimiser, total int) *progress {
	return &progress{w: w, ds: o.Dataset(), total: total, start: time.Now(), first: o.Steps(), total0: o.History().TotalSolverIterations()}
}

// RecordIteration redraws at most five times a second.
func (p *progress) RecordIteration(pr gpnb.IterationRecord) {
	p.iters = pr.Iteration
	if time.Since(p.last) > 200*time.Millisecond {
		p.draw(pr.Step - 1)
	}
}

// RecordStep redraws with the step's hyperparameters.
func (p *progress) RecordStep(r gpnb.StepRecord) {
	p.iters = 0
	p.total0 += r.SolverIterations
	p.hyper = hyperLine(r.Hyper(), p.ds)
	p.draw(r.Step)
}

func (p *progress) draw(done int) {
	p.last = time.Now()
	el := time.Since(p.start)
	eta := "?"
	if k := done - p.first; k > 0 {
		eta = (time.Duration(float64(el) / float64(k) * float64(p.total-done))).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r\033[Kstep %d/%d  solver iterations %d (this step %d)  elapsed %s  ETA %s  %s", done, p.total, p.total0+p.iters, p.iters, el.Round(time.Second), eta, p.hyper)
	p.active = true
}

func (p *progress) finish() {
	if p.active {
		fmt.Fprintln(p.w)
	}
}

// hyperLine formats θ on the scale the run trains on and, for normalised
// data, in the data's units.
func hyperLine(h kernel.Hyper, ds *data.Dataset) string {
	s := fmt.Sprintf("noise %.4g  signal %.4g  lengthscales %.3g", h.Noise, h.Signal, h.Lengthscales)
	if ds != nil && ds.Stats.Normalised {
		u := gpnb.DataUnits(h, ds.Stats)
		s += fmt.Sprintf("  (z-scored; in data units: noise %.4g  signal %.4g  lengthscales %.3g)", u.Noise, u.Signal, u.Lengthscales)
	}
	return s
}

// trainRun is one gpnb train: its flags and what they give.
type trainRun struct {
	df             dataFlags
	rf             runFlags
	bf             backendFlags
	steps          int
	preset         string
	resume, json   string
	eval           bool
	quiet, verbose bool
	ds             *data.Dataset
	cfg            gpnb.Config
}

func runTrain(args []string, stdout, stderr io.Writer) error {
	tr, err := parseTrain(args, stderr)
	if err != nil {
		return err
	}
	if tr.ds, err = tr.df.load(); err != nil {
		return err
	}
	if err := tr.config(); err != nil {
		return err
	}
	opt, err := tr.optimiser(stderr)
	if err != nil {
		return err
	}
	defer opt.Close()
	var bar *progress
	if !tr.quiet && ttyWriter(stderr) {
		bar = newProgress(stderr, opt, tr.steps)
		opt.AddRecorder(bar)
	}
	err = opt.RunTo(context.Background(), tr.steps)
	if bar != nil {
		bar.finish()
	}
	if errors.Is(err, context.Canceled) {
		return tr.interrupted(opt.State())
	}
	if err != nil {
		return err
	}
	var ev *gpnb.Eval
	if tr.eval && tr.ds.NTest() > 0 {
		e, err := opt.Evaluate()
		if err != nil {
			return err
		}
		ev = &e
	}
	res := opt.Result()
	res.Test = ev
	if tr.json != "-" {
		tr.report(stdout, stderr, res, ev, opt.Hyper())
	}
	return writeJSON(tr.json, res, stdout)
}

// parseTrain reads gpnb train's flags.
func parseTrain(args []string, stderr io.Writer) (*trainRun, error) {
	fs := newFlagSet("train", "--data D [flags]\n\nAdam or L-BFGS on the marginal likelihood.", stderr)
	tr := &trainRun{}
	tr.df.register(fs, stderr)
	tr.rf.register(fs, stderr, defaultTarget(), nil)
	tr.bf.register(fs)
	fs.IntVar(&tr.steps, "steps", 100, fmt.Sprintf("steps (--resume: in all; converged: a cap, %d)", gpnb.ConvergedMaxSteps))
	fs.StringVar(&tr.preset, "preset", "", presetUsage())
	fs.StringVar(&tr.resume, "resume", "", "continue checkpoint `FILE`'s run")
	fs.StringVar(&tr.json, "json", "", "write the result to `FILE` (-: stdout)")
	fs.BoolVar(&tr.eval, "eval", true, "test RMSE and LLH at the end")
	fs.BoolVar(&tr.quiet, "quiet", false, "no progress bar")
	fs.BoolVar(&tr.verbose, "verbose", false, "a line per step on stderr")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if tr.steps < 0 {
		return nil, fmt.Errorf("--steps %d: must be ≥ 0", tr.steps)
	}
	if tr.preset != "" && tr.resume != "" {
		return nil, errors.New("--preset applies to a new run: a resumed run keeps the configuration it started with")
	}
	return tr, nil
}

// config sets the run's configuration: the flags' over the --preset's, or
// with --resume the checkpoint's with the flags given applied (refused
// where they would change the run), saved where it was read from unless
// --checkpoint. A run until converged without --steps gets
// gpnb.ConvergedMaxSteps steps at most.
func (tr *trainRun) config() error {
	err := tr.configure()
	if err == nil && tr.cfg.Until == gpnb.UntilConverged && !tr.rf.given("steps") {
		tr.steps = gpnb.ConvergedMaxSteps
	}
	return err
}

func (tr *trainRun) configure() error {
	ds := tr.ds
	if tr.resume == "" {
		if err := tr.rf.applyPreset(tr.preset, ds.Name); err != nil {
			return err
		}
		c, err := tr.rf.config(ds.Name, ds.NTrain(), ds.D())
		tr.cfg = c
		return err
	}
	st, err := gpnb.ReadCheckpoint(tr.resume)
	if err != nil {
		return fmt.Errorf("--resume %s: %w", tr.resume, err)
	}
	if tr.cfg, err = tr.rf.onto(st.Config, ds.Name, ds.NTrain(), ds.D()); err != nil {
		return err
	}
	if !tr.rf.given("checkpoint") {
		tr.cfg.CheckpointPath = tr.resume // go on saving where the run was read from
	}
	return nil
}

// optimiser returns the new or resumed optimiser of the run, on the
// backend of --backend, with the --verbose step lines.
func (tr *trainRun) optimiser(stderr io.Writer) (*gpnb.Optimiser, error) {
	backend, err := tr.bf.backend(tr.cfg.Operator.Mode, tr.cfg.Operator.Precision)
	if err != nil {
		return nil, err
	}
	if backend != nil {
		fmt.Fprintf(stderr, "gpnb train: --backend cuda on %s\n", tr.bf.describe())
	}
	var opt *gpnb.Optimiser
	if tr.resume != "" {
		if opt, err = gpnb.Resume(tr.resume, tr.ds, gpnb.WithBackend(backend), gpnb.WithConfig(tr.cfg)); err != nil {
			return nil, fmt.Errorf("--resume %s: %w", tr.resume, err)
		}
		fmt.Fprintf(stderr, "gpnb train: resumed %s at step %d of %d\n", tr.resume, opt.Steps(), tr.steps)
	} else if opt, err = gpnb.NewOptimiser(tr.ds, tr.cfg, gpnb.WithBackend(backend)); err != nil {
		return nil, err
	}
	if tr.verbose {
		opt.AddRecorder(gpnb.Hooks{Step: func(r gpnb.StepRecord) { fmt.Fprintf(stderr, "\r\033[K%s\n", stepLine(r, tr.ds)) }})
	}
	return opt, nil
}

// stepLine is --verbose's line for a step.
func stepLine(r gpnb.StepRecord, ds *data.Dataset) string {
	if r.Evaluations > 0 && r.ExactMLL != nil {
		return fmt.Sprintf("step %d: %d evaluations of L (Cholesky), L = %.6g, %.3fs step; %s", r.Step, r.Evaluations, *r.ExactMLL, r.StepSeconds, hyperLine(r.Hyper(), ds))
	}
	conv := fmt.Sprintf("converged %v", r.SolverConverged)
	switch {
	case r.BudgetStop:
		conv = fmt.Sprintf("stopped at the budget, residuals %s", formatResiduals(r.FinalResiduals))
	case r.SolverStalled:
		conv = fmt.Sprintf("stalled, residuals %s", formatResiduals(r.FinalResiduals))
	}
	if r.RateBackoffs > 0 {
		conv += fmt.Sprintf("; diverged, restarted %d× at half the learning rate, finished at 1/%d of it", r.RateBackoffs, 1<<r.RateBackoffs)
	}
	switch {
	case r.Float64Retry:
		conv += "; failed on float32 K, solved again in float64"
	case r.Float64:
		conv += "; float64 K (σ² below float32 K's rounding)"
	}
	if r.AdamHalvings > 0 {
		conv += fmt.Sprintf("; Adam at 1/%d of its rate", 1<<r.AdamHalvings)
	}
	return fmt.Sprintf("step %d: %d solver iterations (%s) %.3fs solver %.3fs step; %s",
		r.Step, r.SolverIterations, conv, r.SolverSeconds, r.StepSeconds, hyperLine(r.Hyper(), ds))
}

// interrupted is the error of a run stopped by a signal: where it stood
// and how to resume it.
func (tr *trainRun) interrupted(st gpnb.OptimiserState) error {
	where := fmt.Sprintf("after %d of %d steps", st.Step, tr.steps)
	if st.Pending != nil {
		where += fmt.Sprintf(" (%d solver iterations into step %d)", st.Pending.Iteration, st.Step+1)
	}
	path := tr.cfg.CheckpointPath
	if path == "" {
		return fmt.Errorf("gpnb train: interrupted %s; nothing was saved (give --checkpoint FILE to be able to resume)", where)
	}
	return fmt.Errorf("gpnb train: interrupted %s; checkpoint saved to %s; resume with: gpnb train --resume %s --steps %d (and the same --data flags)", where, path, path, tr.steps)
}

// report prints the run's totals, θ and test metrics, and warns of
// stalled and backed-off solves.
func (tr *trainRun) report(stdout, stderr io.Writer, res gpnb.Result, ev *gpnb.Eval, h kernel.Hyper) {
	ds, cfg := tr.ds, tr.cfg
	fmt.Fprintln(stdout, pathLine(res.Path, cfg, res.NTrain, res.D, res.ExactFrom, res.History))
	method := res.Solver
	if cfg.Estimator == gpnb.Pathwise {
		method += " (pathwise estimator)"
	}
	if res.WarmStart {
		method += " + warm start"
	}
	if k := res.ExactFrom; k > 0 {
		adam, fin := res.History[:k], res.History[k:]
		fmt.Fprintf(stdout, "%s, %s, %d steps: %d solver iterations, %.2fs; then %d L-BFGS steps: %d evaluations of L, %.2fs; %.2fs total\n",
			ds, method, k, adam.TotalSolverIterations(), adam.TotalSeconds(), len(fin), fin.TotalEvaluations(), fin.TotalSeconds(), res.TotalSeconds)
	} else if res.Path == gpnb.PathExact {
		fmt.Fprintf(stdout, "%s, %d L-BFGS steps: %d evaluations of L (one Cholesky factorisation each), %.2fs total\n",
			ds, res.StepsDone, res.History.TotalEvaluations(), res.TotalSeconds)
	} else {
		fmt.Fprintf(stdout, "%s, %s, %d steps: %d solver iterations, %.2fs solver / %.2fs total\n",
			ds, method, res.StepsDone, res.History.TotalSolverIterations(), res.SolverSeconds, res.TotalSeconds)
	}
	if cfg.Until == gpnb.UntilConverged {
		if res.Converged {
			fmt.Fprintf(stdout, "converged after %d steps\n", res.StepsDone)
		} else {
			fmt.Fprintf(stderr, "gpnb train: warning: stopped at --steps %d before converging: give more steps (--resume continues the run), or a larger --converged-tol\n", tr.steps)
		}
	}
	if b := res.History.BudgetSteps(); b > 0 {
		fmt.Fprintf(stdout, "%d of %d steps stopped at the budget of %g epochs (%.4g epochs in all)\n", b, res.StepsDone, cfg.Settings.Budget, res.History.TotalSolverEpochs())
	}
	if k := res.History.StalledSteps(); k > 0 {
		fmt.Fprintf(stderr, "gpnb train: warning: %d of %d steps' solves stalled above their tolerances (the true residual stopped falling); their gradients are inexact. The cause: %s\n", k, res.StepsDone, stallCause(cfg.Solver.Name()))
	}
	if k, n := res.History.BackoffSteps(); k > 0 {
		fmt.Fprintf(stderr, "gpnb train: %d of %d steps' SGD solves diverged and were started again at half the learning rate (%d restarts in all; see gpnb inspect): a lower --sgd-lr saves those attempts\n", k, res.StepsDone, n)
	}
	if k, n := res.History.Float64Steps(); k > 0 {
		fmt.Fprintf(stdout, "%d of %d steps multiplied with a float64 K, σ² being below float32 K's rounding (gpnb.MixedNoiseRatio); %d of them after failing on float32\n", k, res.StepsDone, n)
	}
	if a := res.History[len(res.History)-1:]; len(a) > 0 && a[0].AdamHalvings > 0 {
		fmt.Fprintf(stdout, "Adam's rate was halved %d× as θ oscillated, to %g\n", a[0].AdamHalvings, cfg.LearningRate/float64(int(1)<<a[0].AdamHalvings))
	}
	if cfg.OnNoiseFloor(h.Noise) {
		fmt.Fprintf(stdout, "σ ends on its floor %g (--noise-min): the data would take a smaller one; lower the floor to let it\n", cfg.NoiseMin)
	}
	fmt.Fprintf(stdout, "%s\n", hyperLine(h, ds))
	if ev != nil {
		fmt.Fprintf(stdout, "test RMSE %.4f  test LLH %.4f  (%s; on the z-scored scale)\n", ev.TestRMSE, ev.TestLLH, ev.Method)
		if s := ev.Samples; s != nil {
			fmt.Fprintf(stdout, "test RMSE %.4f  test LLH %.4f  from %d posterior samples of the last solve (no further solve)\n", s.TestRMSE, s.TestLLH, s.Samples)
		}
	}
}

// pathLine says in one line which path a run of cfg on n training points
// with d inputs took: exact (and by which bound), iterative, or iterative
// finishing on the exact path after exactFrom steps
// (gpnb.OptimiserState.ExactFrom; 0: not) of its history h, and why
// (gpnb.Config.FinishCause).
func pathLine(path gpnb.Path, cfg gpnb.Config, n, d, exactFrom int, h gpnb.History) string {
	if path == gpnb.PathExact && exactFrom == 0 {
		sub := ""
		if k, m := h.SubsetSteps(); k > 0 {
			sub = fmt.Sprintf("; its first %d steps on a subset of %d points, n ≥ 2 × --exact-subset %d", k, m, cfg.ExactSubset)
		}
		if s := h.Starts(); s > 1 {
			sub += fmt.Sprintf("; %d starts (--exact-starts), the highest L kept", s)
		}
		if cfg.ExactByWork(n, d) {
			return fmt.Sprintf("path: exact (Cholesky + L-BFGS, n·(d+2) = %d ≤ --exact-work-up-to %d%s)", n*(d+2), cfg.ExactWorkUpTo, sub)
		}
		return fmt.Sprintf("path: exact (Cholesky + L-BFGS, n = %d ≤ --exact-up-to %d%s)", n, cfg.ExactUpTo, sub)
	}
	how := "exact gradient (Cholesky), Adam"
	if cfg.Estimator != gpnb.ExactGradient {
		how = "cg"
		if cfg.Solver != nil {
			how = cfg.Solver.Name()
		}
		if cfg.Estimator == gpnb.Pathwise {
			how += " (pathwise estimator)"
		}
		if cfg.WarmStart {
			how += " + warm start"
		}
		how += ", Adam"
	}
	if cfg.ExactUpTo > 0 {
		how += fmt.Sprintf("; n = %d > --exact-up-to %d", n, cfg.ExactUpTo)
		switch work := n * (d + 2); {
		case cfg.ExactWorkUpTo <= 0:
		case work > cfg.ExactWorkUpTo:
			how += fmt.Sprintf(", n·(d+2) = %d > --exact-work-up-to %d", work, cfg.ExactWorkUpTo)
		default: // within the work bound, so beyond ExactWorkMaxN or MaxExactN
			limit := "--max-exact-n"
			if n > gpnb.ExactWorkMaxN {
				limit = fmt.Sprint(gpnb.ExactWorkMaxN)
			}
			how += fmt.Sprintf(", n·(d+2) = %d ≤ --exact-work-up-to %d but n > %s", work, cfg.ExactWorkUpTo, limit)
		}
	}
	if exactFrom > 0 {
		why := ""
		if exactFrom <= len(h) {
			if c := cfg.FinishCause(h[:exactFrom], n); c != "" {
				why = " once " + c
			}
		}
		return fmt.Sprintf("path: iterative (%s), then exact from step %d%s (Cholesky + L-BFGS, n ≤ --finish-exact-up-to %d)", how, exactFrom+1, why, cfg.FinishExactUpTo)
	}
	return "path: iterative (" + how + ")"
}
