package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/internal/ucitest"
)

// gzLines returns a scanner over the lines of the gzipped file at path,
// closed when the test ends.
func gzLines(t *testing.T, path string) *bufio.Scanner {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return bufio.NewScanner(zr)
}

// maskCounts counts, independently of the package's parser, the rows of a
// mask file and the test rows (a "1" in column split) of each split.
func maskCounts(t *testing.T, path string) (rows int, tests [NumSplits]int) {
	t.Helper()
	sc := gzLines(t, path)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		rows++
		for s, v := range strings.Split(sc.Text(), ",") {
			if strings.TrimSpace(v) == "1" {
				tests[s]++
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows, tests
}

// The README table of /work/shared/data/uci.
var uciTable = []struct {
	name            string
	rows, cols, d   int
	nTrain0, nTest0 int
}{
	{"pol", 15000, 27, 26, 13500, 1500},
	{"elevators", 16599, 19, 18, 14940, 1659},
	{"bike", 17379, 18, 17, 15642, 1737},
	{"protein", 45730, 10, 9, 41157, 4573},
	{"keggdirected", 48827, 21, 20, 43945, 4882},
}

func TestLoadUCIShapes(t *testing.T) {
	dir := ucitest.Dir(t, Names()...)
	for _, tc := range uciTable {
		rows, tests := maskCounts(t, filepath.Join(dir, tc.name, MaskFile))
		if rows != tc.rows {
			t.Fatalf("%s: mask has %d rows, README says %d", tc.name, rows, tc.rows)
		}
		for _, split := range []int{0, 9} {
			ds, err := Load(strings.ToUpper(tc.name[:1])+tc.name[1:], Split(split), Dir(dir))
			if err != nil {
				t.Fatalf("%s split %d: %v", tc.name, split, err)
			}
			if ds.Name != tc.name || ds.Split != split {
				t.Errorf("%s split %d: got name %q split %d", tc.name, split, ds.Name, ds.Split)
			}
			if ds.D() != tc.d || tc.d != tc.cols-1 {
				t.Errorf("%s split %d: d = %d, want %d", tc.name, split, ds.D(), tc.d)
			}
			if got := ds.NTrain() + ds.NTest(); got != tc.rows {
				t.Errorf("%s split %d: n_train + n_test = %d, want %d rows", tc.name, split, got, tc.rows)
			}
			if ds.NTest() != tests[split] {
				t.Errorf("%s split %d: n_test = %d, the mask column has %d ones", tc.name, split, ds.NTest(), tests[split])
			}
			if split == 0 && (ds.NTrain() != tc.nTrain0 || ds.NTest() != tc.nTest0) {
				t.Errorf("%s split 0: n_train %d n_test %d, want %d %d", tc.name, ds.NTrain(), ds.NTest(), tc.nTrain0, tc.nTest0)
			}
			checkZScored(t, ds)
			if r, c := ds.XTrain.Dims(); r != ds.NTrain() || c != tc.d {
				t.Errorf("%s: XTrain is %d×%d", tc.name, r, c)
			}
			if r, c := ds.XTest.Dims(); r != ds.NTest() || c != tc.d {
				t.Errorf("%s: XTest is %d×%d", tc.name, r, c)
			}
		}
	}
}

// TestLoadUCIRowsAndNormalisation checks, against an independent reading of
// the files, that Load keeps the original row order, puts the mask's rows
// in the right part, and z-scores with the training statistics.
func TestLoadUCIRowsAndNormalisation(t *testing.T) {
	const name, split = "elevators", 3
	dir := ucitest.Dir(t, name)
	rawRows := readGzLines(t, filepath.Join(dir, name, DataFile))
	maskRows := readGzLines(t, filepath.Join(dir, name, MaskFile))
	var trainRows, testRows [][]float64
	for i, m := range maskRows {
		if m[split] == 1 {
			testRows = append(testRows, rawRows[i])
		} else {
			trainRows = append(trainRows, rawRows[i])
		}
	}
	raw, err := Load(name, Split(split), Dir(dir), Normalise(false))
	if err != nil {
		t.Fatal(err)
	}
	norm, err := Load(name, Split(split), Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	d := raw.D()
	for i, r := range trainRows {
		for j := 0; j < d; j++ {
			if raw.XTrain.At(i, j) != r[j] {
				t.Fatalf("train row %d col %d: %v, file has %v", i, j, raw.XTrain.At(i, j), r[j])
			}
		}
		if raw.YTrain[i] != r[d] {
			t.Fatalf("train row %d target: %v, file has %v", i, raw.YTrain[i], r[d])
		}
	}
	for i, r := range testRows {
		if raw.XTest.At(i, 0) != r[0] || raw.YTest[i] != r[d] {
			t.Fatalf("test row %d differs from the file", i)
		}
	}
	checkZScored(t, norm)
	// One column by hand: column 2's test values use the training mean/std.
	j := 2
	var mean, ss float64
	for _, r := range trainRows {
		mean += r[j]
	}
	mean /= float64(len(trainRows))
	for _, r := range trainRows {
		ss += (r[j] - mean) * (r[j] - mean)
	}
	std := sqrt(ss / float64(len(trainRows)))
	for i, r := range testRows {
		if want := (r[j] - mean) / std; !approxEq(norm.XTest.At(i, j), want, 1e-12) {
			t.Fatalf("test row %d col %d: %v, want (x-mean)/std = %v", i, j, norm.XTest.At(i, j), want)
		}
	}
	// Mapping back round-trips the targets.
	back := make([]float64, norm.NTest())
	if err := norm.Stats.OriginalMeanTo(back, norm.YTest); err != nil {
		t.Fatal(err)
	}
	for i := range back {
		if !approxEq(back[i], raw.YTest[i], 1e-12) {
			t.Fatalf("OriginalMeanTo: %v, original %v", back[i], raw.YTest[i])
		}
	}
}

// TestLoadUCIErrors: bad names and options are refused before any file is
// looked for.
func TestLoadUCIErrors(t *testing.T) {
	userCache(t)
	dir := t.TempDir()
	_, err := Load("boston", Dir(dir))
	if !errors.Is(err, ErrUnknownDataset) {
		t.Fatalf("unknown name: %v", err)
	}
	for _, n := range Names() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("unknown-name error does not list %s: %v", n, err)
		}
	}
	for _, k := range []int{-1, 10, 12} {
		if _, err := Load("pol", Split(k), Dir(dir)); !errors.Is(err, ErrSplit) || !strings.Contains(err.Error(), "0-9") {
			t.Errorf("Split(%d): %v", k, err)
		}
	}
	for _, n := range []int{0, -5} {
		if _, err := Load("pol", Subset(n), Dir(dir)); !errors.Is(err, ErrSubset) {
			t.Errorf("Subset(%d): %v", n, err)
		}
	}
	if _, err := Load("pol", TestFile("x.csv"), Dir(dir)); !errors.Is(err, ErrOption) {
		t.Errorf("TestFile with Load: %v", err)
	}
	if _, err := Load("pol", nil); !errors.Is(err, ErrOption) {
		t.Errorf("nil option: %v", err)
	}
}

func readGzLines(t *testing.T, path string) [][]float64 {
	t.Helper()
	var out [][]float64
	sc := gzLines(t, path)
	for sc.Scan() {
		if sc.Text() == "" {
			continue
		}
		out = append(out, parseFloatsStd(t, sc.Text()))
	}
	return out
}

// TestMaskErrors feeds Load small files whose checksums are made to match,
// so the checks behind the checksum are reached: a mask that does not fit
// the data, values other than 0/1, and a split without test rows.
func TestMaskErrors(t *testing.T) {
	saved := uciDatasets[0]
	t.Cleanup(func() { uciDatasets[0] = saved })
	gz := func(s string) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(s))
		zw.Close()
		return buf.Bytes()
	}
	row := func(v string) string { return strings.Repeat(v+",", NumSplits-1) + v + "\n" }
	for _, tc := range []struct {
		name, data, mask string
		want             error
		says             string
	}{
		{"rows", "1,2\n3,4\n", row("0"), ErrMask, "expected 2×10"},
		{"value", "1,2\n3,4\n", row("0") + row("2"), ErrMask, "expected 0 or 1"},
		{"no test rows", "1,2\n3,4\n", row("0") + row("0"), ErrMask, "0 test rows"},
		{"data only target", "1\n3\n", row("0") + row("1"), ErrNoInputs, "no inputs"},
		{"ok", "1,2\n3,4\n5,9\n", row("0") + row("1") + row("0"), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "pol"), 0o755)
			d, m := gz(tc.data), gz(tc.mask)
			os.WriteFile(filepath.Join(dir, "pol", DataFile), d, 0o644)
			os.WriteFile(filepath.Join(dir, "pol", MaskFile), m, 0o644)
			uciDatasets[0].DataSHA256, uciDatasets[0].MaskSHA256 = sha256Hex(d), sha256Hex(m)
			ds, err := Load("pol", Dir(dir), Normalise(false))
			if tc.want == nil {
				if err != nil || ds.NTrain() != 2 || ds.NTest() != 1 || ds.YTrain[1] != 9 || ds.XTest.At(0, 0) != 3 {
					t.Fatalf("got %v, %v", ds, err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}
