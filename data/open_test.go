package data

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestOpen: every name a command takes loads what its own loader loads,
// names itself in Source, and an unknown name says what would work.
func TestOpen(t *testing.T) {
	// synthetic-N-D-SEED with split k is Synthetic(N, D, SEED+k).
	got, err := Open("synthetic-40-3-7", Split(2), Subset(30))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Synthetic(40, 3, 9, Subset(30))
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(got.XTrain, want.XTrain) || got.Source != "synthetic-40-3-7" || got.Split != 2 {
		t.Errorf("synthetic: source %q split %d, same data %v", got.Source, got.Split, mat.Equal(got.XTrain, want.XTrain))
	}
	if s, _ := Synthetic(40, 3, 7); s.Source != SyntheticName(40, 3, 7) || s.Split != 0 {
		t.Errorf("Synthetic's source %q", s.Source)
	}
	// A CSV path.
	path := filepath.Join(t.TempDir(), "mine.csv")
	if err := os.WriteFile(path, []byte("1,2,3\n4,5,6\n7,8,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	csv, err := Open(path)
	if err != nil || csv.NTrain() != 3 || csv.D() != 2 || csv.Source != path {
		t.Errorf("CSV: %v, %+v", err, csv)
	}
	// Points in the training file's layout give its input columns; for a
	// dataset of three inputs, the same file is three points.
	pts, err := csv.LoadPoints(path)
	if err != nil || !mat.Equal(pts, mat.NewDense(3, 2, []float64{1, 2, 4, 5, 7, 8})) {
		t.Errorf("LoadPoints: %v %v", err, pts)
	}
	pts, err = want.LoadPoints(path)
	if err != nil || !mat.Equal(pts, mat.NewDense(3, 3, []float64{1, 2, 3, 4, 5, 6, 7, 8, 10})) {
		t.Errorf("LoadPoints, d = 3: %v %v", err, pts)
	}
	for _, bad := range []string{"mnist", "synthetic-1-3-0", "synthetic-10-2"} {
		if _, err := Open(bad); !errors.Is(err, ErrUnknownDataset) {
			t.Errorf("%q: got %v, want ErrUnknownDataset", bad, err)
		}
	}
	if u, ok := LookupUCI("POL"); !ok || u.D != 26 || u.TrainSize() != 13500 {
		t.Errorf("LookupUCI(POL) = %+v, %v", u, ok)
	}
}

// TestOpenOrSynthetic: a UCI dataset from the folders searched, else,
// without a download, synthetic data of its shape (Synthetic with seed
// split+1); other names as Open.
func TestOpenOrSynthetic(t *testing.T) {
	srv, hits := uciServer(t, nil, nil)
	userCache(t)
	empty := t.TempDir()
	ds, synthetic, err := OpenOrSynthetic("pol", Dir(empty), Split(2), Subset(120), BaseURL(srv.URL), HTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Synthetic(120, 26, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !synthetic || hits.Load() != 0 || ds.Fingerprint() != want.Fingerprint() {
		t.Errorf("fallback: synthetic %v, %d downloads, %s; want %s", synthetic, hits.Load(), ds, want)
	}
	if ds, _, err := OpenOrSynthetic("bike", Dir(empty), Normalise(false)); err != nil || ds.NTrain() != mustUCI(t, "bike").TrainSize() || ds.D() != 17 || ds.Stats.Normalised {
		t.Errorf("bike's shape: %v, %s", err, ds)
	}
	if ds, synthetic, err := OpenOrSynthetic("synthetic-40-3-7", Split(1)); err != nil || synthetic || ds.Source != "synthetic-40-3-7" {
		t.Errorf("a synthetic name: %v, %v, %+v", err, synthetic, ds)
	}
	if _, _, err := OpenOrSynthetic("pol", Split(10)); !errors.Is(err, ErrSplit) {
		t.Errorf("split 10: %v", err)
	}
	src := t.TempDir()
	writeFiles(t, src, fakeUCI(t, "pol"))
	ds, synthetic, err = OpenOrSynthetic("pol", Dir(empty, src), Split(1), Subset(20))
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := Load("pol", Dir(src), Split(1), Subset(20)); synthetic || want == nil || ds.Fingerprint() != want.Fingerprint() {
		t.Errorf("with the files in the second folder: synthetic %v, %s, want %s", synthetic, ds, want)
	}
}
