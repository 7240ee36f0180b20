package data

import "gonum.org/v1/gonum/mat"

// Dataset is a regression problem split into training and test parts. Inputs
// are n×d row-major matrices; targets are vectors. When Stats.Normalised is
// true, every value is on the z-scored scale of the training split.
type Dataset struct {
	Name  string // "pol", a CSV file's base name, or "synthetic"
	Split int    // split index 0–9 for the UCI sets; 0 otherwise

	XTrain *mat.Dense
	YTrain []float64
	XTest  *mat.Dense // may have zero rows (nil) when there is no test part
	YTest  []float64

	Stats Stats
}

// Stats are the training split's statistics used for z-scoring, kept so
// predictions can be mapped back to the original scale.
type Stats struct {
	Normalised bool
	XMean      []float64 // per input column
	XStd       []float64 // population standard deviation (ddof=0); a constant column gets 1
	YMean      float64
	YStd       float64
}
