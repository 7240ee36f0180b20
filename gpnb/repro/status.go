package repro

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/internal/atomicfile"
)

// JobState is where a job of a grid stands, in a Plan and in status.json.
type JobState string

// The job states. Plan gives NotStarted, Started or Done (and RunningBy
// when another process holds the job); status.json adds the others.
const (
	NotStarted JobState = "not started" // nothing of it on disk (or a checkpoint that cannot be read)
	Started    JobState = "started"     // a checkpoint holds some of its steps
	Done       JobState = "done"        // its result.json is complete
	Running    JobState = "running"     // the run writing the status works on it
	Elsewhere  JobState = "elsewhere"   // another process holds its LockFile
	Failed     JobState = "failed"      // this run's attempt failed (JobStatus.Error says why)
)

// unfinished reports whether a job in state s still has work to do.
func (s JobState) unfinished() bool { return s != Done && s != Failed }

// RunState is how a run stands or ended, in status.json.
type RunState string

// The run states.
const (
	RunRunning     RunState = "running"
	RunFinished    RunState = "finished"    // every job done
	RunInterrupted RunState = "interrupted" // SIGINT or SIGTERM: rerun to resume
	RunFailed      RunState = "failed"      // a job failed; the others ran
	RunStopped     RunState = "stopped"     // jobs left: Runner.MaxJobs, or held elsewhere
)

// JobStatus is one job's line in status.json.
type JobStatus struct {
	ID    string   `json:"id"`
	State JobState `json:"state"`
	Error string   `json:"error,omitempty"`
}

// CurrentJob is the running job in status.json.
type CurrentJob struct {
	Index            int     `json:"index"` // k of k/N, 1-based
	ID               string  `json:"id"`
	Step             int     `json:"step"`
	Steps            int     `json:"steps"`
	SolverIterations int     `json:"solver_iterations"`
	ElapsedSeconds   float64 `json:"elapsed_seconds"` // in this job, this run
}

