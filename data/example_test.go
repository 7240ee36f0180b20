package data_test

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

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

// A CSV file with a header line and the target in its first column: the
// target by name; new points are matched to the columns by name.
func ExampleLoadCSV_header() {
	ds, err := data.LoadCSV("testdata/houses.csv", data.Target("price"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ds)
	fmt.Println("target", ds.Columns.TargetName(), "inputs", ds.Columns.InputNames())
	x, err := ds.LoadPoints("testdata/houses_new.csv") // area,rooms,age
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("first point (rooms, area, age):", x.RawRowView(0))
	// Output:
	// houses split 0: 60 train, 0 test, d=3, normalised
	// target price inputs [rooms area age]
	// first point (rooms, area, age): [1 45 30]
}

// Matrices computed in Go go through the loaders' checks; the warnings
// say what the data cannot support.
func ExampleNew() {
	x := mat.NewDense(4, 2, []float64{
		0.1, 1,
		0.5, 1,
		0.9, 1,
		0.5, 1,
	})
	y := []float64{0.3, 0.8, 0.2, 0.7}
	ds, err := data.New(x, y)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ds)
	for _, w := range ds.Warnings() {
		fmt.Println(w.Kind)
	}
	// Output:
	// data split 0: 4 train, 0 test, d=2, normalised
	// constant-inputs
	// duplicate-rows
}

// Errors wrap sentinels and say what to do.
func ExampleLoad_unknown() {
	_, err := data.Load("boston")
	fmt.Println(err)
	// Output:
	// data: unknown dataset "boston": known datasets are bike, elevators, keggdirected, pol, protein (use LoadCSV for your own file, Synthetic for generated data)
}
