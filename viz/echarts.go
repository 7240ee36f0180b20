package viz

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
)

// palette is echarts' default palette; builders pick explicit colours so
// the same method has the same colour in every figure.
var palette = []string{"#5470c6", "#ee6666", "#91cc75", "#fac858", "#73c0de", "#3ba272", "#fc8452", "#9a60b4", "#ea7ccc"}

// viridis stops for heat maps (colour-blind safe, monotone in lightness).
var viridis = []string{"#440154", "#414487", "#2a788e", "#22a884", "#7ad151", "#fde725"}

// Margins of the plotting area inside a panel, in pixels. Fixed margins let
// the heat-map cells be sized exactly.
const (
	gridLeft      = 72
	gridRight     = 28
	gridRightHeat = 96 // room for the colour scale
	gridTop       = 78
	gridBottom    = 52
)

// Options returns the echarts option object of every panel, in order, as
// plain JSON-ready maps. They are built with go-echarts and then completed
// with what go-echarts has no field for (heat-map colour scale per series,
// pixel grid). Animations are off so renders are deterministic.
func (c *Chart) Options() ([]map[string]any, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(c.Panels))
	for i, p := range c.Panels {
		o, err := p.option()
		if err != nil {
			return nil, err
		}
		out[i] = o
	}
	return out, nil
}

func (p *Panel) option() (map[string]any, error) {
	w, h := p.size()
	right := gridRight
	if p.Heat != nil {
		right = gridRightHeat
	}
	xa := opts.XAxis{Name: p.XLabel, NameLocation: "middle", NameGap: 30, Type: "value", Scale: opts.Bool(true)}
	if len(p.Categories) > 0 {
		xa.Type = "category"
		xa.Data = p.Categories
		xa.Scale = nil
	}
	ya := opts.YAxis{Name: p.YLabel, NameLocation: "middle", NameGap: 50, Type: "value", Scale: opts.Bool(true)}
	if p.LogY {
		ya.Type = "log"
		ya.Scale = nil
	}
	if len(p.Categories) > 0 {
		ya.Scale = nil // bars start at zero
	}
	trigger := "axis"
	if p.Heat != nil || len(p.Categories) == 0 && allScatter(p.Series) {
		trigger = "item"
	}
	// A plain legend wraps onto more rows when the names do not fit; make
	// room for them above the plotting area.
	legendW := 0
	for _, name := range p.SeriesNames() {
		legendW += 36 + 6*len([]rune(name))
	}
	rows := max(1, (legendW+w-41)/(w-40))
	top := gridTop + 22*(rows-1)
	ch := charts.NewLine()
	ch.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{Width: strconv.Itoa(w) + "px", Height: strconv.Itoa(h) + "px"}),
		charts.WithTitleOpts(opts.Title{Title: p.Title, Subtitle: noteText(p.Notes), Left: "center"}),
		charts.WithAnimation(false),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "44", Data: p.SeriesNames()}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: trigger}),
		charts.WithXAxisOpts(xa),
		charts.WithYAxisOpts(ya),
		charts.WithGridOpts(opts.Grid{Left: strconv.Itoa(gridLeft), Right: strconv.Itoa(right), Top: strconv.Itoa(top), Bottom: strconv.Itoa(gridBottom)}),
	)
	heatIndex := -1
	if hm := p.Heat; hm != nil {
		heatIndex = len(ch.MultiSeries)
		ch.MultiSeries = append(ch.MultiSeries, heatSeries(hm, w-gridLeft-right, h-top-gridBottom))
		dx := (hm.X[len(hm.X)-1] - hm.X[0]) / float64(len(hm.X)-1)
		dy := (hm.Y[len(hm.Y)-1] - hm.Y[0]) / float64(len(hm.Y)-1)
		ch.XAxisList[0].Min = hm.X[0] - dx/2
		ch.XAxisList[0].Max = hm.X[len(hm.X)-1] + dx/2
		ch.XAxisList[0].Scale = nil
		ch.YAxisList[0].Min = hm.Y[0] - dy/2
		ch.YAxisList[0].Max = hm.Y[len(hm.Y)-1] + dy/2
		ch.YAxisList[0].Scale = nil
		noEnds := &opts.AxisLabel{ShowMinLabel: opts.Bool(false), ShowMaxLabel: opts.Bool(false)}
		ch.XAxisList[0].AxisLabel = noEnds
		ch.YAxisList[0].AxisLabel = noEnds
		ch.MultiSeries[heatIndex].ItemStyle = &opts.ItemStyle{Opacity: opts.Float(1)}
	}
	for i, s := range p.Series {
		ch.MultiSeries = append(ch.MultiSeries, seriesOpt(s, i, p.LogY))
	}

	obj := ch.JSON()
	obj["animation"] = false
	delete(obj, "toolbox")
	if hm := p.Heat; hm != nil {
		lo, hi := zRange(hm.Z)
		obj["visualMap"] = []any{map[string]any{
			"type": "continuous", "min": lo, "max": hi, "dimension": 2,
			"seriesIndex": heatIndex, "calculable": true, "right": 4, "top": "middle",
			"text": []any{hm.Label, ""}, "inRange": map[string]any{"color": viridis},
			"precision": 3,
		}}
	}
	// Round-trip through JSON so the option is plain maps, slices, strings,
	// float64s and bools, exactly what the page receives.
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("%w: panel %q: encoding the echarts option: %v", ErrChart, p.Title, err)
	}
	var o map[string]any
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("%w: panel %q: decoding the echarts option: %v", ErrChart, p.Title, err)
	}
	// go-echarts has no custom series: bands are written here, in the
	// same plain types.
	if ss, ok := o["series"].([]any); ok && len(ss) == heatIndex+1+len(p.Series) {
		for i, s := range p.Series {
			if s.Kind == Band {
				ss[heatIndex+1+i] = bandOption(s, i, p.LogY)
			}
		}
	}
	return o, nil
}

