package repro

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/results"
	"github.com/gpnb/gpnb/internal/atomicfile"
)

// fakeTrainer follows the Trainer contract with a cheap deterministic
// computation: each step updates x from the job's hash, checkpoints it
// atomically, and a cold job needs more "solver iterations" than a warm one.
type fakeTrainer struct {
	calls         []string       // job ids, in call order
	starts        map[string]int // first step each call began at (resumed steps skipped)
	stopAt        func(j Job, step int) bool
	cancel        context.CancelFunc
	failIDs       map[string]bool
	beforeStep    func() // called before each step's progress report
	resumedReport bool   // report the restored steps first, as GPTrainer does
}

type fakeCkpt struct {
	Step  int
	X     float64
	Iters []int
}

// CheckpointSteps reads the fake's JSON checkpoint, for Runner.Plan (its
// steps never stop unconverged).
func (f *fakeTrainer) CheckpointSteps(path string) (steps, unconverged int, err error) {
	var st fakeCkpt
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return 0, 0, err
	}
	return st.Step, 0, nil
}

func (f *fakeTrainer) Train(ctx context.Context, j Job, ckpt string, progress func(JobProgress)) (*gpnb.Result, error) {
	f.calls = append(f.calls, j.ID())
	if f.failIDs[j.ID()] {
		return nil, errors.New("solver diverged (fake)")
	}
	var st fakeCkpt
	if b, err := os.ReadFile(ckpt); err == nil {
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, err
		}
	}
	if f.starts == nil {
		f.starts = map[string]int{}
	}
	f.starts[j.ID()] = st.Step
	if f.resumedReport && st.Step > 0 {
		total := 0
		for _, v := range st.Iters {
			total += v
		}
		progress(JobProgress{Step: st.Step, Steps: j.Steps, SolverIterations: total, Resumed: true})
	}
	h := fnv.New64a()
	h.Write([]byte(j.ID()))
	seed := float64(h.Sum64()%1000) / 1000
	for st.Step < j.Steps {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("fake: interrupted: %w", err)
		}
		st.Step++
		st.X = math.Sin(st.X*3.1 + seed + float64(st.Step))
		it := 10 + st.Step
		if j.Config.WarmStart {
			it = 3 + st.Step%2
		}
		st.Iters = append(st.Iters, it)
		b, _ := json.Marshal(st)
		if err := atomicfile.WriteFile(ckpt, b, 0o644); err != nil {
			return nil, err
		}
		total := 0
		for _, v := range st.Iters {
			total += v
		}
		if f.beforeStep != nil {
			f.beforeStep()
		}
		progress(JobProgress{Step: st.Step, Steps: j.Steps, SolverIterations: total})
		if f.stopAt != nil && f.stopAt(j, st.Step) {
			f.cancel()
		}
	}
	hist := make(gpnb.History, len(st.Iters))
	for i, it := range st.Iters {
		hist[i] = gpnb.StepRecord{Step: i + 1, SolverIterations: it, SolverSeconds: float64(it) / 100, StepSeconds: float64(it)/100 + 0.01,
			Residuals: [][]float64{{1, 0.5}, {0.1, 0.01}}}
	}
	c := j.Config
	return &gpnb.Result{Dataset: j.Dataset, Split: j.Split, NTrain: 50, D: 2, Solver: j.Method().Solver, WarmStart: j.Config.WarmStart,
		StepsDone: st.Step, TotalSeconds: hist.TotalSeconds(), SolverSeconds: hist.TotalSolverSeconds(),
		Test: &gpnb.Eval{TestRMSE: math.Abs(st.X), TestLLH: st.X}, History: hist, Config: &c}, nil
}

