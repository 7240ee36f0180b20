package viz

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// pxToPt converts the panels' pixel sizes to points (96 px = 72 pt).
const pxToPt = 0.75

// Plots returns one gonum/plot plot per panel, with the same titles, axis
// labels, series and colours as the interactive chart.
func (c *Chart) Plots() ([]*plot.Plot, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	out := make([]*plot.Plot, len(c.Panels))
	for i, p := range c.Panels {
		pl, err := p.plot()
		if err != nil {
			return nil, err
		}
		out[i] = pl
	}
	return out, nil
}

// WriteImage draws the chart with gonum/plot and writes it to w as "png"
// (144 dpi), "svg" or "pdf": panels in rows of Columns (default up to 3),
// the chart title on top.
func (c *Chart) WriteImage(w io.Writer, format string) error {
	plots, err := c.Plots()
	if err != nil {
		return err
	}
	cols := c.Columns
	if cols <= 0 {
		cols = min(3, len(plots))
	}
	rows := (len(plots) + cols - 1) / cols
	var pw, ph int
	for _, p := range c.Panels {
		w, h := p.size()
		pw, ph = max(pw, w), max(ph, h)
	}
	titleH := vg.Length(0)
	if c.Title != "" {
		titleH = vg.Points(26)
	}
	W := vg.Points(float64(cols*pw) * pxToPt)
	H := vg.Points(float64(rows*ph)*pxToPt) + titleH

	var canvas vg.CanvasWriterTo
	switch strings.ToLower(format) {
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(W, H), vgimg.UseDPI(144), vgimg.UseBackgroundColor(color.White))}
	case "svg":
		canvas = vgsvg.New(W, H)
	case "pdf":
		canvas = vgpdf.New(W, H)
	default:
		return fmt.Errorf("%w: unknown image format %q: use png, svg or pdf", ErrChart, format)
	}
	dc := draw.New(canvas)
	if format != "png" {
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
	}
	if c.Title != "" {
		sty := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(13)),
			XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
		dc.FillText(sty, vg.Point{X: W / 2, Y: H - vg.Points(6)}, c.Title)
		dc = draw.Crop(dc, 0, 0, 0, -titleH)
	}
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
		for k := 0; k < cols; k++ {
			if i := r*cols + k; i < len(plots) {
				grid[r][k] = plots[i]
			}
		}
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(10), PadY: vg.Points(10), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	cs := plot.Align(grid, tiles, dc)
	for r := range grid {
		for k, p := range grid[r] {
			if p != nil {
				p.Draw(cs[r][k])
			}
		}
	}
	_, err = canvas.WriteTo(w)
	return err
}

func parseColor(s string, fallback color.Color) color.Color {
	s = strings.TrimPrefix(s, "#")
	if len(s) != 6 {
		return fallback
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return fallback
	}
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 255}
}

func paletteColor(s string, i int) color.Color {
	if s == "" {
		s = palette[i%len(palette)]
	}
	return parseColor(s, color.Black)
}

// xys keeps the drawable points of a series (gonum/plot cannot draw NaN
// or, on a log axis, values ≤ 0).
func xys(x, y []float64, log bool) plotter.XYs {
	out := make(plotter.XYs, 0, len(x))
	for i := range x {
		if finite(x[i]) && drawable(y[i], log) {
			out = append(out, plotter.XY{X: x[i], Y: y[i]})
		}
	}
	return out
}

