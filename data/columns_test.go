package data

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// rawOf loads path without normalising, failing the test on an error.
func rawOf(t *testing.T, path string, opts ...Option) *Dataset {
	t.Helper()
	ds, err := LoadCSV(path, append(opts, Normalise(false))...)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestLoadCSVHeaderTarget: a file with a header line and the target in its
// first column, read by name or by number; the values are the file's.
func TestLoadCSVHeaderTarget(t *testing.T) {
	path := writeFile(t, "h.csv", "\xef\xbb\xbfprice, rooms,\"area\"\r\n\r\n100,2,50\r\n150,3,70\n130,2,80\n120,4,60\n")
	for _, target := range []string{"price", "PRICE", "1"} {
		ds := rawOf(t, path, Target(target))
		want := mat.NewDense(4, 2, []float64{2, 50, 3, 70, 2, 80, 4, 60})
		if !mat.Equal(ds.XTrain, want) || !slices.Equal(ds.YTrain, []float64{100, 150, 130, 120}) {
			t.Errorf("Target(%q): X %v y %v", target, mat.Formatted(ds.XTrain), ds.YTrain)
		}
		c := ds.Columns
		if !c.Header || c.TargetName() != "price" || !slices.Equal(c.InputNames(), []string{"rooms", "area"}) || len(ds.Warnings()) != 0 {
			t.Errorf("Target(%q): columns %+v, warnings %v", target, c, ds.Warnings())
		}
	}
	// Inputs chooses and orders the inputs.
	ds := rawOf(t, path, Target("price"), Inputs("area", "2"))
	if !mat.Equal(ds.XTrain, mat.NewDense(4, 2, []float64{50, 2, 70, 3, 80, 2, 60, 4})) || !slices.Equal(ds.Columns.InputNames(), []string{"area", "rooms"}) {
		t.Errorf("Inputs(area, 2): %v", mat.Formatted(ds.XTrain))
	}
	// The default target is the last column; a header of numbers needs HeaderYes.
	if ds := rawOf(t, path); ds.Columns.TargetName() != "area" || ds.YTrain[2] != 80 {
		t.Errorf("default target: %+v", ds.Columns)
	}
	nums := writeFile(t, "n.csv", "1,2,3\n4,5,6\n7,8,9\n")
	if ds := rawOf(t, nums, Header(HeaderYes)); ds.NTrain() != 2 || ds.Columns.TargetName() != "3" || !ds.Columns.Header {
		t.Errorf("HeaderYes: %v %+v", ds, ds.Columns)
	}
	if ds := rawOf(t, nums); ds.NTrain() != 3 || ds.Columns.Header || !slices.Equal(ds.Columns.Names, []string{"1", "2", "3"}) {
		t.Errorf("no header: %v %+v", ds, ds.Columns)
	}
	// A text column that is not used may hold anything; its header still
	// counts as a header where another column's does.
	text := writeFile(t, "t.csv", "id,x,y\nabc,1,2\ndef,3,5\n")
	if ds := rawOf(t, text, Inputs("x")); ds.D() != 1 || ds.XTrain.At(1, 0) != 3 {
		t.Errorf("text column left out: %v", ds)
	}
	_, err := LoadCSV(text)
	if !errors.Is(err, ErrNotNumber) || !strings.Contains(err.Error(), `line 2 column 1: "abc"`) {
		t.Errorf("text column used: %v", err)
	}
}

// TestLoadCSVIndexColumn: the unnamed first column pandas and R write is
// left out of the default inputs, with a warning, and used when chosen.
func TestLoadCSVIndexColumn(t *testing.T) {
	for name, in := range map[string]string{
		"pandas": ",a,y\n0,1,2\n1,2,3\n2,5,1\n3,4,4\n",
		"R":      "\"\",\"a\",\"y\"\n\"1\",1,2\n\"2\",2,3\n\"3\",5,1\n\"4\",4,4\n",
	} {
		ds := rawOf(t, writeFile(t, name+".csv", in))
		w := ds.Warnings()
		if ds.D() != 1 || ds.XTrain.At(2, 0) != 5 || len(w) != 1 || w[0].Kind != SkippedColumns || !slices.Equal(w[0].Columns, []string{"1"}) {
			t.Errorf("%s: d = %d, warnings %+v", name, ds.D(), w)
		}
		if ds := rawOf(t, writeFile(t, name+"2.csv", in), Inputs("1", "a")); ds.D() != 2 || len(ds.Warnings()) != 0 {
			t.Errorf("%s: Inputs(1, a): d = %d, warnings %v", name, ds.D(), ds.Warnings())
		}
	}
}

// TestLoadCSVTestFileByName: a test file with the training file's columns
// in another order is read by name; one without a header by position; a
// missing column is an error naming it.
func TestLoadCSVTestFileByName(t *testing.T) {
	train := writeFile(t, "train.csv", "y,a,b\n1,10,100\n2,20,200\n4,30,300\n")
	for name, in := range map[string]string{
		"reordered":   "b,extra,y,a\n500,x,7,50\n600,y,8,60\n",
		"by position": "7,50,500\n8,60,600\n",
	} {
		ds := rawOf(t, train, Target("y"), TestFile(writeFile(t, "test.csv", in)))
		if !mat.Equal(ds.XTest, mat.NewDense(2, 2, []float64{50, 500, 60, 600})) || !slices.Equal(ds.YTest, []float64{7, 8}) {
			t.Errorf("%s: X %v y %v", name, mat.Formatted(ds.XTest), ds.YTest)
		}
	}
	for name, tc := range map[string]struct {
		in   string
		says string
	}{
		"missing input":  {"y,a\n1,2\n", `input column "b"`},
		"missing target": {"a,b\n1,2\n", `target column "y"`},
		"other width":    {"1,2\n", "has 2 columns but the training file has 3"},
	} {
		_, err := LoadCSV(train, Target("y"), TestFile(writeFile(t, "bad.csv", tc.in)))
		if !errors.Is(err, ErrColumns) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "bad.csv") {
			t.Errorf("%s: %v, want ErrColumns saying %q", name, err, tc.says)
		}
	}
}

