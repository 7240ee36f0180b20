package nb

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/internal/ucitest"
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
	t.Setenv("XDG_CACHE_HOME", "/cache")
	if got := UCIPlaces(); !slices.Equal(got, []string{"/some/where", "/cache/gpnb/uci"}) {
		t.Errorf("with GPNB_DATA: %q", got)
	}
	t.Setenv("GPNB_DATA", "")
	t.Setenv("GONB_DIR", "/home/me/work/notebooks")
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
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // a user cache without the files
	t.Setenv("HOME", t.TempDir())
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
	dir := ucitest.Dir(t, "pol")
	want, err := data.Load("pol", data.Dir(dir), data.Split(1), data.Subset(200)) // first: with GPNB_DOWNLOAD=1 it downloads
	if err != nil {
		t.Fatal(err)
	}
	ds, err := LoadOrSynthetic("pol", 1, 200)
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

// TestNewTrains: data made in Go (a matrix and a slice, as a notebook cell
// computes them) become a Dataset with data.New, which trains, predicts
// the held-out points far better than their mean does, and whose warnings
// ShowWarnings prints.
func TestNewTrains(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	f := func(a, b float64) float64 { return math.Sin(3*a) + 0.5*b*b }
	sample := func(n int) (*mat.Dense, []float64) {
		x, y := mat.NewDense(n, 3, nil), make([]float64, n)
		for i := range n {
			a, b := 4*rng.Float64()-2, 2*rng.Float64()-1
			x.SetRow(i, []float64{a, b, 7}) // the third input is constant
			y[i] = f(a, b) + 0.1*rng.NormFloat64()
		}
		return x, y
	}
	x, y := sample(200)
	xt, yt := sample(50)
	ds, err := data.New(x, y, data.TestData(xt, yt))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	ws := showWarnings(&out, ds)
	if len(ws) != 1 || ws[0].Kind != data.ConstantInputs || out.String() != "warning: data: "+ws[0].Message+"\n" || !strings.Contains(ws[0].Message, "input column 2 is constant") {
		t.Errorf("warnings %v, printed %q", ws, out.String())
	}
	o, err := gpnb.NewOptimiser(ds, gpnb.Config{WarmStart: true, Probes: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Run(context.Background(), 30); err != nil {
		t.Fatal(err)
	}
	p, err := o.Predict(xt)
	if err != nil {
		t.Fatal(err)
	}
	// RMSE in the data's units against the spread of the test targets
	// (the RMSE of predicting their mean): the model must explain most of it.
	var se, sv, mean float64
	for _, v := range yt {
		mean += v / float64(len(yt))
	}
	for i, v := range yt {
		se += (p.Data.Mean[i] - v) * (p.Data.Mean[i] - v)
		sv += (mean - v) * (mean - v)
	}
	if rmse, spread := math.Sqrt(se/50), math.Sqrt(sv/50); rmse > 0.3*spread {
		t.Errorf("test RMSE %.3f, against %.3f for the mean", rmse, spread)
	}
}
