package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
)

// The example files: a header line, the target (price) in the first
// column; the new points name the inputs in another order.
const (
	housesCSV    = "../../data/testdata/houses.csv"
	housesNewCSV = "../../data/testdata/houses_new.csv"
)

// TestCSVTargetFirstByName: a CSV file with a header and the target in its
// first column trains and predicts by name from the command line, and the
// predictions (CSV and JSON) are the library's at the points read by name.
func TestCSVTargetFirstByName(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "run.ckpt")
	if code, _, errs := runCmd(t, "train", "--data", housesCSV, "--target", "price", "--steps", "3", "--probes", "4", "--checkpoint", ckpt, "--quiet"); code != 0 {
		t.Fatalf("train: exit %d: %s", code, errs)
	}
	byName, _ := runJSON[dataSummary](t, "data", "--data", housesCSV, "--target", "price", "--json", "-")
	byNumber, _ := runJSON[dataSummary](t, "data", "--data", housesCSV, "--target", "1", "--columns", "rooms,3,age", "--json", "-")
	if byName.Fingerprint != byNumber.Fingerprint || byName.Target != "price" || !slices.Equal(byName.Inputs, []string{"rooms", "area", "age"}) || byName.D != 3 {
		t.Errorf("by name %+v, by number %+v", byName, byNumber)
	}
	// The library: the same file, the same run, the points by name.
	ds, err := data.LoadCSV(housesCSV, data.Target("price"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := gpnb.Resume(ckpt, ds)
	if err != nil {
		t.Fatal(err)
	}
	x, err := ds.LoadPoints(housesNewCSV)
	if err != nil {
		t.Fatal(err)
	}
	if x.At(2, 0) != 4 || x.At(2, 1) != 120.5 || x.At(2, 2) != 55 { // the file's area,rooms,age line 4, in rooms,area,age order
		t.Fatalf("points by name: %v", mat.Formatted(x))
	}
	want, err := o.Predict(x)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := want.Data.Band(1.96, true)
	// CSV, without --data: the run's file and columns are read again.
	out := filepath.Join(dir, "pred.csv")
	if code, _, errs := runCmd(t, "predict", "--resume", ckpt, "--points", housesNewCSV, "--out", out); code != 0 {
		t.Fatalf("predict --out: exit %d: %s", code, errs)
	}
	rows := readCSV(t, out)
	if !slices.Equal(rows[0], []string{"rooms", "area", "age", "mean", "var", "var_noisy", "lower_95", "upper_95"}) || len(rows) != 5 {
		t.Fatalf("CSV %v", rows)
	}
	for i, r := range rows[1:] {
		got, err := parseFloats(strings.Join(r, ","))
		if err != nil {
			t.Fatal(err)
		}
		exp := append(slices.Clone(x.RawRowView(i)), want.Data.Mean[i], want.Data.Var[i], want.Data.VarNoisy[i], lo[i], hi[i])
		if !slices.Equal(got, exp) { // the same computation, printed exactly
			t.Errorf("CSV row %d: %v, library %v", i+1, got, exp)
		}
	}
	// JSON by --json and by --out's extension.
	got, _ := runJSON[predictJSON](t, "predict", "--resume", ckpt, "--points", housesNewCSV, "--json", "-")
	jsonOut := filepath.Join(dir, "pred.json")
	if code, _, errs := runCmd(t, "predict", "--resume", ckpt, "--points", housesNewCSV, "--out", jsonOut); code != 0 {
		t.Fatalf("predict --out .json: exit %d: %s", code, errs)
	}
	fromFile := readJSON[predictJSON](t, jsonOut)
	for _, g := range []predictJSON{got, fromFile} {
		if !slices.Equal(g.Inputs, []string{"rooms", "area", "age"}) || !slices.Equal(g.Pred.Data.Mean, want.Data.Mean) || !slices.Equal(g.Points[3], x.RawRowView(3)) {
			t.Errorf("JSON: %+v", g)
		}
	}
	// The table names the inputs.
	if code, table, _ := runCmd(t, "predict", "--resume", ckpt, "--points", housesNewCSV); code != 0 || !strings.Contains(table, "rooms,area,age") || strings.Count(table, "\n") != 6 {
		t.Errorf("table: exit %d:\n%s", code, table)
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// writeTemp writes content to name in a new temporary folder.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCSVWarningsShown: every warning of package data reaches stderr, for
// data, train and predict alike, and the command still succeeds.
func TestCSVWarningsShown(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		flags    []string
		says     string
	}{
		{"constant target", "a,b,y\n1,2,5\n2,4,5\n3,1,5\n4,4,5\n5,0,5\n", nil, "the target is constant (5 in all 5 training rows): there is nothing to learn"},
		{"constant inputs", "a,b,y\n1,7,1\n2,7,2\n3,7,5\n4,7,1\n", nil, "input column b is constant over the training rows"},
		{"duplicates", "a,b,y\n1,2,1\n3,4,2\n1,2,3\n5,6,4\n", nil, "1 of 4 training rows repeats an earlier row's inputs (line 4 repeats line 2)"},
		{"few rows", "a,b,c,y\n1,2,3,1\n2,1,4,2\n3,3,1,3\n", nil, "3 training rows for d+2 = 5 hyperparameters"},
		{"extreme scale", "a,y\n1,1000000000.01\n2,1000000000.03\n3,1000000000.02\n4,1000000000.05\n", nil, "relative spread below 1e-07"},
		{"not normalised", "a,y\n1,1000\n2,3000\n3,2000\n4,5000\n", []string{"--normalise=false"}, "not normalised"},
		{"dropped rows", "a,b,y\n1,2,1\n2,NA,2\n3,1,5\n4,4,1\n", []string{"--drop-missing"}, "dropped 1 row with a missing value (1 training, 0 test: line 3)"},
		{"index column", ",a,y\n0,1,2\n1,2,3\n2,5,1\n", nil, "column 1 has no name in the header line"},
	} {
		path := writeTemp(t, "w.csv", tc.in)
		code, _, errs := runCmd(t, append([]string{"data", "--data", path}, tc.flags...)...)
		if code != 0 || !strings.Contains(errs, "gpnb: warning: --data "+path+": ") || !strings.Contains(errs, tc.says) {
			t.Errorf("%s: data: exit %d, stderr %q", tc.name, code, errs)
		}
	}
	// train and predict show them too.
	path := writeTemp(t, "c.csv", "a,b,y\n1,2,5\n2,4,5\n3,1,5\n4,4,5\n5,0,5\n")
	ckpt := filepath.Join(t.TempDir(), "c.ckpt")
	code, _, errs := runCmd(t, "train", "--data", path, "--steps", "2", "--probes", "2", "--quiet", "--checkpoint", ckpt)
	if code != 0 || !strings.Contains(errs, "warning: --data "+path+": the target is constant") {
		t.Errorf("train: exit %d, stderr %q", code, errs)
	}
	pts := writeTemp(t, "p.csv", "a,b\n1.5,2\n")
	got, errs := runJSON[predictJSON](t, "predict", "--resume", ckpt, "--points", pts, "--json", "-")
	if !strings.Contains(errs, "the target is constant") || got.Pred.Data.Mean[0] != 5 {
		t.Errorf("predict: mean %v, stderr %q", got.Pred.Data.Mean, errs)
	}
}

// TestCSVBadInput: missing values name their line and column, or are
// dropped on request; the CSV flags apply to CSV files only; one row is an
// error.
func TestCSVBadInput(t *testing.T) {
	missing := writeTemp(t, "m.csv", "y,a,b\n1,2,3\n4,NA,6\n7,8,9\n3,3,3\n5,4,1\n")
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--data", missing, "--target", "y"}, 1, `m.csv line 3 column 2 (a) is "NA"; fill it in or remove the row, or drop rows with a missing value: DropMissing(true), --drop-missing`},
		{[]string{"--data", missing, "--target", "y", "--columns", "b"}, 0, ""},
		{[]string{"--data", missing, "--target", "price"}, 1, `no column "price": give a name ("y", "a", "b") or a number 1-3`},
		{[]string{"--data", missing, "--header", "maybe"}, 1, `--header "maybe"`},
		{[]string{"--data", missing, "--header", "no"}, 1, `line 1 column 1: "y"; if this is a header line`},
		{[]string{"--data", "synthetic-30-2-1", "--target", "y"}, 1, "--target applies only to CSV files"},
		{[]string{"--data", "pol", "--drop-missing"}, 1, "--drop-missing applies only to CSV files"},
		{[]string{"--data", writeTemp(t, "one.csv", "x,y\n1,2\n")}, 1, "a single training row"},
	} {
		code, _, errs := runCmd(t, append([]string{"data"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.says) {
			t.Errorf("%v: exit %d (want %d), stderr %q does not say %q", tc.args, code, tc.code, errs, tc.says)
		}
	}
	got, errs := runJSON[dataSummary](t, "data", "--data", missing, "--target", "y", "--drop-missing", "--json", "-")
	if got.NTrain != 4 || len(got.Warnings) != 1 || got.Warnings[0].Kind != data.DroppedRows || got.Warnings[0].Count != 1 || !strings.Contains(errs, "dropped 1 row") {
		t.Errorf("--drop-missing: %+v, stderr %q", got, errs)
	}
}