// TestLoadCSVColumnErrors: a column that cannot be chosen says which and
// what the columns are.
func TestLoadCSVColumnErrors(t *testing.T) {
	path := writeFile(t, "c.csv", "y,a,b\n1,2,3\n4,5,6\n")
	dup := writeFile(t, "d.csv", "y,a,a\n1,2,3\n4,5,6\n")
	for _, tc := range []struct {
		path string
		opts []Option
		want error
		says string
	}{
		{path, []Option{Target("z")}, ErrColumns, `data: bad columns: ` + path + `: Target: no column "z": give a name ("y", "a", "b") or a number 1-3`},
		{path, []Option{Target("4")}, ErrColumns, `no column "4"`},
		{path, []Option{Target("y"), Inputs("a", "y")}, ErrColumns, `"y" is the target column`},
		{path, []Option{Target("y"), Inputs("a", "2")}, ErrColumns, "column 2 is given twice"},
		{path, []Option{Inputs()}, ErrOption, "Inputs()"},
		{path, []Option{Target(" ")}, ErrOption, "Target"},
		{path, []Option{Header(HeaderRule(5))}, ErrOption, "header rule"},
		{dup, []Option{Target("y"), Inputs("a")}, ErrColumns, `"a" names columns 2 and 3`},
		{writeFile(t, "h.csv", "y,a\n"), nil, ErrEmpty, "header line and no data rows"},
		{writeFile(t, "q.csv", "y,\"a\n1,2\n"), nil, ErrNotNumber, "not closed on its line"},
		{writeFile(t, "u.csv", ",y\n1,2\n3,4\n"), nil, ErrNoInputs, "unnamed"},
		{writeFile(t, "s.csv", "a;b;y\n1;2;3\n4;5;6\n"), nil, ErrNoInputs, "fields are separated by commas only"},
		{writeFile(t, "s2.csv", "a,b\n1,2;5\n4,5\n"), nil, ErrNotNumber, `line 2 column 2: "2;5"; fields are separated by commas only`},
		{path, []Option{Split(1)}, ErrOption, "Split applies only to Load, not LoadCSV"},
		{path, []Option{TestData(mat.NewDense(1, 2, nil), []float64{1})}, ErrOption, "TestData applies only to New"},
	} {
		_, err := LoadCSV(tc.path, tc.opts...)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: got %v, want %v saying %q", tc.opts, err, tc.want, tc.says)
		}
	}
}

