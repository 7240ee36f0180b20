package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseCSVValues(t *testing.T) {
	in := "\xef\xbb\xbf1, 2.5,-3e2\r\n\n  \n4,\t0x1p-2 ,1e-400\n7,8,9"
	tb, err := scanCSV(strings.NewReader(in), "in")
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 2.5, -300, 4, 0.25, 0, 7, 8, 9}
	if tb.rows != 3 || tb.cols != 3 {
		t.Fatalf("shape %d×%d, want 3×3", tb.rows, tb.cols)
	}
	for i, w := range want {
		if tb.vals[i] != w {
			t.Errorf("value %d = %v, want %v", i, tb.vals[i], w)
		}
	}
	// A line longer than the reader's buffer.
	long := strings.Repeat("1.25,", 30000) + "2\n" + strings.Repeat("3,", 30000) + "4\n"
	tb, err = scanCSV(strings.NewReader(long), "long")
	if err != nil || tb.rows != 2 || tb.cols != 30001 || tb.vals[30000] != 2 || tb.vals[30001] != 3 {
		t.Fatalf("long lines: %d×%d %v", tb.rows, tb.cols, err)
	}
}

// TestParseCSVErrors: what a bad field or line says, read with the
// defaults (and HeaderNo for a header line).
func TestParseCSVErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     error
		says     []string
		opts     []Option
	}{
		{"NaN", "1,2\n3,NaN\n", ErrNonFinite, []string{"line 2 column 2", "NaN"}, nil},
		{"Inf", "1,2\n-Inf,4\n", ErrNonFinite, []string{"line 2 column 1"}, nil},
		{"overflow", "1,1e400\n", ErrNonFinite, []string{"line 1 column 2", "overflows"}, nil},
		{"ragged", "1,2,3\n4,5,6\n7,8\n", ErrRagged, []string{"line 3 has 2 fields, expected 3"}, nil},
		{"ragged more", "1,2\n3,4,5\n", ErrRagged, []string{"line 2 has 3 fields, expected 2"}, nil},
		{"text", "1,2\n3,abc\n", ErrNotNumber, []string{"line 2 column 2", `"abc"`}, nil},
		{"header", "x,y\n1,2\n", ErrNotNumber, []string{"line 1 column 1", "header"}, []Option{Header(HeaderNo)}},
		{"empty field", "1,,3\n", ErrNotNumber, []string{"line 1 column 2 is empty"}, nil},
		{"trailing comma", "1,2,\n", ErrNotNumber, []string{"column 3 is empty"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadCSV(writeFile(t, "f.csv", tc.in), tc.opts...)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			for _, s := range append(tc.says, "f.csv") {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

func TestLoadCSV(t *testing.T) {
	train := writeFile(t, "toy.csv", "1,10,100\n2,10,200\n3,10,600\n")
	test := writeFile(t, "toy_test.csv", "4,10,300\n0,11,100\n")
	ds, err := LoadCSV(train, TestFile(test))
	if err != nil {
		t.Fatal(err)
	}
	if ds.Name != "toy" || ds.NTrain() != 3 || ds.NTest() != 2 || ds.D() != 2 {
		t.Fatalf("got %v", ds)
	}
	// By hand: column 0 has mean 2 and std sqrt(2/3); column 1 is constant
	// (std 1); the target has mean 300 and std sqrt((200²+100²+300²)/3).
	s0 := math.Sqrt(2.0 / 3)
	sy := math.Sqrt((200.0*200 + 100*100 + 300*300) / 3)
	st := ds.Stats
	if st.XMean[0] != 2 || !approxEq(st.XStd[0], s0, 1e-15) || st.XMean[1] != 10 || st.XStd[1] != 1 {
		t.Errorf("input stats %v %v", st.XMean, st.XStd)
	}
	if st.YMean != 300 || !approxEq(st.YStd, sy, 1e-15) {
		t.Errorf("target stats %v %v, want 300 %v", st.YMean, st.YStd, sy)
	}
	checks := []struct{ got, want float64 }{
		{ds.XTrain.At(0, 0), (1 - 2) / s0},
		{ds.XTrain.At(2, 1), 0},
		{ds.YTrain[2], 300 / sy},
		{ds.XTest.At(0, 0), 2 / s0},
		{ds.XTest.At(1, 1), 1},
		{ds.YTest[1], -200 / sy},
	}
	for i, c := range checks {
		if !approxEq(c.got, c.want, 1e-14) {
			t.Errorf("check %d: %v, want %v", i, c.got, c.want)
		}
	}
	raw, err := LoadCSV(train, TestFile(test), Normalise(false))
	if err != nil {
		t.Fatal(err)
	}
	if raw.Stats.Normalised || raw.XTest.At(1, 1) != 11 || raw.YTrain[2] != 600 {
		t.Errorf("Normalise(false) changed the values: %v", raw)
	}
	// No test file: no test part.
	only, err := LoadCSV(train)
	if err != nil || only.NTest() != 0 || only.XTest != nil {
		t.Errorf("without TestFile: %v, %v", only, err)
	}
}

func TestLoadCSVGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte("1,2\n3,4\n5,7\n"))
	zw.Close()
	p := writeFile(t, "z.csv.gz", buf.String())
	ds, err := LoadCSV(p, Normalise(false))
	if err != nil {
		t.Fatal(err)
	}
	if ds.Name != "z" || ds.NTrain() != 3 || ds.YTrain[2] != 7 || ds.XTrain.At(1, 0) != 3 {
		t.Errorf("gzip CSV: %v %v", ds, ds.YTrain)
	}
}

func TestLoadCSVErrors(t *testing.T) {
	good := writeFile(t, "good.csv", "1,2,3\n4,5,6\n")
	for _, tc := range []struct {
		name string
		path string
		opts []Option
		want error
		says string
	}{
		{"empty", writeFile(t, "e.csv", ""), nil, ErrEmpty, "no data rows"},
		{"blank lines only", writeFile(t, "b.csv", "\n \n\r\n"), nil, ErrEmpty, "no data rows"},
		{"target only", writeFile(t, "t.csv", "1\n2\n"), nil, ErrNoInputs, "no inputs"},
		{"nan", writeFile(t, "n.csv", "1,2\nnan,3\n"), nil, ErrNonFinite, "line 2 column 1"},
		{"test columns", good, []Option{TestFile(writeFile(t, "t2.csv", "1,2\n"))}, ErrColumns, "has 2 columns but the training file"},
		{"test bad", good, []Option{TestFile(writeFile(t, "t3.csv", "1,2,x\n"))}, ErrNotNumber, "t3.csv line 1 column 3"},
		{"split", good, []Option{Split(1)}, ErrOption, "Split applies only to Load"},
		{"subset", good, []Option{Subset(0)}, ErrSubset, "> 0"},
		{"test size", good, []Option{TestSize(3)}, ErrOption, "TestSize"},
		{"empty test path", good, []Option{TestFile("")}, ErrOption, "TestFile"},
		{"overflowing variance", writeFile(t, "big.csv", "1e300,1\n-1e300,2\n"), nil, ErrNonFinite, "too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadCSV(tc.path, tc.opts...)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
	if _, err := LoadCSV(filepath.Join(t.TempDir(), "missing.csv")); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzParseCSV checks that the scanner never panics and that what it
// accepts is a well-formed table: for a line without quotes, a reference
// split with the bytes package agrees on every field, a finite number
// stored as such and any other field as NaN or ±Inf with its text kept;
// every field of a quoted line is such a number or has its text kept.
func FuzzParseCSV(f *testing.F) {
	for _, s := range []string{
		"", "\n", "1", "1,2\n3,4\n", "1,2\n3\n", "a,b\n1,2", "NaN,1", "1e400,0", "1,,2", " 1 ,\t2\r\n",
		"\xef\xbb\xbf1,2", "0x1p-2,1_0", "-0,+1.5e-3\n\n\n7,8", ",", "1,2,\n", "inf", "\x00,\xff",
		`"a,b",1`, `"x""y",2`, `"1`, `"1" x,2`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		tb, err := scanCSV(bytes.NewReader(in), "fuzz")
		if err != nil {
			if tb != nil {
				t.Fatalf("error %v with a table", err)
			}
			return
		}
		if len(tb.vals) != tb.rows*tb.cols || len(tb.lines) != tb.rows || (tb.rows > 0 && len(tb.first) != tb.cols) {
			t.Fatalf("%d values, %d lines, %d first fields for %d×%d", len(tb.vals), len(tb.lines), len(tb.first), tb.rows, tb.cols)
		}
		for i, v := range tb.vals {
			text, odd := tb.odd[[2]int{i / tb.cols, i % tb.cols}]
			if odd != (math.IsNaN(v) || math.IsInf(v, 0)) {
				t.Fatalf("value %d = %v, text kept: %v", i, v, odd)
			}
			if odd && kindOf(text) == numberCell {
				t.Fatalf("value %d = %v from the number %q", i, v, text)
			}
		}
		// Reference: split lines and fields with the bytes package.
		row := 0
		for i, line := range bytes.Split(in, []byte("\n")) {
			if i == 0 {
				line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
			}
			line = bytes.TrimRight(line, "\r")
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if tb.lines[row] != i+1 {
				t.Fatalf("row %d is line %d, expected %d", row, tb.lines[row], i+1)
			}
			row++
			if bytes.IndexByte(line, '"') >= 0 {
				continue
			}
			fields := bytes.Split(line, []byte(","))
			if len(fields) != tb.cols {
				t.Fatalf("accepted a line with %d fields in a %d-column table", len(fields), tb.cols)
			}
			for j, fl := range fields {
				fl = bytes.Trim(fl, " \t")
				got := tb.vals[(row-1)*tb.cols+j]
				v, err := strconv.ParseFloat(string(fl), 64)
				if (err == nil || errors.Is(err, strconv.ErrRange)) && !math.IsNaN(v) && !math.IsInf(v, 0) {
					if math.Float64bits(v) != math.Float64bits(got) {
						t.Fatalf("line %d field %d: %v, reference %v", i+1, j+1, got, v)
					}
				} else if tb.odd[[2]int{row - 1, j}] != string(fl) {
					t.Fatalf("line %d field %d: text %q kept, reference %q", i+1, j+1, tb.odd[[2]int{row - 1, j}], fl)
				}
			}
		}
		if row != tb.rows {
			t.Fatalf("%d rows, reference has %d", tb.rows, row)
		}
	})
}