func tinyGrid(t *testing.T, steps int) []Job {
	t.Helper()
	g := Grid{Datasets: []string{"synthetic-50-2-1", "synthetic-40-3-2"}, Splits: []int{0}, Solvers: []string{"cg", "ap", "sgd"},
		Steps: steps, Config: paperBase()}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 14 { // 2 datasets × (3 solvers × 2 + exact)
		t.Fatalf("%d jobs, want 14", len(jobs))
	}
	return jobs
}

func readStatus(t *testing.T, dir string) Status {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, StatusFile))
	if err != nil {
		t.Fatal(err)
	}
	var s Status
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func tableCSV(t *testing.T, dir string) string {
	t.Helper()
	recs, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := results.Summarise(recs)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	rep.Table1(results.Seconds).CSV(&b)
	rep.Table2(results.Seconds).CSV(&b)
	return b.String()
}

// TestRunnerInterruptResume runs a tiny grid once straight through and once
// cancelled in the middle of its fourth job, then resumed. The fake trainer's
// runtimes are deterministic, so here the whole results must agree; the
// real-binary test in cmd/gpnb compares the non-wall-clock columns.
func TestRunnerInterruptResume(t *testing.T) {
	const steps = 5
	dirA, dirB := t.TempDir(), t.TempDir()
	ftA := &fakeTrainer{}
	var logA bytes.Buffer
	sum, err := (&Runner{Dir: dirA, Trainer: ftA, Log: &logA}).Run(context.Background(), tinyGrid(t, steps))
	if err != nil || sum.Ran != 14 || sum.Skipped != 0 || sum.Pending != 0 {
		t.Fatalf("uninterrupted run: %+v, %v", sum, err)
	}
	if st := readStatus(t, dirA); st.State != RunFinished || st.Done != 14 || st.Current != nil {
		t.Errorf("status after a full run: %+v", st)
	}
	if !strings.Contains(logA.String(), "[1/14] synthetic-50-2-1-s0-cg-cold  step 5/5  solver iterations 65") {
		t.Errorf("progress lines:\n%s", logA.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	jobs := tinyGrid(t, steps)
	ftB := &fakeTrainer{cancel: cancel, stopAt: func(j Job, step int) bool { return j.ID() == jobs[3].ID() && step == 3 }}
	sum, err = (&Runner{Dir: dirB, Trainer: ftB, Environment: map[string]string{"vcs.revision": "aaa"}, LoadAverage: func() float64 { return 1.5 }}).Run(ctx, jobs)
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "Rerun the same command") {
		t.Fatalf("interrupted run: error %v", err)
	}
	if sum.Ran != 3 || sum.Pending != 11 {
		t.Errorf("interrupted summary %+v", sum)
	}
	st := readStatus(t, dirB)
	if st.State != RunInterrupted || st.Done != 3 || st.Jobs[3].State != Started {
		t.Errorf("status after interruption: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(dirB, results.JobsDir, jobs[3].ID(), CheckpointFile)); err != nil {
		t.Errorf("no checkpoint for the interrupted job: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dirB, results.JobsDir, jobs[2].ID(), CheckpointFile)); !os.IsNotExist(err) {
		t.Errorf("finished job keeps its checkpoint: %v", err)
	}

	// Plan reads the same state without running or writing anything.
	plan, err := (&Runner{Dir: dirB, Trainer: &fakeTrainer{}}).Plan(jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range plan {
		want, step := NotStarted, 0
		switch {
		case i < 3:
			want, step = Done, steps
		case i == 3:
			want, step = Started, 3
		}
		if p.State != want || p.Step != step || (want == Done) != (p.Result != nil) {
			t.Errorf("plan of job %d (%s): %s at step %d, want %s at step %d", i, p.Job.ID(), p.State, p.Step, want, step)
		}
	}
	if s := plan[3].String(); !strings.Contains(s, "started: checkpoint at step 3/5; steps 0-3 by aaa (load 1.5)") {
		t.Errorf("plan line %q", s)
	}
	if s := plan[0].String(); !strings.Contains(s, "done: 5 steps") || !strings.Contains(s, "test LLH") {
		t.Errorf("plan line %q", s)
	}

	ftC := &fakeTrainer{resumedReport: true}
	var logC bytes.Buffer
	// The machine's rate is measured as each job begins: 47.5 GFLOP/s for
	// the first (the resumed job 3), then NaN (not recorded).
	rates := []float64{47.5}
	rate := func() float64 {
		if len(rates) == 0 {
			return math.NaN()
		}
		g := rates[0]
		rates = rates[1:]
		return g
	}
	sum, err = (&Runner{Dir: dirB, Trainer: ftC, Log: &logC, Environment: map[string]string{"vcs.revision": "bbb"}, LoadAverage: func() float64 { return 3 }, MachineRate: rate}).Run(context.Background(), tinyGrid(t, steps))
	if err != nil || sum.Skipped != 3 || sum.Ran != 11 {
		t.Fatalf("resumed run: %+v, %v", sum, err)
	}
	if want := "[4/14] " + jobs[3].ID() + ": resumed from its checkpoint at step 3/5"; !strings.Contains(logC.String(), want) {
		t.Errorf("the resumed run's log lacks %q:\n%s", want, logC.String())
	}
	// runs.json: the interrupted job was run in two segments, steps 0-3 by
	// build aaa at load 1.5 and 3-5 by build bbb at load 3.
	segs, err := results.ReadSegments(filepath.Join(dirB, results.JobsDir, jobs[3].ID()))
	if err != nil || len(segs) != 2 {
		t.Fatalf("segments of the resumed job: %+v, %v", segs, err)
	}
	for k, want := range []results.Segment{{FromStep: 0, ToStep: 3, LoadMean: 1.5, LoadMax: 1.5, LoadSamples: 3}, {FromStep: 3, ToStep: 5, LoadMean: 3, LoadMax: 3, LoadSamples: 2}} {
		g := segs[k]
		if g.FromStep != want.FromStep || g.ToStep != want.ToStep || g.LoadMean != want.LoadMean || g.LoadMax != want.LoadMax || g.LoadSamples != want.LoadSamples {
			t.Errorf("segment %d: %+v, want steps %d-%d, load %v (%d samples)", k, g, want.FromStep, want.ToStep, want.LoadMean, want.LoadSamples)
		}
	}
	if segs[0].Environment["vcs.revision"] != "aaa" || segs[1].Environment["vcs.revision"] != "bbb" || segs[1].Started.IsZero() {
		t.Errorf("segment environments %v, %v", segs[0].Environment, segs[1].Environment)
	}
	// LoadResults hands the segments on to Summarise (Report.Unlike).
	recs, err := results.Load(dirB)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.ID() == jobs[3].ID() && len(r.Segments) != 2 {
			t.Errorf("results.Load: %s has %d segments, want 2", r.ID(), len(r.Segments))
		}
	}
	if segs[0].MachineGFLOPS != 0 || segs[1].MachineGFLOPS != 47.5 {
		t.Errorf("segment machine rates %v, %v, want 0 (no MachineRate) and 47.5", segs[0].MachineGFLOPS, segs[1].MachineGFLOPS)
	}
	if next, _ := results.ReadSegments(filepath.Join(dirB, results.JobsDir, jobs[4].ID())); len(next) != 1 || next[0].MachineGFLOPS != 0 {
		t.Errorf("a job whose rate was NaN: segments %+v, want one with no rate", next)
	}
	if plan, err := (&Runner{Dir: dirB, Trainer: &fakeTrainer{}}).Plan(jobs); err != nil || !strings.Contains(plan[3].String(), "steps 0-3 by aaa (load 1.5), 3-5 by bbb (load 3.0, H·V 48 GFLOP/s)") {
		t.Errorf("plan line of the resumed job %q, %v", plan[3].String(), err)
	}
	if other, _ := results.ReadSegments(filepath.Join(dirB, results.JobsDir, jobs[0].ID())); len(other) != 1 || other[0].FromStep != 0 || other[0].ToStep != steps {
		t.Errorf("an uninterrupted job's segments: %+v", other)
	}
	if ftC.calls[0] != jobs[3].ID() || ftC.starts[jobs[3].ID()] != 3 {
		t.Errorf("resume began with %s at step %d, want %s at step 3", ftC.calls[0], ftC.starts[ftC.calls[0]], jobs[3].ID())
	}
	if a, b := tableCSV(t, dirA), tableCSV(t, dirB); a != b {
		t.Errorf("tables differ after interruption:\n%s\n---\n%s", a, b)
	}
	ra, _ := results.Load(dirA)
	rb, _ := results.Load(dirB)
	for i := range ra {
		// The segments differ by design (the interrupted job has two).
		ra[i].Segments, rb[i].Segments = nil, nil
	}
	if !reflect.DeepEqual(ra, rb) {
		t.Error("stored results differ after interruption")
	}
	if ra[0].Result.History[0].Residuals != nil {
		t.Error("residuals kept without KeepResiduals")
	}

	// A third run has nothing to do.
	ftD := &fakeTrainer{}
	if sum, err := (&Runner{Dir: dirB, Trainer: ftD}).Run(context.Background(), tinyGrid(t, steps)); err != nil || len(ftD.calls) != 0 || sum.Skipped != 14 {
		t.Errorf("rerun of a finished grid: %+v, %v, calls %v", sum, err, ftD.calls)
	}
}

func TestRunnerConfigMismatch(t *testing.T) {
	dir := t.TempDir()
	if _, err := (&Runner{Dir: dir, Trainer: &fakeTrainer{}, MaxJobs: 1}).Run(context.Background(), tinyGrid(t, 2)); err != nil {
		t.Fatal(err)
	}
	ft := &fakeTrainer{}
	_, err := (&Runner{Dir: dir, Trainer: ft}).Run(context.Background(), tinyGrid(t, 3))
	if !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), "steps=2") || !strings.Contains(err.Error(), "steps=3") ||
		!strings.Contains(err.Error(), "different --out") {
		t.Errorf("error = %v", err)
	}
	if len(ft.calls) != 0 {
		t.Errorf("jobs ran despite the mismatch: %v", ft.calls)
	}
}

func TestRunnerMaxJobsAndFailures(t *testing.T) {
	dir := t.TempDir()
	jobs := tinyGrid(t, 2)
	ft := &fakeTrainer{}
	sum, err := (&Runner{Dir: dir, Trainer: ft, MaxJobs: 4}).Run(context.Background(), jobs)
	if err != nil || sum.Ran != 4 || sum.Pending != 10 || readStatus(t, dir).State != RunStopped {
		t.Fatalf("max jobs: %+v, %v", sum, err)
	}
	// A failing job is recorded and the run goes on.
	ft = &fakeTrainer{failIDs: map[string]bool{jobs[5].ID(): true}}
	sum, err = (&Runner{Dir: dir, Trainer: ft}).Run(context.Background(), jobs)
	if err == nil || !strings.Contains(err.Error(), jobs[5].ID()+": solver diverged") || len(sum.Failed) != 1 || sum.Ran != 9 {
		t.Fatalf("failure: %+v, %v", sum, err)
	}
	st := readStatus(t, dir)
	if st.State != RunFailed || st.Failed != 1 || st.Jobs[5].State != Failed || st.Done != 13 {
		t.Errorf("status after a failure: %+v", st)
	}
	// A torn result.json (as if written non-atomically) makes the job run again.
	torn := filepath.Join(dir, results.JobsDir, jobs[0].ID(), results.ResultFile)
	if err := os.WriteFile(torn, []byte(`{"dataset": "synth`), 0o644); err != nil {
		t.Fatal(err)
	}
	ft = &fakeTrainer{}
	if _, err := (&Runner{Dir: dir, Trainer: ft}).Run(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ft.calls, []string{jobs[0].ID(), jobs[5].ID()}) {
		t.Errorf("rerun ran %v, want the torn and the failed job", ft.calls)
	}
}

// TestRunnerETA checks the status file's progress and ETA with a clock that
// advances one second per step: the ETA is the mean time per step run so
// far times the steps left, resumed steps not counted as run.
func TestRunnerETA(t *testing.T) {
	dir := t.TempDir()
	jobs := tinyGrid(t, 4)[:3] // 3 jobs × 4 steps
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var etas []float64
	var steps []int
	ctx, cancel := context.WithCancel(context.Background())
	ft := &fakeTrainer{cancel: cancel, stopAt: func(j Job, step int) bool { return j.ID() == jobs[1].ID() && step == 2 }}
	ft.beforeStep = func() { clock = clock.Add(time.Second) }
	r := &Runner{Dir: dir, Trainer: ft, now: func() time.Time { return clock }}
	// Record the status after every report by wrapping the trainer's progress.
	r.Trainer = progressSpy{ft, func() {
		st := readStatus(t, dir)
		etas = append(etas, st.ETASeconds)
		steps = append(steps, st.Current.Step)
	}}
	if _, err := r.Run(ctx, jobs); !errors.Is(err, ErrInterrupted) {
		t.Fatal(err)
	}
	// 12 steps in all; after k steps, one second each, 12−k remain.
	for k, eta := range etas {
		if eta != float64(12-(k+1)) {
			t.Errorf("after step %d: ETA %v, want %d", k+1, eta, 12-(k+1))
		}
	}
	if len(etas) != 6 {
		t.Fatalf("%d reports, want 6", len(etas))
	}
	// Resume: job 2 restarts at step 2, so 6 steps remain; the Resumed report
	// does not count as a step run and leaves the ETA unknown (-1).
	etas, steps = nil, nil
	ft.stopAt, ft.resumedReport = nil, true
	r.now = func() time.Time { return clock }
	if _, err := r.Run(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	want := []float64{-1, 5, 4, 3, 2, 1, 0}
	if !reflect.DeepEqual(etas, want) || steps[0] != 2 {
		t.Errorf("ETAs after resume %v (steps %v), want %v", etas, steps, want)
	}
}

// TestRunnerPlainLog checks the step lines of a plain (non-terminal) log:
// every tenth step and the last, and any step ending PlainLogInterval or
// more after the last step line, so that slow steps are never silent long.
func TestRunnerPlainLog(t *testing.T) {
	jobs := tinyGrid(t, 12)[:1]
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// How long each step takes: steps 3 and 8 end over PlainLogInterval
	// after the last step line, step 7 does not.
	s, half := time.Second, PlainLogInterval/2
	took := []time.Duration{s, s, PlainLogInterval + 10*s, s, s, s, half, half + s, s, s, s, s}
	k := 0
	ft := &fakeTrainer{beforeStep: func() { clock = clock.Add(took[k]); k++ }}
	var log bytes.Buffer
	r := &Runner{Dir: t.TempDir(), Trainer: ft, Log: &log, now: func() time.Time { return clock }}
	if _, err := r.Run(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, m := range regexp.MustCompile(`step (\d+)/12 `).FindAllStringSubmatch(log.String(), -1) {
		n, _ := strconv.Atoi(m[1])
		got = append(got, n)
	}
	if want := []int{3, 8, 10, 12}; !reflect.DeepEqual(got, want) {
		t.Errorf("step lines at %v, want %v; log:\n%s", got, want, log.String())
	}
}

type progressSpy struct {
	Trainer
	after func()
}

func (p progressSpy) Train(ctx context.Context, j Job, ckpt string, progress func(JobProgress)) (*gpnb.Result, error) {
	return p.Trainer.Train(ctx, j, ckpt, func(pr JobProgress) { progress(pr); p.after() })
}