// TestLoadCSVMissing: every missing-value marker is an error naming its
// line and column (in a column used); DropMissing drops those rows, in
// the training and the test file, and counts them.
func TestLoadCSVMissing(t *testing.T) {
	for _, m := range []string{"", " ", "NA", "na", "N/A", "n/a", "NaN", "nan", "-nan", "NULL", "None", "#N/A", "<NA>", "?"} {
		path := writeFile(t, "m.csv", "y,a,b\n1,2,3\n4,"+m+",6\n7,8,9\n")
		_, err := LoadCSV(path, Target("y"))
		if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "line 3 column 2 (a) is") || !strings.Contains(err.Error(), "--drop-missing") {
			t.Errorf("%q: %v", m, err)
		}
		if !errors.Is(err, ErrNotNumber) && !errors.Is(err, ErrNonFinite) {
			t.Errorf("%q: %v matches neither ErrNotNumber nor ErrNonFinite", m, err)
		}
		// Not used: no error.
		if ds := rawOf(t, path, Target("y"), Inputs("b")); ds.NTrain() != 3 {
			t.Errorf("%q in a column not used: %v", m, ds)
		}
	}
	train := writeFile(t, "tr.csv", "y,a\n1,2\n,3\n4,5\n6,NA\n7,8\n")
	test := writeFile(t, "te.csv", "y,a\n1,?\n2,3\n")
	ds := rawOf(t, train, Target("y"), TestFile(test), DropMissing(true))
	if !slices.Equal(ds.YTrain, []float64{1, 4, 7}) || !mat.Equal(ds.XTrain, mat.NewDense(3, 1, []float64{2, 5, 8})) || !slices.Equal(ds.YTest, []float64{2}) {
		t.Errorf("DropMissing: y %v X %v test y %v", ds.YTrain, mat.Formatted(ds.XTrain), ds.YTest)
	}
	w := ds.Warnings()
	if len(w) != 1 || w[0].Kind != DroppedRows || w[0].Count != 3 || !strings.Contains(w[0].Message, "dropped 3 rows with a missing value (2 training, 1 test") ||
		!strings.Contains(w[0].Message, "line 3, line 5, "+test+" line 2") {
		t.Errorf("DropMissing warning: %+v", w)
	}
	if !ds.Columns.DropMissing {
		t.Error("Columns.DropMissing not recorded")
	}
	if _, err := LoadCSV(writeFile(t, "all.csv", "y,a\n1,\n2,NA\n"), DropMissing(true), Target("y")); !errors.Is(err, ErrEmpty) {
		t.Errorf("every row missing: %v", err)
	}
	if _, err := LoadCSV(writeFile(t, "one.csv", "y,a\n1,\n2,3\n"), DropMissing(true), Target("y")); !errors.Is(err, ErrTooFew) {
		t.Errorf("one row left: %v", err)
	}
	// An infinity is not missing: an error even with DropMissing.
	if _, err := LoadCSV(writeFile(t, "inf.csv", "y,a\n1,2\n3,-inf\n5,6\n"), DropMissing(true)); !errors.Is(err, ErrNonFinite) || errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "line 3 column 2") {
		t.Errorf("-inf with DropMissing: %v", err)
	}
}

// TestColumnsOptions: a dataset's Columns read its file again to the same
// numbers, and describe a consistent choice.
func TestColumnsOptions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		opts []Option
	}{
		{"y,a,b\n1,2,3\n4,5,6\n7,8,10\n", []Option{Target("y"), Inputs("b", "a")}},
		{"1,2,3\n4,5,6\n7,8,10\n", []Option{Target("2")}},
		{"x,x,y,\n1,2,3,0\n4,5,NA,1\n7,8,10,2\n5,5,5,5\n", []Option{Target("3"), Inputs("2", "4"), DropMissing(true)}},
	} {
		path := writeFile(t, "o.csv", tc.in)
		ds, err := LoadCSV(path, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		again, err := LoadCSV(path, ds.Columns.Options()...)
		if err != nil || again.Fingerprint() != ds.Fingerprint() || !slices.Equal(again.Columns.Inputs, ds.Columns.Inputs) {
			t.Errorf("%q: read again with %+v: %v", tc.in, ds.Columns, err)
		}
		if err := ds.Columns.Check(ds.D()); err != nil {
			t.Errorf("Check: %v", err)
		}
		if err := ds.Columns.Check(ds.D() + 1); !errors.Is(err, ErrColumns) {
			t.Errorf("Check(d+1): %v", err)
		}
	}
	if (Columns{}).Options() != nil || (Columns{}).Check(3) != nil {
		t.Error("zero Columns")
	}
	if err := (Columns{Names: []string{"a", "b"}, Inputs: []int{0}, Target: 0}).Check(1); !errors.Is(err, ErrColumns) {
		t.Errorf("target among the inputs: %v", err)
	}
}

