package gpnb

import (
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/ucitest"
)

// synth returns a small synthetic dataset built here (independently of
// package data's generator): smooth targets on [-1,1]^d, z-scored.
func synth(t testing.TB, n, d int, seed uint64) *data.Dataset {
	t.Helper()
	X, y := randProblem(n+n/4, d, seed)
	mean, sd := 0.0, 0.0
	for _, v := range y[:n] {
		mean += v
	}
	mean /= float64(n)
	for _, v := range y[:n] {
		sd += (v - mean) * (v - mean)
	}
	sd = sqrt(sd / float64(n))
	for i := range y {
		y[i] = (y[i] - mean) / sd
	}
	return &data.Dataset{
		Name:   "testsynth",
		XTrain: mat.DenseCopyOf(X.Slice(0, n, 0, d)),
		YTrain: append([]float64(nil), y[:n]...),
		XTest:  mat.DenseCopyOf(X.Slice(n, n+n/4, 0, d)),
		YTest:  append([]float64(nil), y[n:]...),
		Stats:  data.Stats{Normalised: true, YStd: 1},
	}
}

// exactGradient returns ∇L at k on ds's training data by Cholesky
// (Exact.Gradient): the reference the estimators are checked against.
func exactGradient(t testing.TB, ds *data.Dataset, k kernel.Kernel) []float64 {
	t.Helper()
	ex, err := NewExact(ds.XTrain, ds.YTrain, k)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, k.Hyper.Len())
	if err := ex.Gradient(want); err != nil {
		t.Fatal(err)
	}
	return want
}

// polSubset loads n training points of pol split 0, or skips.
func polSubset(t testing.TB, n int) *data.Dataset {
	t.Helper()
	return uciSubset(t, "pol", n)
}

// uciSubset returns n training points of split 0 of a UCI dataset from
// $GPNB_DATA (subset seed 0, as gpnb train's --subset), or skips the test
// without it (ucitest.Dir).
func uciSubset(t testing.TB, name string, n int) *data.Dataset {
	t.Helper()
	ds, err := data.Load(name, data.Split(0), data.Subset(n), data.Dir(ucitest.Dir(t, name)))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}
