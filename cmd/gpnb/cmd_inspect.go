package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/gonum/stat"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/gpnb/repro"
	"github.com/gpnb/gpnb/gpnb/results"
	"github.com/gpnb/gpnb/solvers"
)

func init() {
	register(&command{name: "inspect", short: "summarise a checkpoint, a result JSON or a reproduce job: configuration, θ, totals, one line a step", run: runInspect})
}

// inspection is what `gpnb inspect --json` prints: where the run stands,
// its totals, and its history without the per-iteration residual traces.
type inspection struct {
	Path string `json:"path"`
	// Kind is "checkpoint" or "result".
	Kind string `json:"kind"`
	// DataTag names the data: data.Dataset.String for a checkpoint.
	DataTag string `json:"data,omitempty"`
	N       int    `json:"n_train"`
	D       int    `json:"d"`
	// Fingerprint of the training data (checkpoints only).
	Fingerprint string `json:"fingerprint,omitempty"`
	// Config is the run's configuration (checkpoints only).
	Config *gpnb.Config `json:"config,omitempty"`
	// Run describes kernel, solver, start and probes in one line.
	Run string `json:"run"`
	// MaxIterations is the per-step solver cap in force (0: unknown).
	MaxIterations int `json:"max_iterations,omitempty"`
	Steps         int `json:"steps"`
	// Theta is the current (ℓ_1..ℓ_d, s, σ), on the z-scored scale the run
	// trains on; ThetaData is the same in the data's units (checkpoints of
	// normalised data only).
	Theta     []float64 `json:"theta,omitempty"`
	ThetaData []float64 `json:"theta_data_units,omitempty"`
	// The history's totals (gpnb.History's methods of the same names).
	SolverIterations int     `json:"solver_iterations"`
	UnconvergedSteps int     `json:"unconverged_steps"`
	StalledSteps     int     `json:"stalled_steps,omitempty"`
	BackoffSteps     int     `json:"backoff_steps,omitempty"`
	RateBackoffs     int     `json:"rate_backoffs,omitempty"`
	Float64Steps     int     `json:"float64_steps,omitempty"`
	Float64Retries   int     `json:"float64_retries,omitempty"`
	AdamHalvings     int     `json:"adam_halvings,omitempty"`
	BudgetSteps      int     `json:"budget_steps"`
	SolverEpochs     float64 `json:"solver_epochs"`
	TotalSeconds     float64 `json:"total_seconds"`
	SolverSeconds    float64 `json:"solver_seconds"`
	// Budget is the solver budget per step in epochs (0: none, or not
	// recorded).
	Budget float64 `json:"budget,omitempty"`
	// Pending is the solve a checkpoint taken mid-step will continue.
	Pending *pendingSolve `json:"pending,omitempty"`
	// TrainingPath is the path the run takes (gpnb.Path: iterative or
	// exact), ExactFrom the steps after which it finished on the exact
	// path (0: not); Evaluations the exact path's evaluations of L in all, and
	// PendingEvaluations those of a step interrupted mid line search.
	TrainingPath       gpnb.Path `json:"training_path"`
	ExactFrom          int       `json:"exact_from,omitempty"`
	Evaluations        int       `json:"evaluations,omitempty"`
	PendingEvaluations int       `json:"pending_evaluations,omitempty"`
	// pathText is gpnb train's line for the path (pathLine).
	pathText string
	// Test is a result's evaluation (nil: none).
	Test *gpnb.Eval `json:"test,omitempty"`
	// History holds every step's record without its residual trace.
	History gpnb.History `json:"history"`
	// solverName is the solver of a result without a configuration.
	solverName string
}

// pendingSolve is the solve a checkpoint taken mid-step will continue.
type pendingSolve struct {
	Step          int     `json:"step"` // the 1-based step it belongs to
	SolverSeconds float64 `json:"solver_seconds"`
	StepSeconds   float64 `json:"step_seconds"`
	solvers.Progress
}

