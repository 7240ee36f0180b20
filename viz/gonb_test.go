package viz

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/results"
)

// useFakeLibrary makes pages inline a small fake bundle (checked by its
// text) instead of the real one.
func useFakeLibrary(t *testing.T) {
	t.Helper()
	own := filepath.Join(t.TempDir(), "echarts.min.js")
	fakeBundle(t, own)
	t.Setenv(EnvEchartsJS, own)
	resetEcharts()
	t.Cleanup(resetEcharts)
}

var displayIDRe = regexp.MustCompile(`data-gpnb-display="([^"]+)"`)

// outputID returns the data-gpnb-display id of one output's HTML, which
// must have exactly one.
func outputID(t *testing.T, h string) string {
	t.Helper()
	m := displayIDRe.FindAllStringSubmatch(h, -1)
	if len(m) != 1 {
		t.Fatalf("output has %d data-gpnb-display ids, want 1: %.200s", len(m), h)
	}
	return m[0][1]
}

type logLine struct{ ID, Kind, Title string }

func readDisplayLog(t *testing.T, path string) []logLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []logLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// Every path that sends something to the notebook waits for GoNB right
// after (gonbui.Sync), so nothing is left in the pipe when a cell's program
// exits; and every new output is logged with the id it carries.
func TestEveryOutputIsFlushedAndLogged(t *testing.T) {
	useFakeLibrary(t)
	got := captureDisplay(t)
	logPath := filepath.Join(t.TempDir(), "displays.jsonl")
	t.Setenv(EnvDisplayLog, logPath)

	res := synthResults([]string{"pol"}, []string{"cg"}, 1, 4, 2)
	c, err := Iterations(res)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := ResultsTable(res)
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport("a report")
	rep.AddChart(c)
	rep.AddTable(tb)
	bad := NewReport("a bad report")
	bad.AddTable(&results.Table{Title: "no columns"})

	c.Show()
	ShowTable(tb)
	rep.Show()
	(&Chart{Title: "no panels"}).Show() // shows its error
	bad.Show()
	l := NewLive("live")
	l.Every = 0
	l.RecordIteration(gpnb.IterationRecord{Step: 1, Iteration: 1, RelResiduals: []float64{0.5, 0.6}})
	l.RecordStep(gpnb.StepRecord{Step: 1, SolverIterations: 1, Residuals: [][]float64{{1, 1}, {0.5, 0.6}}})
	l.Done()

	// Every display and update is followed at once by a sync.
	for i, e := range got.events {
		if e != "sync" && (i+1 == len(got.events) || got.events[i+1] != "sync") {
			t.Errorf("event %d (%s) is not followed by a sync: %q", i, e, got.events)
		}
	}
	// Five displays (the first chart carried the library, so the live view
	// of the same process needs no output of its own for it) and the live
	// view's updates.
	if len(got.displays) != 5 {
		t.Fatalf("%d displays, want 5 (chart, table, report, two errors)", len(got.displays))
	}
	var ids []string
	for _, h := range got.displays {
		ids = append(ids, outputID(t, h))
	}
	for _, u := range got.updates {
		if outputID(t, u.html) != u.id {
			t.Errorf("update of %s carries id %s", u.id, outputID(t, u.html))
		}
	}
	ids = append(ids, got.updates[0].id)
	logged := readDisplayLog(t, logPath)
	kinds := []string{"chart", "table", "report", "chart", "report", "live"}
	if len(logged) != len(ids) {
		t.Fatalf("%d outputs logged, %d created: %+v", len(logged), len(ids), logged)
	}
	for i, l := range logged {
		if l.ID != ids[i] || l.Kind != kinds[i] {
			t.Errorf("log line %d = %+v, want id %s kind %s", i, l, ids[i], kinds[i])
		}
	}
	if logged[0].Title != c.Title || logged[5].Title != "live" {
		t.Errorf("logged titles %q, %q", logged[0].Title, logged[5].Title)
	}
	if !strings.Contains(got.displays[3], "gpnb-error") || !strings.Contains(got.displays[4], "no columns") {
		t.Error("a chart or report that cannot be drawn shows its error")
	}
}

