package repro

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpnb/gpnb/gpnb/results"
)

// holdLock takes path's lock as another runner would (a separate open file,
// which flock treats as another holder even within this process).
func holdLock(t *testing.T, path string, pid int) *heldLock {
	t.Helper()
	if !lockingWorks {
		t.Skip("no flock on this platform: concurrent runners are not detected")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, other, err := acquire(path, lockOwner{PID: pid, Host: "elsewhere", Since: time.Date(2026, 11, 22, 20, 17, 0, 0, time.UTC)})
	if err != nil || other != "" {
		t.Fatalf("cannot take %s: %v %q", path, err, other)
	}
	return l
}

// TestRunnerSkipsJobHeldElsewhere: a job whose lock another runner holds is
// neither run nor touched; the rest of the grid runs, Plan shows who holds
// it, and once the lock is gone a rerun finishes the job and removes its
// lock file.
func TestRunnerSkipsJobHeldElsewhere(t *testing.T) {
	const steps = 3
	dir := t.TempDir()
	jobs := tinyGrid(t, steps)
	held := jobs[2].ID()
	jobDir := filepath.Join(dir, results.JobsDir, held)
	other := holdLock(t, filepath.Join(jobDir, LockFile), 4242)

	ft := &fakeTrainer{}
	var log bytes.Buffer
	sum, err := (&Runner{Dir: dir, Trainer: ft, Log: &log}).Run(context.Background(), jobs)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 13 || sum.Pending != 1 || len(sum.Elsewhere) != 1 || sum.Elsewhere[0] != held {
		t.Errorf("summary %+v, want 13 run and %s elsewhere", sum, held)
	}
	for _, id := range ft.calls {
		if id == held {
			t.Errorf("the trainer ran %s, whose lock another runner holds", id)
		}
	}
	for _, f := range []string{JobFile, results.ResultFile, CheckpointFile, results.SegmentsFile} {
		if _, err := os.Stat(filepath.Join(jobDir, f)); !os.IsNotExist(err) {
			t.Errorf("the held job's %s was written (%v)", f, err)
		}
	}
	if want := held + ": skipped: another gpnb reproduce (pid 4242 on elsewhere, since 2026-11-22 20:17:00 UTC) is running it"; !strings.Contains(log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, log.String())
	}
	st := readStatus(t, dir)
	if st.State != RunStopped || st.Done != 13 || st.Jobs[2].State != Elsewhere {
		t.Errorf("status %+v", st)
	}

	plan, err := (&Runner{Dir: dir, Trainer: &fakeTrainer{}}).Plan(jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range plan {
		if (p.RunningBy != "") != (i == 2) {
			t.Errorf("plan of %s: RunningBy %q", p.Job.ID(), p.RunningBy)
		}
	}
	if s := plan[2].String(); !strings.Contains(s, "not started; running now in another gpnb reproduce (pid 4242") {
		t.Errorf("plan line %q", s)
	}
	// Finished jobs leave no lock file behind.
	if _, err := os.Stat(filepath.Join(dir, results.JobsDir, jobs[0].ID(), LockFile)); !os.IsNotExist(err) {
		t.Errorf("a finished job kept its lock file: %v", err)
	}

	other.release(false)
	ft = &fakeTrainer{}
	sum, err = (&Runner{Dir: dir, Trainer: ft}).Run(context.Background(), jobs)
	if err != nil || sum.Ran != 1 || sum.Skipped != 13 || len(sum.Elsewhere) != 0 || len(ft.calls) != 1 || ft.calls[0] != held {
		t.Fatalf("rerun after the lock was released: %+v %v, calls %v", sum, err, ft.calls)
	}
	if _, err := os.Stat(filepath.Join(jobDir, LockFile)); !os.IsNotExist(err) {
		t.Errorf("the job kept its lock file after finishing: %v", err)
	}
	if plan, _ := (&Runner{Dir: dir, Trainer: &fakeTrainer{}}).Plan(jobs); plan[2].State != Done || plan[2].RunningBy != "" {
		t.Errorf("plan after the rerun: %+v", plan[2])
	}
}

// TestRunnerStatusSlot: while another runner writes status.json, a run
// leaves it alone and writes status-2.json, and says so.
func TestRunnerStatusSlot(t *testing.T) {
	dir := t.TempDir()
	other := holdLock(t, filepath.Join(dir, ".status.lock"), 4242)
	defer other.release(false)
	theirs := []byte(`{"state":"running"}` + "\n")
	if err := os.WriteFile(filepath.Join(dir, StatusFile), theirs, 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	sum, err := (&Runner{Dir: dir, Trainer: &fakeTrainer{}, Log: &log}).Run(context.Background(), tinyGrid(t, 2))
	if err != nil || sum.Ran != 14 {
		t.Fatalf("%+v %v", sum, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, StatusFile)); !bytes.Equal(b, theirs) {
		t.Errorf("the other runner's status.json was overwritten: %s", b)
	}
	var st Status
	b, err := os.ReadFile(filepath.Join(dir, "status-2.json"))
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil || st.State != RunFinished || st.Done != 14 {
		t.Errorf("status-2.json: %+v %v", st, err)
	}
	if want := "progress in " + filepath.Join(dir, "status-2.json") + " (another gpnb reproduce is writing status.json)"; !strings.Contains(log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, log.String())
	}
}

// TestRunnersShareDir runs two runners at once over the same grid and
// directory, as two gpnb reproduce would: every job is trained exactly
// once, by one of them, and the results equal those of one runner alone.
func TestRunnersShareDir(t *testing.T) {
	if !lockingWorks {
		t.Skip("no flock on this platform: concurrent runners are not detected")
	}
	const steps = 4
	alone, shared := t.TempDir(), t.TempDir()
	if _, err := (&Runner{Dir: alone, Trainer: &fakeTrainer{}}).Run(context.Background(), tinyGrid(t, steps)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	fts := []*fakeTrainer{{}, {}}
	sums := make([]Summary, 2)
	errs := make([]error, 2)
	grids := [][]Job{tinyGrid(t, steps), tinyGrid(t, steps)}
	for k := range fts {
		fts[k].beforeStep = func() { time.Sleep(2 * time.Millisecond) } // let the runners overlap
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[k], errs[k] = (&Runner{Dir: shared, Trainer: fts[k]}).Run(context.Background(), grids[k])
		}()
	}
	wg.Wait()
	checkTrainedOnce(t, fts, errs, tinyGrid(t, steps))
	if sums[0].Ran+sums[1].Ran != 14 {
		t.Errorf("summaries %+v and %+v: %d run, want 14", sums[0], sums[1], sums[0].Ran+sums[1].Ran)
	}
	if a, b := tableCSV(t, alone), tableCSV(t, shared); a != b {
		t.Errorf("tables differ:\nalone:\n%s\nshared:\n%s", a, b)
	}
}

// TestRunnerRemovesLeftoverCheckpoint: a run killed after writing a job's
// result.json but before deleting its checkpoint leaves the checkpoint; the
// next run counts the job as done and deletes it.
func TestRunnerRemovesLeftoverCheckpoint(t *testing.T) {
	dir := t.TempDir()
	jobs := tinyGrid(t, 2)
	if _, err := (&Runner{Dir: dir, Trainer: &fakeTrainer{}}).Run(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, results.JobsDir, jobs[5].ID(), CheckpointFile)
	if err := os.WriteFile(ckpt, []byte(`{"Step":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ft := &fakeTrainer{}
	sum, err := (&Runner{Dir: dir, Trainer: ft}).Run(context.Background(), jobs)
	if err != nil || sum.Skipped != 14 || len(ft.calls) != 0 {
		t.Fatalf("rerun of a finished grid: %+v %v, calls %v", sum, err, ft.calls)
	}
	if _, err := os.Stat(ckpt); !os.IsNotExist(err) {
		t.Errorf("the finished job's leftover checkpoint is still there: %v", err)
	}
}
