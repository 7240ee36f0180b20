package viz

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"path/filepath"
	"strings"

	"github.com/gpnb/gpnb/gpnb/results"
	"github.com/gpnb/gpnb/internal/atomicfile"
)

// css styles charts and tables; every class is prefixed gpnb- so a page or
// notebook's own styles are not touched.
const css = `<style>
.gpnb-report{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#222;margin:16px 24px;background:#fff}
.gpnb-report h1{font-size:22px;margin:4px 0 12px}
.gpnb-report h2{font-size:18px;margin:24px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.gpnb-chart{margin:8px 0 18px}
.gpnb-chart-title{font-weight:600;font-size:15px;margin:8px 0 2px;font-family:system-ui,sans-serif}
.gpnb-notes{color:#666;font-size:12px;margin:0 0 6px;font-family:system-ui,sans-serif}
.gpnb-panels{display:flex;flex-wrap:wrap;gap:8px}
.gpnb-panel{flex:none;background:#fff}
.gpnb-error{color:#b00020;font-family:monospace;white-space:pre-wrap}
.gpnb-live{font-family:monospace;font-size:13px;margin:4px 0}
` + results.Style + `</style>
`

// uniqueID returns a fresh element id, so several outputs in one notebook
// never collide (a notebook page lives across kernel restarts).
func uniqueID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "gpnb-" + hex.EncodeToString(b[:])
}

// fragment renders the chart's markup and the script that draws it, with
// element ids id-0, id-1, … for its panels.
func (c *Chart) fragment(id string) (string, error) {
	options, err := c.Options()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<div class=\"gpnb-chart\" id=\"%s\">\n", id)
	if c.Title != "" && !(len(c.Panels) == 1 && c.Panels[0].Title == c.Title) {
		fmt.Fprintf(&b, "<div class=\"gpnb-chart-title\">%s</div>\n", html.EscapeString(c.Title))
	}
	if len(c.Notes) > 0 {
		fmt.Fprintf(&b, "<div class=\"gpnb-notes\">%s</div>\n", html.EscapeString(noteText(c.Notes)))
	}
	// Shown until the chart is drawn: it stays when the scripts never run
	// (an untrusted notebook), and says what is wrong when the library
	// never comes.
	fmt.Fprintf(&b, "<div class=\"gpnb-wait\" id=\"%s-wait\">%s</div>\n", id, html.EscapeString(waitText))
	b.WriteString("<div class=\"gpnb-panels\">\n")
	type spec struct {
		ID     string         `json:"id"`
		Option map[string]any `json:"option"`
	}
	specs := make([]spec, len(c.Panels))
	bands := false
	for i, p := range c.Panels {
		w, h := p.size()
		pid := fmt.Sprintf("%s-%d", id, i)
		fmt.Fprintf(&b, "<div class=\"gpnb-panel\" id=\"%s\" data-title=\"%s\" style=\"width:%dpx;height:%dpx\"></div>\n", pid, html.EscapeString(p.Title), w, h)
		specs[i] = spec{pid, options[i]}
		for _, s := range p.Series {
			bands = bands || s.Kind == Band
		}
	}
	b.WriteString("</div>\n</div>\n")
	js, err := json.Marshal(specs) // escapes <, > and & so no "</script>" can appear
	if err != nil {
		return "", fmt.Errorf("%w: encoding chart %q: %v", ErrChart, c.Title, err)
	}
	bandFn := ""
	if bands {
		bandFn = bandJS
	}
	missing, _ := json.Marshal(missingText)
	// The chart draws at once when the page has echarts, and otherwise
	// waits in window.gpnbPending until an output carrying the library runs
	// (echartsScript drains the queue).
	fmt.Fprintf(&b, `<script>(function(){
var specs = %s;
var drawn = false;%s
function draw() {
  if (drawn) { return; }
  drawn = true;
  for (var i = 0; i < specs.length; i++) {
    var el = document.getElementById(specs[i].id);
    if (!el) { continue; }
    var old = echarts.getInstanceByDom(el); if (old) { old.dispose(); }
    var opt = specs[i].option;%s
    echarts.init(el, null, {renderer: "canvas"}).setOption(opt);
  }
  var w = document.getElementById("%s-wait"); if (w && w.parentNode) { w.parentNode.removeChild(w); }
}
if (window.echarts) { draw(); return; }
(window.gpnbPending = window.gpnbPending || []).push(draw);
setTimeout(function() {
  var w = document.getElementById("%s-wait");
  if (!drawn && w) { w.textContent = %s; w.className = "gpnb-wait gpnb-error"; }
}, 4000);
})();</script>
`, js, bandFn, bandApply(bands), id, id, missing)
	return b.String(), nil
}

// waitText stands where a chart will be drawn until its script has drawn
// it.
const waitText = "Drawing… (if this stays, the chart's script did not run: in Jupyter, trust the notebook)"

// missingText replaces waitText when the echarts library has not come
// after a few seconds.
const missingText = "gpnb: the echarts library is not on this page, so this chart cannot be drawn. " +
	"A notebook's outputs carry it once per kernel session, with the first chart, and that output is gone " +
	"(cleared, or its cell run again, before the notebook was saved): run viz.ResendEcharts() and then this cell, " +
	"or restart the kernel and run all cells. A page that loads it from the CDN needs network access."

func errorHTML(err error) string {
	return "<div class=\"gpnb-error\">" + html.EscapeString(err.Error()) + "</div>\n"
}

