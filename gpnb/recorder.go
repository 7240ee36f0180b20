package gpnb

import (
	"errors"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
)

// IterationRecord is the scalar-only record of one solver iteration: what a
// progress bar or a live residual chart needs, and no n-sized vector, so a
// backend that keeps its vectors on a device sends nothing more per
// iteration than these numbers.
type IterationRecord struct {
	// Step is the 1-based optimiser step the iteration belongs to (0 for an
	// Estimator used on its own).
	Step int
	// Iteration is the 1-based solver iteration within the step.
	Iteration int
	// RelResiduals[j] is column j's relative residual ‖H v_j − b_j‖/‖b_j‖
	// after the iteration (column 0 the mean system; estimated for SGD). It
	// is the recorder's own copy.
	RelResiduals []float64
}

// A Recorder watches a run, in the manner of gonum's optimize.Recorder:
// progress bars, live views and a user's own code each add one with
// Optimiser.AddRecorder, and they coexist; none replaces another. Recorders are called in the order they were added, on the
// goroutine that runs the step. Cancelling the context passed to Step from
// RecordIteration pauses the step after that iteration.
type Recorder interface {
	// RecordIteration is called after every solver iteration.
	RecordIteration(IterationRecord)
	// RecordStep is called with the record of every completed step (a copy).
	RecordStep(StepRecord)
}

// Hooks is a Recorder made of two functions; a nil one is skipped.
type Hooks struct {
	Iteration func(IterationRecord)
	Step      func(StepRecord)
}

// RecordIteration calls h.Iteration when it is set.
func (h Hooks) RecordIteration(p IterationRecord) {
	if h.Iteration != nil {
		h.Iteration(p)
	}
}

// RecordStep calls h.Step when it is set.
func (h Hooks) RecordStep(r StepRecord) {
	if h.Step != nil {
		h.Step(r)
	}
}

// recorders is an ordered list of recorders from which each can be removed.
type recorders struct {
	list []*Recorder
}

// add appends r and returns the function that removes it again.
func (rs *recorders) add(r Recorder) (remove func()) {
	p := &r
	rs.list = append(rs.list, p)
	return func() {
		for i, q := range rs.list {
			if q == p {
				// A new slice: a call in progress ranges over the old one.
				rs.list = slices.Delete(slices.Clone(rs.list), i, i+1)
				return
			}
		}
	}
}

func (rs *recorders) iteration(step, iter int, relRes []float64) {
	for _, r := range rs.list {
		(*r).RecordIteration(IterationRecord{Step: step, Iteration: iter, RelResiduals: clone(relRes)})
	}
}

func (rs *recorders) step(rec StepRecord) {
	for _, r := range rs.list {
		(*r).RecordStep(cloneHistory(History{rec})[0])
	}
}

// Backend builds the kernel operator H_θ for inputs X and kernel k in place
// of the CPU kernel.NewOperator(X, k, Config.Operator), e.g. the GPU
// backend of package cuda:
//
//	gpnb.WithBackend(cuda.Backend(cuda.Options{}))
//
// An operator that implements kernel.Rekerneler is rebuilt in place at each
// step. A backend is not part of a run's description: checkpoints do not
// store it, and a resumed run may use another (a valid continuation, not the
// same bits).
type Backend func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error)

// Option adjusts how NewOptimiser, NewEstimator and Resume build their
// object with what is not part of the run's description (Config): the
// backend, and for Resume the changes allowed to a saved run.
type Option func(*options)

type options struct {
	backend Backend
	expect  *Config       // WithConfig (Resume)
	changes func(*Config) // WithChanges (Resume)
}

// WithBackend builds the kernel operator with b instead of the CPU operator
// (nil: the CPU operator).
func WithBackend(b Backend) Option { return func(o *options) { o.backend = b } }

// WithConfig, for Resume, checks that cfg (resolved) agrees with the
// checkpoint's configuration in every field that cannot change mid-run (those
// not tagged `resume:"change"` in Config, which include every solver
// parameter), failing with ErrConfigMismatch otherwise, and takes the
// changeable fields from it: learning rate, solver settings, checkpoint
// path, residual traces, the evaluation's settings, and the operator's memory
// budget and workers, which belong to the machine, not to the run. The CLI
// uses it so that resuming with other flags is refused instead of silently
// ignored.
func WithConfig(cfg Config) Option { return func(o *options) { c := cfg; o.expect = &c } }

// WithChanges, for Resume, lets f modify the checkpoint's configuration
// (after WithConfig, when both are given), e.g.
//
//	gpnb.WithChanges(func(c *gpnb.Config) { c.LearningRate = 0.05 })
//
// A change to a field that cannot change mid-run is ErrConfigMismatch.
func WithChanges(f func(*Config)) Option { return func(o *options) { o.changes = f } }

func collect(opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if opt == nil {
			return o, errors.New("gpnb: nil Option: pass WithBackend, WithConfig or WithChanges")
		}
		opt(&o)
	}
	return o, nil
}
