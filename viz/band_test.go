package viz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
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

// One run charts as a list of one result (a checkpoint's
// OptimiserState.Result()): the values are the records'.
func TestOneRunCharts(t *testing.T) {
	r := synthResult("pol", "cg", true, 1, 6, 3, 2)
	h := r.History
	c, err := Iterations([]gpnb.Result{r})
	if err != nil {
		t.Fatal(err)
	}
	xs, ys := xy(t, seriesOf(t, options(t, c)[0])[0])
	for i, r := range h {
		if xs[i] != float64(r.Step) || ys[i] != float64(r.SolverIterations) {
			t.Errorf("step %d: (%v, %v), want (%d, %d)", i, xs[i], ys[i], r.Step, r.SolverIterations)
		}
	}
	c, err = Hyperparameters([]gpnb.Result{r})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Panels) != 3 || !strings.HasSuffix(c.Panels[0].Title, "noise σ") || len(c.Panels[2].Series) != 3 {
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
}

// TestPredictionOf: a trained run's prediction at points given in the
// data's units is drawn in those units: its mean, the band of a new
// observation (mean ± 1.96·sd with the noisy variance), its samples, and
// the training data as read from the CSV file, whose header names the axes.
func TestPredictionOf(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("hours,load\n")
	var xs, ys []float64
	for i := 0; i < 40; i++ {
		x := 10 * float64(i) / 39
		y := 50 + 5*math.Sin(x) + 0.3*math.Cos(7*float64(i))
		xs, ys = append(xs, x), append(ys, y)
		fmt.Fprintf(&csv, "%g,%g\n", x, y)
	}
	path := filepath.Join(t.TempDir(), "load.csv")
	if err := os.WriteFile(path, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := data.LoadCSV(path, data.Target("load"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := gpnb.NewOptimiser(ds, gpnb.Config{Estimator: gpnb.Pathwise, Probes: 4, WarmStart: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(5, 1, []float64{-1, 2.5, 5, 7.5, 11})
	p, err := o.Predict(x)
	if err != nil {
		t.Fatal(err)
	}
	got, err := PredictionOf(ds, x, p)
	if err != nil {
		t.Fatal(err)
	}
	if got.XLabel != "hours" || got.YLabel != "load" || len(got.Samples) != 4 || !slices.Equal(got.X, mat.Col(nil, 0, x)) || !slices.Equal(got.Mean, p.Data.Mean) {
		t.Errorf("labels %q %q, %d samples, X %v, mean %v", got.XLabel, got.YLabel, len(got.Samples), got.X, got.Mean)
	}
	for i, m := range p.Data.Mean {
		sd := math.Sqrt(p.Data.VarNoisy[i])
		if math.Abs(got.Lower[i]-(m-1.96*sd)) > 1e-12*math.Abs(m) || math.Abs(got.Upper[i]-(m+1.96*sd)) > 1e-12*math.Abs(m) {
			t.Errorf("point %d: band [%v, %v], want %v ± 1.96·%v", i, got.Lower[i], got.Upper[i], m, sd)
		}
	}
	// z-scoring and back rounds the training data by a few ulps.
	for i := range xs {
		if math.Abs(got.DataX[i]-xs[i]) > 1e-12*10 || math.Abs(got.DataY[i]-ys[i]) > 1e-12*60 {
			t.Errorf("data point %d: (%v, %v), the file has (%v, %v)", i, got.DataX[i], got.DataY[i], xs[i], ys[i])
		}
	}
	if _, err := Predictive(got); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []*mat.Dense{nil, mat.NewDense(4, 1, nil), mat.NewDense(5, 2, nil)} {
		if _, err := PredictionOf(ds, bad, p); !errors.Is(err, ErrChart) {
			t.Errorf("points %v: %v", bad, err)
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