// Status is DIR/status.json, rewritten atomically after every step. While
// another runner writes that file (two gpnb reproduce on one directory), a
// run writes DIR/status-2.json (or -3, ...) instead and says so in Log.
type Status struct {
	State          RunState    `json:"state"`
	Started        time.Time   `json:"started"`
	Updated        time.Time   `json:"updated"`
	Total          int         `json:"total_jobs"`
	Done           int         `json:"done_jobs"`
	Failed         int         `json:"failed_jobs"`
	Current        *CurrentJob `json:"current,omitempty"`
	ElapsedSeconds float64     `json:"elapsed_seconds"`
	ETASeconds     float64     `json:"eta_seconds"` // -1 while unknown
	Jobs           []JobStatus `json:"jobs"`

	Command     []string          `json:"command,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
}

// tracker keeps a run's status: the jobs' states, the running job, the
// estimate of the time left, the log lines and the summary.
type tracker struct {
	r     *Runner
	path  string // the status file this run writes
	jobs  []Job
	st    Status
	sum   Summary
	fails []string // "<id>: <error>", for Run's error

	start, lastLine      time.Time // the run's start; the last plain step line
	remaining            int       // steps of the grid still to run
	runSteps             int       // steps completed in this process
	runStepTime          float64   // their wall time
	ran                  int       // jobs this run began (MaxJobs counts them)
	jobStart, lastStepAt time.Time // of the running job
	firstStep, k         int       // its first step run here (-1: no report yet); its index
	cur                  *CurrentJob
}

// newTracker starts the status of a run over plan and writes it.
func (r *Runner) newTracker(path string, plan []PlannedJob) *tracker {
	t := &tracker{r: r, path: path, start: r.clock()}
	t.lastLine = t.start
	t.st = Status{State: RunRunning, Started: t.start, Total: len(plan), ETASeconds: -1, Command: r.Command, Environment: r.Environment}
	for _, p := range plan {
		t.jobs = append(t.jobs, p.Job)
		t.st.Jobs = append(t.st.Jobs, JobStatus{ID: p.Job.ID(), State: p.State})
		if p.State == Done {
			t.st.Done++
		} else {
			t.remaining += p.Job.Steps
		}
	}
	t.sum = Summary{Total: len(plan), Skipped: t.st.Done}
	t.write()
	return t
}

// write rewrites the status file.
func (t *tracker) write() {
	t.st.Updated = t.r.clock()
	t.st.ElapsedSeconds = t.st.Updated.Sub(t.start).Seconds()
	if err := atomicfile.WriteJSON(t.path, t.st, true); err != nil && t.r.Log != nil {
		fmt.Fprintf(t.r.Log, "\nrepro: cannot write %s: %v\n", t.path, err)
	}
}

// tag is "[k/N] id", the prefix of a job's log lines.
func (t *tracker) tag(k int) string {
	return fmt.Sprintf("[%d/%d] %s", k+1, len(t.jobs), t.jobs[k].ID())
}

// elsewhere records job k as held by another process (who).
func (t *tracker) elsewhere(k int, who string) {
	t.st.Jobs[k].State = Elsewhere
	t.sum.Elsewhere = append(t.sum.Elsewhere, t.jobs[k].ID())
	t.remaining -= t.jobs[k].Steps
	t.r.logf(false, "%s%s: skipped: %s is running it (rerun this command once that one has stopped, to pick up the job)\n", t.r.nl(), t.tag(k), who)
	t.write()
}

// doneElsewhere records job k as finished by another runner since the plan.
func (t *tracker) doneElsewhere(k int) {
	t.st.Jobs[k].State = Done
	t.st.Done++
	t.sum.Skipped++
	t.remaining -= t.jobs[k].Steps
	t.write()
}

// begin records that job k starts running in this process.
func (t *tracker) begin(k int) {
	t.ran++
	j := t.jobs[k]
	t.k, t.firstStep = k, -1
	t.st.Jobs[k].State = Running
	t.cur = &CurrentJob{Index: k + 1, ID: j.ID(), Steps: j.Steps}
	t.st.Current = t.cur
	t.jobStart = t.r.clock()
	t.lastStepAt = t.jobStart
	t.r.logf(false, "%s: starting (%s)\n", t.tag(k), describe(j))
}

// step takes a report of the running job at time now.
func (t *tracker) step(p JobProgress, now time.Time) {
	if t.firstStep < 0 {
		// Steps before this report (before and including it, for a
		// Resumed report) were restored from the checkpoint.
		t.firstStep = max(p.Step-1, 0)
		if p.Resumed {
			t.firstStep, t.cur.Step, t.lastStepAt = p.Step, p.Step, now
			t.r.logf(false, "%s: resumed from its checkpoint at step %d/%d\n", t.tag(t.k), p.Step, p.Steps)
		}
		t.remaining -= t.firstStep
	}
	if p.Step > t.cur.Step {
		n := p.Step - max(t.cur.Step, t.firstStep)
		t.runSteps += n
		t.remaining -= n
		t.runStepTime += now.Sub(t.lastStepAt).Seconds()
		t.lastStepAt = now
	}
	t.cur.Step, t.cur.SolverIterations = p.Step, p.SolverIterations
	t.cur.ElapsedSeconds = now.Sub(t.jobStart).Seconds()
	t.st.ETASeconds = -1
	if t.runSteps > 0 {
		t.st.ETASeconds = t.runStepTime / float64(t.runSteps) * float64(max(t.remaining, 0))
	}
	t.write()
	line := fmt.Sprintf("%s  step %d/%d  solver iterations %d  elapsed %s  ETA %s",
		t.tag(t.k), p.Step, p.Steps, p.SolverIterations, fmtDuration(now.Sub(t.start).Seconds()), fmtDuration(t.st.ETASeconds))
	if t.r.TTY {
		t.r.logf(true, "%s", line)
	} else if p.Step%10 == 0 || p.Step == p.Steps || now.Sub(t.lastLine) >= PlainLogInterval {
		t.r.logf(false, "%s\n", line)
		t.lastLine = now
	}
}

// done records that the running job finished with res.
func (t *tracker) done(res *gpnb.Result) {
	t.st.Current = nil
	t.st.Jobs[t.k].State = Done
	t.st.Done++
	t.write()
	t.r.logf(false, "%s%s: done in %s, %d solver iterations%s, %s\n", t.r.nl(), t.tag(t.k),
		fmtDuration(t.r.clock().Sub(t.jobStart).Seconds()), res.History.TotalSolverIterations(), capped(res.History), testMetrics(res.Test))
}

// failed records that the running job failed with err; the run goes on.
func (t *tracker) failed(err error) {
	id := t.jobs[t.k].ID()
	t.st.Current = nil
	t.st.Jobs[t.k].State, t.st.Jobs[t.k].Error = Failed, err.Error()
	t.st.Failed++
	t.fails = append(t.fails, fmt.Sprintf("%s: %v", id, err))
	t.sum.Failed = append(t.sum.Failed, id)
	t.remaining -= t.jobs[t.k].Steps - max(t.cur.Step, 0)
	t.r.logf(false, "%s%s: FAILED: %v\n", t.r.nl(), t.tag(t.k), err)
	t.write()
}

// interrupted records that ctx stopped the running job at its last
// checkpoint, and returns the error that says how to resume.
func (t *tracker) interrupted() error {
	j := t.jobs[t.k]
	t.st.Current = nil
	t.st.Jobs[t.k].State = NotStarted
	if t.cur.Step > 0 {
		t.st.Jobs[t.k].State = Started
	}
	t.st.State = RunInterrupted
	t.write()
	t.summarise()
	t.sum.Ran-- // the interrupted job did not finish
	if t.r.TTY {
		t.r.logf(false, "\n")
	}
	return fmt.Errorf("%w: job %s stopped at its last checkpoint (step %d of %d); %d of %d jobs done. Rerun the same command to resume: finished jobs are skipped and %s continues from its checkpoint",
		ErrInterrupted, j.ID(), t.cur.Step, j.Steps, t.st.Done, t.st.Total, j.ID())
}

// summarise sets the summary's counts from the jobs' states.
func (t *tracker) summarise() {
	t.sum.Ran = t.ran - len(t.sum.Failed)
	t.sum.Pending = 0
	for _, j := range t.st.Jobs {
		if j.State.unfinished() {
			t.sum.Pending++
		}
	}
}

// finish writes the run's final state and returns its summary and error.
func (t *tracker) finish(ctx context.Context) (Summary, error) {
	t.summarise()
	switch {
	case ctx.Err() != nil:
		t.st.State = RunInterrupted
	case len(t.fails) > 0:
		t.st.State = RunFailed
	case t.sum.Pending > 0:
		t.st.State = RunStopped
	default:
		t.st.State = RunFinished
	}
	t.st.ETASeconds = 0
	t.write()
	if ctx.Err() != nil {
		return t.sum, fmt.Errorf("%w: %d of %d jobs done; rerun the same command to resume", ErrInterrupted, t.st.Done, t.st.Total)
	}
	if len(t.fails) > 0 {
		return t.sum, fmt.Errorf("repro: %d job(s) failed (the other jobs' results are kept; fix the cause and rerun the same command to retry them):\n  %s",
			len(t.fails), strings.Join(t.fails, "\n  "))
	}
	return t.sum, nil
}
