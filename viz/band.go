package viz

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
)

// bandOpacity is the fill opacity of a Band, so what lies beneath shows.
const bandOpacity = 0.25

// bandOption is the echarts option of a Band series: a custom series with
// one data item, the band's bounding box (so the axes cover it), drawn by
// bandJS from the edges in gpnbBand as polygons, split where a value
// cannot be drawn.
func bandOption(s Series, i int, log bool) map[string]any {
	color := s.Color
	if color == "" {
		color = palette[i%len(palette)]
	}
	xs, lo, hi := make([]any, len(s.X)), make([]any, len(s.X)), make([]any, len(s.X))
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for j := range s.X {
		xs[j] = s.X[j]
		if !finite(s.X[j]) || !drawable(s.Lower[j], log) || !drawable(s.Y[j], log) {
			xs[j], lo[j], hi[j] = nil, nil, nil
			continue
		}
		lo[j], hi[j] = s.Lower[j], s.Y[j]
		x0, x1 = math.Min(x0, s.X[j]), math.Max(x1, s.X[j])
		y0, y1 = math.Min(y0, math.Min(s.Lower[j], s.Y[j])), math.Max(y1, math.Max(s.Lower[j], s.Y[j]))
	}
	var data []any
	if x0 <= x1 {
		data = []any{[]any{x0, y0, x1, y1}}
	}
	return map[string]any{
		"type": "custom", "name": s.Name, "data": data, "clip": true, "z": 1,
		"encode":    map[string]any{"x": []any{0.0, 2.0}, "y": []any{1.0, 3.0}},
		"itemStyle": map[string]any{"color": color, "opacity": bandOpacity},
		"tooltip":   map[string]any{"show": false},
		"gpnbBand":  map[string]any{"x": xs, "lo": lo, "hi": hi, "opacity": bandOpacity},
	}
}

// bandJS defines gpnbBands, which gives each band series of an option the
// renderItem function that draws it (functions cannot travel in JSON).
const bandJS = `
function gpnbBands(opt) {
  var ss = opt.series || [];
  for (var i = 0; i < ss.length; i++) {
    var b = ss[i].gpnbBand;
    if (!b) { continue; }
    ss[i].renderItem = (function(b, color) {
      return function(params, api) {
        var parts = [], up = [], lo = [];
        function flush() {
          if (up.length > 1) { parts.push({type: "polygon", shape: {points: up.concat(lo.reverse())}, style: {fill: color, opacity: b.opacity}}); }
          up = []; lo = [];
        }
        for (var k = 0; k < b.x.length; k++) {
          if (b.x[k] === null || b.lo[k] === null || b.hi[k] === null) { flush(); continue; }
          up.push(api.coord([b.x[k], b.hi[k]]));
          lo.push(api.coord([b.x[k], b.lo[k]]));
        }
        flush();
        return {type: "group", children: parts};
      };
    })(b, ss[i].itemStyle && ss[i].itemStyle.color);
  }
}`

// bandApply is the call of gpnbBands in a chart's draw loop, when it has
// bands.
func bandApply(bands bool) string {
	if !bands {
		return ""
	}
	return "\n    gpnbBands(opt);"
}

// PredictiveData is what Predictive draws: a model's predictive mean and a
// band (say mean ± 1.96 standard deviations, 95%) at inputs X, with
// optional posterior function samples and training points. All values are
// plain slices in the units to be shown, so any predictor can fill it;
// PredictionOf fills it from a gpnb.Prediction.
type PredictiveData struct {
	// Title, XLabel and YLabel label the figure (defaults: "Predictions",
	// "x", "y").
	Title, XLabel, YLabel string
	// X are the inputs of the prediction, in any order; Mean, Lower and
	// Upper hold one value per input, Lower ≤ Mean ≤ Upper.
	X, Mean, Lower, Upper []float64
	// Band names the band (default "95% band").
	Band string
	// Samples are optional posterior function draws, each one value per X.
	Samples [][]float64
	// DataX and DataY are optional training points, drawn as markers.
	DataX, DataY []float64
}

// Predictive draws a one-dimensional prediction (figure: data, mean, band):
// the band filled between Lower and Upper, the samples as thin lines, the
// mean as a line and the data as grey markers, in that order from the back.
// The inputs are sorted, with every other slice reordered alongside. Values
// that are not finite, slices of different lengths and a band that does
// not contain its mean are errors, since each means the predictor went
// wrong. The result is a plain Chart: add a series (the true function, test
// points) before showing it.
func Predictive(p PredictiveData) (*Chart, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	n := len(p.X)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return p.X[order[a]] < p.X[order[b]] })
	pick := func(v []float64) []float64 {
		out := make([]float64, n)
		for i, j := range order {
			out[i] = v[j]
		}
		return out
	}
	x := pick(p.X)
	title, xl, yl, band := p.Title, p.XLabel, p.YLabel, p.Band
	if title == "" {
		title = "Predictions"
	}
	if xl == "" {
		xl = "x"
	}
	if yl == "" {
		yl = "y"
	}
	if band == "" {
		band = "95% band"
	}
	pn := &Panel{Title: title, XLabel: xl, YLabel: yl, Width: 760, Height: 420}
	pn.Series = append(pn.Series, Series{Name: band, Kind: Band, X: x, Y: pick(p.Upper), Lower: pick(p.Lower), Color: ColorCold})
	for _, s := range p.Samples {
		pn.Series = append(pn.Series, Series{Name: "posterior samples", Kind: Line, X: x, Y: pick(s), Color: ColorColdLight, SymbolSize: 1})
	}
	pn.Series = append(pn.Series, Series{Name: "predictive mean", Kind: Line, X: x, Y: pick(p.Mean), Color: ColorCold})
	if len(p.DataX) > 0 {
		pn.Series = append(pn.Series, Series{Name: "data", Kind: Scatter, X: p.DataX, Y: p.DataY, Color: "#666666", SymbolSize: 6})
	}
	if len(p.Samples) > 0 {
		pn.Notes = []string{fmt.Sprintf("%d posterior samples", len(p.Samples))}
	}
	return &Chart{Title: title, Panels: []*Panel{pn}}, nil
}

