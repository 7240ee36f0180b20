package data_test

import (
	"fmt"

	"github.com/gpnb/gpnb/data"
)

// Synthetic data needs no files; the same seed gives the same data.
func ExampleSynthetic() {
	ds, err := data.Synthetic(500, 4, 1, data.Subset(100))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ds)
	// Map the normalised training targets back to the original scale.
	y := make([]float64, ds.NTrain())
	if err := ds.Stats.OriginalMeanTo(y, ds.YTrain); err != nil {
		fmt.Println(err)
	}
	// Output:
	// synthetic split 0: 100 train, 100 test, d=4, normalised
}

// A user's own CSV file: inputs first, target last, no header.
func ExampleLoadCSV() {
	ds, err := data.LoadCSV("testdata/toy.csv", data.TestFile("testdata/toy_test.csv"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ds)
	fmt.Printf("target mean %.1f, std %.2f\n", ds.Stats.YMean, ds.Stats.YStd)
	// Output:
	// toy split 0: 6 train, 2 test, d=2, normalised
	// target mean 3.5, std 1.71
}

// Errors wrap sentinels and say what to do.
func ExampleLoad_unknown() {
	_, err := data.Load("boston")
	fmt.Println(err)
	// Output:
	// data: unknown dataset "boston": known datasets are bike, elevators, keggdirected, pol, protein (use LoadCSV for your own file, Synthetic for generated data)
}
