package viz

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
)

// A real optimiser, watched by Live through its hooks, then figure 1 of
// its next solve.
func TestLiveAndFigure1NextOnARealOptimiser(t *testing.T) {
	t.Setenv(EnvNoInstall, "1")
	got := captureDisplay(t)
	ds, err := data.Synthetic(150, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	o, err := gpnb.NewOptimiser(ds, gpnb.Config{WarmStart: true, Probes: 4, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Figure1Next(o, SectionOptions{}); err == nil || !strings.Contains(err.Error(), "run at least one step") {
		t.Errorf("before any step: err = %v", err)
	}
	l := NewLive("synthetic")
	l.Every = 0
	o.AddRecorder(l)
	if err := o.Run(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	l.Done()
	h := o.History()
	last := got.updates[len(got.updates)-1].html
	if want := "last step: " + strconv.Itoa(h[2].SolverIterations) + " iterations"; !strings.Contains(last, "done: step 3") || !strings.Contains(last, want) {
		t.Errorf("final live view lacks %q: %.300s", want, last)
	}
	iterUpdates := len(got.updates) - 3 - 1 // minus the OnStep and Done updates
	if total := h.TotalSolverIterations(); iterUpdates != total {
		t.Errorf("%d iteration updates, want one per solver iteration (%d)", iterUpdates, total)
	}

	c, err := Figure1Next(o, SectionOptions{Grid: 11})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Panels) != 2 || c.Panels[0].Heat == nil || len(c.Panels[1].Series[0].X) != 3 {
		t.Fatal("want the cross-section beside 3 steps of distances")
	}
	// The grid centre is the minimum, since v is solved to 1e-10; the
	// projections themselves are checked in TestCrossSectionAgainstDense.
	st := o.State()
	v0 := mat.Col(nil, 0, st.PrevV.Dense())
	s := c.Panels[0]
	warm := s.Series[2]
	if warm.Name != "warm start" || len(v0) != 150 {
		t.Fatalf("series %q, v0 %d", warm.Name, len(v0))
	}
	z := s.Heat.Z
	mid := len(z) / 2
	for j := range z {
		if floats.Min(z[j]) < z[mid][mid]-1e-9*math.Abs(z[mid][mid]) {
			t.Errorf("row %d dips below the centre value %v", j, z[mid][mid])
		}
	}
}
