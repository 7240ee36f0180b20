package repro

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
)

func TestRecordsOfBuildsJobs(t *testing.T) {
	res := []gpnb.Result{
		{Dataset: "pol", Split: 2, NTrain: 2000, Solver: "CG", WarmStart: true, StepsDone: 15, Kernel: "matern32", Probes: 16, Seed: 7},
		{Dataset: "pol", Split: 2, NTrain: 13500, Solver: "ap", StepsDone: 100},
		{Dataset: "elevators", Split: 0, NTrain: 14939, Solver: "sgd", StepsDone: 100}, // one short of 14940: still the full split
		{Dataset: "synthetic-200-3-1", Split: 1, NTrain: 100, Solver: "cholesky", WarmStart: true, StepsDone: 5, Probes: 16},
		{Dataset: "synthetic-200-3-1", Split: 1, NTrain: 200, Solver: "exact", StepsDone: 5, Seed: 3},
		{Dataset: "my-data.csv", Split: 0, NTrain: 10, Solver: "cg", StepsDone: 3},
		{Dataset: "bike", Split: 0, Solver: "cg", StepsDone: 3}, // NTrain unknown
	}
	// res[3] and res[4] are both the exact job of synthetic-200-3-1 split 1
	// (an exact run has no warm start), so res[4] is converted on its own.
	recs, err := RecordsOf(append(append([]gpnb.Result{}, res[:4]...), res[5:]...))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id     string
		subset int
		steps  int
		warm   bool
	}{
		{"pol-s2-cg-warm-seed7", 2000, 15, true},
		{"pol-s2-ap-cold", 0, 100, false},
		{"elevators-s0-sgd-cold", 0, 100, false},
		{"synthetic-200-3-1-s1-cholesky-exact", 100, 5, false},
		{"my-data.csv-s0-cg-cold", 0, 3, false},
		{"bike-s0-cg-cold", 0, 3, false},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for i, w := range want {
		j := recs[i].Job
		if j.ID() != w.id || j.Subset != w.subset || j.Steps != w.steps || j.Config.WarmStart != w.warm {
			t.Errorf("record %d: job %s subset %d steps %d warm %v; want %s subset %d steps %d warm %v",
				i, j.ID(), j.Subset, j.Steps, j.Config.WarmStart, w.id, w.subset, w.steps, w.warm)
		}
	}
	if s := recs[0].Job.Config; s.Kernel != gpnb.Matern32 || s.Probes != 16 || s.Seed != 7 {
		t.Errorf("settings %+v, want kernel, probes and seed of the result", s)
	}
	if recs[0].Result.Solver != "CG" || recs[0].Result.NTrain != 2000 {
		t.Errorf("result not copied unchanged: %+v", recs[0].Result)
	}
	// "exact" is the Cholesky reference.
	recs, err = RecordsOf(res[4:5])
	if err != nil || recs[0].Job.Solver() != SolverCholesky || recs[0].Job.Mode() != "exact" || recs[0].Job.Subset != 0 {
		t.Errorf("exact result: %+v, %v", recs, err)
	}
}

func TestRecordsOfErrors(t *testing.T) {
	if _, err := RecordsOf(nil); !errors.Is(err, ErrNoResults) {
		t.Errorf("no results: err = %v, want ErrNoResults", err)
	}
	a := gpnb.Result{Dataset: "pol", Split: 3, Solver: "cg", WarmStart: true, StepsDone: 4, TotalSeconds: 1}
	b := a
	b.TotalSeconds = 2 // a second run of the same job
	_, err := RecordsOf([]gpnb.Result{a, {Dataset: "pol", Split: 3, Solver: "cg", StepsDone: 4}, b})
	if err == nil || !strings.Contains(err.Error(), "results 0 and 2") || !strings.Contains(err.Error(), "pol-s3-cg-warm") {
		t.Errorf("duplicate job: err = %v, want one naming results 0 and 2 and job pol-s3-cg-warm", err)
	}
	// Cholesky has no warm start: a "warm" exact run repeats the cold one.
	c := gpnb.Result{Dataset: "pol", Solver: "cholesky", StepsDone: 4}
	cw := c
	cw.WarmStart = true
	if _, err := RecordsOf([]gpnb.Result{c, cw}); err == nil || !strings.Contains(err.Error(), "pol-s0-cholesky-exact") {
		t.Errorf("two exact runs: err = %v", err)
	}
	if _, err := RecordsOf([]gpnb.Result{{Dataset: "pol", Solver: "minres"}}); !errors.Is(err, ErrGrid) || !strings.Contains(err.Error(), "minres") {
		t.Errorf("unknown solver: err = %v", err)
	}
	if _, err := RecordsOf([]gpnb.Result{{Solver: "cg"}}); !errors.Is(err, ErrGrid) {
		t.Errorf("no dataset: err = %v", err)
	}
}

