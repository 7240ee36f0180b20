package repro

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/gpnb/gpnb/gpnb/results"
	"github.com/gpnb/gpnb/internal/atomicfile"
)

// ShardsFile is DIR/shards.json, the deal of a sharded run (gpnb reproduce
// --shard K/N): which of the N shards runs each job. The first sharded run
// on DIR writes it; later runs, of any shard, keep every job it lists where
// it is and deal only the jobs it does not list yet.
const ShardsFile = "shards.json"

// shardsLock guards ShardsFile while a run reads, extends and rewrites it.
const shardsLock = ".shards.lock"

// Shard is part K of a grid dealt into N parts, 0 ≤ K < N: one task of a
// cluster's array job (Slurm's --array=0-(N-1), a Kubernetes Indexed Job).
type Shard struct{ K, N int }

// String is "K/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// ParseShard parses "K/N" with 0 ≤ K < N, numbered from 0 as Slurm's array
// task ids and Kubernetes' completion indexes are.
func ParseShard(s string) (Shard, error) {
	bad := func(why string) (Shard, error) {
		return Shard{}, fmt.Errorf("%w: --shard %q: %s", ErrGrid, s, why)
	}
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return bad("write K/N: shard K (from 0) of N, e.g. 0/4 ... 3/4")
	}
	k, e1 := strconv.Atoi(strings.TrimSpace(a))
	n, e2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case e1 != nil || e2 != nil:
		return bad("K and N must be whole numbers, e.g. 0/4")
	case n < 1:
		return bad("N, the number of shards, must be at least 1")
	case k < 0 || k >= n:
		return bad(fmt.Sprintf("K must be 0..%d: shards are numbered from 0, as Slurm's --array=0-%d numbers its tasks", n-1, n-1))
	}
	return Shard{K: k, N: n}, nil
}

// EstimateCost is a job's cost in arbitrary units, for dealing a grid into
// balanced shards: Steps × n² (one kernel matrix product per solver
// iteration) × a factor for the solver and cold or warm start, and
// Steps × n³ for the Cholesky reference. The factors are rough ratios of
// the full-size CPU runs in results/ (a cold SGD job costs about twenty
// warm CG jobs; a warm AP job half of one): a wrong estimate costs balance,
// never correctness.
func EstimateCost(j Job) float64 {
	spec, err := ParseDataset(j.Dataset)
	if err != nil {
		return 0
	}
	n := float64(ApproxTrainSize(spec, j.Subset))
	var f float64
	switch m := j.Method(); {
	case m.Mode() == results.Exact:
		f = 1.75e-3 * n // at n = 2000, as long as 3.5 warm CG jobs
	case m.Solver == SolverCG:
		f = pick(m.Warm, 1, 3)
	case m.Solver == SolverAP:
		f = pick(m.Warm, 0.5, 6)
	case m.Solver == SolverSGD:
		f = pick(m.Warm, 3, 20)
	}
	return float64(j.Steps) * n * n * f
}

func pick(warm bool, w, c float64) float64 {
	if warm {
		return w
	}
	return c
}

// Deal assigns each job of jobs that assigned does not list to one of n
// shards and returns the whole assignment (job id to shard), assigned
// included and unchanged.
//
// Why a dealt record and not a function of the job: a partition in which no
// job ever moves when others are added must give each job a shard that
// depends on that job alone (every grid holding j grows from the grid {j}).
// Such a function (a hash, or round-robin over the splits) is stable but
// blind to the other jobs' costs; on the paper's grid, where one cold SGD
// job costs as much as forty warm AP jobs, its heaviest shard carries up to
// 1.8 times the estimated cost of a dealt one's (TestDealBalance logs the
// ratios), and the whole array waits for that shard. So the grid is dealt
// once with the longest-processing-time rule (heaviest job first, each to
// the shard with the least estimated cost left: within 4/3 of the best
// makespan) and the deal is remembered in DIR/shards.json, which every
// shard shares anyway. A grown grid deals only its new jobs, onto the
// cost each shard has left (remaining: a finished job's is 0), so no job
// moves and the new work evens out the shards. The price is state: the
// partition depends on DIR's history, not on the job list alone, and
// changing N needs a fresh deal (delete shards.json; finished jobs are
// skipped and started ones resume wherever they land).
//
// Deal is deterministic: the same jobs (in any order), assignment and
// remaining costs give the same result. Ties go to the shard with fewer
// jobs, then to the lower index.
func Deal(jobs []Job, n int, assigned map[string]int, remaining func(Job) float64) map[string]int {
	out := make(map[string]int, len(jobs)+len(assigned))
	for id, k := range assigned {
		out[id] = k
	}
	sorted := append([]Job(nil), jobs...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].ID() < sorted[b].ID() })
	var fresh, pinned []Job
	for _, j := range sorted {
		if _, ok := assigned[j.ID()]; ok {
			pinned = append(pinned, j)
		} else {
			fresh = append(fresh, j)
		}
	}
	if len(fresh) == 0 {
		return out // the usual case once the first task has dealt the grid
	}
	load, count := make([]float64, n), make([]int, n)
	for _, j := range pinned {
		if k := assigned[j.ID()]; k >= 0 && k < n {
			load[k] += remaining(j)
			count[k]++
		}
	}
	cost := make(map[string]float64, len(fresh))
	for _, j := range fresh {
		cost[j.ID()] = EstimateCost(j)
	}
	sort.SliceStable(fresh, func(a, b int) bool { return cost[fresh[a].ID()] > cost[fresh[b].ID()] })
	for _, j := range fresh {
		if _, dup := out[j.ID()]; dup {
			continue
		}
		best := 0
		for k := 1; k < n; k++ {
			if load[k] < load[best] || (load[k] == load[best] && count[k] < count[best]) {
				best = k
			}
		}
		out[j.ID()] = best
		load[best] += cost[j.ID()]
		count[best]++
	}
	return out
}