func runInspect(args []string, stdout, stderr io.Writer) error {
	flags := newFlagSet("inspect", "CHECKPOINT|RESULT.json|JOB_DIR [--last N] [--json FILE|-]", stderr)
	last := flags.Int("last", 0, "list the last N steps only (0: all; the JSON holds all)")
	jsonOut := flags.String("json", "", "write the summary as JSON to `FILE` (-: stdout)")
	// The path comes first or last; flags may stand on either side of it.
	var path string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		path, args = args[0], args[1:]
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	paths := flags.Args()
	if path != "" {
		paths = append([]string{path}, paths...)
	}
	if len(paths) > 1 {
		fmt.Fprintf(stderr, "gpnb inspect: give one path, not %d: %q\n", len(paths), paths)
		flags.Usage()
		return errUsage
	}
	if len(paths) == 1 {
		path = paths[0]
	}
	if path == "" {
		fmt.Fprintln(stderr, "gpnb inspect: give a checkpoint, a result JSON or a `gpnb reproduce` job directory")
		flags.Usage()
		return errUsage
	}
	if *last < 0 {
		return fmt.Errorf("gpnb inspect: --last %d: use 0 (every step) or a positive count", *last)
	}
	in, err := inspectPath(path)
	if err != nil {
		return err
	}
	if *jsonOut != "" {
		return writeJSON(*jsonOut, in, stdout)
	}
	return in.writeText(stdout, *last)
}

// inspectPath reads a checkpoint, a result JSON, or a reproduce job
// directory (its checkpoint when the job is unfinished, else its result).
func inspectPath(path string) (*inspection, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("gpnb inspect: %w", err)
	}
	if info.IsDir() {
		ck := filepath.Join(path, repro.CheckpointFile)
		res := filepath.Join(path, results.ResultFile)
		switch {
		case fileExists(ck):
			path = ck
		case fileExists(res):
			path = res
		default:
			return nil, fmt.Errorf("gpnb inspect: %s holds neither %s nor %s: point it at a job directory of `gpnb reproduce` (DIR/jobs/ID), a checkpoint or a result JSON; for a whole results directory, gpnb reproduce --dry-run --out DIR lists its jobs", path, repro.CheckpointFile, results.ResultFile)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gpnb inspect: %w", err)
	}
	if bytes.HasPrefix(b, []byte(checkpointMagic)) {
		st, err := gpnb.DecodeCheckpoint(b)
		if err != nil {
			return nil, fmt.Errorf("gpnb inspect: %s: %w", path, err)
		}
		return inspectState(path, st, st.DataTag), nil
	}
	rs, err := parseResults(b)
	if err != nil {
		return nil, fmt.Errorf("gpnb inspect: %s: %w: give a checkpoint, a result JSON (gpnb train --json, a reproduce job's result.json) or a job directory", path, err)
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("gpnb inspect: %s holds %d results: inspect one run at a time (gpnb report charts many)", path, len(rs))
	}
	return inspectResult(path, &rs[0]), nil
}

func fileExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

