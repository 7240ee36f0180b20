package repro

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/internal/atomicfile"
)

// File names inside a job's directory DIR/jobs/<id>/.
const (
	JobFile        = "job.json"
	ResultFile     = "result.json"
	CheckpointFile = "checkpoint"
	StatusFile     = "status.json"
	JobsDir        = "jobs"
)

// PlainLogInterval is the longest a plain (non-terminal) Runner log goes
// without a step line while steps finish: a step ending this long after the
// last step line is logged even when it is not a tenth step.
const PlainLogInterval = time.Minute

// Progress is what a Trainer reports while a job runs: at least once per
// completed marginal-likelihood step.
type Progress struct {
	Step             int // steps completed in this job (resumed steps included)
	Steps            int // the job's total
	SolverIterations int // solver iterations summed over the completed steps
	// Resumed marks the report a resumed trainer may make before its first
	// new step: Step steps were restored from the checkpoint, not run now.
	Resumed bool
}

// A Trainer runs one job to completion. It must checkpoint to checkpoint
// after every step, resume from checkpoint when that file exists, and, when
// ctx is cancelled, stop at the next solver iteration, save its last complete
// step and return an error wrapping ctx.Err(). It calls progress (never nil)
// after every step.
type Trainer interface {
	Train(ctx context.Context, job Job, checkpoint string, progress func(Progress)) (*gpnb.Result, error)
}

// Runner runs a grid's jobs one after another in Dir.
//
// Several runners may share one Dir (two gpnb reproduce over parts of a
// grid, say, on a machine with cores to spare): each job is run by the
// runner that holds its LockFile, and a runner that finds a job held by
// another skips it (Summary.Elsewhere); the second runner writes its
// progress to status-2.json. Each job still runs in one process at a time,
// so its checkpoint and result are never written by two.
type Runner struct {
	Dir     string  // output directory; created if missing
	Trainer Trainer // does the work of one job

	// Log receives progress: one line rewritten in place when TTY is true,
	// plain lines otherwise (job start and end; a step line at every tenth
	// step, and at any step ending PlainLogInterval or more after the last
	// line, so that a log of slow steps is never silent for long). nil: none.
	Log io.Writer
	TTY bool

	// MaxJobs stops the run after this many jobs have been run (finished
	// jobs that are skipped do not count); 0 means no limit.
	MaxJobs int

	// KeepResiduals keeps the per-iteration residual traces in result.json;
	// by default they are dropped to keep results small (iteration counts,
	// timings and hyperparameters per step are always kept). With
	// GPTrainer, set GPTrainer.KeepResiduals too: by default it does not
	// record the traces at all.
	KeepResiduals bool

	// Command and Environment are copied into status.json, to record what
	// was run where (the command line; Go version, BLAS, cores, ...).
	Command     []string
	Environment map[string]string

	// LoadAverage is sampled after every step into the job's runs.json;
	// nil means SystemLoadAverage.
	LoadAverage func() float64
	// MachineRate, when set, is called once as each job begins running and
	// its result, a throughput in GFLOP/s, is recorded in the job's
	// runs.json as Segment.MachineGFLOPS (NaN or ≤ 0: not recorded). A job
	// that spans sessions may run on machines of different speeds; this
	// says how fast each segment's was. gpnb reproduce measures the dense
	// kernel operator's H·V.
	MachineRate func() float64

	now func() time.Time // time source; time.Now unless a test sets it
}

