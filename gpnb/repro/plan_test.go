package repro

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/results"
)

// TestProvenanceOutsideSteps: the provenance of a job names the steps no
// runs.json segment covers, before, between and after its segments, but
// not after the last segment of a job another process is running now (its
// report of the step it just checkpointed may still be on its way).
func TestProvenanceOutsideSteps(t *testing.T) {
	seg := func(from, to int, rev string, load float64) results.Segment {
		return results.Segment{FromStep: from, ToStep: to, Environment: map[string]string{"vcs.revision": rev}, LoadMean: load}
	}
	for _, c := range []struct {
		name string
		p    PlannedJob
		want string
	}{
		{"none", PlannedJob{Step: 5}, ""},
		{"contiguous", PlannedJob{Step: 5, Segments: []results.Segment{seg(0, 3, "aaa", 1.5), seg(3, 5, "bbb", 3)}},
			"; steps 0-3 by aaa (load 1.5), 3-5 by bbb (load 3.0)"},
		{"first steps by gpnb train", PlannedJob{Step: 100, Segments: []results.Segment{seg(76, 100, "8415159abc", 2.1)}},
			"; steps 0-76 outside the runner's records, 76-100 by 8415159 (load 2.1)"},
		{"a step killed before its report", PlannedJob{Step: 20, Segments: []results.Segment{seg(0, 3, "aaa", 1), seg(4, 20, "aaa", 1)}},
			"; steps 0-3 by aaa (load 1.0), 3-4 outside the runner's records, 4-20 by aaa (load 1.0)"},
		{"checkpoint ahead of the report", PlannedJob{Step: 4, Segments: []results.Segment{seg(0, 3, "", 2)}},
			"; steps 0-3 by an unrecorded build (load 2.0), 3-4 outside the runner's records"},
		{"running now", PlannedJob{Step: 4, RunningBy: "another gpnb reproduce", Segments: []results.Segment{seg(0, 3, "aaa", 2)}},
			"; steps 0-3 by aaa (load 2.0)"},
	} {
		if got := c.p.provenance(); got != c.want {
			t.Errorf("%s: provenance %q, want %q", c.name, got, c.want)
		}
	}
}

// TestUnfinished lists the jobs of a directory with a job.json and no
// complete result.json (a torn one counts as none).
func TestUnfinished(t *testing.T) {
	dir := t.TempDir()
	done, died, torn := testJob("pol", 0, 500, "sgd", false), testJob("pol", 0, 500, "sgd", true), testJob("pol", 1, 500, "ap", false)
	for _, j := range []Job{done, died, torn} {
		jd := filepath.Join(dir, results.JobsDir, j.ID())
		b, _ := json.Marshal(j)
		if err := os.MkdirAll(jd, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(jd, JobFile), b, 0o644)
		switch j.ID() {
		case done.ID():
			r, _ := json.Marshal(gpnb.Result{Dataset: "pol", Split: 0, Solver: "sgd", StepsDone: j.Steps, Config: &j.Config})
			os.WriteFile(filepath.Join(jd, results.ResultFile), r, 0o644)
		case torn.ID():
			os.WriteFile(filepath.Join(jd, results.ResultFile), []byte(`{"dataset": "pol", "steps_done": 1`), 0o644)
		}
	}
	got, err := Unfinished(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range got {
		ids = append(ids, j.ID())
	}
	if want := []string{died.ID(), torn.ID()}; !slices.Equal(ids, want) { // directory order
		t.Errorf("unfinished %v, want %v", ids, want)
	}
}

// TestPlanLineCounts: a finished job's plan line counts the steps that
// stopped unconverged, singular and plural, the stalled ones apart from
// those at the iteration cap, and says nothing of a cap when none was met.
func TestPlanLineCounts(t *testing.T) {
	j := testJob("pol", 0, 0, "cg", false)
	line := func(unconverged, stalled int) string {
		h := make(gpnb.History, 4)
		for i := range h {
			h[i] = gpnb.StepRecord{Step: i + 1, SolverIterations: 75, SolverConverged: i >= unconverged, SolverStalled: i < stalled}
		}
		res := gpnb.Result{StepsDone: 4, History: h, Test: &gpnb.Eval{TestLLH: 1.25}}
		return PlannedJob{Job: j, State: Done, Result: &res}.String()
	}
	for _, c := range []struct {
		unconverged, stalled int
		want                 string
	}{
		{2, 0, "300 solver iterations (2 steps stopped at the iteration cap, unconverged), test LLH 1.250"},
		{1, 0, "300 solver iterations (1 step stopped at the iteration cap, unconverged)"},
		{3, 2, "(3 steps unconverged: 1 at the iteration cap, 2 stalled)"},
		{0, 0, "300 solver iterations, test LLH 1.250"},
	} {
		if s := line(c.unconverged, c.stalled); !strings.Contains(s, c.want) {
			t.Errorf("%d unconverged, %d stalled: plan line %q, want %q in it", c.unconverged, c.stalled, s, c.want)
		}
	}
	if s := (PlannedJob{Job: j, State: Done, Result: &gpnb.Result{StepsDone: 4}}).String(); !strings.Contains(s, "not evaluated") {
		t.Errorf("unevaluated result: plan line %q", s)
	}
}

// TestResultOfAnotherFormat: a result.json the runner cannot read as a
// result of this gpnb (a field it does not write) stops Plan and Run with
// an error naming it, instead of running the job again over it.
func TestResultOfAnotherFormat(t *testing.T) {
	dir := t.TempDir()
	j := testJob("pol", 0, 500, "sgd", false)
	jd := filepath.Join(dir, results.JobsDir, j.ID())
	if err := os.MkdirAll(jd, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(j)
	os.WriteFile(filepath.Join(jd, JobFile), b, 0o644)
	r, _ := json.Marshal(gpnb.Result{Dataset: "pol", Solver: "sgd", StepsDone: j.Steps, Config: &j.Config})
	os.WriteFile(filepath.Join(jd, results.ResultFile), append(r[:len(r)-1], []byte(`,"test_llh":1}`)...), 0o644)
	ft := &fakeTrainer{}
	if _, err := (&Runner{Dir: dir, Trainer: ft}).Plan([]Job{j}); !errors.Is(err, results.ErrBadRecord) || !strings.Contains(err.Error(), "test_llh") {
		t.Errorf("Plan: %v", err)
	}
	if _, err := (&Runner{Dir: dir, Trainer: ft}).Run(context.Background(), []Job{j}); !errors.Is(err, results.ErrBadRecord) || len(ft.calls) != 0 {
		t.Errorf("Run: %v, jobs run %v", err, ft.calls)
	}
}
