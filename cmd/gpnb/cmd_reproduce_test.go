package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/gpnb/repro"
	"github.com/gpnb/gpnb/gpnb/results"
	"github.com/gpnb/gpnb/solvers"
)

func TestReproduceBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"reproduce", "--out", dir, "--datasets", "pol,mnist"}, `unknown dataset "mnist"`},
		{[]string{"reproduce", "--out", dir, "--splits", "3-1"}, `split range "3-1" is empty`},
		{[]string{"reproduce", "--out", dir, "--solvers", "cg,lbfgs"}, `unknown solver "lbfgs"`},
		{[]string{"reproduce", "--out", dir, "--exact", "maybe"}, "auto, always or never"},
		{[]string{"reproduce", "--out", dir, "--steps", "0"}, "steps 0"},
		{[]string{"reproduce", "--out", dir, "--datasets", "synthetic-10-2"}, "synthetic-N-D-SEED"},
		{[]string{"reproduce"}, "--out DIR is required"},
		{[]string{"reproduce", "--out", dir, "--memory-budget", "lots"}, "--memory-budget"},
		{[]string{"reproduce", "--out", dir, "--operator", "sparse"}, "use one of auto, dense, matrixfree"},
		{[]string{"reproduce", "--out", dir, "--sgd-lr", "fast"}, `--sgd-lr "fast": use auto, paper`},
		{[]string{"reproduce", "--out", dir, "--sgd-lr", "-1"}, `--sgd-lr "-1"`},
		{[]string{"reproduce", "--out", dir, "--sgd-lr", "raw:0"}, `--sgd-lr "raw:0"`},
		{[]string{"reproduce", "--out", dir, "--sgd-lr", "raw:NaN"}, `--sgd-lr "raw:NaN"`},
		{[]string{"reproduce", "--out", dir, "--seeds", "4-2"}, `seed range "4-2" is empty`},
		{[]string{"reproduce", "--out", dir, "--seeds", "0-4", "--seed", "3"}, "leave out --seed and --sgd-seed"},
		{[]string{"reproduce", "--out", dir, "--rules", "paper"}, `unknown rule set "paper": use one of authors, paper-text`},
		{[]string{"reproduce", "--out", dir, "--authors-rules"}, "flag provided but not defined: -authors-rules"},
		{[]string{"reproduce", "--out", dir, "--backend", "tpu"}, `--backend "tpu": use cpu or cuda`},
		{[]string{"reproduce", "--out", dir, "--backend", "cuda"}, "--backend cuda: "},
		{[]string{"table", "--in", dir}, "no jobs/ directory"},
		{[]string{"table", "--in", filepath.Join(dir, "missing")}, "does not exist"},
		{[]string{"table"}, "--in DIR is required"},
		{[]string{"table", "--in", dir, "--format", "pdf"}, "use md, csv or html"},
		{[]string{"table", "--in", dir, "--unit", "hours"}, "use min or s"},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("gpnb %s: exit %d, stderr %q; want non-zero and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
	os.MkdirAll(filepath.Join(dir, "jobs"), 0o755)
	if code, _, stderr := runCmd(t, "table", "--in", dir); code == 0 || !strings.Contains(stderr, "no finished job") {
		t.Errorf("empty results dir: exit %d, %q", code, stderr)
	}
}

// reproTinyArgs is a small real grid: two synthetic datasets, one split, CG, AP
// and SGD cold and warm plus the exact reference, 10 steps each.
func reproTinyArgs(out string) []string {
	return []string{"reproduce", "--datasets", "synthetic-300-3-1,synthetic-200-2-5", "--splits", "0", "--steps", "10",
		"--probes", "8", "--block-size", "100", "--batch-size", "100", "--out", out}
}