// JobState is one job's line in status.json.
type JobState struct {
	ID    string `json:"id"`
	State string `json:"state"` // pending, running, done, failed, elsewhere (another runner has it)
	Error string `json:"error,omitempty"`
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
	State          string      `json:"state"` // running, finished, interrupted, failed, stopped (MaxJobs)
	Started        time.Time   `json:"started"`
	Updated        time.Time   `json:"updated"`
	Total          int         `json:"total_jobs"`
	Done           int         `json:"done_jobs"`
	Failed         int         `json:"failed_jobs"`
	Current        *CurrentJob `json:"current,omitempty"`
	ElapsedSeconds float64     `json:"elapsed_seconds"`
	ETASeconds     float64     `json:"eta_seconds"` // -1 while unknown
	Jobs           []JobState  `json:"jobs"`

	Command     []string          `json:"command,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
}

// Summary says what a Run did.
type Summary struct {
	Total   int      // jobs in the grid
	Skipped int      // already finished before this run
	Ran     int      // finished in this run
	Failed  []string // ids of failed jobs
	Pending int      // not yet run (MaxJobs, interruption, or running elsewhere)
	// Elsewhere lists the jobs skipped because another process (another
	// gpnb reproduce on the same directory) holds their LockFile; they are
	// counted in Pending.
	Elsewhere []string
}

// Run runs every unfinished job of jobs. Before anything runs it checks every
// job directory that exists: a stored job.json that differs from the job is
// ErrConfigMismatch, unless the job only raises an iteration cap that none
// of the stored job's steps reached; the job then goes on under the larger
// cap (its job.json is rewritten when it runs). A job that fails is
// recorded in status.json and the run goes on with the next; the returned
// error then lists the failures. A job that another process is running (its
// LockFile is held) is skipped and listed in Summary.Elsewhere. When ctx is
// cancelled the running job checkpoints and Run returns an error wrapping
// ErrInterrupted that says how to resume.
func (r *Runner) Run(ctx context.Context, jobs []Job) (Summary, error) {
	if r.Trainer == nil {
		return Summary{}, errors.New("repro: Runner.Trainer is nil")
	}
	if r.Dir == "" {
		return Summary{}, fmt.Errorf("%w: no output directory: give --out DIR", ErrGrid)
	}
	now := r.now
	if now == nil {
		now = time.Now
	}
	ids := map[string]bool{}
	for i := range jobs {
		jobs[i] = jobs[i].Normalize()
		if err := jobs[i].Validate(); err != nil {
			return Summary{}, err
		}
		if ids[jobs[i].ID()] {
			return Summary{}, fmt.Errorf("%w: job %s appears twice in the grid", ErrGrid, jobs[i].ID())
		}
		ids[jobs[i].ID()] = true
	}
	if err := os.MkdirAll(filepath.Join(r.Dir, JobsDir), 0o755); err != nil {
		return Summary{}, fmt.Errorf("repro: cannot create the output directory: %w", err)
	}

	host, _ := os.Hostname()
	owner := lockOwner{PID: os.Getpid(), Host: host, Task: SchedulerTask(), Since: now()}
	statusPath, statusLock, err := claimStatus(r.Dir, owner)
	if err != nil {
		r.logf(false, "repro: cannot lock the status file (%v); going on without: another gpnb reproduce on %s would not be noticed\n", err, r.Dir)
	}
	defer statusLock.release(false)
	if statusPath == filepath.Join(r.Dir, StatusFile) {
		r.logf(false, "progress in %s\n", statusPath)
	} else {
		r.logf(false, "progress in %s (another gpnb reproduce is writing %s)\n", statusPath, StatusFile)
	}

	st := Status{State: "running", Started: now(), Total: len(jobs), ETASeconds: -1, Command: r.Command, Environment: r.Environment}
	done := make([]bool, len(jobs))
	for i, j := range jobs {
		res, raised, err := r.checkJob(j)
		if err != nil {
			return Summary{}, err
		}
		if raised != "" {
			r.logf(false, "%s: %s\n", j.ID(), raised)
		}
		done[i] = res != nil
		s := "pending"
		if done[i] {
			s = "done"
			st.Done++
			// A run killed between writing result.json and deleting the
			// checkpoint leaves one behind: it is of no further use.
			os.Remove(filepath.Join(r.Dir, JobsDir, j.ID(), CheckpointFile))
		}
		st.Jobs = append(st.Jobs, JobState{ID: j.ID(), State: s})
	}
	sum := Summary{Total: len(jobs), Skipped: st.Done}

	remainingSteps := 0
	for i, j := range jobs {
		if !done[i] {
			remainingSteps += j.Steps
		}
	}
	runStart := now()
	lastLine := runStart    // when the last plain step line was logged
	var runSteps int        // steps completed in this process
	var runStepTime float64 // wall time spent on them
	ran := 0
	var failures []string
	write := func() {
		st.Updated = now()
		st.ElapsedSeconds = st.Updated.Sub(runStart).Seconds()
		if err := atomicfile.WriteJSON(statusPath, st, true); err != nil && r.Log != nil {
			fmt.Fprintf(r.Log, "\nrepro: cannot write %s: %v\n", statusPath, err)
		}
	}
	write()

	for i, j := range jobs {
		if done[i] {
			continue
		}
		if r.MaxJobs > 0 && ran >= r.MaxJobs {
			break
		}
		if err := ctx.Err(); err != nil {
			break
		}
		id := j.ID()
		dir := filepath.Join(r.Dir, JobsDir, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return sum, err
		}
		lock, other, err := acquire(filepath.Join(dir, LockFile), owner)
		if err != nil {
			r.logf(false, "%s[%d/%d] %s: cannot lock the job (%v); running it unlocked\n", r.nl(), i+1, len(jobs), id, err)
		}
		if other != "" {
			st.Jobs[i].State = "elsewhere"
			sum.Elsewhere = append(sum.Elsewhere, id)
			remainingSteps -= j.Steps
			r.logf(false, "%s[%d/%d] %s: skipped: %s is running it (rerun this command once that one has stopped, to pick up the job)\n", r.nl(), i+1, len(jobs), id, other)
			write()
			continue
		}
		// Another runner may have finished the job since checkJob looked.
		if res, _, err := r.checkJob(j); err != nil || res != nil {
			lock.release(false)
			if err != nil {
				return sum, err
			}
			st.Jobs[i].State = "done"
			st.Done++
			sum.Skipped++
			remainingSteps -= j.Steps
			write()
			continue
		}
		ran++
		if err := atomicfile.WriteJSON(filepath.Join(dir, JobFile), j, true); err != nil {
			lock.release(false)
			return sum, err
		}
		st.Jobs[i].State = "running"
		cur := &CurrentJob{Index: i + 1, ID: id, Steps: j.Steps}
		st.Current = cur
		jobStart := now()
		lastStepAt := jobStart
		firstStep := -1
		r.logf(false, "[%d/%d] %s: starting (%s)\n", i+1, len(jobs), id, describe(j))
		segs, err := ReadSegments(dir)
		if err != nil {
			segs = nil // provenance only: start the record afresh
		}
		seg := &Segment{FromStep: -1, Started: now(), Environment: r.Environment}
		if r.MachineRate != nil {
			if g := r.MachineRate(); g > 0 && !math.IsInf(g, 0) {
				seg.MachineGFLOPS = g
			}
		}
		load := r.LoadAverage
		if load == nil {
			load = SystemLoadAverage
		}
		progress := func(p Progress) {
			t := now()
			if seg.FromStep < 0 {
				seg.FromStep = p.Step
				if !p.Resumed {
					seg.FromStep = max(p.Step-1, 0)
				}
			}
			seg.ToStep, seg.Updated = p.Step, t
			if !p.Resumed {
				seg.sample(load())
			}
			if err := atomicfile.WriteJSON(filepath.Join(dir, SegmentsFile), append(segs[:len(segs):len(segs)], *seg), true); err != nil {
				r.logf(false, "%srepro: cannot write %s: %v\n", r.nl(), SegmentsFile, err)
			}
			if firstStep < 0 {
				// Steps before this report (before and including it, for a
				// Resumed report) were restored from the checkpoint.
				firstStep = max(p.Step-1, 0)
				if p.Resumed {
					firstStep = p.Step
					cur.Step = p.Step
					lastStepAt = t
					r.logf(false, "[%d/%d] %s: resumed from its checkpoint at step %d/%d\n", i+1, len(jobs), id, p.Step, p.Steps)
				}
				remainingSteps -= firstStep
			}
			if p.Step > cur.Step {
				n := p.Step - max(cur.Step, firstStep)
				runSteps += n
				remainingSteps -= n
				runStepTime += t.Sub(lastStepAt).Seconds()
				lastStepAt = t
			}
			cur.Step, cur.SolverIterations = p.Step, p.SolverIterations
			cur.ElapsedSeconds = t.Sub(jobStart).Seconds()
			st.ETASeconds = -1
			if runSteps > 0 {
				st.ETASeconds = runStepTime / float64(runSteps) * float64(max(remainingSteps, 0))
			}
			write()
			line := fmt.Sprintf("[%d/%d] %s  step %d/%d  solver iterations %d  elapsed %s  ETA %s",
				i+1, len(jobs), id, p.Step, p.Steps, p.SolverIterations,
				fmtDuration(t.Sub(runStart).Seconds()), fmtDuration(st.ETASeconds))
			if r.TTY {
				r.logf(true, "%s", line)
			} else if p.Step%10 == 0 || p.Step == p.Steps || t.Sub(lastLine) >= PlainLogInterval {
				r.logf(false, "%s\n", line)
				lastLine = t
			}
		}
		ckpt := filepath.Join(dir, CheckpointFile)
		res, err := r.Trainer.Train(ctx, j, ckpt, progress)
		if err == nil {
			err = checkResult(j, res)
		}
		if err == nil {
			if !r.KeepResiduals {
				for k := range res.History {
					res.History[k].Residuals = nil
				}
			}
			// Compact: a result holds every step's record.
			err = atomicfile.WriteJSON(filepath.Join(dir, ResultFile), res, false)
		}
		st.Current = nil
		if err == nil {
			os.Remove(ckpt) // the result is safely on disk; checkpoints are not kept
		}
		lock.release(err == nil) // a finished job needs no lock file
		if err != nil && ctx.Err() != nil {
			st.Jobs[i].State = "pending"
			st.State = "interrupted"
			write()
			sum.Ran = ran - 1 - len(sum.Failed)
			sum.Pending = countPending(st.Jobs)
			if r.TTY {
				r.logf(false, "\n")
			}
			return sum, fmt.Errorf("%w: job %s stopped at its last checkpoint (step %d of %d); %d of %d jobs done. Rerun the same command to resume: finished jobs are skipped and %s continues from its checkpoint",
				ErrInterrupted, id, cur.Step, j.Steps, st.Done, st.Total, id)
		}
		if err != nil {
			st.Jobs[i].State, st.Jobs[i].Error = "failed", err.Error()
			st.Failed++
			failures = append(failures, fmt.Sprintf("%s: %v", id, err))
			sum.Failed = append(sum.Failed, id)
			remainingSteps -= j.Steps - max(cur.Step, 0)
			r.logf(false, "%s[%d/%d] %s: FAILED: %v\n", r.nl(), i+1, len(jobs), id, err)
			write()
			continue
		}
		st.Jobs[i].State = "done"
		st.Done++
		write()
		r.logf(false, "%s[%d/%d] %s: done in %s, %d solver iterations%s, %s\n",
			r.nl(), i+1, len(jobs), id, fmtDuration(now().Sub(jobStart).Seconds()), res.History.TotalSolverIterations(), capped(res.History), testMetrics(res.Test))
	}
	sum.Ran = ran - len(sum.Failed)
	sum.Pending = countPending(st.Jobs)
	switch {
	case ctx.Err() != nil:
		st.State = "interrupted"
	case len(failures) > 0:
		st.State = "failed"
	case sum.Pending > 0:
		st.State = "stopped"
	default:
		st.State = "finished"
	}
	st.ETASeconds = 0
	write()
	if ctx.Err() != nil {
		return sum, fmt.Errorf("%w: %d of %d jobs done; rerun the same command to resume", ErrInterrupted, st.Done, st.Total)
	}
	if len(failures) > 0 {
		return sum, fmt.Errorf("repro: %d job(s) failed (the other jobs' results are kept; fix the cause and rerun the same command to retry them):\n  %s",
			len(failures), strings.Join(failures, "\n  "))
	}
	return sum, nil
}

func countPending(js []JobState) int {
	n := 0
	for _, j := range js {
		if j.State == "pending" || j.State == "running" || j.State == "elsewhere" {
			n++
		}
	}
	return n
}

// nl ends the in-place progress line on a terminal.
func (r *Runner) nl() string {
	if r.TTY {
		return "\n"
	}
	return ""
}

func (r *Runner) logf(inPlace bool, format string, a ...any) {
	if r.Log == nil {
		return
	}
	if inPlace {
		fmt.Fprintf(r.Log, "\r"+format+"\x1b[K", a...)
		return
	}
	fmt.Fprintf(r.Log, format, a...)
}

// testMetrics is "test RMSE 0.078, test LLH 1.262", or "not evaluated".
func testMetrics(ev *gpnb.Eval) string {
	if ev == nil {
		return "not evaluated"
	}
	return fmt.Sprintf("test RMSE %.4g, test LLH %.4g", ev.TestRMSE, ev.TestLLH)
}

func describe(j Job) string {
	s := fmt.Sprintf("%d steps", j.Steps)
	if j.Subset > 0 {
		s = fmt.Sprintf("subset %d, ", j.Subset) + s
	}
	return s
}

func fmtDuration(sec float64) string {
	if sec < 0 {
		return "?"
	}
	return (time.Duration(sec*10) * (time.Second / 10)).String()
}

// checkJob returns j's result in r.Dir when the job is finished (nil when it
// is not), and an error when the stored job.json differs from j. A stored
// job that differs from j only in a smaller iteration cap that none of its
// steps reached is the same job (see raisedCap); raised then says so, for
// the log.
func (r *Runner) checkJob(j Job) (finished *gpnb.Result, raised string, err error) {
	dir := filepath.Join(r.Dir, JobsDir, j.ID())
	b, err := os.ReadFile(filepath.Join(dir, JobFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	var stored Job
	if err := json.Unmarshal(b, &stored); err != nil {
		return nil, "", fmt.Errorf("repro: %s is not a valid job file (%v): delete the directory %s to rerun that job", filepath.Join(dir, JobFile), err, dir)
	}
	finished = finishedResult(j, dir)
	if stored = stored.Normalize(); !stored.Equal(j) {
		raised, err = r.raisedCap(stored, j, dir, finished)
		if err != nil {
			return nil, "", err
		}
		if raised == "" {
			return nil, "", fmt.Errorf("%w: %s was written for %s, but this run asks for %s: rerun with the original arguments, or use a different --out",
				ErrConfigMismatch, filepath.Join(dir, JobFile), jobDiff(stored, j, true), jobDiff(stored, j, false))
		}
	}
	return finished, raised, nil
}

// finishedResult returns the result in job directory dir when it is a
// complete result of j, and nil when it is missing or torn (the job runs, or
// resumes, again).
func finishedResult(j Job, dir string) *gpnb.Result {
	res, err := readResult(filepath.Join(dir, ResultFile))
	if err != nil || checkResult(j, res) != nil {
		return nil
	}
	return res
}

// raisedCap returns a note when j differs from the stored job only in a
// larger iteration cap (Settings.MaxIterations, resolved: the solver's
// default when unset) and none of the steps the job has done, finished
// (finished, its result in dir, or nil) or checkpointed, stopped
// unconverged: a cap that no solve reached changed nothing, so those steps
// are what a run under j's cap gives, and the job continues under it (a
// pending solve included, see gpnb.Resume). It returns "" when the jobs
// differ otherwise, and an error wrapping ErrConfigMismatch when a step did
// reach the stored cap.
func (r *Runner) raisedCap(stored, j Job, dir string, finished *gpnb.Result) (string, error) {
	if d := stored.differences(j); len(d) != 1 || d[0] != "config.Settings.MaxIterations" {
		return "", nil
	}
	was, now := iterationCap(stored), iterationCap(j)
	if was == 0 || now <= was {
		return "", nil
	}
	var steps, unconverged int
	var err error
	if finished != nil {
		steps, unconverged = len(finished.History), finished.History.UnconvergedSteps()
	} else if steps, unconverged, err = checkpointSteps(r.Trainer, filepath.Join(dir, CheckpointFile)); errors.Is(err, os.ErrNotExist) {
		steps, unconverged = 0, 0 // nothing run yet
	} else if err != nil {
		return "", fmt.Errorf("repro: %s: raising the iteration cap from %d to %d needs the steps done so far, but its checkpoint cannot be read: %w", j.ID(), was, now, err)
	}
	if unconverged > 0 {
		return "", fmt.Errorf("%w: %s ran under an iteration cap of %d, and %d of its %d steps stopped unconverged (at that cap, or stalled): a larger cap (%d) would change them, so it is a different job: rerun with the original cap, or use a different --out to run it afresh",
			ErrConfigMismatch, j.ID(), was, unconverged, steps, now)
	}
	if finished != nil {
		// Nothing of it runs again, and job.json keeps the cap it ran under.
		return fmt.Sprintf("finished under an iteration cap of %d, which none of its %d steps reached: its result stands for the cap of %d", was, steps, now), nil
	}
	return fmt.Sprintf("iteration cap raised from %d to %d: none of the %d steps done so far reached it, so they stand", was, now, steps), nil
}

// iterationCap returns the iteration cap j's solves run under, or 0 when it
// depends on the data (Settings.MaxEpochs) or the settings are invalid.
func iterationCap(j Job) int {
	s, err := j.Config.Settings.Resolve(j.Config.Solver)
	if err != nil {
		return 0
	}
	return s.MaxIterations
}

// jobDiff lists the fields in which a and b differ, with a's values (first)
// or b's.
func jobDiff(a, b Job, first bool) string {
	ma, mb := flatten(a), flatten(b)
	var keys []string
	for k := range ma {
		if ma[k] != mb[k] {
			keys = append(keys, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		v := mb[k]
		if first {
			v = ma[k]
		}
		if v == "" {
			v = "unset"
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// flatten returns j's JSON form as dotted paths ("config.solver.name") and
// values.
func flatten(j Job) map[string]string {
	b, _ := json.Marshal(j)
	var m map[string]any
	json.Unmarshal(b, &m)
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if sub, ok := v.(map[string]any); ok {
			for k, v2 := range sub {
				walk(strings.TrimPrefix(prefix+"."+k, "."), v2)
			}
			return
		}
		out[prefix] = fmt.Sprint(v)
	}
	walk("", m)
	return out
}

func readResult(path string) (*gpnb.Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var res gpnb.Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &res, nil
}

// checkResult reports whether res is a complete result of job j.
func checkResult(j Job, res *gpnb.Result) error {
	switch {
	case res == nil:
		return errors.New("trainer returned no result")
	case res.StepsDone != j.Steps:
		return fmt.Errorf("result has %d of %d steps", res.StepsDone, j.Steps)
	case res.Dataset != j.Dataset || res.Split != j.Split || res.Solver != j.Solver() || res.WarmStart != j.Config.WarmStart:
		return fmt.Errorf("result is for %s split %d solver %s warm=%v, not job %s", res.Dataset, res.Split, res.Solver, res.WarmStart, j.ID())
	}
	return nil
}
