package data

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestSyntheticDeterministic(t *testing.T) {
	a, err := Synthetic(200, 3, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Synthetic(200, 3, 7)
	c, _ := Synthetic(200, 3, 8)
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("same seed, different data")
	}
	if a.Fingerprint() == c.Fingerprint() {
		t.Error("different seeds, same data")
	}
	if a.NTrain() != 200 || a.NTest() != 40 || a.D() != 3 || a.Name != "synthetic" {
		t.Errorf("shape: %v", a)
	}
	checkZScored(t, a)
	// The training points do not depend on the test size.
	ra, _ := Synthetic(200, 3, 7, Normalise(false))
	rb, err := Synthetic(200, 3, 7, Normalise(false), TestSize(0))
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(ra.XTrain, rb.XTrain) || !slices.Equal(ra.YTrain, rb.YTrain) || rb.NTest() != 0 || rb.XTest != nil {
		t.Error("TestSize changed the training points or left a test part")
	}
	// Inputs in the box [-1,1]; targets a smooth function plus noise of
	// std 0.1: close points have close targets, and the signal dominates.
	var ss float64
	for i := 0; i < ra.NTrain(); i++ {
		for j := 0; j < 3; j++ {
			if v := ra.XTrain.At(i, j); v < -1 || v > 1 {
				t.Fatalf("input %v outside [-1,1]", v)
			}
		}
		ss += ra.YTrain[i] * ra.YTrain[i]
	}
	if rms := math.Sqrt(ss / 200); rms < 3*SyntheticNoise {
		t.Errorf("target RMS %v: the signal is lost in the noise", rms)
	}
}

// TestSyntheticHasStructure checks that the target is learnable: the mean of
// the nearest neighbours' targets predicts it far better than the mean does.
func TestSyntheticHasStructure(t *testing.T) {
	ds, err := Synthetic(2000, 2, 1, TestSize(200))
	if err != nil {
		t.Fatal(err)
	}
	var se float64
	for i := 0; i < ds.NTest(); i++ {
		best, bestD := 0.0, math.Inf(1)
		for k := 0; k < ds.NTrain(); k++ {
			dx, dy := ds.XTest.At(i, 0)-ds.XTrain.At(k, 0), ds.XTest.At(i, 1)-ds.XTrain.At(k, 1)
			if d := dx*dx + dy*dy; d < bestD {
				best, bestD = ds.YTrain[k], d
			}
		}
		se += (best - ds.YTest[i]) * (best - ds.YTest[i])
	}
	if rmse := math.Sqrt(se / float64(ds.NTest())); rmse > 0.5 {
		t.Errorf("nearest-neighbour RMSE %v on a unit-variance target: no structure", rmse)
	}
}

func TestSyntheticErrors(t *testing.T) {
	for _, tc := range []struct {
		n, d int
		opts []Option
		want error
	}{
		{0, 2, nil, ErrOption},
		{10, 0, nil, ErrOption},
		{-1, 2, nil, ErrOption},
		{1 << 40, 2, nil, ErrOption},
		{10, 2, []Option{TestSize(-1)}, ErrOption},
		{10, 2, []Option{Split(2)}, ErrOption},
		{10, 2, []Option{Subset(-3)}, ErrSubset},
	} {
		if _, err := Synthetic(tc.n, tc.d, 0, tc.opts...); !errors.Is(err, tc.want) {
			t.Errorf("Synthetic(%d, %d): %v, want %v", tc.n, tc.d, err, tc.want)
		}
	}
}

