package repro

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/results"
	"github.com/gpnb/gpnb/internal/atomicfile"
)

// The files of a results directory DIR beyond those package results reads
// (results.JobsDir, results.ResultFile, results.SegmentsFile): a job's
// configuration and its checkpoint while it runs, DIR/jobs/<id>/job.json
// and checkpoint, and the run's progress, DIR/status.json.
const (
	JobFile        = "job.json"
	CheckpointFile = "checkpoint"
	StatusFile     = "status.json"
)

// PlainLogInterval is the longest a plain (non-terminal) Runner log goes
// without a step line while steps finish: a step ending this long after the
// last step line is logged even when it is not a tenth step.
const PlainLogInterval = time.Minute

// JobProgress is what a Trainer reports while a job runs: at least once per
// completed marginal-likelihood step.
type JobProgress struct {
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
	Train(ctx context.Context, job Job, checkpoint string, progress func(JobProgress)) (*gpnb.Result, error)
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

// Run runs every unfinished job of jobs, in three parts: the plan (where
// each job stands, Plan), each job run in turn (runJob), and the status
// that follows both (DIR/status.json). Before anything runs it checks every
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
	jobs, err := r.prepare(jobs)
	if err != nil {
		return Summary{}, err
	}
	if err := os.MkdirAll(filepath.Join(r.Dir, results.JobsDir), 0o755); err != nil {
		return Summary{}, fmt.Errorf("repro: cannot create the output directory: %w", err)
	}
	host, _ := os.Hostname()
	owner := lockOwner{PID: os.Getpid(), Host: host, Task: SchedulerTask(), Since: r.clock()}
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
	plan, err := r.plan(jobs, true)
	if err != nil {
		return Summary{}, err
	}
	t := r.newTracker(statusPath, plan)
	for k, p := range plan {
		if p.State == Done {
			continue
		}
		if (r.MaxJobs > 0 && t.ran >= r.MaxJobs) || ctx.Err() != nil {
			break
		}
		if err := r.runJob(ctx, t, k, owner); err != nil {
			return t.sum, err
		}
	}
	return t.finish(ctx)
}

// prepare checks the runner's directory and returns the jobs normalised,
// validated and each once.
func (r *Runner) prepare(jobs []Job) ([]Job, error) {
	if r.Dir == "" {
		return nil, fmt.Errorf("%w: no output directory: give --out DIR", ErrGrid)
	}
	return normalise(jobs)
}

// normalise returns the jobs normalised and validated, and an error when
// two are the same job.
func normalise(jobs []Job) ([]Job, error) {
	out := make([]Job, len(jobs))
	ids := map[string]bool{}
	for i, j := range jobs {
		out[i] = j.Normalize()
		if err := out[i].Validate(); err != nil {
			return nil, err
		}
		if ids[out[i].ID()] {
			return nil, fmt.Errorf("%w: job %s appears twice in the grid", ErrGrid, out[i].ID())
		}
		ids[out[i].ID()] = true
	}
	return out, nil
}

// runJob runs job k of the tracker's grid under its lock, unless another
// process holds the job or finished it since the plan. A job that fails is
// recorded and is no error of runJob's; an interruption (ctx) and a file
// that cannot be written are.
func (r *Runner) runJob(ctx context.Context, t *tracker, k int, owner lockOwner) error {
	j := t.jobs[k]
	dir := filepath.Join(r.Dir, results.JobsDir, j.ID())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lock, other, err := acquire(filepath.Join(dir, LockFile), owner)
	if err != nil {
		r.logf(false, "%s%s: cannot lock the job (%v); running it unlocked\n", r.nl(), t.tag(k), err)
	}
	if other != "" {
		t.elsewhere(k, other)
		return nil
	}
	// Another runner may have finished the job since the plan.
	if res, _, err := r.checkJob(j); err != nil || res != nil {
		lock.release(false)
		if err == nil {
			t.doneElsewhere(k)
		}
		return err
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, JobFile), j, true); err != nil {
		lock.release(false)
		return err
	}
	t.begin(k)
	res, err := r.train(ctx, t, j, dir)
	lock.release(err == nil) // a finished job needs no lock file
	switch {
	case err != nil && ctx.Err() != nil:
		return t.interrupted()
	case err != nil:
		t.failed(err)
	default:
		t.done(res)
	}
	return nil
}

// train runs job j in dir with the trainer, recording its segment in
// runs.json and its progress in the tracker, and stores its result; the
// checkpoint of a finished job is deleted.
func (r *Runner) train(ctx context.Context, t *tracker, j Job, dir string) (*gpnb.Result, error) {
	segs := r.newSegmentLog(dir)
	ckpt := filepath.Join(dir, CheckpointFile)
	res, err := r.Trainer.Train(ctx, j, ckpt, func(p JobProgress) {
		now := r.clock()
		segs.report(p, now)
		t.step(p, now)
	})
	if err == nil {
		err = checkResult(j, res)
	}
	if err != nil {
		return nil, err
	}
	if !r.KeepResiduals {
		for k := range res.History {
			res.History[k].Residuals = nil
		}
	}
	// Compact: a result holds every step's record.
	if err := atomicfile.WriteJSON(filepath.Join(dir, results.ResultFile), res, false); err != nil {
		return nil, err
	}
	os.Remove(ckpt) // the result is safely on disk; checkpoints are not kept
	return res, nil
}

// segmentLog keeps a job's runs.json: the segments of earlier processes and
// the one this process runs.
type segmentLog struct {
	r    *Runner
	path string
	prev []results.Segment
	cur  results.Segment
	load func() float64
}

func (r *Runner) newSegmentLog(dir string) *segmentLog {
	prev, err := results.ReadSegments(dir)
	if err != nil {
		prev = nil // provenance only: start the record afresh
	}
	s := &segmentLog{r: r, path: filepath.Join(dir, results.SegmentsFile), prev: prev, load: r.LoadAverage,
		cur: results.Segment{FromStep: -1, Started: r.clock(), Environment: r.Environment}}
	if s.load == nil {
		s.load = SystemLoadAverage
	}
	if r.MachineRate != nil {
		if g := r.MachineRate(); g > 0 && !math.IsInf(g, 0) {
			s.cur.MachineGFLOPS = g
		}
	}
	return s
}

// report records a progress report in the segment and rewrites runs.json.
func (s *segmentLog) report(p JobProgress, now time.Time) {
	if s.cur.FromStep < 0 {
		s.cur.FromStep = p.Step
		if !p.Resumed {
			s.cur.FromStep = max(p.Step-1, 0)
		}
	}
	s.cur.ToStep, s.cur.Updated = p.Step, now
	if !p.Resumed {
		s.cur.AddLoad(s.load())
	}
	if err := atomicfile.WriteJSON(s.path, append(s.prev[:len(s.prev):len(s.prev)], s.cur), true); err != nil {
		s.r.logf(false, "%srepro: cannot write %s: %v\n", s.r.nl(), results.SegmentsFile, err)
	}
}

func (r *Runner) clock() time.Time {
	if r.now == nil {
		return time.Now()
	}
	return r.now()
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

// SystemLoadAverage reads the 1-minute load average from /proc/loadavg, or
// returns NaN where there is none.
func SystemLoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// testMetrics is "test RMSE 0.078, test LLH 1.262", or "not evaluated".
func testMetrics(ev *gpnb.Eval) string {
	if ev == nil {
		return "not evaluated"
	}
	return fmt.Sprintf("test RMSE %.4g, test LLH %.4g", ev.TestRMSE, ev.TestLLH)
}
