package repro

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/gpnb/gpnb/gpnb"
)

// Record is one finished job: its configuration (job.json), its result
// (result.json) and, when read from a results directory, the segments that
// ran it (runs.json; none for results summarised without their directory).
type Record struct {
	Job      Job
	Result   gpnb.Result
	Segments []Segment
}

// LoadResults reads every finished job under dir/jobs (a directory with both
// job.json and a complete result.json), in directory-name order. Unfinished
// jobs are skipped. A directory without any finished job is ErrNoResults; a
// file that does not parse is an error naming it.
func LoadResults(dir string) ([]Record, error) {
	jobsDir := filepath.Join(dir, JobsDir)
	ents, err := os.ReadDir(jobsDir)
	if errors.Is(err, os.ErrNotExist) {
		if _, err2 := os.Stat(dir); err2 != nil {
			return nil, fmt.Errorf("%w: %s does not exist: give the --out directory of a gpnb reproduce run", ErrNoResults, dir)
		}
		return nil, fmt.Errorf("%w: %s has no jobs/ directory: give the --out directory of a gpnb reproduce run", ErrNoResults, dir)
	}
	if err != nil {
		return nil, err
	}
	var recs []Record
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		jd := filepath.Join(jobsDir, e.Name())
		rb, err := os.ReadFile(filepath.Join(jd, ResultFile))
		if errors.Is(err, os.ErrNotExist) {
			continue // not finished
		}
		if err != nil {
			return nil, err
		}
		jb, err := os.ReadFile(filepath.Join(jd, JobFile))
		if err != nil {
			return nil, fmt.Errorf("repro: %s has a result but no readable %s (%v): rerun the job or delete the directory", jd, JobFile, err)
		}
		var rec Record
		if err := json.Unmarshal(jb, &rec.Job); err != nil {
			return nil, fmt.Errorf("repro: %s: %v: delete the directory to rerun that job", filepath.Join(jd, JobFile), err)
		}
		if err := json.Unmarshal(rb, &rec.Result); err != nil {
			return nil, fmt.Errorf("repro: %s: %v: delete the file to rerun that job", filepath.Join(jd, ResultFile), err)
		}
		if err := checkResult(rec.Job, &rec.Result); err != nil {
			return nil, fmt.Errorf("repro: %s: %v: delete the file to rerun that job", filepath.Join(jd, ResultFile), err)
		}
		if rec.Segments, err = ReadSegments(jd); err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no finished job in %s: run gpnb reproduce --out %s first (or wait for it to finish a job)", ErrNoResults, jobsDir, dir)
	}
	sort.SliceStable(recs, func(a, b int) bool { return recs[a].Job.ID() < recs[b].Job.ID() })
	return recs, nil
}

// Unfinished returns the jobs under dir/jobs that have a job.json but no
// complete result.json, in directory-name order: runs that failed (a job
// that dies leaves none) or have not finished. A job.json that does not
// parse is an error naming it.
func Unfinished(dir string) ([]Job, error) {
	ents, err := os.ReadDir(filepath.Join(dir, JobsDir))
	if err != nil {
		return nil, err
	}
	var out []Job
	for _, e := range ents {
		jd := filepath.Join(dir, JobsDir, e.Name())
		jb, err := os.ReadFile(filepath.Join(jd, JobFile))
		if !e.IsDir() || errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var j Job
		if err := json.Unmarshal(jb, &j); err != nil {
			return nil, fmt.Errorf("repro: %s: %v: delete the directory to rerun that job", filepath.Join(jd, JobFile), err)
		}
		if finishedResult(j.Normalize(), jd) == nil {
			out = append(out, j.Normalize())
		}
	}
	return out, nil
}

// Open loads the finished jobs of a results directory and summarises them:
// LoadResults followed by Summarise, the one-liner for a notebook.
func Open(dir string) (*Report, error) {
	recs, err := LoadResults(dir)
	if err != nil {
		return nil, err
	}
	return Summarise(recs)
}
