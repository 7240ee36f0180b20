package repro

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/gpnb/gpnb/gpnb/results"
)

func TestParseShard(t *testing.T) {
	checkParse(t, "ParseShard", ParseShard, []parseCase[Shard]{
		{"0/1", Shard{0, 1}, ""},
		{"0/4", Shard{0, 4}, ""},
		{" 3/4 ", Shard{3, 4}, ""},
		{"12 / 50", Shard{12, 50}, ""},
		{"", Shard{}, "write K/N"},
		{"3", Shard{}, "write K/N"},
		{"4/4", Shard{}, "K must be 0..3"},
		{"-1/4", Shard{}, "K must be 0..3"},
		{"0/0", Shard{}, "at least 1"},
		{"1/-2", Shard{}, "at least 1"},
		{"a/4", Shard{}, "whole numbers"},
		{"1/2/", Shard{}, "whole numbers"},
	})
	for _, s := range []Shard{{0, 1}, {0, 4}, {3, 4}, {12, 50}} {
		if back, err := ParseShard(s.String()); s.String() != fmt.Sprintf("%d/%d", s.K, s.N) || err != nil || back != s {
			t.Errorf("%v.String() = %q parses back to %v, %v", s, s.String(), back, err)
		}
	}
}

// paperGrid is the paper's Table 1 grid at full size: 5 datasets × 10
// splits × 3 solvers × cold/warm (no exact reference beyond n = 6000).
func paperGrid(t *testing.T, datasets []string, splits []int, solvers ...string) []Job {
	t.Helper()
	if len(solvers) == 0 {
		solvers = []string{SolverCG, SolverAP, SolverSGD}
	}
	g := Grid{Datasets: datasets, Splits: splits, Solvers: solvers, Steps: 100}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func splitRange(lo, hi int) []int {
	var s []int
	for k := lo; k <= hi; k++ {
		s = append(s, k)
	}
	return s
}

// shardCosts sums EstimateCost per shard of a deal.
func shardCosts(jobs []Job, deal map[string]int, n int) []float64 {
	c := make([]float64, n)
	for _, j := range jobs {
		c[deal[j.ID()]] += EstimateCost(j)
	}
	return c
}

func maxOf(x []float64) float64 {
	m := x[0]
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

// TestDealEveryJobOnce: every job of a grid lands in exactly one shard,
// whatever N (more shards than jobs included), and the exact reference of
// each dataset and split in one shard only, not in every shard that runs
// its dataset.
func TestDealEveryJobOnce(t *testing.T) {
	sub := Grid{Datasets: []string{"pol", "elevators", "bike"}, Splits: splitRange(0, 9), Solvers: []string{"cg", "ap", "sgd"},
		Subset: 2000, Steps: 100}
	subJobs, err := sub.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	for name, jobs := range map[string][]Job{
		"paper":        paperGrid(t, UCIDatasets, splitRange(0, 9)),
		"subset+exact": subJobs,
		"tiny":         tinyGrid(t, 3),
	} {
		ns := []int{1, 2, 3, 4, 7, 16}
		if len(jobs) < 50 {
			ns = append(ns, len(jobs)+3) // shards left empty
		}
		for _, n := range ns {
			dir := t.TempDir()
			seen := map[string]int{}
			exact := 0
			for k := 0; k < n; k++ {
				part, err := (&Runner{Dir: dir}).ShardJobs(jobs, Shard{k, n}, true)
				if err != nil {
					t.Fatalf("%s, shard %d/%d: %v", name, k, n, err)
				}
				for _, j := range part {
					seen[j.ID()]++
					if j.Method().Mode() == results.Exact {
						exact++
					}
				}
			}
			wantExact := 0
			for _, j := range jobs {
				if seen[j.ID()] != 1 {
					t.Errorf("%s, N=%d: job %s is in %d shards, want 1", name, n, j.ID(), seen[j.ID()])
				}
				if j.Method().Mode() == results.Exact {
					wantExact++
				}
			}
			if len(seen) != len(jobs) || exact != wantExact {
				t.Errorf("%s, N=%d: %d distinct jobs in the shards (grid: %d), %d exact jobs (grid: %d)", name, n, len(seen), len(jobs), exact, wantExact)
			}
		}
	}
	if len(subJobs) != 210 {
		t.Errorf("subset grid has %d jobs, want 3 × 10 × 7 = 210 (exact included at n = 2000)", len(subJobs))
	}
}

// stripeShard is the best stable alternative to a dealt record: a function
// of the job alone, which deals the splits of each (dataset, solver, mode)
// round-robin from a hashed offset, so equal-cost jobs spread evenly.
func stripeShard(j Job, n int) int {
	h := fnv.New64a()
	h.Write([]byte(fmt.Sprintf("%s-%s-%s", j.Dataset, j.Method().Solver, j.Method().Mode())))
	return int((uint64(j.Split) + h.Sum64()) % uint64(n))
}

// TestDealBalance checks the deal of the paper's grid against Graham's
// bound for greedy list scheduling (no shard exceeds the mean by more than
// one job), and against the stable function of the job alone (stripeShard):
// the dealt shards are never less balanced, and the ratios are logged.
func TestDealBalance(t *testing.T) {
	for name, jobs := range map[string][]Job{
		"paper 5×10×6":   paperGrid(t, UCIDatasets, splitRange(0, 9)),
		"split 0, 5×1×6": paperGrid(t, UCIDatasets, []int{0}),
		"3×5×6":          paperGrid(t, []string{"pol", "elevators", "bike"}, splitRange(0, 4)),
	} {
		var total, biggest float64
		for _, j := range jobs {
			total += EstimateCost(j)
			biggest = max(biggest, EstimateCost(j))
		}
		for _, n := range []int{2, 3, 4, 5, 8, 10, 16, 25, 50} {
			if n > len(jobs) {
				continue
			}
			deal := Deal(jobs, n, nil, EstimateCost)
			got := maxOf(shardCosts(jobs, deal, n))
			if bound := total/float64(n) + (1-1/float64(n))*biggest; got > bound*(1+1e-12) {
				t.Errorf("%s, N=%d: heaviest shard %.4g > Graham's bound %.4g", name, n, got, bound)
			}
			stripe := map[string]int{}
			for _, j := range jobs {
				stripe[j.ID()] = stripeShard(j, n)
			}
			alt := maxOf(shardCosts(jobs, stripe, n))
			if got > alt*(1+1e-12) {
				t.Errorf("%s, N=%d: dealt heaviest shard %.4g, the stable per-job function's %.4g", name, n, got, alt)
			}
			lb := max(total/float64(n), biggest) // no partition does better
			t.Logf("%-15s N=%2d: heaviest shard / lower bound: dealt %.2f, per-job stripes %.2f", name, n, got/lb, alt/lb)
		}
	}
}

// TestShardJobsStableUnderGrowth deals a grid, then grids grown by
// datasets, splits, solvers and modes, and one shrunk: no job of the first
// grid ever changes shard.
func TestShardJobsStableUnderGrowth(t *testing.T) {
	const n = 4
	dir := t.TempDir()
	shardOf := func(jobs []Job) map[string]int {
		t.Helper()
		out := map[string]int{}
		for k := 0; k < n; k++ {
			part, err := (&Runner{Dir: dir}).ShardJobs(jobs, Shard{k, n}, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range part {
				out[j.ID()] = k
			}
		}
		return out
	}
	first := paperGrid(t, []string{"pol", "elevators"}, splitRange(0, 4), SolverCG)
	before := shardOf(first)
	for name, grown := range map[string][]Job{
		"more splits":   paperGrid(t, []string{"pol", "elevators"}, splitRange(0, 9), SolverCG),
		"more datasets": paperGrid(t, UCIDatasets, splitRange(0, 4), SolverCG),
		"more solvers":  paperGrid(t, []string{"pol", "elevators"}, splitRange(0, 4), SolverCG, SolverAP, SolverSGD),
		"all of it":     paperGrid(t, UCIDatasets, splitRange(0, 9)),
		"shrunk":        paperGrid(t, []string{"elevators"}, []int{3, 4}, SolverCG),
	} {
		after := shardOf(grown)
		moved := 0
		for _, j := range first {
			if k, ok := after[j.ID()]; ok && k != before[j.ID()] {
				moved++
				t.Errorf("%s: %s moved from shard %d to %d", name, j.ID(), before[j.ID()], k)
			}
		}
		if len(after) != len(grown) {
			t.Errorf("%s: %d jobs in the shards, grid has %d", name, len(after), len(grown))
		}
	}
}

// TestShardJobsDealsOntoWhatIsLeft: after shard 0 has finished its jobs and
// shard 1 has not begun, the new jobs of a grown grid go to shard 0 first,
// until the estimated cost left evens out (to within one job).
func TestShardJobsDealsOntoWhatIsLeft(t *testing.T) {
	dir := t.TempDir()
	g := Grid{Datasets: []string{"synthetic-50-2-1"}, Splits: []int{0}, Solvers: []string{"cg", "ap", "sgd"}, Steps: 3}
	first, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	ft := &fakeTrainer{}
	part0, err := (&Runner{Dir: dir, Trainer: ft}).ShardJobs(first, Shard{0, 2}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&Runner{Dir: dir, Trainer: ft}).Run(context.Background(), part0); err != nil {
		t.Fatal(err)
	}
	part1, err := (&Runner{Dir: dir, Trainer: ft}).ShardJobs(first, Shard{1, 2}, true)
	if err != nil {
		t.Fatal(err)
	}
	var left1 float64 // shard 0's cost left is 0: its jobs are done
	for _, j := range part1 {
		left1 += EstimateCost(j)
	}
	g.Datasets = append(g.Datasets, "synthetic-40-3-2", "synthetic-30-2-3")
	grown, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	got := [2]map[string]bool{{}, {}}
	for k := range got {
		part, err := (&Runner{Dir: dir, Trainer: ft}).ShardJobs(grown, Shard{k, 2}, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range part {
			got[k][j.ID()] = true
		}
	}
	var add [2]float64
	var biggest float64
	for _, j := range grown[len(first):] {
		c := EstimateCost(j)
		biggest = max(biggest, c)
		for k := range got {
			if got[k][j.ID()] {
				add[k] += c
			}
		}
	}
	if d := (0 + add[0]) - (left1 + add[1]); d > biggest || -d > biggest {
		t.Errorf("cost left after the deal: shard 0 %.4g, shard 1 %.4g + %.4g: differ by more than the largest new job (%.4g)", add[0], left1, add[1], biggest)
	}
	if add[0] <= add[1] {
		t.Errorf("new cost dealt to the finished shard 0: %.4g, to the untouched shard 1: %.4g; want more to shard 0", add[0], add[1])
	}
}

// TestDealDeterministic: the job list's order does not matter, and two
// directories dealt in different shard orders hold the same record.
func TestDealDeterministic(t *testing.T) {
	jobs := paperGrid(t, UCIDatasets, splitRange(0, 9))
	want := Deal(jobs, 7, nil, EstimateCost)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		shuffled := append([]Job(nil), jobs...)
		rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		if got := Deal(shuffled, 7, nil, EstimateCost); !reflect.DeepEqual(got, want) {
			t.Fatal("Deal depends on the order of the jobs")
		}
	}
	a, b := t.TempDir(), t.TempDir()
	for _, k := range []int{3, 0, 6, 1, 5, 2, 4} {
		if _, err := (&Runner{Dir: a}).ShardJobs(jobs, Shard{k, 7}, true); err != nil {
			t.Fatal(err)
		}
		if _, err := (&Runner{Dir: b}).ShardJobs(jobs, Shard{6 - k, 7}, true); err != nil {
			t.Fatal(err)
		}
	}
	ra, _ := os.ReadFile(filepath.Join(a, ShardsFile))
	rb, _ := os.ReadFile(filepath.Join(b, ShardsFile))
	if len(ra) == 0 || string(ra) != string(rb) {
		t.Errorf("two directories dealt the same grid differently (%d and %d bytes)", len(ra), len(rb))
	}
	rec, err := ReadShards(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rec.Jobs {
		if want[s.ID] != s.Shard {
			t.Errorf("%s: recorded in shard %d, Deal says %d", s.ID, s.Shard, want[s.ID])
		}
	}
}

// TestShardJobsDryRunWritesNothing: without record, the deal is the one a
// real run would record, and the directory stays untouched.
func TestShardJobsDryRunWritesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	jobs := tinyGrid(t, 2)
	dry, err := (&Runner{Dir: dir}).ShardJobs(jobs, Shard{1, 3}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a dry deal created %s: %v", dir, err)
	}
	real, err := (&Runner{Dir: dir}).ShardJobs(jobs, Shard{1, 3}, true)
	if err != nil || !reflect.DeepEqual(dry, real) {
		t.Errorf("dry deal %v, recorded deal %v (%v)", dry, real, err)
	}
}

// TestShardsRunConcurrently runs the shards of a grid at once on one
// directory, as an array job's tasks do: they deal the grid once between
// them, every job is trained exactly once, and the results equal one
// runner's.
func TestShardsRunConcurrently(t *testing.T) {
	if !lockingWorks {
		t.Skip("no flock on this platform")
	}
	const n, steps = 4, 3
	alone, shared := t.TempDir(), t.TempDir()
	if _, err := (&Runner{Dir: alone, Trainer: &fakeTrainer{}}).Run(context.Background(), tinyGrid(t, steps)); err != nil {
		t.Fatal(err)
	}
	fts := make([]*fakeTrainer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := range n {
		fts[k] = &fakeTrainer{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &Runner{Dir: shared, Trainer: fts[k]}
			part, err := r.ShardJobs(tinyGrid(t, steps), Shard{k, n}, true)
			if err == nil {
				_, err = r.Run(context.Background(), part)
			}
			errs[k] = err
		}()
	}
	wg.Wait()
	want := tinyGrid(t, steps)
	checkTrainedOnce(t, fts, errs, want)
	rec, err := ReadShards(shared)
	if err != nil || len(rec.Jobs) != len(want) {
		t.Fatalf("record: %v, %v", rec, err)
	}
	if a, b := tableCSV(t, alone), tableCSV(t, shared); a != b {
		t.Errorf("tables differ:\nalone:\n%s\nshards:\n%s", a, b)
	}
}

func TestShardRecordErrors(t *testing.T) {
	jobs := tinyGrid(t, 2)
	dir := t.TempDir()
	if _, err := (&Runner{Dir: dir}).ShardJobs(jobs, Shard{0, 3}, true); err != nil {
		t.Fatal(err)
	}
	_, err := (&Runner{Dir: dir}).ShardJobs(jobs, Shard{0, 4}, true)
	if !errors.Is(err, ErrGrid) || !strings.Contains(err.Error(), "into 3 shards, not 4: run --shard K/3, or delete") {
		t.Errorf("another N: %v", err)
	}
	changed := tinyGrid(t, 5)
	_, err = (&Runner{Dir: dir}).ShardJobs(changed, Shard{0, 3}, true)
	if !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), "steps=2") || !strings.Contains(err.Error(), "steps=5") {
		t.Errorf("other settings: %v", err)
	}
	if _, err := (&Runner{Dir: dir}).ShardJobs(append(jobs, jobs[0]), Shard{0, 3}, true); !errors.Is(err, ErrGrid) || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a job twice: %v", err)
	}
	if _, err := (&Runner{}).ShardJobs(jobs, Shard{0, 3}, true); !errors.Is(err, ErrGrid) {
		t.Errorf("no directory: %v", err)
	}
	good, _ := os.ReadFile(filepath.Join(dir, ShardsFile))
	for name, tc := range map[string]struct{ from, to, want string }{
		"torn":        {"", "{", "is not a shard record"},
		"no shards":   {`"shards": 3`, `"shards": 0`, "deals into 0 shards"},
		"bad shard":   {`"shard": 0`, `"shard": 9`, "shard 9 of 3"},
		"wrong id":    {`"id": "synthetic-50-2-1-s0-cg-cold"`, `"id": "pol-s0-cg-cold"`, "under the id pol-s0-cg-cold"},
		"a job twice": {`"id": "synthetic-50-2-1-s0-cg-warm"`, `"id": "synthetic-50-2-1-s0-cg-cold"`, "twice"},
	} {
		b := strings.Replace(string(good), tc.from, tc.to, 1)
		if tc.from == "" {
			b = tc.to
		}
		if b == string(good) {
			t.Fatalf("%s: the record has no %q", name, tc.from)
		}
		if name == "a job twice" {
			// Both the id and the job: a consistent duplicate.
			b = strings.Replace(string(good), `"id": "synthetic-50-2-1-s0-cg-warm"`, `"id": "synthetic-50-2-1-s0-cg-cold"`, 1)
			b = strings.Replace(b, `"warm_start": true`, `"warm_start": false`, 1)
		}
		os.WriteFile(filepath.Join(dir, ShardsFile), []byte(b), 0o644)
		_, err := (&Runner{Dir: dir}).ShardJobs(jobs, Shard{0, 3}, true)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "delete it") {
			t.Errorf("%s record: %v; want an error saying %q and what to do", name, err, tc.want)
		}
	}
}