// HTML returns a self-contained HTML fragment for a notebook cell: styles,
// the echarts library (inlined from the local copy, see Echarts), the panel
// containers with fresh unique ids, and the script that draws them. Every
// call embeds what it needs, so it works after a kernel restart. A chart
// that fails Validate renders as the error message.
func (c *Chart) HTML() string {
	frag, err := c.fragment(uniqueID())
	if err != nil {
		return errorHTML(err)
	}
	return css + echartsScript() + frag
}

// Page returns a standalone HTML page showing the chart.
func (c *Chart) Page() (string, error) {
	r := NewReport(c.Title)
	r.AddChart(c)
	return r.HTML()
}

// Save writes the chart to path, in the format its extension names: .html
// (a standalone page with the echarts library inlined), .png or .svg (a
// static figure drawn with gonum/plot, see WriteImage).
func (c *Chart) Save(path string) error {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".html", ".htm":
		page, err := c.Page()
		if err != nil {
			return err
		}
		return atomicfile.WriteFile(path, []byte(page), 0o644)
	case ".png", ".svg", ".pdf":
		var b strings.Builder
		if err := c.WriteImage(&b, ext[1:]); err != nil {
			return err
		}
		return atomicfile.WriteFile(path, []byte(b.String()), 0o644)
	default:
		return fmt.Errorf("%w: cannot save a chart as %q: use a path ending in .html, .png, .svg or .pdf", ErrChart, path)
	}
}

// Report is a standalone HTML page of headings, text, charts and tables:
// what `gpnb report` writes. The echarts library is inlined once in the
// page's head, animations are off, and the page records JavaScript errors
// in a hidden <pre id="gpnb-errors"> and each panel's position in
// <pre id="gpnb-layout">, so a headless browser can check it.
type Report struct {
	Title string
	items []string // rendered fragments, or "\x00chart" placeholders
	chart []*Chart // charts, rendered at HTML time with stable ids
	errs  []error
}

// NewReport returns an empty report with the given page title.
func NewReport(title string) *Report { return &Report{Title: title} }

// AddHeading adds a section heading.
func (r *Report) AddHeading(text string) {
	r.items = append(r.items, "<h2>"+html.EscapeString(text)+"</h2>\n")
}

// AddText adds a paragraph of plain text.
func (r *Report) AddText(text string) {
	r.items = append(r.items, "<p>"+html.EscapeString(text)+"</p>\n")
}

// AddChart adds a chart; it is rendered when HTML is called.
func (r *Report) AddChart(c *Chart) {
	r.items = append(r.items, "\x00chart")
	r.chart = append(r.chart, c)
}

// AddTable adds a table. A table that fails Validate makes HTML fail.
func (r *Report) AddTable(t *results.Table) {
	var b strings.Builder
	if err := t.HTML(&b); err != nil {
		r.errs = append(r.errs, fmt.Errorf("%w: %w", ErrChart, err))
		return
	}
	r.items = append(r.items, b.String())
}

const pageHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>%s</title>
<script>
window.gpnbErrors = [];
function gpnbRecordError(msg) {
  window.gpnbErrors.push(String(msg));
  var el = document.getElementById("gpnb-errors");
  if (el) { el.textContent = JSON.stringify(window.gpnbErrors); }
}
window.onerror = function(msg, src, line, col) { gpnbRecordError(msg + " at " + src + ":" + line + ":" + col); };
window.addEventListener("error", function(e) {
  if (e.target && e.target !== window) { gpnbRecordError("failed to load " + (e.target.src || e.target.href || e.target.tagName)); }
}, true);
window.addEventListener("unhandledrejection", function(e) { gpnbRecordError("unhandled rejection: " + e.reason); });
</script>
%s%s</head>
<body class="gpnb-report">
`

const pageTail = `<pre id="gpnb-errors" hidden></pre>
<pre id="gpnb-layout" hidden></pre>
<script>
(function(){
  var out = [];
  var els = document.querySelectorAll(".gpnb-panel");
  for (var i = 0; i < els.length; i++) {
    var el = els[i], r = el.getBoundingClientRect();
    out.push({id: el.id, title: el.getAttribute("data-title"), x: r.left + window.scrollX, y: r.top + window.scrollY,
      w: r.width, h: r.height, chart: !!(window.echarts && echarts.getInstanceByDom(el))});
  }
  document.getElementById("gpnb-layout").textContent = JSON.stringify({panels: out,
    width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight});
  document.getElementById("gpnb-errors").textContent = JSON.stringify(window.gpnbErrors);
})();
</script>
</body>
</html>
`

// HTML renders the whole page. Element ids are numbered in order (gpnb-1,
// gpnb-2, …), so the same report gives the same bytes.
func (r *Report) HTML() (string, error) {
	body, err := r.body("gpnb")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, pageHead, html.EscapeString(r.Title), css, echartsScript())
	b.WriteString(body)
	b.WriteString(pageTail)
	return b.String(), nil
}

// body renders the title and items; chart ids are prefix-1, prefix-2, ….
func (r *Report) body(prefix string) (string, error) {
	if len(r.errs) > 0 {
		return "", r.errs[0]
	}
	var b strings.Builder
	if r.Title != "" {
		fmt.Fprintf(&b, "<h1>%s</h1>\n", html.EscapeString(r.Title))
	}
	ci := 0
	for _, it := range r.items {
		if it != "\x00chart" {
			b.WriteString(it)
			continue
		}
		c := r.chart[ci]
		ci++
		frag, err := c.fragment(fmt.Sprintf("%s-%d", prefix, ci))
		if err != nil {
			return "", err
		}
		b.WriteString(frag)
	}
	return b.String(), nil
}

// Save writes the page to path atomically.
func (r *Report) Save(path string) error {
	page, err := r.HTML()
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, []byte(page), 0o644)
}
