package floatbits

import (
	"math"
	"testing"
)

func TestEqual(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		a, b []float64
		want bool
	}{
		{nil, []float64{}, true},
		{[]float64{1, 2}, []float64{1, 2}, true},
		{[]float64{1, 2}, []float64{1}, false},
		{[]float64{1, 2}, []float64{1, math.Nextafter(2, 3)}, false},
		{[]float64{0}, []float64{math.Copysign(0, -1)}, false},
		{[]float64{nan}, []float64{nan}, true},
	}
	for _, c := range cases {
		if got := Equal(c.a, c.b); got != c.want {
			t.Errorf("Equal(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