// ShardRecord is the content of DIR/shards.json.
type ShardRecord struct {
	Shards int          `json:"shards"` // N
	Jobs   []ShardedJob `json:"jobs"`   // in the order they were dealt
}

// ShardedJob is one job of a ShardRecord. The whole job is kept so that
// `gpnb reproduce --status` can report on the grid without its flags.
type ShardedJob struct {
	Shard int    `json:"shard"`
	ID    string `json:"id"`
	Job   Job    `json:"job"`
}

// JobsOf returns the jobs dealt to shard k, in the record's order.
func (rec *ShardRecord) JobsOf(k int) []Job {
	var out []Job
	for _, s := range rec.Jobs {
		if s.Shard == k {
			out = append(out, s.Job)
		}
	}
	return out
}

// ReadShards reads DIR/shards.json; a directory without one gives an error
// wrapping os.ErrNotExist.
func ReadShards(dir string) (*ShardRecord, error) {
	path := filepath.Join(dir, ShardsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec ShardRecord
	const redeal = "delete it to deal the grid afresh (finished jobs are skipped, started ones resume from their checkpoints in whichever shard they land)"
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("repro: %s is not a shard record (%v): %s", path, err, redeal)
	}
	if rec.Shards < 1 {
		return nil, fmt.Errorf("repro: %s deals into %d shards: %s", path, rec.Shards, redeal)
	}
	seen := map[string]bool{}
	for _, s := range rec.Jobs {
		switch {
		case s.Shard < 0 || s.Shard >= rec.Shards:
			return nil, fmt.Errorf("repro: %s gives job %s shard %d of %d: %s", path, s.ID, s.Shard, rec.Shards, redeal)
		case s.ID != s.Job.ID():
			return nil, fmt.Errorf("repro: %s lists job %s under the id %s: %s", path, s.Job.ID(), s.ID, redeal)
		case seen[s.ID]:
			return nil, fmt.Errorf("repro: %s lists job %s twice: %s", path, s.ID, redeal)
		}
		seen[s.ID] = true
	}
	return &rec, nil
}