// reproCSVTable renders `gpnb table --format csv` for dir and returns its rows
// without the wall-clock columns (runtimes and the speed-ups computed from
// them), which inherently differ between two runs.
func reproCSVTable(t *testing.T, dir string) [][]string {
	t.Helper()
	code, out, stderr := runCmd(t, "table", "--in", dir, "--format", "csv", "--unit", "s")
	if code != 0 {
		t.Fatalf("gpnb table: %s", stderr)
	}
	var rows [][]string
	for _, part := range strings.Split(strings.TrimSpace(out), "\n\n") {
		recs, err := csv.NewReader(strings.NewReader(part)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		var keep []int
		for i, h := range recs[0] {
			l := strings.ToLower(h)
			if !strings.Contains(l, "runtime") && !strings.Contains(l, "speed-up") {
				keep = append(keep, i)
			}
		}
		for _, r := range recs {
			var row []string
			for _, i := range keep {
				row = append(row, r[i])
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// TestReproduceSIGKILL builds the real binary, runs a tiny grid straight
// through, then runs it again into another directory, killing the process
// with SIGKILL at growing intervals until a rerun completes. Both tables
// must agree in every column that is not a wall-clock time (test RMSE, test
// LLH, solver iterations and their ratios), exactly; the runtimes differ
// between any two runs. Last, two processes run the grid at once into a
// third directory, and must finish each job once and give the same table.
func TestReproduceSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the grid repeatedly; skipped with -short")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "gpnb")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dirA, dirB := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	if out, err := exec.Command(bin, reproTinyArgs(dirA)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}

	kills := 0
	// Kills start early (the whole grid takes well under a second on an idle
	// machine) and come later each time, so every rerun gets further.
	for attempt, delay := 0, 40*time.Millisecond; ; attempt, delay = attempt+1, delay*3/2 {
		if attempt > 40 {
			t.Fatal("the killed run never finished")
		}
		cmd := exec.Command(bin, reproTinyArgs(dirB)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("rerun after %d kills failed: %v\n%s", kills, err, stderr.String())
			}
		case <-time.After(delay):
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			kills++
			// Whatever the moment of the kill, every file on disk is whole.
			reproCheckWhole(t, dirB)
			continue
		}
		break
	}
	if kills == 0 {
		t.Fatal("the run finished before the first SIGKILL: the test did not test anything (make the grid larger)")
	}
	t.Logf("finished after %d SIGKILLs", kills)
	a, b := reproCSVTable(t, dirA), reproCSVTable(t, dirB)
	if len(a) != len(b) || len(a) < 10 {
		t.Fatalf("tables have %d and %d rows", len(a), len(b))
	}
	for i := range a {
		if strings.Join(a[i], ",") != strings.Join(b[i], ",") {
			t.Errorf("row %d differs after SIGKILLs:\n%v\n%v", i, a[i], b[i])
		}
	}
	// The checkpoints are gone once a job is finished.
	ck, _ := filepath.Glob(filepath.Join(dirB, "jobs", "*", repro.CheckpointFile))
	if len(ck) != 0 {
		t.Errorf("checkpoints left behind: %v", ck)
	}

	// Two processes at once on one directory: each job is finished by
	// exactly one of them (the job locks are flocks between processes), and
	// the table is the same as the uninterrupted run's.
	dirC := filepath.Join(tmp, "c")
	var logs [2]bytes.Buffer
	var cmds [2]*exec.Cmd
	for k := range cmds {
		cmds[k] = exec.Command(bin, reproTinyArgs(dirC)...)
		cmds[k].Stderr = &logs[k]
		if err := cmds[k].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for k := range cmds {
		if err := cmds[k].Wait(); err != nil {
			t.Fatalf("concurrent run %d: %v\n%s", k, err, logs[k].String())
		}
	}
	both := logs[0].String() + logs[1].String()
	jobs, _ := filepath.Glob(filepath.Join(dirC, "jobs", "*"))
	if len(jobs) != 14 {
		t.Fatalf("%d job directories after the concurrent runs, want 14", len(jobs))
	}
	for _, j := range jobs {
		if n := strings.Count(both, filepath.Base(j)+": done in"); n != 1 {
			t.Errorf("%s finished %d times in the two concurrent runs:\n%s", filepath.Base(j), n, both)
		}
	}
	t.Logf("concurrent runs: %d jobs skipped as held by the other process", strings.Count(both, ": skipped: another gpnb reproduce"))
	c := reproCSVTable(t, dirC)
	for i := range a {
		if i >= len(c) || strings.Join(a[i], ",") != strings.Join(c[i], ",") {
			t.Fatalf("row %d differs after two concurrent runs:\n%v\n%v", i, a[i], c)
		}
	}
}

// reproCheckWhole fails unless every job.json, result.json and status.json in dir
// parses.
func reproCheckWhole(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "jobs", "*", "*.json"))
	files = append(files, filepath.Join(dir, repro.StatusFile))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		var v any
		if err != nil || json.Unmarshal(b, &v) != nil {
			t.Errorf("%s is torn after SIGKILL: %v %q", f, err, b)
		}
	}
}

func TestTableFormats(t *testing.T) {
	dir := t.TempDir()
	args := []string{"reproduce", "--datasets", "synthetic-40-2-1", "--splits", "0-1", "--solvers", "cg", "--steps", "2", "--probes", "2", "--out", dir}
	if code, _, stderr := runCmd(t, args...); code != 0 {
		t.Fatalf("reproduce: %s", stderr)
	}
	for _, tc := range []struct {
		format, want string
	}{{"md", "| CG |"}, {"csv", "Test LLH se"}, {"html", "<table class=\"gpnb-table\">"}} {
		out := filepath.Join(dir, "t."+tc.format)
		if code, _, stderr := runCmd(t, "table", "--in", dir, "--format", tc.format, "--out", out); code != 0 {
			t.Fatalf("%s: %s", tc.format, stderr)
		}
		b, _ := os.ReadFile(out)
		if !strings.Contains(string(b), tc.want) {
			t.Errorf("%s output lacks %q:\n%s", tc.format, tc.want, b)
		}
		// --table all draws two tables; the page carries the styles once.
		if tc.format == "html" && (strings.Count(string(b), "<table ") != 2 || strings.Count(string(b), "<style>") != 1) {
			t.Errorf("html page: %d tables, %d style sheets; want 2 and 1", strings.Count(string(b), "<table "), strings.Count(string(b), "<style>"))
		}
	}
	code, out, _ := runCmd(t, "table", "--in", dir, "--table", "1")
	if code != 0 || strings.Contains(out, "Table 2") || !strings.Contains(out, "Table 1") {
		t.Errorf("--table 1: %q", out)
	}
	// The tables of runs, of one set against another, and of status.json.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--table", "runs", "--columns", "name,steps,iterations,speedup@cold:1"}, "| synthetic-40-2-1-s1-cg-warm | 2 of 2 |"},
		{[]string{"--table", "runs", "--in", "a=" + dir + ",b=" + dir, "--columns", "name,total_s@b", "--jobs", "*-s0-*"}, "| synthetic-40-2-1-s0-cg-cold |"},
		{[]string{"--table", "traces", "--steps", "1,2"}, "### synthetic-40-2-1 CG warm: σ and solver iterations by step"},
		{[]string{"--table", "status"}, "| state | finished |"},
		{[]string{"--table", "headline"}, "Table 1 beside the paper's"},
	} {
		args := append([]string{"table", "--in", dir}, tc.args...)
		if code, out, stderr := runCmd(t, args...); code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("gpnb %v: exit %d, %s\n%s\nwant %q", args, code, stderr, out, tc.want)
		}
	}
	if code, _, stderr := runCmd(t, "table", "--in", dir, "--table", "runs", "--columns", "nope"); code == 0 || !strings.Contains(stderr, `unknown column "nope"`) {
		t.Errorf("--columns nope: exit %d, %s", code, stderr)
	}
	// Rerunning the same grid runs nothing; a different --steps is refused.
	if code, out, _ := runCmd(t, args...); code != 0 || !strings.Contains(out, "0 run now, 6 already done") {
		t.Errorf("rerun: %d %q", code, out)
	}
	args[len(args)-5] = "3" // --steps 3
	if code, _, stderr := runCmd(t, args...); code == 0 || !strings.Contains(stderr, "steps=2") || !strings.Contains(stderr, "different --out") {
		t.Errorf("changed steps: %d %q", code, stderr)
	}
}

