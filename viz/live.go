package viz

import (
	"fmt"
	"html"
	"strings"
	"sync"
	"time"

	"github.com/gpnb/gpnb/gpnb"
)

// Live is a progress view for a training run in a notebook: a progress line
// and two charts (the current solve's residuals, the solver iterations per
// step so far) that update in place, through gonbui's UpdateHTML with a
// stable display id. It is a gpnb.Recorder: add it to an optimiser with
// Optimiser.AddRecorder (beside any other recorder), or call
// RecordIteration and RecordStep yourself. Updates are throttled to one per Every; RecordStep
// and Done always update. Methods are safe to call from any goroutine.
type Live struct {
	// Title heads the view.
	Title string
	// Every is the least time between two updates from RecordIteration (0:
	// every call updates).
	Every time.Duration

	mu       sync.Mutex
	id       string
	shown    bool
	started  time.Time
	last     time.Time
	step     int
	iter     int
	first    int         // iteration number of trace[0]
	trace    [][]float64 // relative residuals of the current solve
	history  gpnb.History
	done     bool
	snapshot string
}

// NewLive returns a live view that updates at most four times a second.
func NewLive(title string) *Live {
	return &Live{Title: title, Every: 250 * time.Millisecond}
}

// RecordIteration records the relative residuals of every column after a
// solver iteration.
func (l *Live) RecordIteration(p gpnb.IterationRecord) {
	step, iter, relRes := p.Step, p.Iteration, p.RelResiduals
	l.mu.Lock()
	defer l.mu.Unlock()
	if step != l.step || iter < l.iter {
		l.trace = l.trace[:0]
		l.first = iter
	}
	l.step, l.iter = step, iter
	l.trace = append(l.trace, append([]float64(nil), relRes...))
	if now := time.Now(); now.Sub(l.last) >= l.Every {
		l.update(now)
	}
}

// RecordStep records a completed step.
func (l *Live) RecordStep(rec gpnb.StepRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.history = append(l.history, rec)
	l.step = rec.Step
	if len(rec.Residuals) > 0 {
		// The record's full trajectory includes iteration 0.
		l.trace = append(l.trace[:0], rec.Residuals...)
		l.first = 0
		l.iter = len(rec.Residuals) - 1
	}
	l.update(time.Now())
}

// Done marks the run finished and shows the final state.
func (l *Live) Done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	l.update(time.Now())
}

// HTML returns the view's latest content (without the echarts library).
func (l *Live) HTML() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.render()
}

// update renders and sends the view; l.mu is held.
func (l *Live) update(now time.Time) {
	if l.started.IsZero() {
		l.started = now
	}
	l.last = now
	if !l.shown {
		l.id = uniqueID()
		// The library, when this kernel session has not sent it yet, in
		// an output of its own; the updates then only carry data.
		if lib := pageLibrary(); lib != "" {
			newOutput("echarts", "the echarts library for "+l.Title, uniqueID(), css+lib)
		}
		// The first update creates the view's output.
		logOutput("live", l.Title, l.id)
		l.shown = true
	}
	l.snapshot = l.render()
	updateHTML(l.id, l.snapshot)
	// Every update waits until GoNB has it, so the last one is never lost
	// when the cell's program ends (updates are throttled to Every).
	syncDisplay()
}

// progress returns the one-line summary; l.mu is held.
func (l *Live) progress() string {
	var parts []string
	state := "running"
	if l.done {
		state = "done"
	}
	parts = append(parts, fmt.Sprintf("%s: step %d", state, l.step))
	if n := len(l.trace); n > 0 {
		row := l.trace[n-1]
		parts = append(parts, fmt.Sprintf("iteration %d", l.iter))
		if len(row) > 0 {
			parts = append(parts, fmt.Sprintf("mean residual %.3g (tol 0.01)", row[0]))
		}
		if len(row) > 1 {
			mx, _ := maxMedian(append([]float64(nil), row[1:]...))
			parts = append(parts, fmt.Sprintf("probe residual max %.3g (tol 0.1)", mx))
		}
	}
	if n := len(l.history); n > 0 {
		r := l.history[n-1]
		parts = append(parts, fmt.Sprintf("last step: %d iterations, %.3g s", r.SolverIterations, r.StepSeconds),
			fmt.Sprintf("σ=%.4g s=%.4g", r.Noise, r.Signal))
	}
	if !l.started.IsZero() {
		parts = append(parts, fmt.Sprintf("elapsed %.1f s", l.last.Sub(l.started).Seconds()))
	}
	return strings.Join(parts, " · ")
}

// render returns the view's HTML, the notebook output's whole content once
// it is shown; l.mu is held.
func (l *Live) render() string {
	if l.id == "" {
		return l.content()
	}
	return outputHTML(l.id, l.content())
}

// content returns the progress line and the charts; l.mu is held.
func (l *Live) content() string {
	var b strings.Builder
	if l.Title != "" {
		fmt.Fprintf(&b, "<div class=\"gpnb-chart-title\">%s</div>\n", html.EscapeString(l.Title))
	}
	fmt.Fprintf(&b, "<div class=\"gpnb-live\">%s</div>\n", html.EscapeString(l.progress()))
	c := &Chart{}
	if len(l.trace) > 0 {
		if p, err := residualPanel(fmt.Sprintf("step %d: relative residuals", l.step), l.trace, l.first); err == nil {
			c.Panels = append(c.Panels, p)
		}
	}
	if len(l.history) > 0 {
		x := make([]float64, len(l.history))
		y := make([]float64, len(l.history))
		for i, r := range l.history {
			x[i], y[i] = float64(r.Step), float64(r.SolverIterations)
		}
		c.Panels = append(c.Panels, &Panel{Title: "solver iterations per step", XLabel: "step", YLabel: "iterations",
			Series: []Series{{Name: "iterations", Kind: Line, X: x, Y: y, Color: ColorWarm}}})
	}
	if len(c.Panels) > 0 {
		id := l.id
		if id == "" {
			id = "gpnb-live"
		}
		frag, err := c.fragment(id + "-c")
		if err != nil {
			frag = errorHTML(err)
		}
		b.WriteString(frag)
	}
	return b.String()
}
