package viz

import (
	"bytes"
	"image/png"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
)

// A prediction at unsorted inputs, with two samples and three data points.
func testPrediction() PredictiveData {
	return PredictiveData{
		X:       []float64{2, 0, 1},
		Mean:    []float64{0.2, 0.0, 0.1},
		Lower:   []float64{-0.8, -1.0, -0.5},
		Upper:   []float64{1.2, 1.0, 0.7},
		Samples: [][]float64{{0.3, 0.1, 0.2}, {0.1, -0.1, 0.0}},
		DataX:   []float64{0.5, 1.5, 1.7},
		DataY:   []float64{0.05, 0.15, 0.18},
	}
}

func TestPredictive(t *testing.T) {
	c, err := Predictive(testPrediction())
	if err != nil {
		t.Fatal(err)
	}
	p := c.Panels[0]
	if got := strings.Join(p.SeriesNames(), "|"); got != "95% band|posterior samples|predictive mean|data" {
		t.Errorf("series %q", got)
	}
	if len(p.Series) != 5 || p.Series[0].Kind != Band || p.Series[4].Kind != Scatter {
		t.Fatalf("want band, 2 samples, mean, data; got %d series", len(p.Series))
	}
	// Sorted by x, every slice alongside.
	want := map[string][]float64{"x": {0, 1, 2}, "upper": {1.0, 0.7, 1.2}, "lower": {-1.0, -0.5, -0.8},
		"mean": {0.0, 0.1, 0.2}, "sample0": {0.1, 0.2, 0.3}, "sample1": {-0.1, 0.0, 0.1}}
	got := map[string][]float64{"x": p.Series[0].X, "upper": p.Series[0].Y, "lower": p.Series[0].Lower,
		"mean": p.Series[3].Y, "sample0": p.Series[1].Y, "sample1": p.Series[2].Y}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}

	// The echarts option: a custom series whose box covers the band, and
	// the edges for the page's renderer.
	ss := seriesOf(t, options(t, c)[0])
	band := ss[0]
	if band["type"] != "custom" || band["name"] != "95% band" {
		t.Fatalf("band option %v", band)
	}
	box := band["data"].([]any)[0].([]any)
	if num(box[0]) != 0 || num(box[1]) != -1 || num(box[2]) != 2 || num(box[3]) != 1.2 {
		t.Errorf("band box %v, want [0 -1 2 1.2]", box)
	}
	edges := band["gpnbBand"].(map[string]any)
	for k, w := range map[string][]float64{"x": want["x"], "lo": want["lower"], "hi": want["upper"]} {
		var v []float64
		for _, e := range edges[k].([]any) {
			v = append(v, num(e))
		}
		if !slices.Equal(v, w) {
			t.Errorf("band edge %s = %v, want %v", k, v, w)
		}
	}
	if _, ys := xy(t, ss[3]); !slices.Equal(ys, want["mean"]) {
		t.Errorf("mean line %v", ys)
	}
}

func TestPredictiveRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*PredictiveData)
		want   string
	}{
		{"no inputs", func(p *PredictiveData) { *p = PredictiveData{} }, "no inputs"},
		{"short mean", func(p *PredictiveData) { p.Mean = p.Mean[:2] }, "Mean has 2 values for 3 inputs"},
		{"short sample", func(p *PredictiveData) { p.Samples[1] = nil }, "sample 1 has 0 values"},
		{"data lengths", func(p *PredictiveData) { p.DataY = p.DataY[:1] }, "3 data inputs DataX but 1 targets"},
		{"NaN mean", func(p *PredictiveData) { p.Mean[1] = math.NaN() }, "must be finite"},
		{"band misses mean", func(p *PredictiveData) { p.Lower[0] = 0.5 }, "does not contain the mean"},
		{"infinite sample", func(p *PredictiveData) { p.Samples[0][2] = math.Inf(1) }, "sample 0 is +Inf"},
		{"NaN data", func(p *PredictiveData) { p.DataX[0] = math.NaN() }, "data point 0"},
	} {
		p := testPrediction()
		tc.change(&p)
		if _, err := Predictive(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	c := &Chart{Panels: []*Panel{{Series: []Series{{Name: "b", Kind: Band, X: []float64{1, 2}, Y: []float64{1, 2}, Lower: []float64{0}}}}}}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "1 lower values") {
		t.Errorf("band with a short Lower: %v", err)
	}
}

