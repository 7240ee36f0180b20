package data

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestNewMatchesLoadCSV: data given in Go go the loaders' way: the same
// numbers written to CSV files and loaded give the same dataset, subset
// and normalisation included.
func TestNewMatchesLoadCSV(t *testing.T) {
	x := mat.NewDense(5, 2, []float64{1, 10, 2, 30, 3, 20, 4, 50, 5, 40})
	y := []float64{1.5, -2, 0.25, 7, 3}
	xt := mat.NewDense(2, 2, []float64{0, 0, 6, 60})
	yt := []float64{1, 2}
	train := writeFile(t, "data.csv", "1,10,1.5\n2,30,-2\n3,20,0.25\n4,50,7\n5,40,3\n")
	test := writeFile(t, "t.csv", "0,0,1\n6,60,2\n")
	for _, opts := range [][]Option{nil, {Subset(3), SubsetSeed(4)}, {Normalise(false)}} {
		got, err := New(x, y, append(opts, TestData(xt, yt))...)
		if err != nil {
			t.Fatal(err)
		}
		want, err := LoadCSV(train, append(opts, TestFile(test))...)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "data" || want.Name != "data" || got.Fingerprint() != want.Fingerprint() || got.Stats.YStd != want.Stats.YStd {
			t.Errorf("%d options: New %v, LoadCSV %v", len(opts), got, want)
		}
	}
	// x and y are copied, not normalised in place.
	if x.At(0, 0) != 1 || y[0] != 1.5 || xt.At(1, 1) != 60 {
		t.Error("New changed its arguments")
	}
	ds, err := New(x, y, TestData(xt, yt))
	if err != nil || ds.Source != "" || !ds.Columns.IsZero() || len(ds.Warnings()) != 0 {
		t.Errorf("New: %v %+v %v", err, ds, ds.Warnings())
	}
}

// TestNewChecks: New's errors and warnings are the loaders', with Go's
// indices.
func TestNewChecks(t *testing.T) {
	x := mat.NewDense(5, 2, []float64{1, 5, 2, 5, math.NaN(), 5, 4, 5, 3, 5})
	y := []float64{1, 2, 3, 4, 5}
	_, err := New(x, y)
	if !errors.Is(err, ErrMissing) || !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), "x.At(2, 0) is NaN") {
		t.Errorf("NaN: %v", err)
	}
	ds, err := New(x, y, DropMissing(true))
	if err != nil || ds.NTrain() != 4 || !slices.Equal(kinds(ds), []WarningKind{DroppedRows, ConstantInputs}) ||
		!strings.Contains(ds.Warnings()[0].Message, "0 test: row 2)") || !slices.Equal(ds.Warnings()[1].Columns, []string{"1"}) {
		t.Errorf("DropMissing: %v %v", err, ds.Warnings())
	}
	ok := mat.NewDense(2, 1, []float64{1, 2})
	for _, tc := range []struct {
		name string
		x    *mat.Dense
		y    []float64
		opts []Option
		want error
		says string
	}{
		{"nil", nil, nil, nil, ErrEmpty, "x has no rows"},
		{"lengths", ok, []float64{1}, nil, ErrDims, "2 training rows but 1 targets"},
		{"inf", ok, []float64{1, math.Inf(-1)}, nil, ErrNonFinite, "y[1] is -Inf"},
		{"test inf", ok, []float64{1, 2}, []Option{TestData(ok, []float64{math.Inf(1), 0})}, ErrNonFinite, "TestData's y[0] is +Inf"},
		{"test columns", ok, []float64{1, 2}, []Option{TestData(mat.NewDense(1, 2, nil), []float64{0})}, ErrColumns, "2 columns, its training inputs 1"},
		{"test lengths", ok, []float64{1, 2}, []Option{TestData(ok, []float64{0})}, ErrDims, "2 test rows but 1 test targets"},
		{"test nil", ok, []float64{1, 2}, []Option{TestData(nil, nil)}, ErrOption, "TestData"},
		{"one row", mat.NewDense(1, 1, []float64{1}), []float64{1}, nil, ErrTooFew, "a single training row"},
		{"header", ok, []float64{1, 2}, []Option{Header(HeaderYes)}, ErrOption, "Header applies only to LoadCSV and LoadPoints, not New"},
	} {
		_, err := New(tc.x, tc.y, tc.opts...)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: got %v, want %v saying %q", tc.name, err, tc.want, tc.says)
		}
	}
}
