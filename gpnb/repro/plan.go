package repro

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/results"
)

// PlannedJob says where one job of a grid stands in a results directory.
type PlannedJob struct {
	Job   Job
	State JobState // NotStarted, Started or Done
	// Step is the number of steps the checkpoint holds (Started), or the
	// job's Steps (Done).
	Step int
	// Result is the finished job's result (Done).
	Result *gpnb.Result
	// Segments are the job's runs.json: which builds ran which steps, and
	// under what load (empty for jobs run before runs.json existed).
	Segments []results.Segment
	// RunningBy, when not empty, names the process that is running the job
	// now (it holds the job's LockFile): another gpnb reproduce.
	RunningBy string
	// Problem, when not empty, says why a checkpoint could not be read;
	// the job then counts as not started (a run would restart it).
	Problem string
}

// CheckpointReader is implemented by Trainers whose checkpoints Plan and Run
// can read: it returns the number of completed steps a checkpoint holds and
// how many of them stopped unconverged (at the iteration cap, or stalled).
type CheckpointReader interface {
	CheckpointSteps(path string) (steps, unconverged int, err error)
}

// checkpointSteps asks t for the steps a checkpoint holds; a Trainer that is
// not a CheckpointReader (or none) is read as a GPTrainer.
func checkpointSteps(t Trainer, path string) (steps, unconverged int, err error) {
	if cr, ok := t.(CheckpointReader); ok {
		return cr.CheckpointSteps(path)
	}
	return GPTrainer{}.CheckpointSteps(path)
}

// CheckpointSteps returns the number of steps the gpnb checkpoint at path
// holds and how many of them stopped unconverged; a corrupt file is an
// error.
func (GPTrainer) CheckpointSteps(path string) (steps, unconverged int, err error) {
	st, err := gpnb.ReadCheckpoint(path)
	if err != nil {
		return 0, 0, err
	}
	return st.Step, st.History.UnconvergedSteps(), nil
}

// Plan reports, without running or writing anything, the state of every job
// of jobs in r.Dir: finished, started (with the step its checkpoint holds)
// or not started, and whether another process is running it now (its
// LockFile is held); r.Trainer (a CheckpointReader, or nil for GPTrainer's
// checkpoints) reads the checkpoints. As Run does, it fails with
// ErrConfigMismatch when a job directory holds a job.json that differs from
// the grid's job.
func (r *Runner) Plan(jobs []Job) ([]PlannedJob, error) {
	if r.Dir == "" {
		return nil, fmt.Errorf("%w: no output directory: give --out DIR", ErrGrid)
	}
	norm := make([]Job, len(jobs))
	for i, j := range jobs {
		norm[i] = j.Normalize()
		if err := norm[i].Validate(); err != nil {
			return nil, err
		}
	}
	return r.plan(norm, false)
}

// plan is Plan for normalised jobs. For a run (run true) it also logs the
// jobs that go on under a raised iteration cap, and deletes the checkpoint
// a finished job may have left (a run killed between writing result.json
// and deleting the checkpoint leaves one: it is of no further use).
func (r *Runner) plan(jobs []Job, run bool) ([]PlannedJob, error) {
	out := make([]PlannedJob, len(jobs))
	for i, j := range jobs {
		p := PlannedJob{Job: j, State: NotStarted}
		res, raised, err := r.checkJob(j)
		if err != nil {
			return nil, err
		}
		if run && raised != "" {
			r.logf(false, "%s: %s\n", j.ID(), raised)
		}
		dir := filepath.Join(r.Dir, results.JobsDir, j.ID())
		p.Segments, _ = results.ReadSegments(dir) // provenance only; unreadable = none
		if busy, who := heldElsewhere(filepath.Join(dir, LockFile)); busy {
			p.RunningBy = who
		}
		ckpt := filepath.Join(dir, CheckpointFile)
		switch _, statErr := os.Stat(ckpt); {
		case res != nil:
			p.State, p.Step, p.Result = Done, j.Steps, res
			if run {
				os.Remove(ckpt)
			}
		case errors.Is(statErr, os.ErrNotExist):
		default:
			if step, _, err := checkpointSteps(r.Trainer, ckpt); err != nil {
				p.Problem = err.Error()
			} else {
				p.State, p.Step = Started, step
			}
		}
		out[i] = p
	}
	return out, nil
}

