package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
)

// The layout of a results directory, as gpnb reproduce writes it: one
// folder a job, DIR/jobs/<id>/, named by RunID, holding its result once
// the job is finished and its segments (SegmentsFile).
const (
	JobsDir    = "jobs"
	ResultFile = "result.json"
)

// Errors returned by this package wrap one of these, so callers can test
// them with errors.Is.
var (
	// ErrNoResults: nothing to summarise (a directory without a finished
	// job, or no result given).
	ErrNoResults = errors.New("results: no results")
	// ErrBadRecord: a result that cannot be summarised (no dataset name,
	// no configuration, a repeat) or a file that is not a result.
	ErrBadRecord = errors.New("results: bad record")
)

// Record is one finished run: its result and, read from a results
// directory, the segments that ran it (runs.json; none for results
// summarised without their directory).
type Record struct {
	Result   gpnb.Result
	Segments []Segment
}

// Method is the record's method (MethodOf its configuration).
func (r Record) Method() Method { return MethodOf(*r.Result.Config) }

// ID is the record's RunID, its job's name.
func (r Record) ID() string {
	return RunID(r.Result.Dataset, r.Result.Split, r.Result.Config.Seed, r.Method())
}

// Subset reports whether the run used a random subset of its dataset's
// training split: fewer training points than the split holds (beyond the
// one-point slack of the UCI splits' sizes) or, for synthetic-N-D-SEED,
// than N. It is false for datasets it does not know.
func (r Record) Subset() bool {
	n := r.Result.NTrain
	if u, ok := data.LookupUCI(r.Result.Dataset); ok && u.Name == r.Result.Dataset {
		return n > 0 && n < u.TrainSize()-1
	}
	if sn, _, _, ok, err := data.ParseSynthetic(r.Result.Dataset); ok && err == nil {
		return n > 0 && n < sn
	}
	return false
}

// check reports what makes r unusable in a summary.
func (r Record) check() error {
	switch {
	case strings.TrimSpace(r.Result.Dataset) == "":
		return fmt.Errorf("%w: no dataset name: set Result.Dataset", ErrBadRecord)
	case r.Result.Config == nil:
		return fmt.Errorf("%w: no configuration: a gpnb.Result from Optimiser.Result or State.Result has one", ErrBadRecord)
	}
	return nil
}

// FromResults turns results of training runs (gpnb.Result values, as `gpnb
// train --json` writes them or a notebook collects them) into Records, so
// that Summarise and the tables work on them as on a results directory.
// It is an error, naming both, when two results are the same run (RunID:
// Summarise averages over splits and seeds, so a repeat would count
// twice), and when a result has no dataset name or no configuration.
func FromResults(results []gpnb.Result) ([]Record, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("%w: no results given", ErrNoResults)
	}
	recs := make([]Record, 0, len(results))
	first := map[string]int{}
	for i, r := range results {
		rec := Record{Result: r}
		if err := rec.check(); err != nil {
			return nil, fmt.Errorf("result %d (dataset %q, split %d): %w", i, r.Dataset, r.Split, err)
		}
		id := rec.ID()
		if k, ok := first[id]; ok {
			return nil, fmt.Errorf("%w: results %d and %d are both run %s: the tables average over splits and seeds, so each dataset, split, method, mode and seed may appear once; drop the repeat or summarise the runs apart",
				ErrBadRecord, k, i, id)
		}
		first[id] = i
		recs = append(recs, rec)
	}
	return recs, nil
}

// Load reads every finished job of a results directory (DIR/jobs/<id>/
// with a result.json), in ID order, with its segments. Jobs without a
// result are skipped (repro.Unfinished lists them). A directory without a
// finished job is ErrNoResults; a result.json that does not parse, has a
// field this version of gpnb does not write, or is not the result of the
// job its folder names is an error naming the file.
func Load(dir string) ([]Record, error) {
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
		res, err := ReadResult(filepath.Join(jd, ResultFile))
		if errors.Is(err, os.ErrNotExist) {
			continue // not finished
		}
		if err != nil {
			return nil, err
		}
		rec := Record{Result: *res}
		if id := rec.ID(); id != e.Name() {
			return nil, fmt.Errorf("%w: %s is the result of run %s, not of job %s: move it to the folder of its job, or delete it to rerun the job", ErrBadRecord, filepath.Join(jd, ResultFile), id, e.Name())
		}
		if rec.Segments, err = ReadSegments(jd); err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no finished job in %s: run gpnb reproduce --out %s first (or wait for it to finish a job)", ErrNoResults, jobsDir, dir)
	}
	sort.SliceStable(recs, func(a, b int) bool { return recs[a].ID() < recs[b].ID() })
	return recs, nil
}

// ReadResult reads a gpnb.Result from a JSON file (result.json, or what
// `gpnb train --json` writes). A field this version of gpnb does not write
// is an error (a file of another version would otherwise read as a result
// without the fields it names), and so is a result without a dataset name
// or a configuration.
func ReadResult(path string) (*gpnb.Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var res gpnb.Result
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("%w: %s is not a result of this gpnb (%w): rerun its job, or delete it", ErrBadRecord, path, err)
	}
	if err := (Record{Result: res}).check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &res, nil
}

// Open loads the finished jobs of a results directory and summarises them:
// Load followed by Summarise, the one line a notebook needs.
func Open(dir string) (*Summary, error) {
	recs, err := Load(dir)
	if err != nil {
		return nil, err
	}
	return Summarise(recs)
}
