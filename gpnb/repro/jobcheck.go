package repro

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/results"
)

// checkJob returns j's result in r.Dir when the job is finished (nil when it
// is not), and an error when the stored job.json differs from j. A stored
// job that differs from j only in a smaller iteration cap that none of its
// steps reached is the same job (see raisedCap); raised then says so, for
// the log.
func (r *Runner) checkJob(j Job) (finished *gpnb.Result, raised string, err error) {
	dir := filepath.Join(r.Dir, results.JobsDir, j.ID())
	b, err := os.ReadFile(filepath.Join(dir, JobFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	var stored Job
	if err := json.Unmarshal(b, &stored); err != nil {
		return nil, "", fmt.Errorf("repro: %s is not a valid job file (%v): delete the directory %s to rerun that job", filepath.Join(dir, JobFile), err, dir)
	}
	if finished, err = finishedResult(j, dir); err != nil {
		return nil, "", err
	}
	if stored = stored.Normalize(); !stored.Equal(j) {
		raised, err = r.raisedCap(stored, j, dir, finished)
		if err != nil {
			return nil, "", err
		}
		if raised == "" {
			return nil, "", fmt.Errorf("%w: %s was written for %s, but this run asks for %s: rerun with the original arguments, or use a different --out",
				ErrConfigMismatch, filepath.Join(dir, JobFile), jobDiff(stored, j, true), jobDiff(stored, j, false))
		}
	}
	return finished, raised, nil
}

// finishedResult returns the result in job directory dir when it is a
// complete result of j, and nil when it is missing or torn (the job runs, or
// resumes, again).
func finishedResult(j Job, dir string) (*gpnb.Result, error) {
	res, err := results.ReadResult(filepath.Join(dir, results.ResultFile))
	var syntax *json.SyntaxError
	switch {
	case errors.Is(err, os.ErrNotExist), errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return nil, nil // not written, or torn: the job runs (again)
	case err != nil:
		// Another version's result, say: running the job again would
		// overwrite it.
		return nil, fmt.Errorf("repro: %w", err)
	case checkResult(j, res) != nil:
		return nil, nil
	}
	return res, nil
}

// raisedCap returns a note when j differs from the stored job only in a
// larger iteration cap (Settings.MaxIterations, resolved: the solver's
// default when unset) and none of the steps the job has done, finished
// (finished, its result in dir, or nil) or checkpointed, stopped
// unconverged: a cap that no solve reached changed nothing, so those steps
// are what a run under j's cap gives, and the job continues under it (a
// pending solve included, see gpnb.Resume). It returns "" when the jobs
// differ otherwise, and an error wrapping ErrConfigMismatch when a step did
// reach the stored cap.
func (r *Runner) raisedCap(stored, j Job, dir string, finished *gpnb.Result) (string, error) {
	if d := stored.differences(j); len(d) != 1 || d[0] != "config.Settings.MaxIterations" {
		return "", nil
	}
	was, now := iterationCap(stored), iterationCap(j)
	if was == 0 || now <= was {
		return "", nil
	}
	var steps, unconverged int
	var err error
	if finished != nil {
		steps, unconverged = len(finished.History), finished.History.UnconvergedSteps()
	} else if steps, unconverged, err = checkpointSteps(r.Trainer, filepath.Join(dir, CheckpointFile)); errors.Is(err, os.ErrNotExist) {
		steps, unconverged = 0, 0 // nothing run yet
	} else if err != nil {
		return "", fmt.Errorf("repro: %s: raising the iteration cap from %d to %d needs the steps done so far, but its checkpoint cannot be read: %w", j.ID(), was, now, err)
	}
	if unconverged > 0 {
		return "", fmt.Errorf("%w: %s ran under an iteration cap of %d, and %d of its %d steps stopped unconverged (at that cap, or stalled): a larger cap (%d) would change them, so it is a different job: rerun with the original cap, or use a different --out to run it afresh",
			ErrConfigMismatch, j.ID(), was, unconverged, steps, now)
	}
	if finished != nil {
		// Nothing of it runs again, and job.json keeps the cap it ran under.
		return fmt.Sprintf("finished under an iteration cap of %d, which none of its %d steps reached: its result stands for the cap of %d", was, steps, now), nil
	}
	return fmt.Sprintf("iteration cap raised from %d to %d: none of the %d steps done so far reached it, so they stand", was, now, steps), nil
}

// iterationCap returns the iteration cap j's solves run under, or 0 when it
// depends on the data (Settings.MaxEpochs) or the settings are invalid.
func iterationCap(j Job) int {
	s, err := j.Config.Settings.Resolve(j.Config.Solver)
	if err != nil {
		return 0
	}
	return s.MaxIterations
}

// jobDiff lists the fields in which a and b differ, with a's values (first)
// or b's.
func jobDiff(a, b Job, first bool) string {
	ma, mb := flatten(a), flatten(b)
	var keys []string
	for k := range ma {
		if ma[k] != mb[k] {
			keys = append(keys, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		v := mb[k]
		if first {
			v = ma[k]
		}
		if v == "" {
			v = "unset"
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// flatten returns j's JSON form as dotted paths ("config.solver.name") and
// values.
func flatten(j Job) map[string]string {
	b, _ := json.Marshal(j)
	var m map[string]any
	json.Unmarshal(b, &m)
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if sub, ok := v.(map[string]any); ok {
			for k, v2 := range sub {
				walk(strings.TrimPrefix(prefix+"."+k, "."), v2)
			}
			return
		}
		out[prefix] = fmt.Sprint(v)
	}
	walk("", m)
	return out
}

// checkResult reports whether res is a complete result of job j.
func checkResult(j Job, res *gpnb.Result) error {
	switch {
	case res == nil:
		return errors.New("trainer returned no result")
	case res.StepsDone != j.Steps:
		return fmt.Errorf("result has %d of %d steps", res.StepsDone, j.Steps)
	case res.Dataset != j.Dataset || res.Split != j.Split || res.Solver != j.Method().Solver || res.WarmStart != j.Config.WarmStart:
		return fmt.Errorf("result is for %s split %d solver %s warm=%v, not job %s", res.Dataset, res.Split, res.Solver, res.WarmStart, j.ID())
	}
	return nil
}

// Unfinished returns the jobs under dir/jobs that have a job.json but no
// complete result.json, in directory-name order: runs that failed (a job
// that dies leaves none) or have not finished. A job.json that does not
// parse is an error naming it.
func Unfinished(dir string) ([]Job, error) {
	ents, err := os.ReadDir(filepath.Join(dir, results.JobsDir))
	if err != nil {
		return nil, err
	}
	var out []Job
	for _, e := range ents {
		jd := filepath.Join(dir, results.JobsDir, e.Name())
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
		res, err := finishedResult(j.Normalize(), jd)
		if err != nil {
			return nil, err
		}
		if res == nil {
			out = append(out, j.Normalize())
		}
	}
	return out, nil
}
