package viz

import "github.com/janpfeifer/gonb/gonbui"

// displayHTML and updateHTML are gonbui's verbs; tests replace them.
var (
	displayHTML = gonbui.DisplayHTML
	updateHTML  = gonbui.UpdateHTML
)

// InNotebook reports whether the program runs as a GoNB cell, where Show
// displays output; elsewhere Show does nothing.
func InNotebook() bool { return gonbui.IsNotebook }

// Show displays the chart inline in a GoNB notebook cell (see HTML). Outside
// a notebook it does nothing.
func (c *Chart) Show() { displayHTML(c.HTML()) }

// Show displays the table inline in a GoNB notebook cell.
func (t *Table) Show() { displayHTML(t.HTML()) }

// Show displays the whole report inline in a GoNB notebook cell, or its
// error.
func (r *Report) Show() {
	body, err := r.body(uniqueID())
	if err != nil {
		displayHTML(errorHTML(err))
		return
	}
	displayHTML(css + echartsScript() + "<div class=\"gpnb-report\">" + body + "</div>")
}