// On a log axis a band edge ≤ 0 cannot be drawn: a gap, not a wrong shape.
func TestBandGapOnLogAxis(t *testing.T) {
	s := Series{Name: "b", Kind: Band, X: []float64{1, 2, 3}, Y: []float64{2, 3, 4}, Lower: []float64{1, -1, 2}}
	o := bandOption(s, 0, true)
	lo := o["gpnbBand"].(map[string]any)["lo"].([]any)
	if lo[0] != 1.0 || lo[1] != nil || lo[2] != 2.0 {
		t.Errorf("log-axis lower edge %v, want [1 <nil> 2]", lo)
	}
	box := o["data"].([]any)[0].([]any)
	if box[1] != 1.0 || box[3] != 4.0 {
		t.Errorf("box %v should cover the drawable values only", box)
	}
}

// The static image fills the band with the series colour at the band's
// opacity over white, and leaves the rest of the plotting area white.
func TestBandStaticFill(t *testing.T) {
	c := &Chart{Panels: []*Panel{{Title: "band", Series: []Series{
		{Name: "b", Kind: Band, X: []float64{0, 1}, Y: []float64{0.8, 0.8}, Lower: []float64{0.2, 0.2}, Color: ColorCold},
		{Name: "frame", Kind: Line, X: []float64{0, 1}, Y: []float64{0, 1}, Color: "#000000"},
	}}}}
	var b bytes.Buffer
	if err := c.WriteImage(&b, "png"); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	// #5470c6 at opacity 0.25 over white.
	blend := func(c uint8) int { return int(math.Round(255*(1-bandOpacity) + float64(c)*bandOpacity)) }
	wr, wg, wb := blend(0x54), blend(0x70), blend(0xc6)
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, bb, _ := img.At(x, y).RGBA()
			if abs(int(r>>8)-wr) <= 2 && abs(int(g>>8)-wg) <= 2 && abs(int(bb>>8)-wb) <= 2 {
				n++
			}
		}
	}
	// The band is 60% of the plot's height over its whole width: many
	// thousands of pixels at 144 dpi.
	if n < 20000 {
		t.Errorf("%d pixels of the band's colour (%d,%d,%d), want the band filled", n, wr, wg, wb)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// A checkpoint's history charts directly: the values are the records'.
func TestHistoryCharts(t *testing.T) {
	h := synthResult("pol", "cg", true, 1, 6, 3, 2).History
	c, err := IterationsOf(h)
	if err != nil {
		t.Fatal(err)
	}
	xs, ys := xy(t, seriesOf(t, options(t, c)[0])[0])
	for i, r := range h {
		if xs[i] != float64(r.Step) || ys[i] != float64(r.SolverIterations) {
			t.Errorf("step %d: (%v, %v), want (%d, %d)", i, xs[i], ys[i], r.Step, r.SolverIterations)
		}
	}
	c, err = HyperparametersOf(h)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Panels) != 3 || c.Panels[0].Title != "noise σ" || len(c.Panels[2].Series) != 3 {
		t.Fatalf("want noise, signal and 3 length-scale series, got %d panels", len(c.Panels))
	}
	opts := options(t, c)
	for i, r := range h {
		_, noise := xy(t, seriesOf(t, opts[0])[0])
		_, l2 := xy(t, seriesOf(t, opts[2])[2])
		if noise[i] != r.Noise || l2[i] != r.Lengthscales[2] {
			t.Errorf("step %d: noise %v, ℓ3 %v; want %v, %v", i, noise[i], l2[i], r.Noise, r.Lengthscales[2])
		}
	}
	for _, f := range []func(gpnb.History) (*Chart, error){IterationsOf, HyperparametersOf} {
		if _, err := f(nil); err == nil || !strings.Contains(err.Error(), "empty history") {
			t.Errorf("empty history: %v", err)
		}
	}
}

// sinePrediction is a smooth prediction of sin on [0, 6] with a band that
// widens away from x = 3, k samples and a few data points.
func sinePrediction(k int) PredictiveData {
	var p PredictiveData
	for i := 0; i <= 120; i++ {
		x := 6 * float64(i) / 120
		sd := 0.1 + 0.1*math.Abs(x-3)
		m := math.Sin(x)
		p.X, p.Mean = append(p.X, x), append(p.Mean, m)
		p.Lower, p.Upper = append(p.Lower, m-1.96*sd), append(p.Upper, m+1.96*sd)
	}
	for j := 0; j < k; j++ {
		s := make([]float64, len(p.X))
		for i, x := range p.X {
			s[i] = p.Mean[i] + 0.3*math.Sin(float64(j+2)*x)*(0.1+0.1*math.Abs(x-3))
		}
		p.Samples = append(p.Samples, s)
	}
	for i := 0; i < 12; i++ {
		x := 0.25 + 0.5*float64(i)
		p.DataX, p.DataY = append(p.DataX, x), append(p.DataY, math.Sin(x)+0.05*math.Cos(7*x))
	}
	p.Title = "a predictive band"
	return p
}
