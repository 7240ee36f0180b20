package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/gpnb/gpnb/data"
)

// dataFlags are the dataset flags shared by data, mll, solve and train:
// --data --test --split --subset --subset-seed --normalise --data-dir.
// --data names a dataset as data.Open reads it: a UCI name,
// synthetic-N-D-SEED, or a CSV file (the same names gpnb reproduce takes).
type dataFlags struct {
	data       string
	test       string
	split      int
	subset     int
	subsetSeed uint64
	normalise  bool
	dataDir    string
	// The old spelling of synthetic data (--data synthetic --synthetic-n N
	// --synthetic-d D --synthetic-seed S), accepted for one release.
	syntheticN, syntheticD int
	syntheticSeed          uint64

	fs     *flag.FlagSet // to tell which flags were given
	stderr io.Writer
}

func (f *dataFlags) register(fs *flag.FlagSet, stderr io.Writer) {
	f.fs, f.stderr = fs, stderr
	fs.StringVar(&f.data, "data", "", "dataset: a UCI name ("+strings.Join(data.Names(), ", ")+"), synthetic-N-D-SEED (N training points in D dimensions, plus N/5 test points), or a .csv/.csv.gz file (inputs then target, no header)")
	fs.StringVar(&f.test, "test", "", "CSV test file with the same columns (only with a CSV --data)")
	fs.IntVar(&f.split, "split", 0, "train/test split, 0-9 (for synthetic-N-D-SEED, split k draws with seed SEED+k)")
	fs.IntVar(&f.subset, "subset", 0, "keep this many training points, chosen by --subset-seed (0 = all)")
	fs.Uint64Var(&f.subsetSeed, "subset-seed", 0, "seed for choosing the --subset points")
	fs.BoolVar(&f.normalise, "normalise", true, "z-score inputs and target with the training statistics (--normalise=false to turn off)")
	fs.StringVar(&f.dataDir, "data-dir", "", "directory of the UCI files (overrides $GPNB_DATA; missing files are downloaded into it)")
	fs.IntVar(&f.syntheticN, "synthetic-n", 500, "deprecated: use --data synthetic-N-D-SEED")
	fs.IntVar(&f.syntheticD, "synthetic-d", 4, "deprecated: use --data synthetic-N-D-SEED")
	fs.Uint64Var(&f.syntheticSeed, "synthetic-seed", 0, "deprecated: use --data synthetic-N-D-SEED")
}

// load returns the dataset the flags describe, or an error naming the flag
// that is wrong.
func (f *dataFlags) load() (*data.Dataset, error) {
	given := map[string]bool{}
	if f.fs != nil {
		f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	}
	name := strings.TrimSpace(f.data)
	if strings.EqualFold(name, "synthetic") {
		name = data.SyntheticName(f.syntheticN, f.syntheticD, f.syntheticSeed)
		fmt.Fprintf(f.stderr, "gpnb: --data synthetic with --synthetic-n/-d/-seed is deprecated and will be removed: use --data %s\n", name)
	} else if given["synthetic-n"] || given["synthetic-d"] || given["synthetic-seed"] {
		return nil, fmt.Errorf("--synthetic-n/-d/-seed apply only to --data synthetic (deprecated): write --data synthetic-N-D-SEED")
	}
	_, uci := data.LookupUCI(name)
	_, _, _, synthetic, err := data.ParseSynthetic(name)
	switch {
	case name == "":
		return nil, fmt.Errorf("--data is required: a UCI name (%s), synthetic-N-D-SEED, or a path to a .csv/.csv.gz file", strings.Join(data.Names(), ", "))
	case err != nil:
		return nil, fmt.Errorf("--data: %w", err)
	case f.split < 0 || f.split >= data.NumSplits:
		return nil, fmt.Errorf("--split %d: use 0-%d", f.split, data.NumSplits-1)
	case f.subset < 0:
		return nil, fmt.Errorf("--subset %d: give a number of training points > 0, or 0 for all", f.subset)
	case given["test"] && (uci || synthetic):
		return nil, fmt.Errorf("--test applies only to CSV files, not --data %s", name)
	case given["data-dir"] && !uci:
		return nil, fmt.Errorf("--data-dir applies only to UCI datasets, not --data %s", name)
	case given["split"] && !uci && !synthetic:
		return nil, fmt.Errorf("--split applies only to UCI and synthetic datasets, not the CSV file %s", name)
	}
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
	ds, err := data.Open(name, opts...)
	if err != nil {
		return nil, fmt.Errorf("--data %s: %w", name, err)
	}
	return ds, nil
}
