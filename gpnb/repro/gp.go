package repro

import (
	"context"
	"fmt"
	"os"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
)

// GPTrainer is the real Trainer: it loads a job's dataset with package data
// and trains with gpnb.Optimiser, checkpointing after every step
// (gpnb.Config.CheckpointPath) and resuming with gpnb.Resume.
type GPTrainer struct {
	// DataDir holds the UCI files (<name>/data.csv.gz); "" means $GPNB_DATA
	// or the user cache directory, as data.Load decides.
	DataDir string
	// MemoryBudget and Workers are the machine's: they replace the job's
	// Config.Operator fields of the same names (see kernel.Options).
	MemoryBudget int64
	Workers      int
	// Backend, when set, builds the kernel operator instead of the CPU one
	// (gpnb.WithBackend): the GPU operator of package cuda, say. It is not
	// part of a job's identity: keep one backend per output directory.
	Backend gpnb.Backend
	// KeepResiduals keeps each step's per-iteration residual traces in the
	// optimiser's history, hence in the checkpoint and the Result. By
	// default they are dropped (gpnb.Config.DropResidualTraces): a cold
	// SGD job makes up to tens of thousands of iterations per step, and
	// its checkpoint would grow by megabytes a step. Set it together with
	// Runner.KeepResiduals.
	KeepResiduals bool
}

// Dataset loads a job's data: UCI split Split of the named set, or
// data.Synthetic(N, D, SEED+Split) for synthetic-N-D-SEED (data.Open),
// restricted to Subset training points when Subset > 0.
func (g GPTrainer) Dataset(j Job) (*data.Dataset, error) {
	spec, err := ParseDataset(j.Dataset)
	if err != nil {
		return nil, err
	}
	opts := []data.Option{data.Split(j.Split)}
	if j.Subset > 0 {
		opts = append(opts, data.Subset(j.Subset))
	}
	if spec.UCI && g.DataDir != "" {
		opts = append(opts, data.Dir(g.DataDir))
	}
	ds, err := data.Open(j.Dataset, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading %s split %d: %w", j.Dataset, j.Split, err)
	}
	return ds, nil
}

// Config returns the configuration a job runs with: its own, with the
// machine's memory budget and workers and the trainer's residual traces
// (without checkpoint path).
func (g GPTrainer) Config(j Job) gpnb.Config {
	cfg := j.Config
	cfg.Operator.MemoryBudget, cfg.Operator.Workers = g.MemoryBudget, g.Workers
	cfg.DropResidualTraces = !g.KeepResiduals
	return cfg
}

// Train runs job j to completion; see Trainer.
func (g GPTrainer) Train(ctx context.Context, j Job, checkpoint string, progress func(JobProgress)) (*gpnb.Result, error) {
	ds, err := g.Dataset(j)
	if err != nil {
		return nil, err
	}
	cfg := g.Config(j)
	cfg.CheckpointPath = checkpoint
	iters := 0
	var o *gpnb.Optimiser
	if _, err := os.Stat(checkpoint); err == nil {
		o, err = gpnb.Resume(checkpoint, ds, gpnb.WithConfig(cfg), gpnb.WithBackend(g.Backend))
		if err != nil {
			return nil, fmt.Errorf("resuming from %s: %w (delete that file to restart the job from step 0)", checkpoint, err)
		}
		iters = o.History().TotalSolverIterations()
		progress(JobProgress{Step: o.Steps(), Steps: j.Steps, SolverIterations: iters, Resumed: true})
	} else if o, err = gpnb.NewOptimiser(ds, cfg, gpnb.WithBackend(g.Backend)); err != nil {
		return nil, err
	}
	o.AddRecorder(gpnb.Hooks{Step: func(r gpnb.StepRecord) {
		iters += r.SolverIterations
		progress(JobProgress{Step: r.Step, Steps: j.Steps, SolverIterations: iters})
	}})
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
	r := o.Result()
	r.Test = &ev
	r.Dataset, r.Split, r.Solver, r.WarmStart = j.Dataset, j.Split, j.Method().Solver, j.Config.WarmStart
	if j.Config.Estimator == gpnb.ExactGradient {
		r.Probes = 0
	}
	return &r
}

var _ Trainer = GPTrainer{}