// TestLoadPoints: points are matched to the dataset's columns by name
// (other columns ignored), else by position.
func TestLoadPoints(t *testing.T) {
	ds := rawOf(t, writeFile(t, "tr.csv", "y,a,b\n1,10,100\n2,20,200\n4,30,300\n"), Target("y"))
	want := mat.NewDense(2, 2, []float64{50, 500, 60, 600})
	for name, in := range map[string]string{
		"by name":        "b,a\n500,50\n600,60\n",
		"with target":    "id,y,b,a\nx,,500,50\ny,NA,600,60\n",
		"inputs only":    "50,500\n60,600\n",
		"training width": "NA,50,500\n,60,600\n",
	} {
		got, err := ds.LoadPoints(writeFile(t, "p.csv", in))
		if err != nil || !mat.Equal(got, want) {
			t.Errorf("%s: %v %v", name, err, got)
		}
	}
	for name, tc := range map[string]struct {
		in   string
		want error
		says string
	}{
		"missing":     {"a,b\n1,2\n3,NA\n", ErrMissing, "p.csv line 3 column 2 (b) is \"NA\"; fill it in or remove the row"},
		"no column":   {"a,c\n1,2\n", ErrColumns, `"b"`},
		"width":       {"1,2,3,4\n", ErrColumns, "has 4 columns: give the training file's 3, or the 2 inputs (a, b)"},
		"empty":       {"\n", ErrEmpty, "no data rows"},
		"text":        {"a,b\n1,x\n", ErrNotNumber, `line 2 column 2: "x"`},
		"infinite":    {"1,+Inf\n", ErrNonFinite, "line 1 column 2"},
		"header only": {"a,b\n", ErrEmpty, "header line"},
	} {
		_, err := ds.LoadPoints(writeFile(t, "p.csv", tc.in))
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: got %v, want %v saying %q", name, err, tc.want, tc.says)
		}
	}
	if _, err := ds.LoadPoints(writeFile(t, "p.csv", "1,2\n"), Subset(3)); !errors.Is(err, ErrOption) {
		t.Errorf("Subset: %v", err)
	}
	// Data not from a CSV file: the file holds the inputs, with or without a header.
	syn, err := Synthetic(20, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"50,500\n60,600\n", "u,v\n50,500\n60,600\n"} {
		if got, err := syn.LoadPoints(writeFile(t, "p.csv", in)); err != nil || !mat.Equal(got, want) {
			t.Errorf("synthetic, %q: %v %v", in, err, got)
		}
	}
	if _, err := syn.LoadPoints(writeFile(t, "p.csv", "1,2,3\n")); !errors.Is(err, ErrColumns) || !strings.Contains(err.Error(), "give the 2 input columns") {
		t.Errorf("synthetic, 3 columns: %v", err)
	}
}

// kinds returns the kinds of ds's warnings.
func kinds(ds *Dataset) []WarningKind {
	var k []WarningKind
	for _, w := range ds.Warnings() {
		k = append(k, w.Kind)
	}
	return k
}

