package repro

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/results"
	"github.com/gpnb/gpnb/internal/ucitest"
	"github.com/gpnb/gpnb/solvers"
)

// cancelAt wraps a Trainer and cancels the run when job id reaches step.
type cancelAt struct {
	Trainer
	id     string
	step   int
	cancel context.CancelFunc
}

func (c cancelAt) Train(ctx context.Context, j Job, ckpt string, progress func(JobProgress)) (*gpnb.Result, error) {
	return c.Trainer.Train(ctx, j, ckpt, func(p JobProgress) {
		progress(p)
		if j.ID() == c.id && p.Step == c.step {
			c.cancel()
		}
	})
}

// stripTimes zeroes the wall-clock fields of results: runtimes inherently
// differ between runs; everything else must agree bit for bit.
func stripTimes(recs []results.Record) []results.Record {
	out := make([]results.Record, len(recs))
	for i, r := range recs {
		r.Result.TotalSeconds, r.Result.SolverSeconds = 0, 0
		r.Segments = nil // when and under which load the job ran
		h := make(gpnb.History, len(r.Result.History))
		copy(h, r.Result.History)
		for k := range h {
			h[k] = h[k].Untimed()
		}
		r.Result.History = h
		out[i] = r
	}
	return out
}

// TestGPTrainerInterruptResume runs a tiny real grid (gpnb optimiser,
// synthetic data, every solver cold and warm plus the exact reference) once
// straight through and once cancelled in the middle, then resumed: the
// resumed results equal the uninterrupted ones in every field that is not a
// wall-clock time.
func TestGPTrainerInterruptResume(t *testing.T) {
	g := Grid{Datasets: []string{"synthetic-60-2-1", "synthetic-50-3-2"}, Splits: []int{0}, Solvers: []string{"cg", "ap", "sgd"},
		Steps: 4, Config: paperBase(), Methods: map[string]solvers.Method{"ap": solvers.AP{BlockSize: 20}, "sgd": solvers.SGD{BatchSize: 16, Momentum: 0.9}}}
	g.Config.Probes = 4
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	if _, err := (&Runner{Dir: dirA, Trainer: GPTrainer{}}).Run(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	for _, stop := range []struct {
		id   string
		step int
	}{{jobs[3].ID(), 2}, {jobs[8].ID(), 1}} {
		ctx, cancel := context.WithCancel(context.Background())
		_, err := (&Runner{Dir: dirB, Trainer: cancelAt{GPTrainer{}, stop.id, stop.step, cancel}}).Run(ctx, jobs)
		cancel()
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("stop at %s step %d: error %v", stop.id, stop.step, err)
		}
	}
	if _, err := (&Runner{Dir: dirB, Trainer: GPTrainer{}}).Run(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	ra, err := results.Load(dirA)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := results.Load(dirB)
	if err != nil {
		t.Fatal(err)
	}
	if len(ra) != len(jobs) || len(rb) != len(jobs) {
		t.Fatalf("%d and %d results, want %d", len(ra), len(rb), len(jobs))
	}
	sa, sb := stripTimes(ra), stripTimes(rb)
	for i := range sa {
		if !reflect.DeepEqual(sa[i], sb[i]) {
			t.Errorf("%s: resumed result differs from the uninterrupted one:\n%+v\n%+v", sa[i].ID(), sa[i].Result, sb[i].Result)
		}
		r := sa[i].Result
		if r.Test == nil || math.IsNaN(r.Test.TestLLH) || math.IsNaN(r.Test.TestRMSE) || r.Test.TestRMSE <= 0 || r.StepsDone != 4 || r.NTrain == 0 || r.NTest == 0 {
			t.Errorf("%s: implausible result %+v", sa[i].ID(), r)
		}
		if sa[i].Method().Mode() != results.Exact && r.History.TotalSolverIterations() == 0 {
			t.Errorf("%s: no solver iterations recorded", sa[i].ID())
		}
	}
}

// TestGPTrainerGOMAXPROCS: a job gives the same result bits with one and
// with two cores (wall-clock fields aside).
func TestGPTrainerGOMAXPROCS(t *testing.T) {
	jobs, err := Grid{Datasets: []string{"synthetic-120-3-4"}, Splits: []int{0}, Solvers: []string{"cg", "sgd"}, Steps: 3,
		Exact: ExactNever, Config: paperBase()}.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	var got [][]results.Record
	for _, procs := range []int{1, 2} {
		old := runtime.GOMAXPROCS(procs)
		dir := t.TempDir()
		_, err := (&Runner{Dir: dir, Trainer: GPTrainer{}}).Run(context.Background(), jobs)
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := results.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, stripTimes(recs))
	}
	if !reflect.DeepEqual(got[0], got[1]) {
		t.Error("results differ between GOMAXPROCS 1 and 2")
	}
}

