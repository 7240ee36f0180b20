// Package nb holds the few helpers every gpnb notebook needs, so notebooks
// do not declare them again:
//
//   - Must, Must2 and Check turn an error into a panic, which GoNB shows
//     under the cell and which stops it;
//   - LoadOrSynthetic loads a UCI dataset from wherever its files are on
//     this machine (FindUCI), or else synthetic data of the same shape, and
//     says which;
//   - ShowWarnings prints what a dataset's loader found the data cannot
//     support (data.Dataset.Warnings): a constant target, too few rows, ...;
//   - WorkDir is the folder where a notebook keeps the files its cells pass
//     to one another: GoNB runs every cell as a new process, so values do not
//     survive from one cell to the next, but files (results, checkpoints)
//     do;
//   - ShowBuild prints the build a notebook runs (Build: backend, kernel
//     values, mixed precision, BLAS) and what other builds would add on this
//     machine; gpnb bench prints the same;
//   - PickBackend trains on the GPU when the notebook is built with
//     `%goflags -tags=openblas,cuda` and a device is usable, else on the
//     CPU, and says why.
//
// A notebook's first cell, for a notebook anywhere on disk, is in the
// README ("Notebooks").
package nb

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/gpnb/gpnb/data"
)

// Must returns v, or panics with err when it is not nil.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Must2 is Must for functions that return two values and an error.
func Must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(err)
	}
	return a, b
}

// Check panics with err when it is not nil.
func Check(err error) {
	if err != nil {
		panic(err)
	}
}

// modulePath is the module this package belongs to.
const modulePath = "github.com/gpnb/gpnb"

// Checkout returns the root of the gpnb checkout this package was compiled
// from (the folder of its go.mod), or "" when it was not compiled from one
// (a module cache copy, -trimpath).
func Checkout() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(file))) // <root>/gpnb/nb/nb.go
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if mod, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok && strings.TrimSpace(mod) == modulePath {
			return root
		}
	}
	return ""
}

// envData names the folder of the UCI files, as everywhere in gpnb.
const envData = "GPNB_DATA"

// UCIPlaces returns the folders where the UCI files are looked for, in
// order: $GPNB_DATA when set; else shared/data/uci beside the checkout
// (<checkout>/../shared/data/uci, where `make` looks), beside the
// notebook's folder ($GONB_DIR/../shared/data/uci) and beside its parent
// (for a notebook in the checkout's notebooks/ folder); then the user cache
// folder, where package data downloads them.
func UCIPlaces() []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p = filepath.Clean(p); !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	beside := func(dir string) string { return filepath.Join(dir, "..", "shared", "data", "uci") }
	if dir := os.Getenv(envData); dir != "" {
		add(dir)
	} else {
		if root := Checkout(); root != "" {
			add(beside(root))
		}
		if nb := os.Getenv("GONB_DIR"); nb != "" {
			add(beside(nb))
			add(beside(filepath.Dir(nb)))
		}
	}
	if cache, err := os.UserCacheDir(); err == nil {
		add(filepath.Join(cache, "gpnb", "uci"))
	}
	return out
}

// FindUCI returns the first of UCIPlaces holding UCI dataset name's files
// (name/data.csv.gz and name/test_mask.csv.gz), or "" when none does.
func FindUCI(name string) string {
	u, ok := data.LookupUCI(name)
	for _, dir := range UCIPlaces() {
		if ok && u.In(dir) {
			return dir
		}
	}
	return ""
}

// LoadOrSynthetic loads split split of UCI dataset name (pol, elevators,
// bike, protein, keggdirected) with subset training points (0: all) from
// the first of UCIPlaces that holds its files, never downloading, or else
// synthetic data of its shape (data.OpenOrSynthetic). It prints one line
// saying which, and where it looked, and the data's warnings.
func LoadOrSynthetic(name string, split, subset int) (*data.Dataset, error) {
	u, ok := data.LookupUCI(name)
	if !ok {
		return nil, fmt.Errorf("nb.LoadOrSynthetic: %q is not a UCI dataset: use one of %s (data.Synthetic or data.LoadCSV for other data)", name, strings.Join(data.Names(), ", "))
	}
	if subset < 0 {
		return nil, fmt.Errorf("nb.LoadOrSynthetic: subset %d: use 0 (every training point) or a positive number", subset)
	}
	opts := []data.Option{data.Dir(UCIPlaces()...), data.Split(split)}
	if subset > 0 {
		opts = append(opts, data.Subset(subset))
	}
	ds, synthetic, err := data.OpenOrSynthetic(u.Name, opts...)
	if err != nil {
		return nil, fmt.Errorf("nb.LoadOrSynthetic: %w", err)
	}
	if synthetic {
		fmt.Printf("%s: the UCI files are not on this machine (looked in %s; set %s to their folder), so this is synthetic data of its shape: %s\n",
			u.Name, strings.Join(UCIPlaces(), ", "), envData, ds)
	} else {
		fmt.Printf("%s (UCI files in %s)\n", ds, FindUCI(u.Name))
	}
	ShowWarnings(ds)
	return ds, nil
}

// ShowWarnings prints ds's warnings (data.Dataset.Warnings: a constant
// target, constant inputs, repeated rows, fewer rows than hyperparameters,
// an extreme target scale, rows dropped or columns left out), one a line
// starting "warning: ", and returns them, so that a cell can test their
// kinds. It prints nothing for data without any.
func ShowWarnings(ds *data.Dataset) []data.Warning {
	return showWarnings(os.Stdout, ds)
}

func showWarnings(w io.Writer, ds *data.Dataset) []data.Warning {
	ws := ds.Warnings()
	for _, x := range ws {
		fmt.Fprintf(w, "warning: %s: %s\n", ds.Name, x)
	}
	return ws
}

// Dir is the folder where one notebook keeps its files: results and
// checkpoints that later cells (new processes) read.
type Dir string

// WorkDir returns notebook's folder, os.TempDir()/gpnb-notebooks/notebook,
// creating it. A failure to create it surfaces at the first file written
// there, with the path.
func WorkDir(notebook string) Dir {
	d := filepath.Join(os.TempDir(), "gpnb-notebooks", notebook)
	_ = os.MkdirAll(d, 0o755)
	return Dir(d)
}

// Path returns the path of the file name in the folder.
func (d Dir) Path(name string) string { return filepath.Join(string(d), name) }

// Save writes v as JSON to the file name in the folder, creating the
// folder when needed.
func (d Dir) Save(name string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("nb: saving %s: %w", name, err)
	}
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		return err
	}
	return os.WriteFile(d.Path(name), b, 0o644)
}

// Load reads the JSON file name of the folder into v (a pointer). A missing
// file says which cell to run first.
func (d Dir) Load(name string, v any) error {
	b, err := os.ReadFile(d.Path(name))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("nb: %s does not exist yet: run the cell that saves it first (%w)", d.Path(name), err)
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("nb: reading %s: %w", d.Path(name), err)
	}
	return nil
}

// Reset empties the folder, so a notebook run from the top starts afresh.
func (d Dir) Reset() error {
	if err := os.RemoveAll(string(d)); err != nil {
		return err
	}
	return os.MkdirAll(string(d), 0o755)
}