// TestReproduceOperatorFlags checks that --operator and --memory-budget reach
// the kernel operator and that result.json says which storage was used.
func TestReproduceOperatorFlags(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{nil, "dense float64"},
		{[]string{"--operator", "matrixfree"}, "matrix-free"},
		{[]string{"--memory-budget", "1KiB"}, "matrix-free"}, // 60² float64 values need 28.8 kB
		{[]string{"--memory-budget", "1KiB", "--precision", "float32"}, "matrix-free float32"},
		{[]string{"--memory-budget", "16KiB", "--precision", "float32"}, "dense float32"},
		{[]string{"--memory-budget", "16KiB", "--precision", "mixed"}, "dense mixed"},
		{[]string{"--memory-budget", "1KiB", "--precision", "mixed"}, "matrix-free"}, // no cache: computes as float64
	} {
		dir := t.TempDir()
		args := append([]string{"reproduce", "--datasets", "synthetic-60-2-1", "--splits", "0", "--solvers", "cg",
			"--modes", "warm", "--steps", "2", "--exact", "never", "--out", dir}, tc.flags...)
		if code, _, stderr := runCmd(t, args...); code != 0 {
			t.Fatalf("gpnb %v: %s", args, stderr)
		}
		rs, err := results.Load(dir)
		if err != nil || len(rs) != 1 {
			t.Fatalf("%v: %d results, %v", tc.flags, len(rs), err)
		}
		if got := rs[0].Result.Operator; got != tc.want {
			t.Errorf("%v: result.json operator %q, want %q", tc.flags, got, tc.want)
		}
	}
}