func allScatter(ss []Series) bool {
	for _, s := range ss {
		if s.Kind != Scatter {
			return false
		}
	}
	return len(ss) > 0
}

// value turns a number into what echarts draws: the number, or "-" (echarts'
// marker for a missing value) when it cannot be drawn.
func value(v float64, log bool) any {
	if !drawable(v, log) {
		return "-"
	}
	return v
}

func seriesOpt(s Series, i int, log bool) charts.SingleSeries {
	ss := charts.SingleSeries{Name: s.Name, Type: s.Kind.echarts()}
	color := s.Color
	if color == "" {
		color = palette[i%len(palette)]
	}
	ss.ItemStyle = &opts.ItemStyle{Color: color}
	switch s.Kind {
	case Band:
		// Replaced by bandOption once the option is plain data.
	case Bar:
		data := make([]any, len(s.Y))
		for j, y := range s.Y {
			data[j] = value(y, log)
		}
		ss.Data = data
		ss.Stack = s.Stack
		ss.BarMaxWidth = "48"
	default:
		data := make([]any, len(s.X))
		for j := range s.X {
			if !finite(s.X[j]) {
				data[j] = []any{"-", "-"}
				continue
			}
			data[j] = []any{s.X[j], value(s.Y[j], log)}
		}
		ss.Data = data
		if s.Kind == Line {
			ls := &opts.LineStyle{Color: color, Width: 2}
			if s.Dashed {
				ls.Type = "dashed"
			}
			ss.LineStyle = ls
			ss.ShowSymbol = opts.Bool(len(s.X) <= 30 && !s.Dashed)
			ss.SymbolSize = 5
			if s.SymbolSize > 0 {
				ss.SymbolSize = s.SymbolSize
			}
		} else {
			ss.Symbol = s.Symbol
			if ss.Symbol == "" {
				ss.Symbol = "circle"
			}
			size := s.SymbolSize
			if size == 0 {
				size = 12
			}
			ss.SymbolSize = size
			ss.ItemStyle.BorderColor = "#222222"
		}
	}
	return ss
}

// heatSeries draws a heat map as square markers on value axes, each exactly
// one grid cell wide, so markers and lines can share the same axes (an
// echarts heatmap series needs category axes).
func heatSeries(h *Heat, plotW, plotH int) charts.SingleSeries {
	cw := math.Ceil(float64(plotW)/float64(len(h.X))) + 1
	chh := math.Ceil(float64(plotH)/float64(len(h.Y))) + 1
	data := make([]any, 0, len(h.X)*len(h.Y))
	for j, y := range h.Y {
		for i, x := range h.X {
			z := h.Z[j][i]
			if !finite(z) {
				continue
			}
			data = append(data, []any{x, y, z})
		}
	}
	return charts.SingleSeries{
		Name: h.Label, Type: "scatter", Symbol: "rect",
		SymbolSize: []any{cw, chh}, Data: data,
		Large: opts.Bool(false),
	}
}

func zRange(z [][]float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, row := range z {
		for _, v := range row {
			if finite(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if lo > hi {
		return 0, 1
	}
	if lo == hi {
		hi = lo + 1
	}
	return lo, hi
}
