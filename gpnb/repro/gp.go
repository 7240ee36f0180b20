package repro

import (
	"context"
	"fmt"
	"os"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
	"gonum.org/v1/gonum/mat"
)

// GPTrainer is the real Trainer: it loads a job's dataset with package data
// and trains with gpnb.Optimiser, checkpointing after every step
// (gpnb.Config.CheckpointPath) and resuming with gpnb.Resume.
type GPTrainer struct {
	// DataDir holds the UCI files (<name>/data.csv.gz); "" means $GPNB_DATA
	// or the user cache directory, as data.Load decides.
	DataDir string
	// Operator configures the kernel operator (memory budget, workers);
	// Job.Settings.Float32 sets its Precision to kernel.Float32.
	Operator kernel.Options
	// Backend, when set, builds the kernel operator instead of the CPU one
	// (gpnb.Config.Backend): the GPU operator of package cuda, say. It is
	// not part of a job's identity: keep one backend per output directory.
	Backend func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error)
	// KeepResiduals keeps each step's per-iteration residual traces in the
	// optimiser's history, hence in the checkpoint and the Result. By
	// default they are dropped (gpnb.Config.DropResidualTraces): a cold
	// SGD job makes up to tens of thousands of iterations per step, and
	// its checkpoint would grow by megabytes a step. Set it together with
	// Runner.KeepResiduals.
	KeepResiduals bool
}

// Dataset loads a job's data: UCI split Split of the named set, or
// data.Synthetic(N, D, SEED+Split) for synthetic-N-D-SEED, restricted to
// Subset training points when Subset > 0.
func (g GPTrainer) Dataset(j Job) (*data.Dataset, error) {
	spec, err := ParseDataset(j.Dataset)
	if err != nil {
		return nil, err
	}
	var opts []data.Option
	if j.Subset > 0 {
		opts = append(opts, data.Subset(j.Subset))
	}
	var ds *data.Dataset
	if spec.UCI {
		opts = append(opts, data.Split(j.Split))
		if g.DataDir != "" {
			opts = append(opts, data.Dir(g.DataDir))
		}
		ds, err = data.Load(spec.Name, opts...)
	} else {
		ds, err = data.Synthetic(spec.N, spec.D, spec.Seed+uint64(j.Split), opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("loading %s split %d: %w", j.Dataset, j.Split, err)
	}
	return ds, nil
}

// Config returns the gpnb configuration of a job (without checkpoint path
// and hooks).
func (g GPTrainer) Config(j Job) (gpnb.Config, error) {
	s := j.Settings
	fam, err := kernel.ParseFamily(s.Kernel)
	if err != nil {
		return gpnb.Config{}, fmt.Errorf("%w: %v", ErrGrid, err)
	}
	cfg := gpnb.Config{
		Kernel:       fam,
		Settings:     solvers.Settings{RelTolMean: s.RelTolMean, RelTolProbes: s.RelTolProbes, MaxIterations: s.MaxIterations},
		WarmStart:    j.WarmStart,
		Probes:       s.Probes,
		LearningRate: s.LearningRate,
		Seed:         s.Seed,
		Operator:     g.Operator,
		Backend:      g.Backend,

		DropResidualTraces: !g.KeepResiduals,
	}
	if s.Float32 {
		cfg.Operator.Precision = kernel.Float32
	}
	switch j.Solver {
	case SolverCG:
		cfg.Solver = solvers.CG{PrecondRank: s.PrecondRank}
	case SolverAP:
		cfg.Solver = solvers.AP{BlockSize: s.BlockSize}
	case SolverSGD:
		// The SGD seed follows the job seed so one number fixes a run.
		cfg.Solver = solvers.SGD{BatchSize: s.BatchSize, LearningRate: s.SGDLearningRate, RawLearningRate: s.SGDRawLearningRate, Momentum: s.Momentum, Seed: s.Seed}
	case SolverCholesky:
		cfg.Gradient = gpnb.ExactGradient
		cfg.Solver = solvers.Cholesky{}
		cfg.Probes = 0
		cfg.Settings = solvers.Settings{}
	default:
		return gpnb.Config{}, fmt.Errorf("%w: unknown solver %q", ErrGrid, j.Solver)
	}
	return cfg, nil
}

// Train runs job j to completion; see Trainer.
func (g GPTrainer) Train(ctx context.Context, j Job, checkpoint string, progress func(Progress)) (*gpnb.Result, error) {
	ds, err := g.Dataset(j)
	if err != nil {
		return nil, err
	}
	cfg, err := g.Config(j)
	if err != nil {
		return nil, err
	}
	iters := 0
	onStep := func(r gpnb.StepRecord) {
		iters += r.SolverIterations
		progress(Progress{Step: r.Step, Steps: j.Steps, SolverIterations: iters})
	}
	cfg.CheckpointPath = checkpoint
	var o *gpnb.Optimiser
	if _, err := os.Stat(checkpoint); err == nil {
		o, err = gpnb.Resume(checkpoint, ds, gpnb.WithConfig(cfg), gpnb.WithHooks(nil, onStep))
		if err != nil {
			return nil, fmt.Errorf("resuming from %s: %w (delete that file to restart the job from step 0)", checkpoint, err)
		}
		iters = o.History().TotalSolverIterations()
		progress(Progress{Step: o.Steps(), Steps: j.Steps, SolverIterations: iters, Resumed: true})
	} else {
		cfg.OnStep = onStep
		if o, err = gpnb.NewOptimiser(ds, cfg); err != nil {
			return nil, err
		}
	}
	if err := o.RunTo(ctx, j.Steps); err != nil {
		return nil, err
	}
	if o.Steps() != j.Steps {
		return nil, fmt.Errorf("the optimiser stopped after %d of %d steps", o.Steps(), j.Steps)
	}
	ev, err := o.Evaluate()
	if err != nil {
		return nil, err
	}
	return NewResult(j, o, ev), nil
}

// NewResult is the gpnb.Result of a finished job (Optimiser.Result with the
// evaluation), named after the job: synthetic data keep their
// synthetic-N-D-SEED name and the split index, and the exact reference
// reports no probes. TotalSeconds is the sum of the steps' wall times (data
// loading and the final evaluation excluded), SolverSeconds the part of it
// spent in the linear solver.
func NewResult(j Job, o *gpnb.Optimiser, ev gpnb.Eval) *gpnb.Result {
	r := o.Result(&ev)
	r.Dataset, r.Split, r.Solver, r.WarmStart = j.Dataset, j.Split, j.Solver, j.WarmStart
	if j.Solver == SolverCholesky {
		r.Probes = 0
	}
	return &r
}

var _ Trainer = GPTrainer{}
