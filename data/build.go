package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// build assembles a Dataset from the rows trainIdx of train and testIdx of
// test (the target is each table's last column), applying Subset and
// normalisation from c. The tables have at least two columns, and test has
// train's columns when testIdx is not empty.
func build(name string, split int, train *table, trainIdx []int, test *table, testIdx []int, c *config) (*Dataset, error) {
	if c.set["Subset"] {
		trainIdx = subsetIndices(trainIdx, c.subset, c.subsetSeed)
	}
	ds := &Dataset{Name: name, Split: split}
	ds.XTrain, ds.YTrain = gather(train, trainIdx)
	if len(testIdx) > 0 {
		ds.XTest, ds.YTest = gather(test, testIdx)
	}
	if c.normalise {
		if err := ds.normalise(); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

// gather copies rows idx of t into inputs X and target y.
func gather(t *table, idx []int) (*mat.Dense, []float64) {
	d := t.cols - 1
	x := make([]float64, len(idx)*d)
	y := make([]float64, len(idx))
	for k, i := range idx {
		r := t.row(i)
		copy(x[k*d:(k+1)*d], r[:d])
		y[k] = r[d]
	}
	return mat.NewDense(len(idx), d, x), y
}

// subsetIndices returns n of idx chosen uniformly without replacement by a
// PCG generator seeded with seed, in idx's order. With n ≥ len(idx) it
// returns idx.
func subsetIndices(idx []int, n int, seed uint64) []int {
	if n >= len(idx) {
		return idx
	}
	rng := rand.New(rand.NewPCG(seed, 0x5ab5e7)) // second word fixed: the seed alone decides
	pos := seq(len(idx))
	// Partial Fisher–Yates: the first n slots end up a uniform n-subset.
	for i := 0; i < n; i++ {
		j := i + int(rng.Uint64N(uint64(len(idx)-i)))
		pos[i], pos[j] = pos[j], pos[i]
	}
	pos = pos[:n]
	slices.Sort(pos)
	out := make([]int, n)
	for k, p := range pos {
		out[k] = idx[p]
	}
	return out
}

// normalise z-scores every array with the training statistics and records
// them in ds.Stats. Values so large that their variance overflows are an
// error.
func (ds *Dataset) normalise() error {
	n, d := ds.XTrain.Dims()
	st := Stats{Normalised: true, XMean: make([]float64, d), XStd: make([]float64, d)}
	raw := ds.XTrain.RawMatrix()
	col := make([]float64, n)
	for j := 0; j < d; j++ {
		for i := 0; i < n; i++ {
			col[i] = raw.Data[i*raw.Stride+j]
		}
		st.XMean[j], st.XStd[j] = meanStd(col)
		if !finite(st.XMean[j]) || !finite(st.XStd[j]) {
			return fmt.Errorf("%w: %s input column %d is too large to z-score (its variance overflows float64); rescale it or use Normalise(false)", ErrNonFinite, ds.Name, j+1)
		}
	}
	st.YMean, st.YStd = meanStd(ds.YTrain)
	if !finite(st.YMean) || !finite(st.YStd) {
		return fmt.Errorf("%w: %s target is too large to z-score (its variance overflows float64); rescale it or use Normalise(false)", ErrNonFinite, ds.Name)
	}
	ds.Stats = st
	scaleRows(ds.XTrain, st)
	scaleRows(ds.XTest, st)
	for i := range ds.YTrain {
		ds.YTrain[i] = (ds.YTrain[i] - st.YMean) / st.YStd
	}
	for i := range ds.YTest {
		ds.YTest[i] = (ds.YTest[i] - st.YMean) / st.YStd
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func scaleRows(x *mat.Dense, st Stats) {
	if x == nil {
		return
	}
	r, c := x.Dims()
	raw := x.RawMatrix()
	for i := 0; i < r; i++ {
		row := raw.Data[i*raw.Stride : i*raw.Stride+c]
		for j := range row {
			row[j] = (row[j] - st.XMean[j]) / st.XStd[j]
		}
	}
}

// meanStd returns the mean and population standard deviation (ddof=0) of v,
// computed in two passes. A constant v (or a single value) gets std 1, so it
// maps to zeros; testing min == max avoids a spurious tiny std from the
// rounding of the mean.
func meanStd(v []float64) (mean, std float64) {
	if len(v) == 0 {
		return 0, 1
	}
	n := float64(len(v))
	lo, hi, sum := v[0], v[0], 0.0
	for _, x := range v {
		sum += x
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	mean = sum / n
	if math.IsInf(sum, 0) { // huge values: average x/n instead, which cannot overflow
		mean = 0
		for _, x := range v {
			mean += x / n
		}
	}
	if lo == hi {
		return lo, 1
	}
	var ss, comp float64
	for _, x := range v {
		e := x - mean
		ss += e * e
		comp += e
	}
	// Corrected two-pass formula (Chan, Golub & LeVeque): comp removes the
	// first-order error of a rounded mean.
	vr := (ss - comp*comp/n) / n
	switch {
	case math.IsNaN(vr) || math.IsInf(vr, 0):
		return mean, math.Inf(1) // overflow: normalise reports it
	case vr <= 0:
		return mean, 1
	}
	return mean, math.Sqrt(vr)
}
