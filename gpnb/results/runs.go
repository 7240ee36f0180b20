package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpnb/gpnb/gpnb"
)

// Run is one run of a labelled set of runs (a results directory, a folder
// of gpnb train results, a result file), as the run tables show it: a
// finished record or, for a job cut short, its state so far.
type Run struct {
	Set  string // the set's label
	Name string // the job's ID, or the folder or file it was read from
	Path string // the file it was read from
	Record
	// Partial marks a job that did not finish: Result is its state so far
	// (its checkpoint, or partial.json), without test metrics.
	Partial bool
	// Planned is the number of steps the job was to run (its job.json), 0
	// when not known.
	Planned int
}

// RunID is the run's RunID, which matches it with runs of other sets: the
// same dataset, split, seed and method.
func (r Run) RunID() string { return r.ID() }

// PartialFile is a cut job's state so far in its folder: the gpnb.Result
// State.Result gives, kept where its checkpoint is not.
const PartialFile = "partial.json"

// ReadRuns reads the runs of path under the label set: the jobs of a
// results directory (DIR/jobs/<id>/: result.json, or for a job cut short
// its checkpoint or PartialFile), the gpnb train results in the folders of
// a directory (DIR/<name>/result.json), or one result file.
func ReadRuns(set, path string) ([]Run, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s does not exist: give a results directory of gpnb reproduce, a folder of gpnb train results or a result file", ErrNoResults, path)
	}
	if !info.IsDir() {
		res, err := ReadResult(path)
		if err != nil {
			return nil, err
		}
		return []Run{{Set: set, Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), Path: path, Record: Record{Result: *res}}}, nil
	}
	if _, err := os.Stat(filepath.Join(path, JobsDir)); err == nil {
		return readJobRuns(set, path)
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var runs []Run
	for _, e := range ents {
		p := filepath.Join(path, e.Name(), ResultFile)
		if !e.IsDir() || !exists(p) {
			continue
		}
		res, err := ReadResult(p)
		if err != nil {
			return nil, err
		}
		runs = append(runs, Run{Set: set, Name: e.Name(), Path: p, Record: Record{Result: *res}})
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%w: %s holds no jobs/ directory and no <name>/%s", ErrNoResults, path, ResultFile)
	}
	return runs, nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// readJobRuns reads the jobs of a results directory: the finished ones
// (Load) and those cut short with a checkpoint or a PartialFile.
func readJobRuns(set, dir string) ([]Run, error) {
	recs, err := Load(dir)
	if err != nil && !errors.Is(err, ErrNoResults) {
		return nil, err
	}
	var runs []Run
	done := map[string]bool{}
	for _, rc := range recs {
		runs = append(runs, Run{Set: set, Name: rc.ID(), Path: filepath.Join(dir, JobsDir, rc.ID(), ResultFile), Record: rc, Planned: rc.Result.StepsDone})
		done[rc.ID()] = true
	}
	ents, err := os.ReadDir(filepath.Join(dir, JobsDir))
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !e.IsDir() || done[e.Name()] {
			continue
		}
		r, ok, err := partialRun(set, filepath.Join(dir, JobsDir, e.Name()))
		if err != nil {
			return nil, err
		}
		if ok {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%w: no finished job in %s, nor one cut short with a checkpoint: run gpnb reproduce --out %s first", ErrNoResults, filepath.Join(dir, JobsDir), dir)
	}
	return runs, nil
}

// partialRun reads a cut job's state from its checkpoint or PartialFile;
// ok is false when it has neither.
func partialRun(set, jd string) (Run, bool, error) {
	r := Run{Set: set, Name: filepath.Base(jd), Partial: true}
	switch ck, pf := filepath.Join(jd, "checkpoint"), filepath.Join(jd, PartialFile); {
	case exists(ck):
		st, err := gpnb.ReadCheckpoint(ck)
		if err != nil {
			return r, false, err
		}
		r.Result, r.Path = st.Result(), ck
	case exists(pf):
		res, err := ReadResult(pf)
		if err != nil {
			return r, false, err
		}
		r.Result, r.Path = *res, pf
	default:
		return r, false, nil
	}
	var job struct{ Steps int }
	if b, err := os.ReadFile(filepath.Join(jd, "job.json")); err == nil {
		_ = json.Unmarshal(b, &job) // the planned steps, when job.json says
	}
	r.Planned = job.Steps
	var err error
	r.Segments, err = ReadSegments(jd)
	return r, true, err
}

// Sets reads several labelled sets of runs (ReadRuns), in order.
func Sets(labels, paths []string) ([]Run, error) {
	var all []Run
	for i, p := range paths {
		runs, err := ReadRuns(labels[i], p)
		if err != nil {
			return nil, err
		}
		all = append(all, runs...)
	}
	return all, nil
}

// Evals are evaluations of runs made apart from them (results/gpu's
// eval_exact.py: exact test metrics of runs trained with --eval=false), by
// the path of the result they evaluate: JSON lines with "file",
// "exact_test_rmse" and "exact_test_llh".
type Evals map[string]gpnb.Eval

// ReadEvals reads the JSON lines of path into Evals.
func ReadEvals(path string) (Evals, error) {
	rows, err := ReadJSONLines(path)
	if err != nil {
		return nil, err
	}
	out := Evals{}
	for _, r := range rows {
		f, _ := r["file"].(string)
		rmse, ok1 := r["exact_test_rmse"].(float64)
		llh, ok2 := r["exact_test_llh"].(float64)
		if f == "" || !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: %s: a line without file, exact_test_rmse and exact_test_llh", ErrBadRecord, path)
		}
		m, _ := r["method"].(string)
		out[filepath.Clean(f)] = gpnb.Eval{TestRMSE: rmse, TestLLH: llh, Method: m}
	}
	return out, nil
}

// of returns the evaluation of run r: the one whose file is r's path, or
// ends with it, or with which it ends.
func (e Evals) of(r Run) (gpnb.Eval, bool) {
	p := filepath.Clean(r.Path)
	if ev, ok := e[p]; ok {
		return ev, true
	}
	for f, ev := range e {
		if strings.HasSuffix(p, string(filepath.Separator)+f) || strings.HasSuffix(f, string(filepath.Separator)+p) {
			return ev, true
		}
	}
	return gpnb.Eval{}, false
}

// sortRuns orders runs by dataset, the tables' order of methods, mode and
// the sets' order.
func sortRuns(runs []Run, sets []string) {
	rank := map[string]int{}
	for i, s := range sets {
		rank[s] = i
	}
	sort.SliceStable(runs, func(a, b int) bool {
		ra, rb := runs[a], runs[b]
		ma, mb := ra.Method(), rb.Method()
		switch {
		case ra.Result.Dataset != rb.Result.Dataset:
			return ra.Result.Dataset < rb.Result.Dataset
		case ma.Key() != mb.Key():
			return ma.less(mb)
		case ma.Warm != mb.Warm:
			return !ma.Warm
		}
		return rank[ra.Set] < rank[rb.Set]
	})
}
