package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/mat"
)

// parts are a dataset's values as a loader found them, in their own units,
// before the checks, warnings and normalisation that every loader shares
// (finish).
type parts struct {
	name, source string
	split        int
	x            [2]*mat.Dense // training and test inputs; the test part may be nil
	y            [2][]float64
	cols         Columns
	place        place
	warnings     []Warning // the loader's own
}

// place names the rows, columns and values of a loader's data in messages.
type place interface {
	// cell describes value v at row i of part (0 training, 1 test), column
	// j (the target when j is the number of inputs): where it is, what it
	// holds, and the sentinel its error matches beside ErrMissing
	// (ErrNotNumber for text, ErrNonFinite for a NaN or an infinity).
	cell(part, i, j int, v float64) (where, what string, kind error)
	// row names row i of part: "line 7", "row 6".
	row(part, i int) string
	// input names input column j as Inputs would: "price", "3" (a
	// file's column number, from 1), "2" (x's column, from 0).
	input(j int) string
}

// finish turns p into a Dataset: the checks, warnings and normalisation of
// every loader. c's DropMissing, Subset, SubsetSeed and Normalise apply.
func finish(p *parts, c *config) (*Dataset, error) {
	if err := p.checkShapes(); err != nil {
		return nil, err
	}
	keep, err := p.checkValues(c.drop, true)
	if err != nil {
		return nil, err
	}
	if c.set["Subset"] {
		keep[0] = subsetIndices(keep[0], c.subset, c.subsetSeed)
	}
	if err := p.checkCount(len(keep[0])); err != nil {
		return nil, err
	}
	ds := &Dataset{Name: p.name, Split: p.split, Source: p.source, Columns: p.cols}
	ds.XTrain, ds.YTrain = gather(p.x[0], p.y[0], keep[0])
	if len(keep[1]) > 0 {
		ds.XTest, ds.YTest = gather(p.x[1], p.y[1], keep[1])
	}
	ds.warnings = append(p.warnings, p.warn(ds.XTrain, ds.YTrain, keep[0], c.normalise)...)
	if c.normalise {
		if err := ds.normalise(); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

// checkShapes checks that the parts have rows, inputs and one target a
// row, and that the test part has the training part's inputs.
func (p *parts) checkShapes() error {
	if p.x[0] == nil || p.x[0].IsEmpty() {
		return fmt.Errorf("%w: %s has no training rows", ErrEmpty, p.name)
	}
	n, d := p.x[0].Dims()
	if len(p.y[0]) != n {
		return fmt.Errorf("%w: %s has %d training rows but %d targets; give one target a row", ErrDims, p.name, n, len(p.y[0]))
	}
	if p.x[1] == nil {
		return nil
	}
	m, dt := p.x[1].Dims()
	switch {
	case dt != d:
		return fmt.Errorf("%w: %s's test inputs have %d columns, its training inputs %d; give both the same inputs", ErrColumns, p.name, dt, d)
	case len(p.y[1]) != m:
		return fmt.Errorf("%w: %s has %d test rows but %d test targets; give one target a row", ErrDims, p.name, m, len(p.y[1]))
	}
	return nil
}

// checkValues returns the rows of each part to keep: all, or with drop
// those without a missing value (NaN), with a warning counting the
// others. A missing value without drop, or an infinite one, is an error
// naming it; dropHint adds how to drop such rows to the message.
func (p *parts) checkValues(drop, dropHint bool) (keep [2][]int, err error) {
	var dropped [2][]int
	for part := range 2 {
		x, y := p.x[part], p.y[part]
		if x == nil {
			continue
		}
		n, d := x.Dims()
		for i := range n {
			miss, inf := badInRow(x.RawRowView(i), y, i)
			if inf >= 0 {
				where, what, _ := p.place.cell(part, i, inf, p.at(part, i, inf))
				return keep, fmt.Errorf("%w: %s is %s; every value must be a finite number", ErrNonFinite, where, what)
			}
			if miss >= 0 && !drop {
				return keep, p.missingError(part, i, miss, d, dropHint)
			}
			if miss >= 0 {
				dropped[part] = append(dropped[part], i)
				continue
			}
			keep[part] = append(keep[part], i)
		}
	}
	if len(dropped[0])+len(dropped[1]) > 0 {
		p.warnings = append(p.warnings, p.droppedWarning(dropped))
	}
	return keep, nil
}

// badInRow returns the first column of a NaN (missing) and of an infinity
// in row i: its inputs x, then y[i] (column len(x)) when y is not nil; −1
// where there is none.
func badInRow(x, y []float64, i int) (miss, inf int) {
	miss, inf = -1, -1
	note := func(j int, v float64) {
		switch {
		case math.IsNaN(v) && miss < 0:
			miss = j
		case math.IsInf(v, 0) && inf < 0:
			inf = j
		}
	}
	for j, v := range x {
		note(j, v)
	}
	if y != nil {
		note(len(x), y[i])
	}
	return miss, inf
}

// at returns the value at row i, column j (the target when j = d) of part.
func (p *parts) at(part, i, j int) float64 {
	if _, d := p.x[part].Dims(); j == d {
		return p.y[part][i]
	}
	return p.x[part].At(i, j)
}

func (p *parts) missingError(part, i, j, d int, dropHint bool) error {
	where, what, kind := p.place.cell(part, i, j, p.at(part, i, j))
	msg := fmt.Sprintf("%v: %s is %s; fill it in or remove the row", ErrMissing, where, what)
	if dropHint {
		msg += ", or drop rows with a missing value: DropMissing(true), --drop-missing"
	}
	return &multiError{msg: msg, errs: []error{ErrMissing, kind}}
}

// multiError is an error with its own message that matches several
// sentinels.
type multiError struct {
	msg  string
	errs []error
}

func (e *multiError) Error() string   { return e.msg }
func (e *multiError) Unwrap() []error { return e.errs }

// checkCount refuses fewer than two training rows.
func (p *parts) checkCount(n int) error {
	switch n {
	case 0:
		return fmt.Errorf("%w: %s: every training row has a missing value", ErrEmpty, p.name)
	case 1:
		_, d := p.x[0].Dims()
		return fmt.Errorf("%w: %s: a single training row: z-scored it is all zeros, and one point determines none of the d+2 = %d hyperparameters (length scales, signal, noise); give at least two rows, better more than %d", ErrTooFew, p.name, d+2, d+2)
	}
	return nil
}

// gather copies rows idx of x and y; with every row in order it returns x
// and y themselves.
func gather(x *mat.Dense, y []float64, idx []int) (*mat.Dense, []float64) {
	n, d := x.Dims()
	if len(idx) == n && (n == 0 || idx[n-1] == n-1) {
		return x, y
	}
	xs := make([]float64, len(idx)*d)
	ys := make([]float64, len(idx))
	for k, i := range idx {
		copy(xs[k*d:(k+1)*d], x.RawRowView(i))
		ys[k] = y[i]
	}
	return mat.NewDense(len(idx), d, xs), ys
}

// SubsetRows returns m of the rows of x and y chosen uniformly without
// replacement by a PCG generator seeded with seed, as the Subset option
// chooses training points, in their order; with m ≥ the number of rows it
// returns x and y themselves.
func SubsetRows(x *mat.Dense, y []float64, m int, seed uint64) (*mat.Dense, []float64) {
	return gather(x, y, subsetIndices(seq(len(y)), m, seed))
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

// goPlace names the values of matrices given in Go (New, Synthetic), with
// Go's indices from 0.
type goPlace struct{ d int }

func (g goPlace) cell(part, i, j int, v float64) (where, what string, kind error) {
	where = fmt.Sprintf("x.At(%d, %d)", i, j)
	if j == g.d {
		where = fmt.Sprintf("y[%d]", i)
	}
	if part == 1 {
		where = "TestData's " + where
	}
	return where, strconv.FormatFloat(v, 'g', -1, 64), ErrNonFinite
}

func (goPlace) row(part, i int) string {
	if part == 1 {
		return fmt.Sprintf("test row %d", i)
	}
	return fmt.Sprintf("row %d", i)
}

func (goPlace) input(j int) string { return strconv.Itoa(j) }

// New makes a Dataset of inputs x (n×d, one point a row) and targets y (n
// values) computed in Go, through the loaders' checks, warnings and
// normalisation: NaN is a missing value (an ErrMissing error, or with
// DropMissing(true) its row is dropped), ±Inf an error; fewer than two rows
// is an error. x and y are copied. TestData adds a test part; Normalise,
// Subset and SubsetSeed apply. The Dataset's Name is "data" (set it as you
// like) and its Source is empty: Open cannot load it again.
func New(x *mat.Dense, y []float64, opts ...Option) (*Dataset, error) {
	c, err := newConfig(loaderNew, opts)
	if err != nil {
		return nil, err
	}
	p := &parts{name: "data"}
	if x == nil || x.IsEmpty() {
		return nil, fmt.Errorf("%w: New: x has no rows; give one point a row", ErrEmpty)
	}
	_, d := x.Dims()
	p.place = goPlace{d: d}
	p.x[0], p.y[0] = mat.DenseCopyOf(x), slices.Clone(y)
	if c.set["TestData"] {
		p.x[1], p.y[1] = mat.DenseCopyOf(c.testX), slices.Clone(c.testY)
	}
	return finish(p, c)
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
// maps to zeros (a constant target then needs no division by zero);
// testing min == max avoids a spurious tiny std from the rounding of the
// mean.
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
	case vr < 0x1p-1000:
		// Deviations whose squares underflow (below about 1e-154): scale
		// them to 1 first, so that tiny values keep their spread.
		return mean, tinyStd(v, mean, math.Max(hi-mean, mean-lo))
	}
	return mean, math.Sqrt(vr)
}

// tinyStd is the population standard deviation of v about mean, computed
// on the deviations divided by scale (their largest magnitude, > 0).
func tinyStd(v []float64, mean, scale float64) float64 {
	var ss float64
	for _, x := range v {
		e := (x - mean) / scale
		ss += e * e
	}
	return scale * math.Sqrt(ss/float64(len(v)))
}
