package viz

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
)

// notebookOutputs runs what four notebook cells of one kernel session show
// (each cell a new process), then a fifth cell after a kernel restart, and
// returns the outputs in the order a saved notebook holds them: a live
// view's output is where its first update created it, with its last
// content. It returns too how many chart panels they hold.
func notebookOutputs(t *testing.T) (outputs []string, panels int) {
	t.Helper()
	got := captureDisplay(t)
	t.Setenv(envGoNBTmp, t.TempDir())
	res := synthResults([]string{"pol"}, []string{"cg", "ap"}, 2, 6, 2)
	must := func(c *Chart, err error) *Chart {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		panels += len(c.Panels)
		return c
	}
	// Cell 1: a table, then the session's first chart.
	tb, err := ResultsTable(res)
	if err != nil {
		t.Fatal(err)
	}
	ShowTable(tb)
	must(Iterations(res)).Show()
	// Cell 2: a live view, then a chart.
	newProcess()
	l := NewLive("a live view")
	l.Every = 0
	for i := 1; i <= 5; i++ {
		l.RecordIteration(gpnb.IterationRecord{Step: 1, Iteration: i, RelResiduals: []float64{1 / float64(i), 2 / float64(i)}})
	}
	l.RecordStep(res[1].History[0])
	l.Done()
	panels += 2 // its residuals and iterations panels
	must(Predictive(sinePrediction(2))).Show()
	// Cell 3: a report.
	newProcess()
	rep := NewReport("a report in a cell")
	rep.AddChart(must(Hyperparameters(res)))
	rep.Show()
	// Cell 4: two charts.
	newProcess()
	must(Runtimes(res)).Show()
	must(Iterations(res[:1])).Show()
	// Cell 5, after a kernel restart: the page has the library already.
	newProcess()
	t.Setenv(envGoNBTmp, t.TempDir())
	must(ResidualsLast(res[0].History, 2)).Show()

	live := map[string]int{}
	d, u := 0, 0
	for _, e := range got.events {
		switch {
		case e == "display":
			outputs = append(outputs, got.displays[d])
			d++
		case strings.HasPrefix(e, "update "):
			id := strings.TrimPrefix(e, "update ")
			if i, ok := live[id]; ok {
				outputs[i] = got.updates[u].html
			} else {
				live[id] = len(outputs)
				outputs = append(outputs, got.updates[u].html)
			}
			u++
		}
	}
	if n := strings.Count(strings.Join(outputs, ""), libraryMark); n != 2 {
		t.Fatalf("the library is in %d outputs, want 2 (the first chart of each kernel session)", n)
	}
	return outputs, panels
}