// Summarising the Results of a results directory through RecordsOf gives
// the same tables as summarising its Records: the subset and the exact
// reference are recovered from the Results alone.
func TestRecordsOfMatchesLoadedRecords(t *testing.T) {
	orig := fakeRecords()
	var res []gpnb.Result
	for _, r := range orig {
		res = append(res, r.Result)
	}
	recs, err := RecordsOf(res)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if recs[i].Job.ID() != orig[i].Job.ID() {
			t.Errorf("record %d: job %s, want %s", i, recs[i].Job.ID(), orig[i].Job.ID())
		}
	}
	want, err := Summarise(orig)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Summarise(recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, unit := range []TimeUnit{Minutes, Seconds} {
		for name, f := range map[string]func(*Report) *Table{
			"Table1": func(r *Report) *Table { return r.Table1(unit) },
			"Table2": func(r *Report) *Table { return r.Table2(unit) },
		} {
			var w, g bytes.Buffer
			if err := f(want).Markdown(&w); err != nil {
				t.Fatal(err)
			}
			if err := f(got).Markdown(&g); err != nil {
				t.Fatal(err)
			}
			if w.String() != g.String() {
				t.Errorf("%s (%s) differs:\nfrom records:\n%s\nfrom results:\n%s", name, unit, w.String(), g.String())
			}
		}
	}
	if !got.Datasets[0].Subset || got.Datasets[0].Label() != "pol (n=2000)" || got.Datasets[1].Subset {
		t.Errorf("datasets %+v: want pol marked as a subset, bike not", got.Datasets)
	}
}

func TestRowKeysMatchTableRows(t *testing.T) {
	rep, err := Summarise(fakeRecords())
	if err != nil {
		t.Fatal(err)
	}
	k1, t1 := rep.Table1Rows(), rep.Table1(Minutes)
	want1 := []RowKey{{"", "cg", "cold"}, {"", "cg", "warm"}, {"", "ap", "cold"}, {"", "ap", "warm"}, {"", "cholesky", "exact"}}
	if len(k1) != len(t1.Rows) || len(k1) != len(want1) {
		t.Fatalf("Table1: %d keys, %d rows, want %d", len(k1), len(t1.Rows), len(want1))
	}
	for i := range k1 {
		if k1[i] != want1[i] {
			t.Errorf("Table1 row %d: key %+v, want %+v", i, k1[i], want1[i])
		}
	}
	// Table2: pol has CG and AP cold and warm, bike CG cold, warm and exact.
	k2, t2 := rep.Table2Rows(), rep.Table2(Seconds)
	want2 := []RowKey{{"pol", "cg", "cold"}, {"pol", "cg", "warm"}, {"pol", "ap", "cold"}, {"pol", "ap", "warm"},
		{"bike", "cg", "cold"}, {"bike", "cg", "warm"}, {"bike", "cholesky", "exact"}}
	if len(k2) != len(t2.Rows) || len(k2) != len(want2) {
		t.Fatalf("Table2: %d keys, %d rows, want %d", len(k2), len(t2.Rows), len(want2))
	}
	for i := range k2 {
		if k2[i] != want2[i] {
			t.Errorf("Table2 row %d: key %+v, want %+v", i, k2[i], want2[i])
		}
		if !strings.HasPrefix(t2.Rows[i][0].Text, k2[i].Dataset+" (") {
			t.Errorf("Table2 row %d is labelled %q, key %+v", i, t2.Rows[i][0].Text, k2[i])
		}
	}
}
