package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpnb/gpnb/gpnb/repro"
)

// reproduceStatus prints, for gpnb reproduce --status, every shard of the
// sharded run in dir (its shards.json): a line per shard with its share of
// the grid's estimated cost and its jobs' states, then one line per job.
func reproduceStatus(dir string, stdout io.Writer) error {
	rec, err := repro.ReadShards(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("--status: %s not found: --status lists the shards of a `gpnb reproduce --shard K/N --out %s` run; for a grid run without --shard, use --dry-run with the grid's flags",
			filepath.Join(dir, repro.ShardsFile), dir)
	}
	if err != nil {
		return err
	}
	var total float64
	for _, sj := range rec.Jobs {
		total += repro.EstimateCost(sj.Job)
	}
	r := &repro.Runner{Dir: dir}
	all, running := map[repro.JobState]int{}, 0
	for k := 0; k < rec.Shards; k++ {
		jobs := rec.JobsOf(k)
		plan, err := r.Plan(jobs)
		if err != nil {
			return fmt.Errorf("shard %d/%d: %w", k, rec.Shards, err)
		}
		var cost float64
		count, run := map[repro.JobState]int{}, 0
		for _, p := range plan {
			cost += repro.EstimateCost(p.Job)
			count[p.State]++
			all[p.State]++
			if p.RunningBy != "" {
				run++
			}
		}
		running += run
		share := 0.0
		if total > 0 {
			share = 100 * cost / total
		}
		fmt.Fprintf(stdout, "shard %d/%d: %s, %.0f%% of the estimated cost: %s\n", k, rec.Shards, nJobs(len(plan)), share, planCounts(count, run))
		for _, p := range plan {
			fmt.Fprintf(stdout, "  %s\n", p)
		}
	}
	fmt.Fprintf(stdout, "%s in %d shards in %s: %s\n", nJobs(len(rec.Jobs)), rec.Shards, dir, planCounts(all, running))
	return nil
}

// nJobs is "1 job" or "N jobs".
func nJobs(n int) string {
	if n == 1 {
		return "1 job"
	}
	return fmt.Sprintf("%d jobs", n)
}

// planCounts is "3 done, 1 started, 2 not started, 1 running now".
func planCounts(count map[repro.JobState]int, running int) string {
	parts := []string{
		fmt.Sprintf("%d done", count[repro.Done]),
		fmt.Sprintf("%d started", count[repro.Started]),
		fmt.Sprintf("%d not started", count[repro.NotStarted]),
	}
	if running > 0 {
		parts = append(parts, fmt.Sprintf("%d running now", running))
	}
	return strings.Join(parts, ", ")
}