func inspectState(path string, st *gpnb.OptimiserState, tag string) *inspection {
	cfg := st.Config
	probes := "resampled"
	if cfg.FixedProbes == gpnb.ProbesFixed {
		probes = "fixed"
	}
	probeText := fmt.Sprintf("%d %s %s probes", cfg.Probes, probes, cfg.ProbeDist)
	if cfg.Estimator == gpnb.Pathwise {
		probeText = fmt.Sprintf("pathwise estimator: %d %s prior samples of %d random features", cfg.Probes, probes, cfg.Features)
	}
	in := &inspection{
		Path: path, Kind: "checkpoint", DataTag: tag, N: st.N, D: st.D,
		Fingerprint: st.Fingerprint, Config: &cfg,
		Run: describeRun(cfg.Kernel.String(), cfg.Solver.Name(), cfg.Estimator == gpnb.ExactGradient, cfg.WarmStart,
			probeText) + describeMethod(cfg, st.N),
		Steps: st.Step, Theta: append([]float64(nil), st.Theta...), Budget: cfg.Settings.Budget,
	}
	if st.Stats.Normalised {
		in.ThetaData = gpnb.DataUnits(kernel.HyperFromVector(st.Theta), st.Stats).Vector()
	}
	in.MaxIterations = cfg.Settings.MaxIterations
	in.TrainingPath, in.ExactFrom, in.pathText = st.Path, st.ExactFrom, pathLine(st.Path, cfg, st.N, st.D, st.ExactFrom, st.History)
	if m := st.LBFGS; st.Path == gpnb.PathExact && m != nil {
		if st.ExactFrom == 0 { // else the run's description is Adam's, and pathText says the rest
			in.Run = fmt.Sprintf("%s kernel, Cholesky + L-BFGS over log ℓ, log s², log σ² (memory %d), ℓ, s² and σ² within [%g, %g]", cfg.Kernel, gpnb.LBFGSMemory, gpnb.ExactThetaMin, gpnb.ExactThetaMax)
			if cfg.NoiseMin > 0 {
				in.Run += fmt.Sprintf(", σ ≥ %g", cfg.NoiseMin)
			}
			if cfg.Until == gpnb.UntilConverged {
				in.Run += "; until converged"
			}
		}
		if !m.Ended && m.IterationEval > 0 {
			in.PendingEvaluations = m.IterationEval
		}
	}
	if p := st.Pending; p != nil {
		in.Pending = &pendingSolve{Step: st.Step + 1, SolverSeconds: st.PendingSolverSeconds, StepSeconds: st.PendingStepSeconds, Progress: p.Progress()}
		if p.Settings.MaxIterations > 0 {
			in.MaxIterations = p.Settings.MaxIterations
		}
	}
	in.fill(st.History)
	return in
}

func inspectResult(path string, r *gpnb.Result) *inspection {
	probeText := fmt.Sprintf("%d probes", r.Probes)
	var budget float64
	if c := r.Config; c != nil {
		budget = c.Settings.Budget
		if c.Estimator == gpnb.Pathwise {
			probeText = fmt.Sprintf("pathwise estimator: %d prior samples of %d random features", r.Probes, c.Features)
		}
	}
	in := &inspection{
		Path: path, Kind: "result", N: r.NTrain, D: r.D,
		// A result does not record whether its probes were fixed.
		Run:   describeRun(r.Kernel, r.Solver, r.Config != nil && r.Config.Estimator == gpnb.ExactGradient, r.WarmStart, probeText),
		Steps: r.StepsDone, Budget: budget, solverName: strings.ToLower(r.Solver),
		TrainingPath: r.Path, ExactFrom: r.ExactFrom,
	}
	if r.Config != nil {
		in.pathText = pathLine(r.Path, *r.Config, r.NTrain, r.D, r.ExactFrom, r.History)
	}
	if r.Dataset != "" {
		// The shape of data.Dataset.String, which a checkpoint records.
		in.DataTag = fmt.Sprintf("%s split %d: %d train, %d test, d=%d", r.Dataset, r.Split, r.NTrain, r.NTest, r.D)
	}
	if len(r.Final.Lengthscales) > 0 {
		in.Theta = append(append([]float64(nil), r.Final.Lengthscales...), r.Final.Signal, r.Final.Noise)
	}
	if r.Test != nil {
		in.Test = r.Test
	}
	in.fill(r.History)
	return in
}

// fill sets the totals and the per-step rows from h.
func (in *inspection) fill(h gpnb.History) {
	in.SolverIterations = h.TotalSolverIterations()
	in.UnconvergedSteps = h.UnconvergedSteps()
	in.BudgetSteps = h.BudgetSteps()
	in.StalledSteps = h.StalledSteps()
	in.BackoffSteps, in.RateBackoffs = h.BackoffSteps()
	in.Float64Steps, in.Float64Retries = h.Float64Steps()
	if len(h) > 0 {
		in.AdamHalvings = h[len(h)-1].AdamHalvings
	}
	in.SolverEpochs = h.TotalSolverEpochs()
	in.TotalSeconds = h.TotalSeconds()
	in.SolverSeconds = h.TotalSolverSeconds()
	in.Evaluations = h.TotalEvaluations()
	in.History = make(gpnb.History, len(h))
	for i, r := range h {
		r.Residuals = nil
		in.History[i] = r
	}
}

