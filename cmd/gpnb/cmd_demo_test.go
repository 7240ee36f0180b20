package main

import (
	"strings"
	"testing"
)

func TestDemoCommand(t *testing.T) {
	// pol's shape (d = 26); the length scales grow for some steps before
	// the kernel couples the points and the solves take more than a few
	// iterations.
	r, _ := runJSON[demoResult](t, "demo", "--synthetic", "--n", "150", "--steps", "20", "--probes", "4", "--json", "-")
	if len(r.Rows) != 3 || r.NTrain != 150 || r.D != 26 || r.Steps != 20 {
		t.Fatalf("result %+v", r)
	}
	for _, row := range r.Rows {
		if row.ItersCold <= 0 || row.ItersWarm <= 0 || row.IterationRatio != float64(row.ItersCold)/float64(row.ItersWarm) {
			t.Errorf("row %+v", row)
		}
		// The point of the demo: warm starts need fewer solver iterations.
		if row.ItersWarm >= row.ItersCold {
			t.Errorf("%s: warm start took %d iterations, cold %d: want fewer", row.Solver, row.ItersWarm, row.ItersCold)
		}
	}
	code, out, _ := runCmd(t, "demo", "--synthetic", "--n", "100", "--steps", "2", "--solvers", "cg", "--probes", "2")
	if code != 0 || !strings.Contains(out, "speed-up") || !strings.Contains(out, "cg") {
		t.Errorf("table: exit %d, %q", code, out)
	}
	if code, _, errs := runCmd(t, "demo", "--solvers", "lu", "--synthetic", "--n", "50"); code != 1 || !strings.Contains(errs, "unknown solver") {
		t.Errorf("bad solver: exit %d, %q", code, errs)
	}
}