func countLibrary(h string) int { return strings.Count(h, "window.echarts = {fake: true}") }

// The library travels with the first output of a kernel session: later
// outputs of the same process, and outputs of later cells (new processes)
// of the same kernel, use the page's copy; a new kernel sends it again, and
// so does ResendEcharts.
func TestLibraryOncePerKernelSession(t *testing.T) {
	useFakeLibrary(t)
	got := captureDisplay(t)
	kernel1 := t.TempDir()
	t.Setenv(envGoNBTmp, kernel1)
	r := synthResult("pol", "cg", true, 0, 3, 1, 2)
	c, err := Distances(r.History)
	if err != nil {
		t.Fatal(err)
	}
	carried := func() []int {
		var n []int
		for _, h := range got.displays {
			n = append(n, countLibrary(h))
		}
		got.displays = nil
		return n
	}
	equal := slices.Equal[[]int]

	// Cell 1: a table (no library needed), then two charts.
	ShowTable(&results.Table{Columns: []results.Column{{Name: "a"}}})
	c.Show()
	c.Show()
	if n := carried(); !equal(n, []int{0, 1, 0}) {
		t.Errorf("cell 1: library copies per output %v, want [0 1 0]", n)
	}
	// Cell 2, a new process of the same kernel: a report and a live view.
	newProcess()
	rep := NewReport("r")
	rep.AddChart(c)
	rep.Show()
	l := NewLive("l")
	l.Done()
	if n := carried(); !equal(n, []int{0}) || len(got.updates) != 1 || countLibrary(got.updates[0].html) != 0 {
		t.Errorf("cell 2: library copies per output %v (want [0]) and %d updates", n, len(got.updates))
	}
	// ResendEcharts: the next output carries it again, once.
	ResendEcharts()
	c.Show()
	c.Show()
	if n := carried(); !equal(n, []int{1, 0}) {
		t.Errorf("after ResendEcharts: %v, want [1 0]", n)
	}
	// A restarted kernel has a new temporary folder.
	newProcess()
	t.Setenv(envGoNBTmp, t.TempDir())
	l = NewLive("l2")
	l.Done()
	c.Show()
	if n := carried(); !equal(n, []int{1, 0}) {
		t.Errorf("new kernel: %v, want the live view's own library output, then a chart without it", n)
	}
	// Outside GoNB: once per process.
	t.Setenv(envGoNBTmp, "")
	newProcess()
	c.Show()
	c.Show()
	if n := carried(); !equal(n, []int{1, 0}) {
		t.Errorf("no GONB_TMP_DIR: %v, want [1 0]", n)
	}
	// The self-contained fragment and the standalone page always carry it.
	if countLibrary(c.HTML()) != 1 {
		t.Error("Chart.HTML must stay self-contained")
	}
}

// Without a local copy every output loads the CDN (costing no space), and
// the charts wait for its load event.
func TestCDNInEveryOutput(t *testing.T) {
	t.Cleanup(resetEcharts)
	noCheckoutCopy(t)
	t.Chdir(t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv(EnvNoInstall, "1")
	t.Setenv(EnvEchartsJS, "")
	resetEcharts()
	got := captureDisplay(t)
	r := synthResult("pol", "cg", true, 0, 3, 1, 2)
	c, err := Distances(r.History)
	if err != nil {
		t.Fatal(err)
	}
	c.Show()
	c.Show()
	for i, h := range got.displays {
		if strings.Count(h, `<script src="`+EchartsCDN+`">`) != 1 || !strings.Contains(h, `addEventListener("load"`) {
			t.Errorf("output %d should load the CDN and drain the queue on load: %.300s", i, h)
		}
	}
}
