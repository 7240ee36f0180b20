package data

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func sqrt(x float64) float64 { return math.Sqrt(x) }

func approxEq(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func parseFloatsStd(t testing.TB, line string) []float64 {
	t.Helper()
	var out []float64
	for _, f := range strings.Split(line, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			t.Fatalf("reference parser: %v", err)
		}
		out = append(out, v)
	}
	return out
}

// checkZScored asserts that every training input column and the training
// target have mean 0 and population std 1 (or are all zero: constant), to
// 1e-12, using gonum's stat-free plain sums.
func checkZScored(t *testing.T, ds *Dataset) {
	t.Helper()
	if !ds.Stats.Normalised {
		t.Fatal("Stats.Normalised is false")
	}
	n, d := ds.XTrain.Dims()
	col := make([]float64, n)
	for j := 0; j < d; j++ {
		mat.Col(col, j, ds.XTrain)
		checkMoments(t, col, "input column "+strconv.Itoa(j))
	}
	checkMoments(t, ds.YTrain, "target")
}

func checkMoments(t *testing.T, v []float64, what string) {
	t.Helper()
	m, s := refMeanStd(v)
	if math.Abs(m) > 1e-12 {
		t.Errorf("%s: mean %g, want 0", what, m)
	}
	if math.Abs(s-1) > 1e-12 && s != 0 {
		t.Errorf("%s: std %.17g, want 1", what, s)
	}
}
