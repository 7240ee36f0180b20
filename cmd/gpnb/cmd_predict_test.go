package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
)

// TestPredictCommand: gpnb predict on a checkpoint of gpnb train gives the
// library's prediction at the points of a CSV file, in the data's units,
// finding the dataset from the checkpoint when no --data is given.
func TestPredictCommand(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "run.ckpt")
	if code, _, errs := runCmd(t, "train", "--data", "synthetic-120-2-4", "--steps", "3", "--probes", "4", "--checkpoint", ckpt, "--quiet"); code != 0 {
		t.Fatalf("train: exit %d: %s", code, errs)
	}
	pts := filepath.Join(dir, "points.csv")
	if err := os.WriteFile(pts, []byte("0.1,0.2\n-0.5,0.3\n0.9,-0.9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := runJSON[predictJSON](t, "predict", "--resume", ckpt, "--points", pts, "--json", "-")
	ds, err := data.Open("synthetic-120-2-4")
	if err != nil {
		t.Fatal(err)
	}
	o, err := gpnb.Resume(ckpt, ds)
	if err != nil {
		t.Fatal(err)
	}
	x, err := ds.LoadPoints(pts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := o.Predict(x)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Points) != 3 || got.Step != 3 || len(got.Pred.Data.Mean) != 3 {
		t.Fatalf("%+v", got)
	}
	for i := range want.Data.Mean {
		if math.Abs(got.Pred.Data.Mean[i]-want.Data.Mean[i]) > 1e-12 || math.Abs(got.Pred.Data.VarNoisy[i]-want.Data.VarNoisy[i]) > 1e-12 {
			t.Errorf("point %d: CLI %v ± %v, library %v ± %v", i, got.Pred.Data.Mean[i], got.Pred.Data.VarNoisy[i], want.Data.Mean[i], want.Data.VarNoisy[i])
		}
	}
	code, out, _ := runCmd(t, "predict", "--resume", ckpt, "--points", pts)
	if code != 0 || !strings.Contains(out, "95% band") || strings.Count(out, "\n") != 5 {
		t.Errorf("table: exit %d:\n%s", code, out)
	}
	for _, bad := range [][]string{
		{"predict", "--resume", ckpt},
		{"predict", "--resume", ckpt, "--points", filepath.Join(dir, "missing.csv")},
		{"predict", "--resume", ckpt, "--points", pts, "--data", "synthetic-120-2-5"},
	} {
		if code, _, errs := runCmd(t, bad...); code != 1 || errs == "" {
			t.Errorf("%v: exit %d, %q", bad, code, errs)
		}
	}
}
