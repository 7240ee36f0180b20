package viz

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gpnb/gpnb/gpnb/results"
	"github.com/janpfeifer/gonb/gonbui"
)

// displayHTML, updateHTML and syncDisplay are gonbui's verbs; tests replace
// them.
var (
	displayHTML = gonbui.DisplayHTML
	updateHTML  = gonbui.UpdateHTML
	syncDisplay = gonbui.Sync
)

// EnvDisplayLog names the environment variable of a file to which viz
// appends one JSON line ({"id", "kind", "title"}) for every notebook output
// it creates. scripts/nbcheck.py sets it while it executes a notebook, and
// then checks that each cell's executed outputs are exactly the ones logged,
// so an output lost on its way to the notebook fails the notebook tests.
const EnvDisplayLog = "GPNB_VIZ_DISPLAY_LOG"

// InNotebook reports whether the program runs as a GoNB cell, where Show
// displays output; elsewhere Show does nothing.
func InNotebook() bool { return gonbui.IsNotebook }

// Show displays the chart inline in a GoNB notebook cell (see the package
// documentation for how the echarts library reaches the page). Outside a
// notebook it does nothing.
func (c *Chart) Show() {
	id := uniqueID()
	frag, err := c.fragment(id)
	if err != nil {
		frag = errorHTML(err)
	}
	newOutput("chart", c.Title, id, css+pageLibrary()+frag)
}

// ShowTable displays a table inline in a GoNB notebook cell, or its error.
// Outside a notebook it does nothing.
func ShowTable(t *results.Table) {
	var b strings.Builder
	frag := css
	if err := t.HTML(&b); err != nil {
		frag += errorHTML(fmt.Errorf("%w: %w", ErrChart, err))
	} else {
		frag += b.String()
	}
	newOutput("table", t.Title, uniqueID(), frag)
}

// Show displays the whole report inline in a GoNB notebook cell, or its
// error.
func (r *Report) Show() {
	id := uniqueID()
	body, err := r.body(id)
	if err != nil {
		newOutput("report", r.Title, id, errorHTML(err))
		return
	}
	newOutput("report", r.Title, id, css+pageLibrary()+"<div class=\"gpnb-report\">"+body+"</div>")
}

// newOutput sends one new notebook output and waits until GoNB has
// published it. GoNB stops reading a cell's display pipe when the cell's
// program exits, so without the wait (gonbui.Sync, one round trip through
// the pipe) the last outputs of a cell could be lost without a trace.
func newOutput(kind, title, id, body string) {
	logOutput(kind, title, id)
	displayHTML(outputHTML(id, body))
	syncDisplay()
}

// outputHTML wraps the body of the notebook output id in the element whose
// data-gpnb-display attribute the notebook checks count.
func outputHTML(id, body string) string {
	return "<div class=\"gpnb-output\" data-gpnb-display=\"" + html.EscapeString(id) + "\">\n" + body + "</div>\n"
}

// logOutput appends the output to $GPNB_VIZ_DISPLAY_LOG, when set. A
// failure to write is reported on stderr, never silently dropped: the
// notebook check would then report the output as unexpected.
func logOutput(kind, title, id string) {
	path := os.Getenv(EnvDisplayLog)
	if path == "" {
		return
	}
	line, _ := json.Marshal(map[string]string{"id": id, "kind": kind, "title": title})
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.Write(append(line, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		os.Stderr.WriteString("gpnb/viz: cannot log the output to $" + EnvDisplayLog + ": " + err.Error() + "\n")
	}
}

// The echarts library travels with the first output of a kernel session
// only: GoNB runs every cell as a new process, but all of a notebook's
// outputs live in one page, and a saved notebook's outputs run their
// scripts in order when it is opened again. GoNB's temporary folder
// ($GONB_TMP_DIR) lives exactly as long as the kernel, so a marker file
// there says whether an earlier cell's output already carried it.
const (
	envGoNBTmp    = "GONB_TMP_DIR"
	sessionMarker = "gpnb-echarts-sent"
)

var session struct {
	mu   sync.Mutex
	sent bool // an output of this process carried the library
}

// pageLibrary returns the <script> elements that define window.echarts
// for a notebook output: the inlined library when no earlier output of this
// kernel session carried it, else nothing (the charts then use the page's
// copy). Without a local copy every output references the CDN, which costs
// no space.
func pageLibrary() string {
	if !Echarts().Local() {
		return echartsScript()
	}
	if !firstInSession() {
		return ""
	}
	return echartsScript()
}

// firstInSession reports whether this is the first output of the kernel
// session (outside GoNB: of the process) to need the library, and records
// that it is no longer.
func firstInSession() bool {
	session.mu.Lock()
	defer session.mu.Unlock()
	if session.sent {
		return false
	}
	session.sent = true
	dir := os.Getenv(envGoNBTmp)
	if dir == "" {
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, sessionMarker), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		// Already there: an earlier cell sent it. Any other error: send it
		// again rather than risk a page without it.
		return !errors.Is(err, fs.ErrExist)
	}
	_ = f.Close()
	return true
}

// ResendEcharts makes the next notebook output of this kernel session carry
// the echarts library again. A notebook's outputs carry it once per kernel
// session, with the first chart; if that output was cleared (or its cell
// run again) before the notebook was saved, the charts of the reopened
// notebook say that the library is missing: run ResendEcharts and then any
// cell that shows a chart, or restart the kernel and run every cell.
func ResendEcharts() {
	session.mu.Lock()
	defer session.mu.Unlock()
	session.sent = false
	if dir := os.Getenv(envGoNBTmp); dir != "" {
		_ = os.Remove(filepath.Join(dir, sessionMarker))
	}
}
