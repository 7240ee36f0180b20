package viz

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// ErrChart is wrapped by every error this package returns for input it
// cannot chart (empty, mismatched lengths, non-finite numerical inputs,
// unknown output formats).
var ErrChart = errors.New("viz")

// SeriesKind says how a series is drawn.
type SeriesKind int

// The series kinds.
const (
	Line    SeriesKind = iota // polyline through (X[i], Y[i])
	Scatter                   // markers at (X[i], Y[i])
	Bar                       // one bar per category of the panel, height Y[i]
	Band                      // filled area between Lower[i] and Y[i] over X[i] (a predictive band)
)

func (k SeriesKind) echarts() string {
	switch k {
	case Scatter:
		return "scatter"
	case Bar:
		return "bar"
	case Band:
		return "custom"
	}
	return "line"
}

// Series is one named data series of a panel. Values that are NaN or ±Inf
// (and values ≤ 0 on a log axis) are not drawn: the line has a gap there.
// Builders that read records add a note to the panel saying how many such
// values they met, so nothing is dropped silently.
type Series struct {
	Name string
	Kind SeriesKind
	// X holds the x values of Line, Scatter and Band series; Bar series
	// leave it nil and give one Y per category of the panel.
	X, Y []float64
	// Lower is a Band's lower edge at each X; Y is its upper edge. The band
	// is filled between them, in X order, with a gap where a value cannot
	// be drawn.
	Lower []float64
	// Stack groups Bar series: bars with the same non-empty Stack are
	// stacked in one slot per category, and different stacks stand side
	// by side.
	Stack string
	// Color is a CSS colour ("#5470c6"); empty picks from the palette.
	Color string
	// Dashed draws a Line series dashed.
	Dashed bool
	// Symbol is a Scatter marker: "circle", "diamond", "triangle", "rect"
	// or "pin"; empty means "circle".
	Symbol string
	// SymbolSize is the marker size in pixels (0: 6 for lines, 12 for scatter).
	SymbolSize int
}

// Heat is a scalar field on a rectangular grid, drawn as a heat map with a
// colour scale underneath the panel's series (figure 1, left).
type Heat struct {
	X, Y []float64   // increasing, evenly spaced grid coordinates
	Z    [][]float64 // Z[j][i] is the value at (X[i], Y[j])
	// Label names the colour scale ("f(u)").
	Label string
}

// Panel is one set of axes: one echarts instance in HTML, one gonum/plot
// plot in PNG/SVG.
type Panel struct {
	Title          string
	XLabel, YLabel string
	// Categories, when set, makes the x axis categorical (bar charts):
	// Bar series give one value per category.
	Categories []string
	LogY       bool
	Series     []Series
	Heat       *Heat
	// Notes are shown under the title (e.g. "mean over 10 splits").
	Notes []string
	// Width and Height are the panel's size in pixels (0: 480×340).
	Width, Height int
}

// Chart is a figure made of one or more panels, laid out left to right and
// wrapped into rows of at most Columns panels. Builders such as Runtimes,
// Iterations and Hyperparameters return one; HTML, Show and Save render it.
type Chart struct {
	Title string
	// Notes are shown under the title.
	Notes  []string
	Panels []*Panel
	// Columns is the number of panels per row in static images (0: up to 3).
	Columns int
}

const (
	defaultWidth  = 480
	defaultHeight = 340
)

func (p *Panel) size() (w, h int) {
	w, h = p.Width, p.Height
	if w <= 0 {
		w = defaultWidth
	}
	if h <= 0 {
		h = defaultHeight
	}
	return w, h
}

// Validate checks that every series fits its panel: X and Y of equal
// length for Line and Scatter, one Y per category for Bar, a rectangular
// heat grid.
func (c *Chart) Validate() error {
	if c == nil || len(c.Panels) == 0 {
		return fmt.Errorf("%w: chart has no panels: build it with one of the chart functions or add a Panel", ErrChart)
	}
	for i, p := range c.Panels {
		if p == nil {
			return fmt.Errorf("%w: panel %d is nil", ErrChart, i)
		}
		for _, s := range p.Series {
			switch s.Kind {
			case Bar:
				if len(p.Categories) == 0 {
					return fmt.Errorf("%w: panel %q: bar series %q needs the panel's Categories", ErrChart, p.Title, s.Name)
				}
				if len(s.Y) != len(p.Categories) {
					return fmt.Errorf("%w: panel %q: bar series %q has %d values for %d categories", ErrChart, p.Title, s.Name, len(s.Y), len(p.Categories))
				}
			case Line, Scatter:
				if len(s.X) != len(s.Y) {
					return fmt.Errorf("%w: panel %q: series %q has %d x and %d y values", ErrChart, p.Title, s.Name, len(s.X), len(s.Y))
				}
			case Band:
				if len(s.X) != len(s.Y) || len(s.X) != len(s.Lower) {
					return fmt.Errorf("%w: panel %q: band %q has %d x, %d upper (Y) and %d lower values: give one of each per x", ErrChart, p.Title, s.Name, len(s.X), len(s.Y), len(s.Lower))
				}
			default:
				return fmt.Errorf("%w: panel %q: series %q has unknown kind %d", ErrChart, p.Title, s.Name, s.Kind)
			}
		}
		if h := p.Heat; h != nil {
			if len(h.X) < 2 || len(h.Y) < 2 || len(h.Z) != len(h.Y) {
				return fmt.Errorf("%w: panel %q: heat map needs at least 2×2 grid points and len(Z) = len(Y)", ErrChart, p.Title)
			}
			for j, row := range h.Z {
				if len(row) != len(h.X) {
					return fmt.Errorf("%w: panel %q: heat map row %d has %d values for %d x points", ErrChart, p.Title, j, len(row), len(h.X))
				}
			}
		}
	}
	return nil
}

// Combine puts the panels of several charts side by side in one chart
// (figure 1: the cross-section beside the distances). The panels are shared,
// not copied.
func Combine(title string, charts ...*Chart) *Chart {
	out := &Chart{Title: title}
	for _, c := range charts {
		if c == nil {
			continue
		}
		out.Notes = append(out.Notes, c.Notes...)
		for _, p := range c.Panels {
			if p.Title == "" {
				p.Title = c.Title
			}
			out.Panels = append(out.Panels, p)
		}
	}
	return out
}

// SeriesNames returns the names of a panel's series in order, each once.
func (p *Panel) SeriesNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, s := range p.Series {
		if !seen[s.Name] {
			seen[s.Name] = true
			names = append(names, s.Name)
		}
	}
	return names
}

// finite reports whether v is neither NaN nor ±Inf.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// drawable reports whether v can be drawn on an axis (log: v > 0).
func drawable(v float64, log bool) bool { return finite(v) && (!log || v > 0) }

// badCounter counts values a builder could not draw, to note them on the panel.
type badCounter struct{ n int }

func (b *badCounter) check(v float64) float64 {
	if !finite(v) {
		b.n++
	}
	return v
}

func (b *badCounter) note(p *Panel, what string) {
	if b.n > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d non-finite %s not drawn", b.n, what))
	}
}

func noteText(notes []string) string { return strings.Join(notes, "; ") }