func TestSubset(t *testing.T) {
	full, err := Synthetic(300, 2, 3, Normalise(false))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Synthetic(300, 2, 3, Normalise(false), Subset(50), SubsetSeed(1))
	b, _ := Synthetic(300, 2, 3, Normalise(false), Subset(50), SubsetSeed(1))
	c, _ := Synthetic(300, 2, 3, Normalise(false), Subset(50), SubsetSeed(2))
	if a.NTrain() != 50 || a.NTest() != full.NTest() {
		t.Fatalf("subset shape %v", a)
	}
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("same subset seed, different rows")
	}
	if slices.Equal(a.YTrain, c.YTrain) {
		t.Error("different subset seeds, same rows")
	}
	if !mat.Equal(a.XTest, full.XTest) || !slices.Equal(a.YTest, full.YTest) {
		t.Error("Subset changed the test part")
	}
	// The chosen rows are distinct rows of the full training set, in order.
	last := -1
	for i := 0; i < a.NTrain(); i++ {
		k := slices.Index(full.YTrain, a.YTrain[i])
		if k <= last || full.XTrain.At(k, 0) != a.XTrain.At(i, 0) {
			t.Fatalf("subset row %d is not the next row of the full set (index %d after %d)", i, k, last)
		}
		last = k
	}
	// Subset(n ≥ n_train) is a no-op.
	same, _ := Synthetic(300, 2, 3, Normalise(false), Subset(300))
	if same.Fingerprint() != full.Fingerprint() {
		t.Error("Subset(n_train) changed the data")
	}
	// Normalisation statistics come from the chosen points.
	an, _ := Synthetic(300, 2, 3, Subset(50), SubsetSeed(1))
	checkZScored(t, an)
	m, s := refMeanStd(a.YTrain)
	if !approxEq(an.Stats.YMean, m, 1e-14) || !approxEq(an.Stats.YStd, s, 1e-14) {
		t.Errorf("target stats %v %v, subset's are %v %v", an.Stats.YMean, an.Stats.YStd, m, s)
	}
	// Uniformity, roughly: each of 10 rows is picked about half the time
	// over many seeds when choosing 5 of 10.
	idx := seq(10)
	var counts [10]int
	for seed := uint64(0); seed < 2000; seed++ {
		for _, i := range subsetIndices(idx, 5, seed) {
			counts[i]++
		}
	}
	for i, n := range counts {
		if n < 850 || n > 1150 { // 1000 ± 6.7σ
			t.Errorf("row %d chosen %d times in 2000, expected about 1000", i, n)
		}
	}
}

func refMeanStd(v []float64) (float64, float64) {
	var m, s float64
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return m, math.Sqrt(s / float64(len(v)))
}

func TestMeanStd(t *testing.T) {
	for _, tc := range []struct {
		v         []float64
		mean, std float64
	}{
		{[]float64{0.1, 0.1, 0.1}, 0.1, 1}, // constant, with a mean that rounds
		{[]float64{5}, 5, 1},
		{[]float64{1, 2, 3, 4}, 2.5, math.Sqrt(1.25)},
		{[]float64{1e8 + 1, 1e8 + 2, 1e8 + 3}, 1e8 + 2, math.Sqrt(2.0 / 3)},
		{[]float64{1e308, 1e308, -1e308, -1e308}, 0, math.Inf(1)}, // variance overflows
	} {
		m, s := meanStd(tc.v)
		if !approxEq(m, tc.mean, 1e-15) || !(s == tc.std || approxEq(s, tc.std, 1e-12)) {
			t.Errorf("meanStd(%v) = %v, %v; want %v, %v", tc.v, m, s, tc.mean, tc.std)
		}
	}
}