// writeNotebook writes outputs as the display_data outputs of one code cell
// each, in an nbformat 4 notebook of the gonb kernel.
func writeNotebook(t *testing.T, path string, outputs []string) {
	t.Helper()
	var cells []any
	for i, o := range outputs {
		cells = append(cells, map[string]any{
			"cell_type": "code", "execution_count": i + 1, "metadata": map[string]any{}, "source": fmt.Sprintf("%%%%\n// output %d", i),
			"outputs": []any{map[string]any{"output_type": "display_data", "metadata": map[string]any{}, "data": map[string]any{"text/html": o}}},
		})
	}
	nb := map[string]any{"nbformat": 4, "nbformat_minor": 5, "cells": cells, "metadata": map[string]any{
		"kernelspec":    map[string]any{"name": "gonb", "display_name": "Go (gonb)", "language": "go"},
		"language_info": map[string]any{"name": "go"}}}
	b, err := json.Marshal(nb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// frontEndPage is a stand-in for a notebook front end opening a saved
// notebook: it inserts each output's HTML and then runs its scripts, as
// JupyterLab does (innerHTML, then every script replaced by a fresh copy,
// in order; the classic notebook's jQuery runs them in the same order). The
// outputs are inserted in the order given (a windowed notebook may render
// a later output first), and the page records script errors.
const frontEndPage = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>front end</title>
<script>
window.gpnbErrors = [];
window.onerror = function(msg, src, line) { window.gpnbErrors.push(msg + " at " + line); };
</script></head><body>
<div id="notebook"></div>
<pre id="errors"></pre>
<script>
var outputs = %s, order = %s;
var slots = [];
for (var i = 0; i < outputs.length; i++) {
  var s = document.createElement("div"); s.className = "jp-OutputArea-output";
  document.getElementById("notebook").appendChild(s); slots.push(s);
}
for (var k = 0; k < order.length; k++) {
  var host = slots[order[k]];
  host.innerHTML = outputs[order[k]];
  var scripts = Array.prototype.slice.call(host.getElementsByTagName("script"));
  for (var j = 0; j < scripts.length; j++) {
    var old = scripts[j], clone = document.createElement("script");
    for (var a = 0; a < old.attributes.length; a++) { clone.setAttribute(old.attributes[a].name, old.attributes[a].value); }
    clone.textContent = old.textContent;
    old.parentNode.replaceChild(clone, old);
  }
}
setTimeout(function() { document.getElementById("errors").textContent = JSON.stringify(window.gpnbErrors); }, 5000);
</script></body></html>
`

var (
	panelRe = regexp.MustCompile(`<div class="gpnb-panel" id="([^"]+)" data-title="([^"]*)"[^>]*>`)
	waitRe  = regexp.MustCompile(`<div class="(gpnb-wait[^"]*)" id="([^"]+)-wait">([^<]*)</div>`)
	errsRe  = regexp.MustCompile(`<pre id="errors">([^<]*)</pre>`)
)

// drawnState reads from a dumped DOM the panels that echarts drew (it marks
// their elements with _echarts_instance_ and draws into a canvas), those it
// did not, and the waiting messages still shown.
func drawnState(dom string) (drawn int, notDrawn []string, waits []string) {
	for _, m := range panelRe.FindAllStringSubmatchIndex(dom, -1) {
		tag := dom[m[0]:m[1]]
		title := html.UnescapeString(dom[m[4]:m[5]])
		end := strings.Index(dom[m[1]:], `<div class="gpnb-panel"`)
		if end < 0 {
			end = len(dom) - m[1]
		}
		if strings.Contains(tag, "_echarts_instance_") && strings.Contains(dom[m[1]:m[1]+end], "<canvas") {
			drawn++
		} else {
			notDrawn = append(notDrawn, title)
		}
	}
	for _, m := range waitRe.FindAllStringSubmatch(dom, -1) {
		waits = append(waits, m[1]+": "+html.UnescapeString(m[3]))
	}
	return drawn, notDrawn, waits
}

// The outputs of a notebook session draw every chart wherever a saved
// notebook is shown: opened again in a front end (in order, or with the
// outputs that carry the library last), and as `jupyter nbconvert --to html`. Only the first chart
// of each kernel session carries the library. Without any output that
// carries it, each chart says so instead of failing silently.
func TestNotebookOutputsDrawInHeadlessChromium(t *testing.T) {
	chromium := needBrowser(t)
	outputs, panels := notebookOutputs(t)
	dir := t.TempDir()
	enc := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	check := func(name, page string, wantDrawn int, wantMissing bool) {
		t.Helper()
		path := filepath.Join(dir, name+".html")
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		dom := string(runChromium(t, chromium, filepath.Join(dir, "profile-"+name), "--window-size=1400,1000", "--dump-dom", "file://"+path))
		drawn, notDrawn, waits := drawnState(dom)
		if drawn != wantDrawn {
			t.Errorf("%s: %d panels drawn, want %d; not drawn: %q", name, drawn, wantDrawn, notDrawn)
		}
		if m := errsRe.FindStringSubmatch(dom); m != nil && m[1] != "[]" {
			t.Errorf("%s: script errors %s", name, html.UnescapeString(m[1]))
		}
		if wantMissing {
			if len(waits) == 0 {
				t.Errorf("%s: the charts should say the library is missing", name)
			}
			for _, w := range waits {
				if !strings.Contains(w, "gpnb-error") || !strings.Contains(w, "viz.ResendEcharts()") {
					t.Errorf("%s: waiting message %q should explain the missing library", name, w)
				}
			}
		} else if len(waits) > 0 {
			t.Errorf("%s: waiting messages left: %q", name, waits)
		}
	}
	order := make([]int, len(outputs))
	for i := range order {
		order[i] = i
	}
	check("reopened", fmt.Sprintf(frontEndPage, enc(outputs), enc(order)), panels, false)
	// The outputs that carry the library last, the others backwards: every
	// chart waits for the library, and is drawn when it comes.
	var late, carriers []int
	for i := len(outputs) - 1; i >= 0; i-- {
		if strings.Contains(outputs[i], libraryMark) {
			carriers = append(carriers, i)
		} else {
			late = append(late, i)
		}
	}
	check("reopened-library-last", fmt.Sprintf(frontEndPage, enc(outputs), enc(append(late, carriers...))), panels, false)
	var without []string
	for _, o := range outputs {
		if !strings.Contains(o, libraryMark) {
			without = append(without, o)
		}
	}
	check("library-gone", fmt.Sprintf(frontEndPage, enc(without), enc(order[:len(without)])), 0, true)

	// nbconvert's HTML page of the same notebook.
	nbconvert := ""
	for _, name := range []string{"/usr/bin/jupyter-nbconvert", "jupyter-nbconvert"} {
		if p, err := exec.LookPath(name); err == nil {
			nbconvert = p
			break
		}
	}
	if nbconvert == "" {
		if os.Getenv("GPNB_REQUIRE_BROWSER") == "1" {
			t.Fatal("jupyter-nbconvert not found (apt-get install jupyter-nbconvert), and GPNB_REQUIRE_BROWSER=1")
		}
		t.Skip("jupyter-nbconvert not found (apt-get install jupyter-nbconvert)")
	}
	nb := filepath.Join(dir, "session.ipynb")
	writeNotebook(t, nb, outputs)
	cmd := exec.Command(nbconvert, "--to", "html", "--output-dir", dir, nb)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nbconvert: %v\n%s", err, out)
	}
	page, err := os.ReadFile(filepath.Join(dir, "session.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), libraryMark); n != 2 {
		t.Errorf("nbconvert page holds the library %d times, want 2", n)
	}
	check("nbconvert", string(page), panels, false)
}