// TestReproduceDryRun lists a grid's jobs as done or not started, reports an
// unreadable checkpoint, and writes nothing.
func TestReproduceDryRun(t *testing.T) {
	dir := t.TempDir()
	grid := []string{"reproduce", "--datasets", "synthetic-60-2-1", "--splits", "0", "--solvers", "cg",
		"--steps", "2", "--exact", "never", "--out", dir}
	if code, _, stderr := runCmd(t, append(grid, "--modes", "warm")...); code != 0 {
		t.Fatal(stderr)
	}
	cold := filepath.Join(dir, "jobs", "synthetic-60-2-1-s0-cg-cold")
	os.MkdirAll(cold, 0o755)
	os.WriteFile(filepath.Join(cold, repro.CheckpointFile), []byte("not a checkpoint"), 0o644)
	status, _ := os.ReadFile(filepath.Join(dir, repro.StatusFile))
	code, out, stderr := runCmd(t, append(grid, "--dry-run")...)
	if code != 0 {
		t.Fatal(stderr)
	}
	for _, want := range []string{
		"synthetic-60-2-1-s0-cg-cold", "not started (unreadable checkpoint, will restart:",
		"synthetic-60-2-1-s0-cg-warm", "done: 2 steps", "operator dense float64",
		// runs.json records the machine's H·V rate measured as the job began.
		" GFLOP/s)",
		"2 jobs in " + dir + ": 1 done, 0 started, 1 not started",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if now, _ := os.ReadFile(filepath.Join(dir, repro.StatusFile)); !bytes.Equal(now, status) {
		t.Error("--dry-run rewrote status.json")
	}
	if _, err := os.Stat(filepath.Join(cold, repro.JobFile)); !os.IsNotExist(err) {
		t.Errorf("--dry-run wrote a job.json: %v", err)
	}
}

// TestSetMemoryLimit: without GOMEMLIMIT the Go heap is held under 90% of
// physical memory (so garbage cannot grow beside a 15 GB kernel matrix);
// with it, the user's limit stands.
func TestSetMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	t.Setenv("GOMEMLIMIT", "")
	os.Unsetenv("GOMEMLIMIT")
	setMemoryLimit()
	pm := kernel.PhysicalMemory()
	if got, want := debug.SetMemoryLimit(-1), int64(memoryLimitFraction*float64(pm)); pm > 0 && got != want {
		t.Errorf("memory limit %d, want %d (90%% of %d)", got, want, pm)
	}
	debug.SetMemoryLimit(12345 << 20)
	t.Setenv("GOMEMLIMIT", "12345MiB")
	setMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got != 12345<<20 {
		t.Errorf("with GOMEMLIMIT set, the limit was changed to %d", got)
	}
}