// TestSchedulerTaskInLock: a job's lock names the Slurm array task that
// holds it, and Plan reports it.
func TestSchedulerTaskInLock(t *testing.T) {
	for _, v := range []string{"SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_ID", "JOB_COMPLETION_INDEX"} {
		t.Setenv(v, "")
	}
	if got := SchedulerTask(); got != "" {
		t.Errorf("outside a scheduler: %q", got)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "3")
	if got := SchedulerTask(); got != "kubernetes index 3" {
		t.Errorf("Indexed Job: %q", got)
	}
	t.Setenv("SLURM_JOB_ID", "41")
	if got := SchedulerTask(); got != "slurm job 41" {
		t.Errorf("Slurm job: %q", got)
	}
	t.Setenv("SLURM_ARRAY_JOB_ID", "40")
	t.Setenv("SLURM_ARRAY_TASK_ID", "2")
	if got := SchedulerTask(); got != "slurm job 40_2" {
		t.Errorf("Slurm array task: %q", got)
	}
	if !lockingWorks {
		return
	}
	dir := t.TempDir()
	jobs := tinyGrid(t, 5)
	ft := &fakeTrainer{}
	ft.beforeStep = func() {
		ft.beforeStep = nil
		plan, err := (&Runner{Dir: dir, Trainer: &fakeTrainer{}}).Plan(jobs[:1])
		if err != nil || !strings.Contains(plan[0].RunningBy, ", slurm job 40_2, since") {
			t.Errorf("Plan of a job a Slurm task runs: %+v, %v", plan, err)
		}
	}
	if _, err := (&Runner{Dir: dir, Trainer: ft}).Run(context.Background(), jobs[:1]); err != nil {
		t.Fatal(err)
	}
}

// checkTrainedOnce fails unless every runner succeeded and the jobs want
// were trained exactly once among the fake trainers.
func checkTrainedOnce(t *testing.T, fts []*fakeTrainer, errs []error, want []Job) {
	t.Helper()
	var calls, ids []string
	for k := range fts {
		if errs[k] != nil {
			t.Fatalf("runner %d: %v", k, errs[k])
		}
		calls = append(calls, fts[k].calls...)
	}
	for _, j := range want {
		ids = append(ids, j.ID())
	}
	sort.Strings(calls)
	sort.Strings(ids)
	if strings.Join(calls, " ") != strings.Join(ids, " ") {
		t.Errorf("jobs trained by the runners:\n%v\nwant each of\n%v\nonce", calls, ids)
	}
}