// describeRun says which gradient a run computes, how its solves start and
// which probes it uses (described by the caller: a checkpoint knows whether
// they are fixed, which need not follow the start, a result does not).
func describeRun(kernelName, solver string, exact, warm bool, probes string) string {
	if exact {
		return fmt.Sprintf("%s kernel, exact gradient (Cholesky)", kernelName)
	}
	start := "cold start (zero initial guess)"
	if warm {
		start = "warm start (previous solution)"
	}
	return fmt.Sprintf("%s kernel, %s, %s, %s", kernelName, solver, start, probes)
}

// describeMethod lists the solver's own parameters, the tolerances and
// Adam's learning rate as the run applies them on n training points: the
// checkpoint's fields resolved by the solvers package itself (defaults
// filled in, the AP block and SGD batch capped at n). A field the solver
// would reject is described as the error it gives.
func describeMethod(c gpnb.Config, n int) string {
	var parts []string
	var err error
	method := c.Solver
	// The authors' rules are named as a set; other rules (the paper's
	// text, some of them changed) are listed where they differ from it.
	authors := solvers.RulesOf(c.Settings, method) == solvers.RulesAuthors
	switch m := method.(type) {
	case solvers.CG:
		switch {
		case m.PrecondRank > 0:
			parts = append(parts, fmt.Sprintf("pivoted-Cholesky preconditioner of rank %d", m.PrecondRank))
		case m.PrecondRank == solvers.PrecondRankAuto:
			parts = append(parts, fmt.Sprintf("pivoted-Cholesky preconditioner of automatic rank (at most %d)", solvers.AutoRankCap(n)))
		}
	case solvers.AP:
		if m, err = m.Resolve(n); err == nil {
			parts = append(parts, fmt.Sprintf("block %d", m.BlockSize))
			if m.Pick == solvers.PickAll && !authors {
				parts = append(parts, "blocks picked over all systems")
			}
		}
	case solvers.SGD:
		if m, err = m.Resolve(n); err == nil {
			parts = append(parts, fmt.Sprintf("batch %d", m.BatchSize))
			if m.Momentum < 0 {
				parts = append(parts, "no momentum")
			} else {
				parts = append(parts, fmt.Sprintf("momentum %g", m.Momentum))
			}
			if m.RawLearningRate > 0 {
				parts = append(parts, fmt.Sprintf("learning rate %g (the paper's units)", m.RawLearningRate))
			} else {
				parts = append(parts, fmt.Sprintf("learning rate %g (normalised)", m.LearningRate))
			}
			if m.ResidualStart == solvers.ResidualB && !authors {
				parts = append(parts, "residual estimate started at b")
			}
			if m.NoVerify && !authors {
				parts = append(parts, "stop on the estimate")
			}
		}
	}
	if err != nil {
		parts = append(parts, "invalid solver settings: "+err.Error())
	} else if c.Estimator != gpnb.ExactGradient {
		if s, err := c.Settings.Resolve(method); err != nil {
			parts = append(parts, "invalid stopping rules: "+err.Error())
		} else {
			probes := "probes"
			if s.ProbeRule == solvers.ProbeMean && !authors {
				probes = "mean over probes"
			}
			parts = append(parts, fmt.Sprintf("tolerances %g (mean) / %g (%s)", s.RelTolMean, s.RelTolProbes, probes))
			switch {
			case authors:
				parts = append(parts, "the authors' stopping rules")
			case s.Freeze == solvers.FreezeJoint:
				parts = append(parts, "every system iterated to the joint stop")
			}
			if s.MaxEpochs > 0 {
				parts = append(parts, fmt.Sprintf("cap %g epochs", s.MaxEpochs))
			}
			if s.Budget > 0 {
				parts = append(parts, fmt.Sprintf("budget %g epochs a step", s.Budget))
			}
		}
	}
	adam := fmt.Sprintf("Adam learning rate %g", c.LearningRate)
	if c.Param != gpnb.ParamSoftplus {
		adam += fmt.Sprintf(" in %s θ", c.Param)
	}
	parts = append(parts, fmt.Sprintf("%s, seed %d", adam, c.Seed))
	if c.Until == gpnb.UntilConverged {
		parts = append(parts, "until converged")
	}
	return "; " + strings.Join(parts, ", ")
}