// --sgd-lr: auto (the default) gives the paper's datasets their raw rates
// where the run is the paper's (all of the training split) and the
// normalised default elsewhere; paper gives them their raw rates on subsets
// too; a number is the normalised rate for all, raw:N the raw rate N for
// all.
func TestSGDRateFlag(t *testing.T) {
	const polN = 13499 // all of pol's split 0 but one point: still the paper's run
	for _, tc := range []struct {
		in              string
		rates           repro.SGDRates
		norm, raw       float64
		polAll, polPart float64 // pol's raw rate on all of it, on 1500 points
	}{
		{"auto", repro.SGDRatesAuto, 0, 0, 90, 0},
		{" Auto ", repro.SGDRatesAuto, 0, 0, 90, 0},
		{"paper", repro.SGDRatesPaper, 0, 0, 90, 90},
		{"0", repro.SGDRatesGiven, 0, 0, 0, 0},
		{"2.5", repro.SGDRatesGiven, 2.5, 0, 0, 0},
		{"raw:45", repro.SGDRatesGiven, 0, 45, 45, 45},
	} {
		var rf runFlags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		rf.register(fs, io.Discard, defaultTarget(), nil)
		if err := fs.Parse([]string{"--solver", "sgd", "--sgd-lr", tc.in}); err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		g, _, err := rf.grid()
		if err != nil {
			t.Fatal(err)
		}
		m := g.Methods["sgd"].(solvers.SGD)
		if g.SGDRates != tc.rates || m.LearningRate != tc.norm || m.RawLearningRate != tc.raw {
			t.Errorf("%q: rates %v, normalised %v, raw %v; want %v, %v, %v", tc.in,
				g.SGDRates, m.LearningRate, m.RawLearningRate, tc.rates, tc.norm, tc.raw)
		}
		for n, want := range map[int]float64{polN: tc.polAll, 1500: tc.polPart} {
			cfg, err := rf.config("pol", n, 3)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Solver.(solvers.SGD).RawLearningRate; got != want {
				t.Errorf("%q: pol's raw rate at n = %d: %v, want %v", tc.in, n, got, want)
			}
		}
	}
}

// TestReproduceSeeds: --seeds makes every seed a job, named ...-seedK but
// for seed 0, with that seed for its probes and SGD's batches.
func TestReproduceSeeds(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCmd(t, "reproduce", "--out", dir, "--datasets", "synthetic-60-2-1", "--splits", "0", "--seeds", "0,2",
		"--solvers", "sgd", "--modes", "cold", "--exact", "never", "--steps", "2", "--batch-size", "20", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, id := range []string{"synthetic-60-2-1-s0-sgd-cold ", "synthetic-60-2-1-s0-sgd-cold-seed2 "} {
		if !strings.Contains(out, id) {
			t.Errorf("no job %q in\n%s", id, out)
		}
	}
	if code, _, stderr := runCmd(t, "reproduce", "--out", dir, "--datasets", "synthetic-60-2-1", "--splits", "0", "--seeds", "2",
		"--solvers", "sgd", "--modes", "cold", "--exact", "never", "--steps", "2", "--batch-size", "20"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	recs, err := results.Load(dir)
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d results, %v", len(recs), err)
	}
	if c := *recs[0].Result.Config; c.Seed != 2 || c.Solver.(solvers.SGD).Seed != 2 || c.Rules != solvers.RulesAuthors {
		t.Errorf("job %s: seed %d, SGD seed %d, rules %v", recs[0].ID(), c.Seed, c.Solver.(solvers.SGD).Seed, c.Rules)
	}
}