// TestGPTrainerUCI runs two steps on a 200-point subset of pol split 3.
func TestGPTrainerUCI(t *testing.T) {
	g := GPTrainer{DataDir: ucitest.Dir(t, "pol")}
	j := testJob("pol", 3, 200, "cg", true)
	j.Steps = 2
	ds, err := g.Dataset(j)
	if err != nil {
		t.Fatal(err)
	}
	if ds.NTrain() != 200 || ds.D() != 26 || ds.NTest() != 1500 || ds.Split != 3 {
		t.Fatalf("pol split 3 subset 200: n=%d d=%d test=%d split=%d", ds.NTrain(), ds.D(), ds.NTest(), ds.Split)
	}
	res, err := g.Train(context.Background(), j, filepath.Join(t.TempDir(), "ckpt"), func(JobProgress) {})
	if err != nil {
		t.Fatal(err)
	}
	if res.Dataset != "pol" || res.Split != 3 || res.NTrain != 200 || res.StepsDone != 2 || res.Test == nil || res.Test.Method != "cholesky" || math.IsNaN(res.Test.TestLLH) {
		t.Errorf("result %+v", res)
	}
}

// TestGPTrainerResidualTraces: by default a job's checkpoint and result hold
// no per-iteration residual traces (a cold SGD job's checkpoint would grow
// by (iterations+1)·(s+1) numbers a step); with KeepResiduals on the trainer
// and the runner, result.json has a trace row per iteration, and the two
// runs agree in everything else.
func TestGPTrainerResidualTraces(t *testing.T) {
	g := Grid{Datasets: []string{"synthetic-60-2-1"}, Splits: []int{0}, Solvers: []string{"sgd"}, Modes: []string{"cold"}, Exact: ExactNever,
		Steps: 3, Config: paperBase(), Methods: map[string]solvers.Method{"sgd": solvers.SGD{BatchSize: 16, Momentum: 0.9}}}
	g.Config.Probes = 4
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	var res [2][]results.Record
	for i, keep := range []bool{false, true} {
		dir := t.TempDir()
		tr := GPTrainer{KeepResiduals: keep}
		// Interrupted after step 2, to look at the checkpoint (a finished
		// job's is deleted), then finished.
		ctx, cancel := context.WithCancel(context.Background())
		_, err := (&Runner{Dir: dir, Trainer: cancelAt{tr, jobs[0].ID(), 2, cancel}, KeepResiduals: keep}).Run(ctx, jobs)
		cancel()
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("keep %v: interrupted run returned %v", keep, err)
		}
		st, err := gpnb.ReadCheckpoint(filepath.Join(dir, results.JobsDir, jobs[0].ID(), CheckpointFile))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (&Runner{Dir: dir, Trainer: tr, KeepResiduals: keep}).Run(context.Background(), jobs); err != nil {
			t.Fatal(err)
		}
		if res[i], err = results.Load(dir); err != nil || len(res[i]) != 1 {
			t.Fatalf("keep %v: %d results, %v", keep, len(res[i]), err)
		}
		if st.Config.DropResidualTraces == keep || len(st.History) != 2 {
			t.Errorf("keep %v: checkpoint DropResidualTraces %v, %d steps", keep, st.Config.DropResidualTraces, len(st.History))
		}
		for k, r := range st.History {
			if (r.Residuals != nil) != keep || (keep && len(r.Residuals) != r.SolverIterations+1) {
				t.Errorf("keep %v: checkpoint step %d has %d trace rows for %d iterations", keep, k+1, len(r.Residuals), r.SolverIterations)
			}
		}
		for k, r := range res[i][0].Result.History {
			if (r.Residuals != nil) != keep || (keep && len(r.Residuals) != r.SolverIterations+1) {
				t.Errorf("keep %v: result step %d has %d trace rows for %d iterations", keep, k+1, len(r.Residuals), r.SolverIterations)
			}
		}
	}
	for k := range res[1][0].Result.History {
		res[1][0].Result.History[k].Residuals = nil
	}
	if a, b := stripTimes(res[0]), stripTimes(res[1]); !reflect.DeepEqual(a, b) {
		t.Errorf("results with and without traces differ beyond the traces:\n%+v\n%+v", a[0].Result, b[0].Result)
	}
}

