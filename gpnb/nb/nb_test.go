package nb

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/data"
)

func panicOf(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

func TestMustAndCheck(t *testing.T) {
	boom := errors.New("boom")
	if Must(3, nil) != 3 {
		t.Error("Must should return its value")
	}
	if a, b := Must2("a", 2, nil); a != "a" || b != 2 {
		t.Error("Must2 should return its values")
	}
	for name, f := range map[string]func(){
		"Must":  func() { Must(3, boom) },
		"Must2": func() { Must2(1, 2, boom) },
		"Check": func() { Check(boom) },
	} {
		if v := panicOf(f); v != boom {
			t.Errorf("%s panicked with %v, want the error", name, v)
		}
	}
	if v := panicOf(func() { Check(nil) }); v != nil {
		t.Errorf("Check(nil) panicked with %v", v)
	}
}

// This test is compiled from the checkout, whose root is two folders up.
func TestCheckout(t *testing.T) {
	want, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if got := Checkout(); got != want {
		t.Errorf("Checkout() = %q, want %q", got, want)
	}
}

func TestUCIPlaces(t *testing.T) {
	t.Setenv("GPNB_DATA", "/some/where")
	if got := UCIPlaces(); !slices.Equal(got, []string{"/some/where"}) {
		t.Errorf("with GPNB_DATA: %q", got)
	}
	t.Setenv("GPNB_DATA", "")
	t.Setenv("GONB_DIR", "/home/me/work/notebooks")
	t.Setenv("XDG_CACHE_HOME", "/cache")
	got := UCIPlaces()
	want := []string{filepath.Join(filepath.Dir(Checkout()), "shared", "data", "uci"),
		"/home/me/work/shared/data/uci", "/home/me/shared/data/uci", "/cache/gpnb/uci"}
	if !slices.Equal(got, want) {
		t.Errorf("UCIPlaces() = %q\nwant %q", got, want)
	}
}

// Without the files: synthetic data of the dataset's shape, the same bits
// as data.Synthetic with seed split+1.
func TestLoadOrSyntheticFallsBack(t *testing.T) {
	t.Setenv("GPNB_DATA", t.TempDir())
	ds, err := LoadOrSynthetic("pol", 2, 120)
	if err != nil {
		t.Fatal(err)
	}
	want, err := data.Synthetic(120, 26, 3)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Name != "synthetic" || ds.NTrain() != 120 || ds.D() != 26 || ds.Fingerprint() != want.Fingerprint() {
		t.Errorf("fallback %s, want %s", ds, want)
	}
	ds, err = LoadOrSynthetic("bike", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ds.NTrain() != 17379-1737 || ds.D() != 17 {
		t.Errorf("bike fallback %s: want bike's 15642 training points and 17 inputs", ds)
	}
	for _, tc := range []struct {
		name          string
		split, subset int
		want          string
	}{
		{"mnist", 0, 0, "not a UCI dataset"},
		{"synthetic-10-2-1", 0, 0, "not a UCI dataset"},
		{"pol", 10, 0, "split 10"},
		{"pol", 0, -1, "subset -1"},
	} {
		if _, err := LoadOrSynthetic(tc.name, tc.split, tc.subset); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadOrSynthetic(%q, %d, %d): %v, want %q", tc.name, tc.split, tc.subset, err, tc.want)
		}
	}
}

// With the files (GPNB_DATA, as `make test` sets it): the UCI data.
func TestLoadOrSyntheticLoads(t *testing.T) {
	dir := os.Getenv("GPNB_DATA")
	if dir == "" || FindUCI("pol") == "" {
		t.Skip("pol is not under GPNB_DATA")
	}
	ds, err := LoadOrSynthetic("pol", 1, 200)
	if err != nil {
		t.Fatal(err)
	}
	want, err := data.Load("pol", data.Dir(dir), data.Split(1), data.Subset(200))
	if err != nil {
		t.Fatal(err)
	}
	if ds.Fingerprint() != want.Fingerprint() {
		t.Errorf("got %s, want %s", ds, want)
	}
}

func TestWorkDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	d := WorkDir("nb-test")
	if string(d) != filepath.Join(os.TempDir(), "gpnb-notebooks", "nb-test") {
		t.Errorf("WorkDir = %q", d)
	}
	if fi, err := os.Stat(string(d)); err != nil || !fi.IsDir() {
		t.Fatalf("WorkDir should create the folder: %v", err)
	}
	in := map[string][]float64{"a": {1, 2.5, math.Pi}}
	if err := d.Save("x.json", in); err != nil {
		t.Fatal(err)
	}
	var out map[string][]float64
	if err := d.Load("x.json", &out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out["a"], in["a"]) {
		t.Errorf("round trip %v, want %v", out, in)
	}
	if err := d.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := d.Load("x.json", &out); err == nil || !strings.Contains(err.Error(), "run the cell that saves it first") {
		t.Errorf("after Reset: %v", err)
	}
	if err := os.WriteFile(d.Path("bad.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.Load("bad.json", &out); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("bad JSON: %v", err)
	}
}
