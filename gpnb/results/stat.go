package results

import "math"

// Stat is a mean and its standard error over runs (splits, seeds).
type Stat struct {
	Mean float64
	SE   float64 // sample standard deviation / √N; NaN when N < 2
	N    int
}

// NewStat returns the mean and standard error of xs: SE = s/√N with s the
// sample standard deviation (N−1 in the denominator), as in the paper's
// Table 2. With fewer than two values SE is NaN; with none, Mean is NaN too.
func NewStat(xs []float64) Stat {
	n := len(xs)
	if n == 0 {
		return Stat{Mean: math.NaN(), SE: math.NaN()}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(n)
	if n < 2 {
		return Stat{Mean: mean, SE: math.NaN(), N: 1}
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return Stat{Mean: mean, SE: math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n)), N: n}
}