// TestRaisedCap: rerunning a job with a larger iteration cap than the one it
// started under continues it (the job's record then names the new cap), and
// its result equals a run under the larger cap from the start, wall-clock
// fields aside, when none of its steps reached the old cap; a finished job
// counts as done under the larger cap. When a step did reach the old cap,
// or the cap is lowered, the rerun is ErrConfigMismatch. A sharded run's
// shards.json follows the same rule.
func TestRaisedCap(t *testing.T) {
	grid := func(maxIter int) []Job {
		t.Helper()
		g := Grid{Datasets: []string{"synthetic-60-2-1"}, Splits: []int{0}, Solvers: []string{"cg"}, Steps: 4, Exact: ExactNever, Modes: []string{"cold"}, Config: paperBase()}
		g.Config.Probes = 4
		g.Config.Settings.MaxIterations = maxIter
		jobs, err := g.Jobs()
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	run := func(dir string, jobs []Job, stopAt int) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var tr Trainer = GPTrainer{}
		if stopAt > 0 {
			tr = cancelAt{GPTrainer{}, jobs[0].ID(), stopAt, cancel}
		}
		_, err := (&Runner{Dir: dir, Trainer: tr}).Run(ctx, jobs)
		return err
	}
	const high = 1000
	ref := t.TempDir()
	if err := run(ref, grid(high), 0); err != nil {
		t.Fatal(err)
	}
	want, err := results.Load(ref)
	if err != nil {
		t.Fatal(err)
	}
	h := want[0].Result.History
	most, least := 0, high
	for _, r := range h {
		most, least = max(most, r.SolverIterations), min(least, r.SolverIterations)
	}
	if h.UnconvergedSteps() != 0 || least < 3 {
		t.Fatalf("reference: %d unconverged steps, fewest iterations %d: the test needs converged solves of ≥ 3 iterations", h.UnconvergedSteps(), least)
	}

	// No step reaches the old cap: resumed under the larger one, the same
	// result; a finished job is done under it.
	dir := t.TempDir()
	if err := run(dir, grid(most+1), 2); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted run: %v", err)
	}
	if err := run(dir, grid(high), 0); err != nil {
		t.Fatalf("rerun with a raised cap: %v", err)
	}
	got, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sg, sw := stripTimes(got), stripTimes(want); len(sg) != 1 || !reflect.DeepEqual(sg[0].Result, sw[0].Result) {
		t.Errorf("resumed under the raised cap: %+v, want %+v", sg, sw)
	}
	done := t.TempDir()
	if err := run(done, grid(most+1), 0); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sum, err := (&Runner{Dir: done, Trainer: GPTrainer{}, Log: &log}).Run(context.Background(), grid(high))
	if err != nil || sum.Skipped != 1 {
		t.Errorf("finished job rerun with a raised cap: %+v, %v; want it skipped as done", sum, err)
	}
	if note := fmt.Sprintf("finished under an iteration cap of %d, which none of its 4 steps reached", most+1); !strings.Contains(log.String(), note) {
		t.Errorf("finished job rerun with a raised cap logged %q, want it to say %q", log.String(), note)
	}

	// A sharded run's record of the deal takes the raised cap too.
	sharded := &Runner{Dir: t.TempDir(), Trainer: GPTrainer{}}
	if _, err := sharded.ShardJobs(grid(most+1), Shard{K: 0, N: 1}, true); err != nil {
		t.Fatal(err)
	}
	if err := run(sharded.Dir, grid(most+1), 2); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted sharded run: %v", err)
	}
	if _, err := sharded.ShardJobs(grid(high), Shard{K: 0, N: 1}, true); err != nil {
		t.Fatalf("sharded rerun with a raised cap: %v", err)
	}
	if rec, err := ReadShards(sharded.Dir); err != nil || len(rec.Jobs) != 1 || iterationCap(rec.Jobs[0].Job) != high {
		t.Errorf("shards.json after the raise: %+v, %v; want its job under the cap %d", rec, err, high)
	}
	if _, err := sharded.ShardJobs(grid(most), Shard{K: 0, N: 1}, true); !errors.Is(err, ErrConfigMismatch) {
		t.Errorf("sharded rerun with a lowered cap: %v, want ErrConfigMismatch", err)
	}

	// A step reached the old cap, or the cap is lowered: refused.
	capped := t.TempDir()
	if err := run(capped, grid(least-1), 2); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted capped run: %v", err)
	}
	if err := run(capped, grid(high), 0); !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), "stopped unconverged") {
		t.Errorf("raising the cap of a job with capped steps: %v, want ErrConfigMismatch naming the unconverged steps", err)
	}
	if err := run(done, grid(most), 0); !errors.Is(err, ErrConfigMismatch) {
		t.Errorf("lowering the cap: %v, want ErrConfigMismatch", err)
	}
}