func (p *Panel) plot() (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.X.Label.Text = p.XLabel
	pl.Y.Label.Text = p.YLabel
	pl.Legend.Top = true
	pl.Legend.TextStyle.Font.Size = vg.Points(8)
	if p.LogY {
		pl.Y.Scale = plot.LogScale{}
		pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if h := p.Heat; h != nil {
		g := heatGrid{h}
		lo, hi := zRange(h.Z)
		pal := viridisPalette(256)
		hm := plotter.NewHeatMap(g, pal)
		hm.Min, hm.Max = lo, hi
		pl.Add(hm)
		dx := (h.X[len(h.X)-1] - h.X[0]) / float64(len(h.X)-1) / 2
		dy := (h.Y[len(h.Y)-1] - h.Y[0]) / float64(len(h.Y)-1) / 2
		pl.X.Min, pl.X.Max = h.X[0]-dx, h.X[len(h.X)-1]+dx
		pl.Y.Min, pl.Y.Max = h.Y[0]-dy, h.Y[len(h.Y)-1]+dy
	}
	legend := map[string]bool{}
	addLegend := func(name string, th plot.Thumbnailer) {
		if name != "" && !legend[name] {
			legend[name] = true
			pl.Legend.Add(name, th)
		}
	}
	// Bars: one slot per stack (or per unstacked series) in each category.
	var slots []string
	slotOf := map[string]int{}
	for i, s := range p.Series {
		if s.Kind != Bar {
			continue
		}
		key := s.Stack
		if key == "" {
			key = "\x00" + strconv.Itoa(i)
		}
		if _, ok := slotOf[key]; !ok {
			slotOf[key] = len(slots)
			slots = append(slots, key)
		}
	}
	barW := vg.Points(14)
	if len(slots) > 0 && len(p.Categories) > 0 {
		w, _ := p.size()
		avail := float64(w-gridLeft-gridRight) * pxToPt / float64(len(p.Categories)) * 0.7
		barW = vg.Points(math.Min(36, avail/float64(len(slots))))
	}
	below := map[string]*plotter.BarChart{}
	for i, s := range p.Series {
		col := paletteColor(s.Color, i)
		switch s.Kind {
		case Line:
			pts := xys(s.X, s.Y, p.LogY)
			if len(pts) == 0 {
				continue
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return nil, fmt.Errorf("%w: panel %q series %q: %v", ErrChart, p.Title, s.Name, err)
			}
			l.LineStyle.Color = col
			l.LineStyle.Width = vg.Points(1.4)
			if s.Dashed {
				l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			pl.Add(l)
			addLegend(s.Name, l)
		case Band:
			th, err := addBand(pl, s, col, p.LogY)
			if err != nil {
				return nil, fmt.Errorf("%w: panel %q band %q: %v", ErrChart, p.Title, s.Name, err)
			}
			if th != nil {
				addLegend(s.Name, th)
			}
		case Scatter:
			pts := xys(s.X, s.Y, p.LogY)
			if len(pts) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, fmt.Errorf("%w: panel %q series %q: %v", ErrChart, p.Title, s.Name, err)
			}
			sc.GlyphStyle.Color = col
			sc.GlyphStyle.Radius = vg.Points(4.5)
			switch s.Symbol {
			case "triangle":
				sc.GlyphStyle.Shape = draw.PyramidGlyph{}
			case "diamond", "rect":
				sc.GlyphStyle.Shape = draw.BoxGlyph{}
			default:
				sc.GlyphStyle.Shape = draw.CircleGlyph{}
			}
			// An outline so light markers show on any background.
			outline := &plotter.Scatter{XYs: sc.XYs, GlyphStyle: draw.GlyphStyle{Color: color.Black, Radius: sc.GlyphStyle.Radius + vg.Points(1), Shape: sc.GlyphStyle.Shape}}
			pl.Add(outline, sc)
			addLegend(s.Name, sc)
		case Bar:
			vals := make(plotter.Values, len(s.Y))
			for j, y := range s.Y {
				if drawable(y, p.LogY) {
					vals[j] = y
				}
			}
			b, err := plotter.NewBarChart(vals, barW)
			if err != nil {
				return nil, fmt.Errorf("%w: panel %q series %q: %v", ErrChart, p.Title, s.Name, err)
			}
			b.Color = col
			b.LineStyle.Width = 0
			key := s.Stack
			if key == "" {
				key = "\x00" + strconv.Itoa(i)
			}
			b.Offset = (vg.Length(slotOf[key]) - vg.Length(len(slots)-1)/2) * barW
			if prev := below[key]; prev != nil {
				b.StackOn(prev)
			}
			below[key] = b
			pl.Add(b)
			addLegend(s.Name, b)
		}
	}
	if len(p.Categories) > 0 {
		pl.NominalX(p.Categories...)
		pl.X.Min, pl.X.Max = -0.5, float64(len(p.Categories))-0.5
		pl.Y.Min = 0
		pl.Y.Max *= 1.35 // room for the legend above the bars
	}
	pl.Add(plotter.NewGrid())
	return pl, nil
}

// heatGrid adapts Heat to plotter.GridXYZ.
type heatGrid struct{ h *Heat }

func (g heatGrid) Dims() (c, r int)   { return len(g.h.X), len(g.h.Y) }
func (g heatGrid) Z(c, r int) float64 { return g.h.Z[r][c] }
func (g heatGrid) X(c int) float64    { return g.h.X[c] }
func (g heatGrid) Y(r int) float64    { return g.h.Y[r] }

type colors []color.Color

func (c colors) Colors() []color.Color { return c }

// viridisPalette interpolates the viridis stops into n colours.
func viridisPalette(n int) colors {
	stops := make([]color.RGBA, len(viridis))
	for i, s := range viridis {
		stops[i] = parseColor(s, color.Black).(color.RGBA)
	}
	out := make(colors, n)
	for i := range out {
		t := float64(i) / float64(n-1) * float64(len(stops)-1)
		k := min(int(t), len(stops)-2)
		f := t - float64(k)
		a, b := stops[k], stops[k+1]
		mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(x)*(1-f) + float64(y)*f)) }
		out[i] = color.RGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 255}
	}
	return out
}

// addBand fills the band s between Lower and Y as one polygon per run of
// drawable points, and returns the first for the legend (nil when none).
func addBand(pl *plot.Plot, s Series, col color.Color, log bool) (plot.Thumbnailer, error) {
	r, g, b, _ := col.RGBA()
	a := bandOpacity
	fill := color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: uint8(math.Round(255 * a))}
	var first plot.Thumbnailer
	var up, lo plotter.XYs
	flush := func() error {
		if len(up) > 1 {
			ring := append(append(plotter.XYs{}, up...), reverseXYs(lo)...)
			poly, err := plotter.NewPolygon(ring)
			if err != nil {
				return err
			}
			poly.Color = fill
			poly.LineStyle.Width = 0
			pl.Add(poly)
			if first == nil {
				first = poly
			}
		}
		up, lo = up[:0], lo[:0]
		return nil
	}
	for i := range s.X {
		if !finite(s.X[i]) || !drawable(s.Y[i], log) || !drawable(s.Lower[i], log) {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		up = append(up, plotter.XY{X: s.X[i], Y: s.Y[i]})
		lo = append(lo, plotter.XY{X: s.X[i], Y: s.Lower[i]})
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return first, nil
}

func reverseXYs(v plotter.XYs) plotter.XYs {
	out := make(plotter.XYs, len(v))
	for i, p := range v {
		out[len(v)-1-i] = p
	}
	return out
}
