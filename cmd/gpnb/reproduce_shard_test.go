//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpnb/gpnb/gpnb/repro"
	"github.com/gpnb/gpnb/gpnb/results"
)

func TestReproduceShardFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--shard", "4/4"}, `--shard "4/4": K must be 0..3`},
		{[]string{"--shard", "-1/4"}, `K must be 0..3`},
		{[]string{"--shard", "0/0"}, `N, the number of shards, must be at least 1`},
		{[]string{"--shard", "two/4"}, `K and N must be whole numbers`},
		{[]string{"--shard", "3"}, `write K/N`},
		{[]string{"--status"}, "shards.json not found: --status lists the shards of a `gpnb reproduce --shard K/N"},
	} {
		args := append([]string{"reproduce", "--out", dir}, tc.args...)
		code, _, stderr := runCmd(t, args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("gpnb %s: exit %d, stderr %q; want non-zero and %q", strings.Join(args, " "), code, stderr, tc.want)
		}
	}
	if code, _, stderr := runCmd(t, "reproduce", "--status"); code != 2 || !strings.Contains(stderr, "--out DIR is required") {
		t.Errorf("--status without --out: exit %d, %q", code, stderr)
	}
	// A directory dealt into 3 shards refuses a run that asks for 2.
	grid := []string{"reproduce", "--datasets", "synthetic-40-2-1", "--splits", "0", "--solvers", "cg", "--exact", "never", "--steps", "1", "--out", dir}
	if code, _, stderr := runCmd(t, append(grid, "--shard", "0/3", "--dry-run")...); code != 0 {
		t.Fatal(stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, repro.ShardsFile)); !os.IsNotExist(err) {
		t.Errorf("--dry-run --shard recorded the deal: %v", err)
	}
	if code, _, stderr := runCmd(t, append(grid, "--shard", "2/3")...); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := runCmd(t, append(grid, "--shard", "0/2")...); code == 0 || !strings.Contains(stderr, "into 3 shards, not 2: run --shard K/3") {
		t.Errorf("another N: exit %d, %q", code, stderr)
	}
}

// TestReproduceShards runs a small grid as three shards into one
// directory, all at once in this process, and compares its table with an
// unsharded run's (every column that is not a wall-clock time); --status
// then lists every shard's jobs as done, and a job whose lock a Slurm task
// holds as running there.
func TestReproduceShards(t *testing.T) {
	tmp := t.TempDir()
	whole, sharded := filepath.Join(tmp, "whole"), filepath.Join(tmp, "sharded")
	args := func(out string) []string {
		return []string{"reproduce", "--datasets", "synthetic-200-2-5", "--splits", "0", "--steps", "5",
			"--probes", "8", "--block-size", "100", "--batch-size", "100", "--out", out}
	}
	if code, _, stderr := runCmd(t, args(whole)...); code != 0 {
		t.Fatal(stderr)
	}
	var wg sync.WaitGroup
	errs := make([]string, 3)
	for k := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, _, stderr := runCmd(t, append(args(sharded), "--shard", fmt.Sprintf("%d/3", k))...); code != 0 {
				errs[k] = stderr
			}
		}()
	}
	wg.Wait()
	for k, e := range errs {
		if e != "" {
			t.Fatalf("shard %d/3: %s", k, e)
		}
	}
	a, b := reproCSVTable(t, whole), reproCSVTable(t, sharded)
	if len(a) < 5 || len(a) != len(b) {
		t.Fatalf("tables have %d and %d rows", len(a), len(b))
	}
	for i := range a {
		if strings.Join(a[i], ",") != strings.Join(b[i], ",") {
			t.Errorf("row %d differs between the unsharded and the sharded run:\n%v\n%v", i, a[i], b[i])
		}
	}

	// Hold one job's lock as a Slurm task's runner would, the job not yet
	// done.
	rec, err := repro.ReadShards(sharded)
	if err != nil {
		t.Fatal(err)
	}
	held := rec.Jobs[0].ID
	if err := os.Remove(filepath.Join(sharded, results.JobsDir, held, results.ResultFile)); err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(sharded, results.JobsDir, held, repro.LockFile)
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	owner, _ := json.Marshal(map[string]any{"pid": 4242, "host": "node7", "task": "slurm job 99_1", "since": time.Now()})
	f.Write(owner)

	code, out, stderr := runCmd(t, "reproduce", "--status", "--out", sharded)
	if code != 0 {
		t.Fatal(stderr)
	}
	for _, want := range []string{
		"shard 0/3: ", "shard 1/3: ", "shard 2/3: ", "% of the estimated cost: ",
		"7 jobs in 3 shards in " + sharded + ": 6 done, 0 started, 1 not started, 1 running now",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--status output lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, held+" ") && !strings.Contains(line, " not started; running now in another gpnb reproduce (pid 4242 on node7, slurm job 99_1, since") {
			t.Errorf("--status line of the held job %s: %q; want it running in slurm job 99_1", held, line)
		}
	}
	if n := strings.Count(out, " done: "); n != 6 {
		t.Errorf("--status lists %d done jobs, want 6:\n%s", n, out)
	}
}

