package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpnb/gpnb/data"
)

func init() {
	register(&command{
		name:  "data",
		short: "load a dataset and print its shape",
		run:   runData,
	})
}

// dataSummary is the JSON that "gpnb data" prints.
type dataSummary struct {
	Dataset     string `json:"dataset"`
	Split       int    `json:"split"`
	NTrain      int    `json:"n_train"`
	NTest       int    `json:"n_test"`
	D           int    `json:"d"`
	Normalised  bool   `json:"normalised"`
	Fingerprint string `json:"fingerprint"`
	// Target and Inputs name a CSV file's columns (omitted for other data).
	Target   string         `json:"target,omitempty"`
	Inputs   []string       `json:"inputs,omitempty"`
	Warnings []data.Warning `json:"warnings,omitempty"`
}

func runData(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("data", "--data D [flags]\n\nPrints the shape, a CSV file's columns and, on stderr, what the data cannot support.", stderr)
	var df dataFlags
	df.register(fs, stderr)
	jsonPath := fs.String("json", "", "write the summary to `FILE` (-: stdout)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ds, err := df.load()
	if err != nil {
		return err
	}
	sum := dataSummary{
		Dataset: ds.Name, Split: ds.Split, NTrain: ds.NTrain(), NTest: ds.NTest(), D: ds.D(),
		Normalised: ds.Stats.Normalised, Fingerprint: ds.Fingerprint(),
		Target: ds.Columns.TargetName(), Inputs: ds.Columns.InputNames(), Warnings: ds.Warnings(),
	}
	if *jsonPath == "" {
		if sum.Inputs != nil {
			fmt.Fprintf(stdout, "target %s; inputs %s\n", sum.Target, strings.Join(sum.Inputs, ", "))
		}
		_, err := fmt.Fprintf(stdout, "%s\nfingerprint %s\n", ds, sum.Fingerprint)
		return err
	}
	return writeJSON(*jsonPath, sum, stdout)
}