// ShardJobs returns the jobs of jobs that shard s runs, in the order of
// jobs, from the deal in r.Dir's ShardsFile; jobs it does not list yet are
// dealt (Deal) onto the cost each shard has left. With record true the
// extended deal is written back (under a lock, so the N tasks of an array
// job starting at once agree); with record false (a dry run) nothing is
// written. A record made for another number of shards, or listing one of
// the jobs with other settings, is an error that says what to do.
func (r *Runner) ShardJobs(jobs []Job, s Shard, record bool) ([]Job, error) {
	if r.Dir == "" {
		return nil, fmt.Errorf("%w: no output directory: give --out DIR", ErrGrid)
	}
	if s.N < 1 || s.K < 0 || s.K >= s.N {
		return nil, fmt.Errorf("%w: shard %d/%d: want 0 ≤ K < N", ErrGrid, s.K, s.N)
	}
	norm, err := normalise(jobs)
	if err != nil {
		return nil, err
	}
	if record {
		if err := os.MkdirAll(r.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("repro: cannot create the output directory: %w", err)
		}
		unlock, err := lockWait(filepath.Join(r.Dir, shardsLock))
		if err != nil {
			return nil, fmt.Errorf("repro: cannot lock %s: %w", filepath.Join(r.Dir, shardsLock), err)
		}
		defer unlock()
	}
	rec, err := ReadShards(r.Dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		rec = &ShardRecord{Shards: s.N}
	case err != nil:
		return nil, err
	}
	path := filepath.Join(r.Dir, ShardsFile)
	if rec.Shards != s.N {
		return nil, fmt.Errorf("%w: %s deals this grid into %d shards, not %d: run --shard K/%d, or delete %s to deal it into %d (finished jobs are skipped, started ones resume from their checkpoints in whichever shard they land)",
			ErrGrid, path, rec.Shards, s.N, rec.Shards, path, s.N)
	}
	changed, err := r.updateDeal(rec, norm, path)
	if err != nil {
		return nil, err
	}
	assigned := map[string]int{}
	for _, sj := range rec.Jobs {
		assigned[sj.ID] = sj.Shard
	}
	deal := Deal(norm, s.N, assigned, r.remainingCost)
	for _, j := range norm {
		if _, ok := assigned[j.ID()]; !ok {
			rec.Jobs = append(rec.Jobs, ShardedJob{Shard: deal[j.ID()], ID: j.ID(), Job: j})
			changed = true
		}
	}
	if record && changed {
		if err := atomicfile.WriteJSON(path, rec, true); err != nil {
			return nil, err
		}
	}
	var out []Job
	for _, j := range norm {
		if deal[j.ID()] == s.K {
			out = append(out, j)
		}
	}
	return out, nil
}

// updateDeal compares each job of jobs that rec (read from path) deals
// with the job rec holds, as Run compares a job with its job.json: a job
// that only raises an iteration cap none of its steps reached replaces the
// one in rec (changed then says rec needs writing); another difference is
// ErrConfigMismatch.
func (r *Runner) updateDeal(rec *ShardRecord, jobs []Job, path string) (changed bool, err error) {
	dealt := map[string]int{}
	for i, sj := range rec.Jobs {
		dealt[sj.ID] = i
	}
	for _, j := range jobs {
		i, ok := dealt[j.ID()]
		if !ok || reflect.DeepEqual(rec.Jobs[i].Job, j) {
			continue
		}
		old := rec.Jobs[i].Job
		dir := filepath.Join(r.Dir, results.JobsDir, j.ID())
		finished, err := finishedResult(j, dir)
		if err != nil {
			return false, err
		}
		raised, err := r.raisedCap(old, j, dir, finished)
		if err != nil {
			return false, err
		}
		if raised == "" {
			return false, fmt.Errorf("%w: %s deals %s with %s, but this run asks for %s: rerun with the original arguments, use a different --out, or delete %s to deal the grid afresh",
				ErrConfigMismatch, path, j.ID(), jobDiff(old, j, true), jobDiff(old, j, false), path)
		}
		rec.Jobs[i].Job = j
		changed = true
	}
	return changed, nil
}

// remainingCost is the estimated cost a job has left in r.Dir: none when
// it is finished, the share of its steps still to run when its checkpoint
// can be read, all of it otherwise.
func (r *Runner) remainingCost(j Job) float64 {
	c := EstimateCost(j)
	if res, _, err := r.checkJob(j); err == nil && res != nil {
		return 0
	}
	if j.Steps > 0 {
		ckpt := filepath.Join(r.Dir, results.JobsDir, j.ID(), CheckpointFile)
		if step, _, err := checkpointSteps(r.Trainer, ckpt); err == nil && step >= 0 && step <= j.Steps {
			return c * float64(j.Steps-step) / float64(j.Steps)
		}
	}
	return c
}

// SchedulerTask names the batch-scheduler task this process runs in, for
// the lock owners that `gpnb reproduce --status` shows: "slurm job 123_4"
// (an array task), "slurm job 123", "kubernetes index 4" (an Indexed Job),
// or "" outside a scheduler.
func SchedulerTask() string {
	env := os.Getenv
	switch {
	case env("SLURM_ARRAY_JOB_ID") != "" && env("SLURM_ARRAY_TASK_ID") != "":
		return "slurm job " + env("SLURM_ARRAY_JOB_ID") + "_" + env("SLURM_ARRAY_TASK_ID")
	case env("SLURM_JOB_ID") != "":
		return "slurm job " + env("SLURM_JOB_ID")
	case env("JOB_COMPLETION_INDEX") != "":
		return "kubernetes index " + env("JOB_COMPLETION_INDEX")
	}
	return ""
}
