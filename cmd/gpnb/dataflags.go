package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/gpnb/gpnb/data"
)

// dataFlags are the dataset flags shared by data, mll, solve, train and
// predict: --data --test --split --subset --subset-seed --normalise
// --data-dir, and for CSV files --header --target --columns
// --drop-missing. --data names a dataset as data.Open reads it: a UCI name,
// synthetic-N-D-SEED, or a CSV file (the same names gpnb reproduce takes).
type dataFlags struct {
	data        string
	test        string
	split       int
	subset      int
	subsetSeed  uint64
	normalise   bool
	dataDir     string
	header      data.HeaderRule
	target      string
	columns     string
	dropMissing bool
	// recorded are the CSV options a checkpoint recorded, used when no
	// CSV flag is given (gpnb predict without --data).
	recorded []data.Option

	fs     *flag.FlagSet // to tell which flags were given
	stderr io.Writer
}

// dataFlagNames are the data flags in the order the usage lists them.
var dataFlagNames = []string{"data", "split", "subset", "subset-seed", "normalise", "data-dir", "test", "header", "target", "columns", "drop-missing"}

func (f *dataFlags) register(fs *flag.FlagSet, stderr io.Writer) {
	f.fs, f.stderr = fs, stderr
	fs.StringVar(&f.data, "data", "", "a UCI `NAME`, synthetic-N-D-SEED or a .csv file")
	fs.IntVar(&f.split, "split", 0, "split, 0-9")
	fs.IntVar(&f.subset, "subset", 0, "training points kept (0: all)")
	fs.Uint64Var(&f.subsetSeed, "subset-seed", 0, "seed of --subset")
	fs.BoolVar(&f.normalise, "normalise", true, "z-score inputs and target")
	fs.StringVar(&f.dataDir, "data-dir", "", "UCI files' `DIR` (default $GPNB_DATA)")
	fs.StringVar(&f.test, "test", "", "CSV: test `FILE`")
	fs.TextVar(&f.header, "header", data.HeaderAuto, "CSV: yes or no: line 1 holds names")
	fs.StringVar(&f.target, "target", "", "CSV: target `COL` (default: the last)")
	fs.StringVar(&f.columns, "columns", "", "CSV: input `COLS` (default: the others)")
	fs.BoolVar(&f.dropMissing, "drop-missing", false, "CSV: drop rows with missing values")
}

// csvFlags are the flags that apply to CSV files only.
var csvFlags = []string{"test", "header", "target", "columns", "drop-missing"}

// load returns the dataset the flags describe, or an error naming the flag
// that is wrong, and prints the dataset's warnings on stderr.
func (f *dataFlags) load() (*data.Dataset, error) {
	given := f.given()
	name := strings.TrimSpace(f.data)
	_, uci := data.LookupUCI(name)
	_, _, _, synthetic, _ := data.ParseSynthetic(name)
	if err := f.check(name, given, uci, synthetic); err != nil {
		return nil, err
	}
	ds, err := data.Open(name, f.options(given, uci, synthetic)...)
	if err != nil {
		return nil, fmt.Errorf("--data %s: %w", name, err)
	}
	for _, w := range ds.Warnings() {
		fmt.Fprintf(f.stderr, "gpnb: warning: --data %s: %s\n", name, w)
	}
	return ds, nil
}

// check refuses values out of range and flags that do not apply to the
// kind of dataset name is.
func (f *dataFlags) check(name string, given map[string]bool, uci, synthetic bool) error {
	_, _, _, _, err := data.ParseSynthetic(name)
	switch {
	case name == "":
		return fmt.Errorf("--data is required: a UCI name (%s), synthetic-N-D-SEED, or a path to a .csv/.csv.gz file", strings.Join(data.Names(), ", "))
	case err != nil:
		return fmt.Errorf("--data: %w", err)
	case f.split < 0 || f.split >= data.NumSplits:
		return fmt.Errorf("--split %d: use 0-%d", f.split, data.NumSplits-1)
	case f.subset < 0:
		return fmt.Errorf("--subset %d: give a number of training points > 0, or 0 for all", f.subset)
	case given["data-dir"] && !uci:
		return fmt.Errorf("--data-dir applies only to UCI datasets, not --data %s", name)
	case given["split"] && !uci && !synthetic:
		return fmt.Errorf("--split applies only to UCI and synthetic datasets, not the CSV file %s", name)
	}
	for _, fl := range csvFlags {
		if given[fl] && (uci || synthetic) {
			return fmt.Errorf("--%s applies only to CSV files, not --data %s", fl, name)
		}
	}
	return nil
}

// options returns the data.Open options the flags give.
func (f *dataFlags) options(given map[string]bool, uci, synthetic bool) []data.Option {
	opts := []data.Option{data.Normalise(f.normalise), data.SubsetSeed(f.subsetSeed)}
	if f.subset > 0 {
		opts = append(opts, data.Subset(f.subset))
	}
	if uci || synthetic {
		opts = append(opts, data.Split(f.split))
	}
	if f.dataDir != "" {
		opts = append(opts, data.Dir(f.dataDir))
	}
	if f.test != "" {
		opts = append(opts, data.TestFile(f.test))
	}
	if uci || synthetic {
		return opts
	}
	if !given["header"] && !given["target"] && !given["columns"] && !given["drop-missing"] && f.recorded != nil {
		return append(opts, f.recorded...)
	}
	opts = append(opts, data.Header(f.header), data.DropMissing(f.dropMissing))
	if f.target != "" {
		opts = append(opts, data.Target(f.target))
	}
	if f.columns != "" {
		opts = append(opts, data.Inputs(strings.Split(f.columns, ",")...))
	}
	return opts
}

// pointsOptions are the options for reading points with the dataset's
// columns: --header, when given.
func (f *dataFlags) pointsOptions() []data.Option {
	if !f.given()["header"] {
		return nil
	}
	return []data.Option{data.Header(f.header)}
}

// given returns the names of the flags given on the command line.
func (f *dataFlags) given() map[string]bool {
	given := map[string]bool{}
	if f.fs != nil {
		f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	}
	return given
}