// writeText prints the summary and the last `last` steps (0 = all).
func (in *inspection) writeText(w io.Writer, last int) error {
	var b bytes.Buffer
	in.writeSummary(&b)
	rows := in.History
	if last > 0 && last < len(rows) {
		rows = rows[len(rows)-last:]
		fmt.Fprintf(&b, "\nlast %d of %d steps:\n", last, len(in.History))
	} else if len(rows) > 0 {
		b.WriteString("\n")
	}
	if len(rows) > 0 {
		if err := in.writeSteps(&b, rows); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeSummary prints the run, θ and the totals, one labelled line each.
func (in *inspection) writeSummary(b io.Writer) {
	data := in.DataTag
	if data == "" {
		data = fmt.Sprintf("%d training points, d=%d", in.N, in.D)
	}
	fmt.Fprintf(b, "%s: %s of %s\n", in.Path, in.Kind, data)
	fmt.Fprintf(b, "run:       %s\n", in.Run)
	if p, ok := strings.CutPrefix(in.pathText, "path: "); ok {
		fmt.Fprintf(b, "path:      %s\n", p)
	}
	if in.Fingerprint != "" {
		fmt.Fprintf(b, "data:      fingerprint %s\n", in.Fingerprint)
	}
	if len(in.Theta) >= 2 {
		d := len(in.Theta) - 2
		fmt.Fprintf(b, "θ now:     noise %.4g, signal %.4g, length scales %s\n", in.Theta[d+1], in.Theta[d], formatFloats(in.Theta[:d]))
		if t := in.ThetaData; len(t) == len(in.Theta) {
			fmt.Fprintf(b, "           (z-scored; in the data's units: noise %.4g, signal %.4g, length scales %s)\n", t[d+1], t[d], formatFloats(t[:d]))
		}
	}
	exact := in.TrainingPath == gpnb.PathExact && in.ExactFrom == 0
	if k := in.ExactFrom; k > 0 && k <= len(in.History) {
		adam, fin := in.History[:k], in.History[k:]
		fmt.Fprintf(b, "steps:     %d done: %d Adam steps, %d solver iterations, %s; then %d L-BFGS steps, %d evaluations of L, %s\n",
			in.Steps, k, adam.TotalSolverIterations(), minutes(adam.TotalSeconds()), len(fin), fin.TotalEvaluations(), minutes(fin.TotalSeconds()))
	} else if exact {
		fmt.Fprintf(b, "steps:     %d done, %d evaluations of L (one Cholesky factorisation each), %s of steps\n",
			in.Steps, in.Evaluations, minutes(in.TotalSeconds))
	} else {
		fmt.Fprintf(b, "steps:     %d done, %d solver iterations, %s of steps (solver %s)\n",
			in.Steps, in.SolverIterations, minutes(in.TotalSeconds), minutes(in.SolverSeconds))
	}
	steps := len(in.History)
	if !exact && (in.Kind == "checkpoint" || in.UnconvergedSteps > 0) {
		cap := ""
		if in.MaxIterations > 0 {
			cap = fmt.Sprintf(" (%d iterations a step)", in.MaxIterations)
		}
		fmt.Fprintf(b, "cap:       %d of %d steps stopped at the iteration cap%s before their tolerances\n", in.UnconvergedSteps-in.StalledSteps, steps, cap)
	}
	if in.StalledSteps > 0 {
		fmt.Fprintf(b, "stalled:   %d of %d steps stopped above their tolerances because the true residual stopped falling (%s)\n", in.StalledSteps, steps, stallCause(in.solver()))
	}
	if in.BackoffSteps > 0 {
		fmt.Fprintf(b, "backoffs:  %d of %d steps' SGD solves diverged and were started again at half the learning rate (%d restarts in all)\n", in.BackoffSteps, steps, in.RateBackoffs)
	}
	if in.Float64Steps > 0 {
		fmt.Fprintf(b, "float64:   %d of %d steps multiplied with a float64 K, σ² being below float32 K's rounding; %d after failing on float32\n", in.Float64Steps, steps, in.Float64Retries)
	}
	if in.AdamHalvings > 0 {
		fmt.Fprintf(b, "adam:      the learning rate was halved %d× as θ oscillated\n", in.AdamHalvings)
	}
	if in.Budget > 0 || in.BudgetSteps > 0 {
		budget := ""
		if in.Budget > 0 {
			budget = fmt.Sprintf(" of %g epochs", in.Budget)
		}
		fmt.Fprintf(b, "budget:    %d of %d steps stopped at the solver budget%s (by design, not a failure), %.4g epochs in all\n", in.BudgetSteps, steps, budget, in.SolverEpochs)
	}
	if k := in.PendingEvaluations; k > 0 {
		fmt.Fprintf(b, "pending:   step %d interrupted after %d evaluations of L; resuming continues its line search\n", in.Steps+1, k)
	} else if p := in.Pending; p != nil {
		fmt.Fprintf(b, "pending:   step %d interrupted after %d solver iterations (%.1f s of solver, %.1f s of step); relative residuals %s; resuming continues this solve\n",
			p.Step, p.Iteration, p.SolverSeconds, p.StepSeconds, formatResiduals(p.RelResiduals))
	} else if in.Kind == "checkpoint" {
		fmt.Fprintf(b, "pending:   none (taken between steps; resuming starts step %d)\n", in.Steps+1)
	}
	if t := in.Test; t != nil {
		fmt.Fprintf(b, "test:      RMSE %.4f, log-likelihood %.4f (%s)\n", t.TestRMSE, t.TestLLH, t.Method)
		if s := t.Samples; s != nil {
			fmt.Fprintf(b, "samples:   RMSE %.4f, log-likelihood %.4f from %d posterior samples of the last solve (no further solve)\n", s.TestRMSE, s.TestLLH, s.Samples)
		}
	}
}

// writeSteps prints one row a step of rows.
func (in *inspection) writeSteps(b io.Writer, rows gpnb.History) error {
	if k := in.ExactFrom; k > 0 {
		// Adam's steps, then the exact finish's, each in its own table.
		i := 0
		for i < len(rows) && rows[i].Step <= k {
			i++
		}
		if i > 0 {
			if err := in.writeIterativeSteps(b, rows[:i]); err != nil {
				return err
			}
		}
		if i == len(rows) {
			return nil
		}
		if i > 0 {
			fmt.Fprintln(b)
		}
		return writeExactSteps(b, rows[i:])
	}
	if in.TrainingPath == gpnb.PathExact {
		return writeExactSteps(b, rows)
	}
	return in.writeIterativeSteps(b, rows)
}

// writeExactSteps prints one row an L-BFGS step of rows.
func writeExactSteps(b io.Writer, rows gpnb.History) error {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tevaluations\tL\tstep s\tnoise\tsignal\tmean ℓ\t")
	for _, r := range rows {
		mll := "—"
		if r.ExactMLL != nil {
			mll = fmt.Sprintf("%.6g", *r.ExactMLL)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%.1f\t%.4g\t%.4g\t%.4g\t\n", r.Step, r.Evaluations, mll, r.StepSeconds, r.Noise, r.Signal, stat.Mean(r.Lengthscales, nil))
	}
	return tw.Flush()
}

// writeIterativeSteps prints one row an Adam step of rows.
func (in *inspection) writeIterativeSteps(b io.Writer, rows gpnb.History) error {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	// Under a budget, the residuals each solve stopped at show whether
	// progress accumulates; without one they are the tolerances'.
	budget := in.Budget > 0 || in.BudgetSteps > 0
	head := "step\titerations\tconverged\tstep s\tsolver s\tnoise\tsignal\tmean ℓ\tinit dist\tzero dist\t"
	if budget {
		head += "res. at stop\t"
	}
	// The preconditioner's rank, where a step had one (--precond-rank).
	rank := slices.ContainsFunc(rows, func(r gpnb.StepRecord) bool { return r.PrecondRank > 0 })
	if rank {
		head += "precond rank\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%.1f\t%.1f\t%.4g\t%.4g\t%.4g\t%s\t%s\t", r.Step, r.SolverIterations, stepEnd(r),
			r.StepSeconds, r.SolverSeconds, r.Noise, r.Signal, stat.Mean(r.Lengthscales, nil), formatDist(r.InitDistance), formatDist(r.ZeroInitDistance))
		if budget {
			fmt.Fprintf(tw, "%s\t", formatStop(r))
		}
		if rank {
			fmt.Fprintf(tw, "%d\t", r.PrecondRank)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// stepEnd says in a word how a step's solve ended: yes (converged),
// budget, stalled or cap, and its SGD rate's backoffs.
func stepEnd(r gpnb.StepRecord) string {
	conv := "yes"
	switch {
	case r.BudgetStop:
		conv = "budget"
	case r.SolverStalled:
		conv = "stalled"
	case !r.SolverConverged:
		conv = "cap"
	}
	if r.RateBackoffs > 0 {
		conv += fmt.Sprintf(", rate/%d", 1<<r.RateBackoffs)
	}
	switch {
	case r.Float64Retry:
		conv += ", retried in float64"
	case r.Float64:
		conv += ", float64"
	}
	return conv
}

// solver returns the run's solver name (cg, ap, sgd, cholesky), or "".
func (in *inspection) solver() string {
	if in.Config != nil && in.Config.Solver != nil {
		return in.Config.Solver.Name()
	}
	return in.solverName
}

// stallCause says why solves of a solver (cg, ap, sgd; "" unknown) stall
// and what helps (solvers.State.Stalled): the words of gpnb train's warning
// and gpnb inspect's note.
func stallCause(solver string) string {
	const floor = "the products' rounding is the floor: --precision float64 or mixed, or looser --tol-mean/--tol-probes, reach them"
	switch solver {
	case "sgd":
		return "a learning rate near divergence, or the paper's-text column freeze (DESIGN.md): a lower --sgd-lr, or --rules authors"
	case "cg", "ap":
		return floor
	}
	return "CG and AP: " + floor + "; SGD: a lower --sgd-lr, or --rules authors"
}

func minutes(s float64) string { return fmt.Sprintf("%.1f min", s/60) }

func formatFloats(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.3g", x)
	}
	return strings.Join(parts, " ")
}

// formatResiduals gives column 0 (the mean system) and the largest probe
// residual.
func formatResiduals(r []float64) string {
	if len(r) == 0 {
		return "—"
	}
	s := fmt.Sprintf("mean %.3g", r[0])
	if len(r) > 1 {
		mx := 0.0
		for _, x := range r[1:] {
			mx = math.Max(mx, x)
		}
		s += fmt.Sprintf(", probes ≤ %.3g", mx)
	}
	return s
}

// formatStop gives the residuals a step's solve stopped at, compactly: the
// mean system's and the mean of the probes' ("0.0091/0.087"), or "—".
func formatStop(r gpnb.StepRecord) string {
	if len(r.FinalResiduals) < 2 {
		return "—"
	}
	return fmt.Sprintf("%.2g/%.2g", r.FinalResiduals[0], r.ProbeResidual())
}

func formatDist(d float64) string {
	if d == 0 || math.IsNaN(d) {
		return "—"
	}
	return fmt.Sprintf("%.3g", d)
}