func TestFingerprint(t *testing.T) {
	ds, err := Synthetic(20, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	fp := ds.Fingerprint()
	if len(fp) != 64 || strings.Trim(fp, "0123456789abcdef") != "" {
		t.Fatalf("fingerprint %q is not 64 hex digits", fp)
	}
	mutations := map[string]func(d *Dataset){
		"name":   func(d *Dataset) { d.Name = "other" },
		"split":  func(d *Dataset) { d.Split = 1 },
		"x":      func(d *Dataset) { d.XTrain.Set(3, 1, math.Nextafter(d.XTrain.At(3, 1), 9)) },
		"y":      func(d *Dataset) { d.YTrain[0] = -d.YTrain[0] },
		"xtest":  func(d *Dataset) { d.XTest.Set(0, 0, 0.5) },
		"ytest":  func(d *Dataset) { d.YTest[3] += 1 },
		"notest": func(d *Dataset) { d.XTest, d.YTest = nil, nil },
		"shape":  func(d *Dataset) { d.XTrain = mat.NewDense(2, 20, d.XTrain.RawMatrix().Data) },
	}
	for name, mut := range mutations {
		c, _ := Synthetic(20, 2, 5)
		mut(c)
		if c.Fingerprint() == fp {
			t.Errorf("changing %s left the fingerprint unchanged", name)
		}
	}
}

func TestStatsMappings(t *testing.T) {
	raw, err := Synthetic(100, 3, 9, Normalise(false))
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := Synthetic(100, 3, 9)
	st := ds.Stats
	// Means round-trip to the raw targets.
	back := make([]float64, ds.NTest())
	if err := st.OriginalMeanTo(back, ds.YTest); err != nil {
		t.Fatal(err)
	}
	for i := range back {
		if !approxEq(back[i], raw.YTest[i], 1e-13) {
			t.Fatalf("OriginalMeanTo: %v, raw %v", back[i], raw.YTest[i])
		}
	}
	fwd := make([]float64, len(back))
	if err := st.NormaliseYTo(fwd, back); err != nil {
		t.Fatal(err)
	}
	for i := range fwd {
		if !approxEq(fwd[i], ds.YTest[i], 1e-13) {
			t.Fatalf("NormaliseYTo: %v, want %v", fwd[i], ds.YTest[i])
		}
	}
	// Variances scale by YStd²: the variance of the normalised training
	// targets (1) maps to the raw training targets' variance.
	_, s := refMeanStd(raw.YTrain)
	v := []float64{1, 0.25}
	if err := st.OriginalVarTo(v, v); err != nil {
		t.Fatal(err)
	}
	if !approxEq(v[0], s*s, 1e-13) || !approxEq(v[1], s*s/4, 1e-13) {
		t.Errorf("OriginalVarTo: %v, want %v, %v", v, s*s, s*s/4)
	}
	// New raw inputs normalise like the test inputs did.
	x := mat.DenseCopyOf(raw.XTest)
	if err := st.NormaliseXTo(x, x); err != nil {
		t.Fatal(err)
	}
	if !mat.EqualApprox(x, ds.XTest, 1e-13) {
		t.Error("NormaliseXTo differs from the loader's normalisation")
	}
	// Without normalisation the mappings are the identity.
	id := []float64{3, -4}
	if err := raw.Stats.OriginalMeanTo(id, id); err != nil || id[0] != 3 || id[1] != -4 {
		t.Errorf("identity mapping: %v %v", id, err)
	}
	// Wrong sizes are errors.
	if err := st.OriginalMeanTo(make([]float64, 2), make([]float64, 3)); !errors.Is(err, ErrDims) {
		t.Errorf("OriginalMeanTo sizes: %v", err)
	}
	if err := st.OriginalVarTo(make([]float64, 2), make([]float64, 3)); !errors.Is(err, ErrDims) {
		t.Errorf("OriginalVarTo sizes: %v", err)
	}
	if err := st.NormaliseYTo(nil, []float64{1}); !errors.Is(err, ErrDims) {
		t.Errorf("NormaliseYTo sizes: %v", err)
	}
	if err := st.NormaliseXTo(mat.NewDense(2, 2, nil), mat.NewDense(2, 2, nil)); !errors.Is(err, ErrDims) {
		t.Errorf("NormaliseXTo with 2 columns for 3 inputs: %v", err)
	}
	if err := st.NormaliseXTo(nil, x); !errors.Is(err, ErrDims) {
		t.Errorf("NormaliseXTo nil: %v", err)
	}
}