// String is one line for the job: its id and state, with the runtime,
// solver iterations (and how many steps stopped unconverged at the
// iteration cap, if any) and test log-likelihood of a finished job.
func (p PlannedJob) String() string {
	switch p.State {
	case Done:
		return fmt.Sprintf("%-32s done: %d steps in %.1f min (solver %.1f min), %d solver iterations%s, %s, operator %s%s",
			p.Job.ID(), p.Result.StepsDone, p.Result.TotalSeconds/60, p.Result.SolverSeconds/60,
			p.Result.History.TotalSolverIterations(), capped(p.Result.History), testLLH(p.Result.Test), orDash(p.Result.Operator), p.provenance())
	case Started:
		return fmt.Sprintf("%-32s started: checkpoint at step %d/%d%s%s", p.Job.ID(), p.Step, p.Job.Steps, p.provenance(), p.running())
	}
	if p.RunningBy != "" {
		return fmt.Sprintf("%-32s not started%s", p.Job.ID(), p.running())
	}
	if p.Problem != "" {
		return fmt.Sprintf("%-32s not started (unreadable checkpoint, will restart: %s)", p.Job.ID(), p.Problem)
	}
	return fmt.Sprintf("%-32s not started", p.Job.ID())
}

// capped is " (N steps stopped at the iteration cap, unconverged)" for a
// history with such steps, and empty otherwise; stalled steps are named
// apart.
func capped(h gpnb.History) string {
	if s := h.StalledSteps(); s > 0 {
		return fmt.Sprintf(" (%d steps unconverged: %d at the iteration cap, %d stalled)", h.UnconvergedSteps(), h.UnconvergedSteps()-s, s)
	}
	switch u := h.UnconvergedSteps(); u {
	case 0:
		return ""
	case 1:
		return " (1 step stopped at the iteration cap, unconverged)"
	default:
		return fmt.Sprintf(" (%d steps stopped at the iteration cap, unconverged)", u)
	}
}

// running is "; running now in <process>" for a job another runner holds,
// and empty otherwise.
func (p PlannedJob) running() string {
	if p.RunningBy == "" {
		return ""
	}
	return "; running now in " + p.RunningBy
}

// testLLH is "test LLH 1.262", or "not evaluated".
func testLLH(ev *gpnb.Eval) string {
	if ev == nil {
		return "not evaluated"
	}
	return fmt.Sprintf("test LLH %.3f", ev.TestLLH)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// provenance summarises the segments: "; steps 0-36 by 4860afc (load 5.1),
// 36-100 by 6cb8f0c (load 2.3, H·V 48 GFLOP/s)", the rate where the segment
// measured one. Steps the job holds that no segment covers are named as such
// ("0-76 outside the runner's records": run by gpnb train before the runner
// resumed the checkpoint, or by a process killed between a step's checkpoint
// and its report), except after the last segment of a job running now.
func (p PlannedJob) provenance() string {
	if len(p.Segments) == 0 {
		return ""
	}
	var parts []string
	upTo := p.Step
	if p.RunningBy != "" {
		upTo = 0 // its report of the step just checkpointed may be on its way
	}
	results.WalkSegments(p.Segments, upTo, func(g results.Segment) {
		rev := g.Environment["vcs.revision"]
		if len(rev) > 7 {
			rev = rev[:7]
		}
		if rev == "" {
			// vcs.modified is left to runs.json: it is true whenever any
			// tracked file differs, results being written included.
			rev = "an unrecorded build"
		}
		machine := ""
		if g.MachineGFLOPS > 0 {
			machine = fmt.Sprintf(", H·V %.0f GFLOP/s", g.MachineGFLOPS)
		}
		parts = append(parts, fmt.Sprintf("%d-%d by %s (load %.1f%s)", g.FromStep, g.ToStep, rev, g.LoadMean, machine))
	}, func(from, to int) {
		parts = append(parts, fmt.Sprintf("%d-%d outside the runner's records", from, to))
	})
	return "; steps " + strings.Join(parts, ", ")
}
