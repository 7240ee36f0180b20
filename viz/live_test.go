package viz

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
)

type captured struct {
	displays []string
	updates  []struct{ id, html string }
	// events is the order of calls: "display", "update ID" and "sync".
	events []string
}

// captureDisplay records what would be sent to GoNB, as a fresh process of
// a fresh kernel session (the library not sent yet).
func captureDisplay(t *testing.T) *captured {
	t.Helper()
	c := &captured{}
	d, u, s := displayHTML, updateHTML, syncDisplay
	displayHTML = func(h string) {
		c.displays = append(c.displays, h)
		c.events = append(c.events, "display")
	}
	updateHTML = func(id, h string) {
		c.updates = append(c.updates, struct{ id, html string }{id, h})
		c.events = append(c.events, "update "+id)
	}
	syncDisplay = func() { c.events = append(c.events, "sync") }
	t.Setenv(envGoNBTmp, "")
	newProcess()
	t.Cleanup(func() {
		displayHTML, updateHTML, syncDisplay = d, u, s
		newProcess()
	})
	return c
}

// newProcess forgets what this process sent, as a new cell's program.
func newProcess() {
	session.mu.Lock()
	session.sent = false
	session.mu.Unlock()
}

var specRe = regexp.MustCompile(`var specs = (\[.*\]);`)

// liveSpecs decodes the chart options an update carries.
func liveSpecs(t *testing.T, h string) []map[string]any {
	t.Helper()
	m := specRe.FindStringSubmatch(h)
	if m == nil {
		t.Fatalf("no chart in update %q", h)
	}
	var specs []struct {
		Option map[string]any `json:"option"`
	}
	if err := json.Unmarshal([]byte(m[1]), &specs); err != nil {
		t.Fatal(err)
	}
	out := make([]map[string]any, len(specs))
	for i, s := range specs {
		out[i] = s.Option
	}
	return out
}

func TestLiveUpdatesInPlace(t *testing.T) {
	t.Setenv(EnvNoInstall, "1")
	got := captureDisplay(t)
	l := NewLive("training pol")
	l.Every = 0 // update on every call
	res := [][]float64{{0.5, 0.9, 0.7}, {0.05, 0.3, 0.2}, {0.004, 0.08, 0.09}}
	for i, r := range res {
		l.RecordIteration(gpnb.IterationRecord{Step: 1, Iteration: i + 1, RelResiduals: r})
	}
	if len(got.displays) != 1 || !strings.Contains(got.displays[0], "<script") {
		t.Fatalf("want one display carrying the library, got %d", len(got.displays))
	}
	if len(got.updates) != 3 {
		t.Fatalf("%d updates, want 3", len(got.updates))
	}
	id := got.updates[0].id
	for _, u := range got.updates {
		if u.id != id {
			t.Fatalf("display id changed from %s to %s", id, u.id)
		}
	}
	last := got.updates[2].html
	for _, s := range []string{"running: step 1", "iteration 3", "mean residual 0.004", "probe residual max 0.09"} {
		if !strings.Contains(last, s) {
			t.Errorf("progress line lacks %q: %s", s, last)
		}
	}
	opts := liveSpecs(t, last)
	ss := seriesOf(t, opts[0])
	xs, ys := xy(t, ss[0])
	for i := range res {
		if xs[i] != float64(i+1) || ys[i] != res[i][0] {
			t.Errorf("mean residual point %d = (%v, %v), want (%d, %v)", i, xs[i], ys[i], i+1, res[i][0])
		}
	}
	if axisType(t, opts[0], "yAxis") != "log" {
		t.Error("live residual axis should be log")
	}

	// The step ends: its record replaces the trace; a new step restarts it.
	l.RecordStep(gpnb.StepRecord{Step: 1, SolverIterations: 3, StepSeconds: 0.5, Noise: 0.9, Signal: 1.1,
		Residuals: append([][]float64{{1, 1, 1}}, res...)})
	l.RecordIteration(gpnb.IterationRecord{Step: 2, Iteration: 1, RelResiduals: []float64{0.2, 0.5, 0.4}})
	opts = liveSpecs(t, got.updates[len(got.updates)-1].html)
	if len(opts) != 2 {
		t.Fatalf("%d panels after a step, want residuals and iterations", len(opts))
	}
	xs, ys = xy(t, seriesOf(t, opts[0])[0])
	if len(xs) != 1 || xs[0] != 1 || ys[0] != 0.2 {
		t.Errorf("new step's trace = %v %v, want one point (1, 0.2)", xs, ys)
	}
	xs, ys = xy(t, seriesOf(t, opts[1])[0])
	if len(xs) != 1 || xs[0] != 1 || ys[0] != 3 {
		t.Errorf("iterations per step = %v %v, want (1, 3)", xs, ys)
	}
	l.Done()
	final := got.updates[len(got.updates)-1].html
	if !strings.Contains(final, "done: step 2") || !strings.Contains(final, "last step: 3 iterations") {
		t.Errorf("final view %q", final)
	}
	if l.HTML() != final {
		t.Error("HTML() should return the latest view")
	}
	if len(got.displays) != 1 {
		t.Errorf("the library was sent %d times, want once", len(got.displays))
	}
}

func TestLiveThrottles(t *testing.T) {
	t.Setenv(EnvNoInstall, "1")
	got := captureDisplay(t)
	l := NewLive("") // 250 ms between updates
	for i := 1; i <= 50; i++ {
		l.RecordIteration(gpnb.IterationRecord{Step: 1, Iteration: i, RelResiduals: []float64{1 / float64(i)}})
	}
	if len(got.updates) == 0 || len(got.updates) > 5 {
		t.Errorf("%d updates for 50 fast iterations, want 1..5", len(got.updates))
	}
	l.RecordStep(gpnb.StepRecord{Step: 1, SolverIterations: 50})
	if !strings.Contains(got.updates[len(got.updates)-1].html, "last step: 50 iterations") {
		t.Error("RecordStep must always update")
	}
}