// check returns the error of p that Predictive refuses, or nil.
func (p PredictiveData) check() error {
	n := len(p.X)
	if n == 0 {
		return fmt.Errorf("%w: Predictive: no inputs: set X, Mean, Lower and Upper", ErrChart)
	}
	for _, f := range []struct {
		name string
		v    []float64
	}{{"Mean", p.Mean}, {"Lower", p.Lower}, {"Upper", p.Upper}} {
		if len(f.v) != n {
			return fmt.Errorf("%w: Predictive: %s has %d values for %d inputs X: give one per input", ErrChart, f.name, len(f.v), n)
		}
	}
	for k, s := range p.Samples {
		if len(s) != n {
			return fmt.Errorf("%w: Predictive: sample %d has %d values for %d inputs X", ErrChart, k, len(s), n)
		}
	}
	if len(p.DataX) != len(p.DataY) {
		return fmt.Errorf("%w: Predictive: %d data inputs DataX but %d targets DataY", ErrChart, len(p.DataX), len(p.DataY))
	}
	for i := 0; i < n; i++ {
		for _, v := range []float64{p.X[i], p.Mean[i], p.Lower[i], p.Upper[i]} {
			if !finite(v) {
				return fmt.Errorf("%w: Predictive: input %d (x = %v) has mean %v, band [%v, %v]: every value must be finite", ErrChart, i, p.X[i], p.Mean[i], p.Lower[i], p.Upper[i])
			}
		}
		if !(p.Lower[i] <= p.Mean[i] && p.Mean[i] <= p.Upper[i]) {
			return fmt.Errorf("%w: Predictive: at x = %v the band [%v, %v] does not contain the mean %v: pass Lower = mean − 1.96·sd and Upper = mean + 1.96·sd", ErrChart, p.X[i], p.Lower[i], p.Upper[i], p.Mean[i])
		}
		for k, s := range p.Samples {
			if !finite(s[i]) {
				return fmt.Errorf("%w: Predictive: sample %d is %v at x = %v: every value must be finite", ErrChart, k, s[i], p.X[i])
			}
		}
	}
	for i := range p.DataX {
		if !finite(p.DataX[i]) || !finite(p.DataY[i]) {
			return fmt.Errorf("%w: Predictive: data point %d is (%v, %v): every value must be finite", ErrChart, i, p.DataX[i], p.DataY[i])
		}
	}
	return nil
}

// PredictionOf returns what Predictive draws of the prediction p that
// gpnb.Optimiser.Predict made at the points x (in the data's units, one
// input column) for a run on ds: its mean, the 95% band of a new
// observation and its posterior samples, in the data's units, with ds's
// training points and, for a CSV file with a header, the columns' names as
// labels. Set Title before drawing.
func PredictionOf(ds *data.Dataset, x *mat.Dense, p gpnb.Prediction) (PredictiveData, error) {
	if ds == nil || x == nil || x.IsEmpty() {
		return PredictiveData{}, fmt.Errorf("%w: PredictionOf: no dataset or no points: pass the run's dataset and the points given to Predict", ErrChart)
	}
	m, d := x.Dims()
	if d != 1 || ds.D() != 1 {
		return PredictiveData{}, fmt.Errorf("%w: PredictionOf: %d input columns (the data has %d): Predictive draws one input", ErrChart, d, ds.D())
	}
	if len(p.Data.Mean) != m {
		return PredictiveData{}, fmt.Errorf("%w: PredictionOf: %d predictions for %d points: pass the points given to Predict", ErrChart, len(p.Data.Mean), m)
	}
	xtr := mat.DenseCopyOf(ds.XTrain)
	ytr := make([]float64, ds.NTrain())
	if err := errors.Join(ds.Stats.OriginalXTo(xtr, xtr), ds.Stats.OriginalMeanTo(ytr, ds.YTrain)); err != nil {
		return PredictiveData{}, fmt.Errorf("%w: PredictionOf: %v", ErrChart, err)
	}
	out := PredictiveData{X: mat.Col(nil, 0, x), Mean: p.Data.Mean, Samples: p.Samples,
		Band: "95% band of a new observation", DataX: mat.Col(nil, 0, xtr), DataY: ytr}
	out.Lower, out.Upper = p.Data.Band(1.96, true)
	if ds.Columns.Header {
		out.XLabel, out.YLabel = ds.Columns.InputNames()[0], ds.Columns.TargetName()
	}
	return out, nil
}
