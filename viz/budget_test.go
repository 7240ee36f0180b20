package viz

import (
	"errors"
	"reflect"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/solvers"
)

// TestResidualAtStop: one panel per dataset and solver variant, cold and
// warm series of the probes' mean and the mean system's residual at each
// step's stop, averaged over splits; variants are their own panels and
// series names; results without the residuals are an error.
func TestResidualAtStop(t *testing.T) {
	var rs []gpnb.Result
	for split := 0; split < 2; split++ {
		for _, warm := range []bool{false, true} {
			r := synthResult("pol", "cg", warm, split, 3, 2, 2)
			cfg := gpnb.Config{Estimator: gpnb.Pathwise, Features: 2000, WarmStart: warm, Settings: solvers.Settings{Budget: 10}}
			r.Config = &cfg
			for i := range r.History {
				base := 0.5
				if warm {
					base = 0.1
				}
				r.History[i].FinalResiduals = []float64{base / float64(i+1), base, base + 0.2*float64(split)}
			}
			rs = append(rs, r)
		}
	}
	c, err := ResidualAtStop(rs)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Panels) != 1 || c.Panels[0].Title != "pol — CG pathwise budget 10" || !c.Panels[0].LogY {
		t.Fatalf("panels %+v", c.Panels)
	}
	p := c.Panels[0]
	var got []string
	for _, s := range p.Series {
		got = append(got, s.Name)
	}
	want := []string{"CG pathwise budget 10 probes", "CG pathwise budget 10 mean", "CG pathwise budget 10 + ws probes", "CG pathwise budget 10 + ws mean"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	// Warm probes at step 2: splits give (0.1+0.1)/2 and (0.1+0.3)/2, mean 0.15.
	if y := p.Series[2].Y[1]; !near(y, 0.15, 1e-12) {
		t.Errorf("warm probe residual at step 2 = %v, want 0.15", y)
	}
	if y := p.Series[1].Y[1]; !near(y, 0.25, 1e-12) {
		t.Errorf("cold mean residual at step 2 = %v, want 0.25", y)
	}
	if _, err := ResidualAtStop([]gpnb.Result{synthResult("pol", "cg", true, 0, 3, 2, 2)}); !errors.Is(err, ErrChart) {
		t.Errorf("results without residuals at the stop: %v", err)
	}
}
