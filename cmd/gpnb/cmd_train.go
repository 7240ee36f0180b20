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
		short: "optimise the marginal likelihood (Adam + Hutchinson or pathwise, warm start, budgets)",
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
	fs.StringVar(&b.name, "backend", "cpu", "kernel operator backend: cpu, or cuda (a binary built with -tags cuda and an NVIDIA GPU)")
	fs.IntVar(&b.device, "device", 0, "CUDA device ordinal (with --backend cuda)")
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
func (p *progress) RecordIteration(pr gpnb.Progress) {
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

func runTrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("train", "--data D [--split K] [--subset N] [--kernel matern32] --solver cg|ap|sgd|cholesky [--estimator hutchinson|pathwise|exact] [--features 2000] [--warm-start] [--budget N] [--probes 16] [--steps 100] [--lr 0.1] [--seed S] [--checkpoint FILE] [--resume FILE] [--json FILE|-]\n\n--noise, --signal and --lengthscales give the initial hyperparameters (the paper: all 1.0).", stderr)
	var df dataFlags
	var rf runFlags
	var bf backendFlags
	df.register(fs, stderr)
	rf.register(fs, stderr, defaultTarget(), nil)
	bf.register(fs)
	steps := fs.Int("steps", 100, "Adam steps (with --resume: the total to reach)")
	resume := fs.String("resume", "", "continue the run saved in this checkpoint (same data flags) up to --steps in total")
	jsonPath := fs.String("json", "", "write the result as JSON to this file (- for stdout)")
	eval := fs.Bool("eval", true, "compute test RMSE and log-likelihood at the end")
	quiet := fs.Bool("quiet", false, "no progress bar")
	verbose := fs.Bool("verbose", false, "print one line per step to stderr (hyperparameters, solver iterations, seconds)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *steps < 0 {
		return fmt.Errorf("--steps %d: must be ≥ 0", *steps)
	}
	ds, err := df.load()
	if err != nil {
		return err
	}
	var cfg gpnb.Config
	if *resume != "" {
		st, err := gpnb.ReadCheckpoint(*resume)
		if err != nil {
			return fmt.Errorf("--resume %s: %w", *resume, err)
		}
		cfg, err = rf.onto(st.Config, ds.Name, ds.NTrain(), ds.D())
		if err != nil {
			return err
		}
	} else if cfg, err = rf.config(ds.Name, ds.NTrain(), ds.D()); err != nil {
		return err
	}
	if *resume != "" && !rf.given("checkpoint") {
		cfg.CheckpointPath = *resume // go on saving where the run was read from
	}
	backend, err := bf.backend(cfg.Operator.Mode, cfg.Operator.Precision)
	if err != nil {
		return err
	}
	if backend != nil {
		fmt.Fprintf(stderr, "gpnb train: --backend cuda on %s\n", bf.describe())
	}
	opts := []gpnb.Option{gpnb.WithBackend(backend)}
	if *verbose {
		opts = append(opts, gpnb.WithRecorder(gpnb.Hooks{Step: func(r gpnb.StepRecord) {
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
			fmt.Fprintf(stderr, "\r\033[Kstep %d: %d solver iterations (%s) %.3fs solver %.3fs step; %s\n",
				r.Step, r.SolverIterations, conv, r.SolverSeconds, r.StepSeconds, hyperLine(r.Hyper(), ds))
		}}))
	}
	var opt *gpnb.Optimiser
	if *resume != "" {
		opt, err = gpnb.Resume(*resume, ds, append(opts, gpnb.WithConfig(cfg))...)
		if err != nil {
			return fmt.Errorf("--resume %s: %w", *resume, err)
		}
		fmt.Fprintf(stderr, "gpnb train: resumed %s at step %d of %d\n", *resume, opt.Steps(), *steps)
	} else if opt, err = gpnb.NewOptimiser(ds, cfg, opts...); err != nil {
		return err
	}
	defer opt.Close()
	var bar *progress
	if !*quiet && ttyWriter(stderr) {
		bar = newProgress(stderr, opt, *steps)
		opt.AddRecorder(bar)
	}
	err = opt.RunTo(context.Background(), *steps)
	if bar != nil {
		bar.finish()
	}
	if errors.Is(err, context.Canceled) {
		st := opt.State()
		where := fmt.Sprintf("after %d of %d steps", st.Step, *steps)
		if st.Pending != nil {
			where += fmt.Sprintf(" (%d solver iterations into step %d)", st.Pending.Iteration, st.Step+1)
		}
		path := cfg.CheckpointPath
		if path == "" {
			return fmt.Errorf("gpnb train: interrupted %s; nothing was saved (give --checkpoint FILE to be able to resume)", where)
		}
		return fmt.Errorf("gpnb train: interrupted %s; checkpoint saved to %s; resume with: gpnb train --resume %s --steps %d (and the same --data flags)", where, path, path, *steps)
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
	res := opt.Result()
	res.Test = ev
	if *jsonPath != "-" {
		method := res.Solver
		if cfg.Estimator == gpnb.Pathwise {
			method += " (pathwise estimator)"
		}
		fmt.Fprintf(stdout, "%s, %s%s, %d steps: %d solver iterations, %.2fs solver / %.2fs total\n",
			ds, method, map[bool]string{true: " + warm start", false: ""}[res.WarmStart], res.StepsDone,
			res.History.TotalSolverIterations(), res.SolverSeconds, res.TotalSeconds)
		if b := res.History.BudgetSteps(); b > 0 {
			fmt.Fprintf(stdout, "%d of %d steps stopped at the budget of %g epochs (%.4g epochs in all)\n", b, res.StepsDone, cfg.Settings.Budget, res.History.TotalSolverEpochs())
		}
		if k := res.History.StalledSteps(); k > 0 {
			fmt.Fprintf(stderr, "gpnb train: warning: %d of %d steps' solves stalled above their tolerances (the true residual stopped falling); their gradients are inexact. The cause: %s\n", k, res.StepsDone, stallCause(cfg.Solver.Name()))
		}
		if k, n := res.History.BackoffSteps(); k > 0 {
			fmt.Fprintf(stderr, "gpnb train: %d of %d steps' SGD solves diverged and were started again at half the learning rate (%d restarts in all; see gpnb inspect): a lower --sgd-lr saves those attempts\n", k, res.StepsDone, n)
		}
		fmt.Fprintf(stdout, "%s\n", hyperLine(opt.Hyper(), ds))
		if ev != nil {
			fmt.Fprintf(stdout, "test RMSE %.4f  test LLH %.4f  (%s; on the z-scored scale)\n", ev.TestRMSE, ev.TestLLH, ev.Method)
			if s := ev.Samples; s != nil {
				fmt.Fprintf(stdout, "test RMSE %.4f  test LLH %.4f  from %d posterior samples of the last solve (no further solve)\n", s.TestRMSE, s.TestLLH, s.Samples)
			}
		}
	}
	return writeJSON(*jsonPath, res, stdout)
}