// TestWarnings: each warning from a small file, and none from good data.
func TestWarnings(t *testing.T) {
	good := "y,a,b\n1,0.5,3\n2.5,1,2\n0,2,7\n4,3,1\n3,5,5\n"
	for _, tc := range []struct {
		name, in string
		opts     []Option
		want     []WarningKind
		says     string
	}{
		{"good", good, nil, nil, ""},
		{"constant target", "a,b,y\n1,2,5\n2,4,5\n3,1,5\n4,4,5\n5,0,5\n", nil, []WarningKind{ConstantTarget}, "constant (5 in all 5 training rows)"},
		{"constant inputs", "a,b,c,y\n1,7,0,1\n2,7,0,2\n3,7,0,5\n4,7,0,1\n5,7,0,3\n", nil, []WarningKind{ConstantInputs}, "input columns b, c are constant"},
		{"duplicates", "a,b,y\n1,2,1\n3,4,2\n1,2,3\n5,6,4\n1,2,5\n3,4,6\n", nil, []WarningKind{DuplicateRows}, "3 of 6 training rows repeat an earlier row's inputs (line 4 repeats line 2)"},
		{"few rows", "a,b,c,y\n1,2,3,1\n2,1,4,2\n3,3,1,3\n", nil, []WarningKind{FewRows}, "3 training rows for d+2 = 5 hyperparameters"},
		{"extreme relative", "a,y\n1,1000000000.01\n2,1000000000.03\n3,1000000000.02\n4,1000000000.05\n", nil, []WarningKind{ExtremeScale}, "relative spread below 1e-07"},
		{"extreme, not normalised", "a,y\n1,1000\n2,3000\n3,2000\n4,5000\n", []Option{Normalise(false)}, []WarningKind{ExtremeScale}, "not normalised"},
		{"large, normalised", "a,y\n1,1000\n2,3000\n3,2000\n4,5000\n", nil, nil, ""},
		{"two rows", "a,y\n1,1\n1,1\n", nil, []WarningKind{ConstantTarget, ConstantInputs, DuplicateRows, FewRows}, ""},
	} {
		ds, err := LoadCSV(writeFile(t, "w.csv", tc.in), tc.opts...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := kinds(ds); !slices.Equal(got, tc.want) {
			t.Errorf("%s: kinds %v, want %v (%v)", tc.name, got, tc.want, ds.Warnings())
		}
		if tc.says != "" && !strings.Contains(ds.Warnings()[0].Message, tc.says) {
			t.Errorf("%s: %q does not say %q", tc.name, ds.Warnings()[0].Message, tc.says)
		}
	}
	// The constant target normalises without dividing by zero: zeros, and
	// back to 5 in the data's units.
	ds, err := LoadCSV(writeFile(t, "c.csv", "a,y\n1,5\n2,5\n3,5\n"))
	if err != nil {
		t.Fatal(err)
	}
	back := make([]float64, 3)
	if err := ds.Stats.OriginalMeanTo(back, ds.YTrain); err != nil || !slices.Equal(ds.YTrain, []float64{0, 0, 0}) || ds.Stats.YStd != 1 || !slices.Equal(back, []float64{5, 5, 5}) {
		t.Errorf("constant target: y %v, std %v, back %v", ds.YTrain, ds.Stats.YStd, back)
	}
	// One row is an error, also when Subset leaves one.
	if _, err := LoadCSV(writeFile(t, "one.csv", "a,b,y\n1,2,3\n")); !errors.Is(err, ErrTooFew) || !strings.Contains(err.Error(), "a single training row") {
		t.Errorf("one row: %v", err)
	}
	if _, err := LoadCSV(writeFile(t, "g.csv", good), Subset(1)); !errors.Is(err, ErrTooFew) {
		t.Errorf("Subset(1): %v", err)
	}
	// The warnings come from the training rows left by Subset, the same
	// for Synthetic and New.
	if ds, err := Synthetic(3, 4, 1); err != nil || !slices.Equal(kinds(ds), []WarningKind{FewRows}) {
		t.Errorf("Synthetic(3, 4): %v %v", err, kinds(ds))
	}
}

// TestTinyTarget: a target whose squared deviations underflow keeps its
// spread when z-scored (its variance used to round to 0).
func TestTinyTarget(t *testing.T) {
	ds, err := New(mat.NewDense(3, 1, []float64{1, 2, 3}), []float64{1e-200, 2e-200, 3e-200})
	if err != nil {
		t.Fatal(err)
	}
	z := math.Sqrt(1.5) // (x − mean)/std for x = mean ± std·√1.5
	if !approxEq(ds.YTrain[0], -z, 1e-12) || math.Abs(ds.YTrain[1]) > 1e-12 || !approxEq(ds.YTrain[2], z, 1e-12) {
		t.Errorf("z-scored tiny target: %v, want ∓%v", ds.YTrain, z)
	}
}