var (
	reproBinOnce sync.Once
	reproBin     string
	reproBinErr  error
)

// reproBinary builds gpnb once for the tests that run it as a process.
func reproBinary(t *testing.T) string {
	t.Helper()
	reproBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gpnb-bin-")
		if err != nil {
			reproBinErr = err
			return
		}
		reproBin = filepath.Join(dir, "gpnb")
		if out, err := exec.Command("go", "build", "-o", reproBin, ".").CombinedOutput(); err != nil {
			reproBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if reproBinErr != nil {
		t.Fatal(reproBinErr)
	}
	return reproBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if reproBin != "" {
		os.RemoveAll(filepath.Dir(reproBin))
	}
	os.Exit(code)
}

// TestReproduceSIGTERM: SIGTERM (what Slurm sends on scancel, preemption
// and at the time limit) stops gpnb reproduce as SIGINT does: the running
// job checkpoints and the process exits non-zero saying how to resume. The
// rerun resumes the job where it stopped (its runs.json has two segments
// that meet, so no step ran twice) and gives the same table as an
// uninterrupted run in every column that is not a wall-clock time.
func TestReproduceSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := reproBinary(t)
	tmp := t.TempDir()
	args := func(out string) []string {
		return []string{"reproduce", "--datasets", "synthetic-400-3-1", "--splits", "0", "--solvers", "sgd", "--modes", "cold",
			"--exact", "never", "--steps", "12", "--probes", "8", "--batch-size", "50", "--out", out}
	}
	straight, stopped := filepath.Join(tmp, "straight"), filepath.Join(tmp, "stopped")
	if out, err := exec.Command(bin, args(straight)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	id := "synthetic-400-3-1-s0-sgd-cold"
	ckpt := filepath.Join(stopped, results.JobsDir, id, repro.CheckpointFile)
	cmd := exec.Command(bin, args(stopped)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(ckpt); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no checkpoint after 60 s:\n%s", stderr.String())
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if err == nil {
		t.Skipf("the job finished before SIGTERM arrived: nothing tested (make it longer)\n%s", stderr.String())
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "stopped at its last checkpoint") {
		t.Fatalf("after SIGTERM: %v (want exit status 1 and the checkpoint message)\n%s", err, stderr.String())
	}
	if _, err := os.Stat(ckpt); err != nil {
		t.Fatalf("no checkpoint after SIGTERM: %v", err)
	}
	if out, err := exec.Command(bin, args(stopped)...).CombinedOutput(); err != nil || !strings.Contains(string(out), "resumed from its checkpoint at step") {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	segs, err := results.ReadSegments(filepath.Join(stopped, results.JobsDir, id))
	if err != nil || len(segs) != 2 {
		t.Fatalf("runs.json: %+v, %v; want two segments", segs, err)
	}
	if segs[0].FromStep != 0 || segs[0].ToStep != segs[1].FromStep || segs[1].ToStep != 12 || segs[1].FromStep == 0 {
		t.Errorf("segments %d-%d and %d-%d: want 0-k and k-12 with 0 < k", segs[0].FromStep, segs[0].ToStep, segs[1].FromStep, segs[1].ToStep)
	}
	a, b := reproCSVTable(t, straight), reproCSVTable(t, stopped)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("tables have %d and %d rows", len(a), len(b))
	}
	for i := range a {
		if strings.Join(a[i], ",") != strings.Join(b[i], ",") {
			t.Errorf("row %d differs after SIGTERM and resume:\n%v\n%v", i, a[i], b[i])
		}
	}
}
