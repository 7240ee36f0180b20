package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestBench(t *testing.T) {
	code, out, stderr := runCmd(t, "bench", "--data", "synthetic-150-3-1", "--steps", "2", "--solvers", "cg,ap", "--precision", "float32")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	// Each solver row: its iteration ratio is cold/warm of the printed counts.
	row := regexp.MustCompile(`(?m)^\s+(CG|AP)\s+(\d+)\s+(\d+)\s+([0-9.]+)×`)
	m := row.FindAllStringSubmatch(out, -1)
	if len(m) < 2 {
		t.Fatalf("no solver rows in:\n%s", out)
	}
	for _, r := range m[:2] {
		c, _ := strconv.Atoi(r[2])
		w, _ := strconv.Atoi(r[3])
		ratio, _ := strconv.ParseFloat(r[4], 64)
		if c <= 0 || w <= 0 || strconv.FormatFloat(float64(c)/float64(w), 'f', 2, 64) != strconv.FormatFloat(ratio, 'f', 2, 64) {
			t.Errorf("%s: iterations %d/%d printed ratio %v", r[1], c, w, ratio)
		}
		if w >= c {
			t.Errorf("%s: warm start took %d iterations, cold %d: want fewer", r[1], w, c)
		}
	}
	for _, want := range []string{"n=150, d=3", "gpnb build: backend ", " · kernel values ", " · BLAS ", "gemm (blas64.Gemm, 150×150 · 150×17", "dense float64:", "dense float32:", "dense mixed:", "matrix-free:", "% of gemm", "square gemm (1500³, all", "counting kernel evaluation (19 flops per value)", "% of square gemm",
		"float32 kernel operator against float64", "Memory: peak resident set", "as fast as dense float64",
		"Per-step split of the warm-started runs", "Kernel build (SetKernel", "Load at the end"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench output lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range [][]string{{"bench", "--data", "mnist"}, {"bench", "--steps", "0"}, {"bench", "--solvers", "qr"}} {
		if code, _, stderr := runCmd(t, bad...); code == 0 || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q", bad, code, stderr)
		}
	}
}

// TestBenchMixed: --precision mixed trains each solver with the mixed
// operator beside float64; the build line names the product kernel.
func TestBenchMixed(t *testing.T) {
	code, out, stderr := runCmd(t, "bench", "--data", "synthetic-150-3-1", "--steps", "2", "--solvers", "cg", "--precision", "mixed")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	for _, want := range []string{" · mixed precision ", "mixed kernel operator against float64", "dense mixed:"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench output lacks %q:\n%s", want, out)
		}
	}
	// The per-step split has a mixed row for CG.
	if !regexp.MustCompile(`(?m)^\s+CG\s+mixed\s`).MatchString(out) {
		t.Errorf("no CG mixed row in the per-step split:\n%s", out)
	}
}
