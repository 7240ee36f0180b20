package viz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/results"
)

// needBrowser returns chromium's path, or skips (fails when
// GPNB_REQUIRE_BROWSER=1) when chromium or the local echarts copy is missing.
func needBrowser(t *testing.T) string {
	t.Helper()
	t.Setenv(EnvNoInstall, "1")
	resetEcharts()
	t.Cleanup(resetEcharts)
	missing := func(why string) {
		if os.Getenv("GPNB_REQUIRE_BROWSER") == "1" {
			t.Fatalf("%s, and GPNB_REQUIRE_BROWSER=1", why)
		}
		t.Skip(why + " (set GPNB_REQUIRE_BROWSER=1 to make this a failure)")
	}
	var chromium string
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		missing("headless chromium not found (apt-get install chromium)")
	}
	if src := Echarts(); !src.Local() {
		missing("no local echarts copy: run `" + MakeTarget + "` in the repository root (" + src.Why + ")")
	}
	return chromium
}

func runChromium(t *testing.T, chromium, profile string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
		"--force-device-scale-factor=1", "--hide-scrollbars",
		"--host-resolver-rules=MAP * ~NOTFOUND", // no network, even if the page tried
		"--user-data-dir=" + profile, "--virtual-time-budget=10000"}
	cmd := exec.CommandContext(ctx, chromium, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, lastLines(stderr.String(), 20))
	}
	return stdout.Bytes()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

type layout struct {
	Panels []struct {
		ID    string  `json:"id"`
		Title string  `json:"title"`
		X     float64 `json:"x"`
		Y     float64 `json:"y"`
		W     float64 `json:"w"`
		H     float64 `json:"h"`
		Chart bool    `json:"chart"`
	} `json:"panels"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

var preRe = regexp.MustCompile(`(?s)<pre id="(gpnb-errors|gpnb-layout)"[^>]*>(.*?)</pre>`)

// fullReport builds a report with every chart kind and both tables.
func fullReport(t *testing.T) *Report {
	t.Helper()
	res := synthResults([]string{"pol", "elevators"}, []string{"cg", "ap", "sgd", "cholesky"}, 2, 8, 3)
	r := NewReport("gpnb report: every chart kind")
	op, _, b, v, v0 := sectionProblem(t, 30)
	var warm gpnb.History
	for _, x := range res {
		if x.Dataset == "pol" && x.Solver == "cg" && x.WarmStart {
			warm = x.History
			break
		}
	}
	steps := []func() (*Chart, error){
		func() (*Chart, error) { return Figure1(op, b, v, v0, warm, SectionOptions{Grid: 31}) },
		func() (*Chart, error) { return Runtimes(res) },
		func() (*Chart, error) { return Iterations(res) },
		func() (*Chart, error) { return Hyperparameters(res[:2*8*1]) },
		func() (*Chart, error) { return ResidualsLast(warm, 2) },
		func() (*Chart, error) { return ResidualTrace("a solver state's trace", residualRows(12, 3)) },
		func() (*Chart, error) { return Predictive(sinePrediction(3)) },
	}
	for i, f := range steps {
		c, err := f()
		if err != nil {
			t.Fatalf("chart %d: %v", i, err)
		}
		r.AddHeading(c.Title)
		r.AddChart(c)
	}
	t1, err := SpeedupTable(res)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := ResultsTable(res)
	if err != nil {
		t.Fatal(err)
	}
	checkFullReportTables(t, res, t1, t2)
	r.AddTable(t1)
	r.AddTable(t2)
	return r
}

// checkFullReportTables checks fullReport's tables against statistics
// computed by hand from its results: two splits of pol and elevators, CG,
// AP and SGD cold and warm, and the exact reference; SGD's cold runs take
// 500 s, so runtimes are in minutes.
func checkFullReportTables(t *testing.T, res []gpnb.Result, tb1, tb2 *results.Table) {
	t.Helper()
	_, t1, rules1 := textTable(t, tb1)
	_, t2, rules2 := textTable(t, tb2)
	labels := []string{"CG", "+ ws", "AP", "+ ws", "SGD", "+ ws", "exact"}
	if len(t1) != len(labels) || len(rules1) != 4 || rules1[3] != 6 {
		t.Fatalf("table 1: %d rows, rules %v; want %d rows, a rule above each solver and the exact row", len(t1), rules1, len(labels))
	}
	for i, l := range labels {
		if t1[i][0] != l {
			t.Errorf("table 1 row %d is %q, want %q", i, t1[i][0], l)
		}
	}
	llh, _ := byHand(res, "pol", "cholesky", false, func(r gpnb.Result) float64 { return r.Test.TestLLH })
	rt, _ := byHand(res, "elevators", "cholesky", false, total)
	exact := t1[6] // Solver, LLH pol, LLH elevators, runtime pol, runtime elevators, speed-up, iteration ratio
	if exact[1] != fmt.Sprintf("%.2f", llh) || exact[4] != fmt.Sprintf("%.2f", rt/60) || exact[5] != "—" {
		t.Errorf("table 1 exact row %q: want LLH %.2f on pol, %.2f min on elevators, no speed-up", exact, llh, rt/60)
	}
	sp := (speedUpByHand(res, "pol", "sgd") + speedUpByHand(res, "elevators", "sgd")) / 2
	if got := t1[5][5]; got != fmt.Sprintf("%.1f×", sp) {
		t.Errorf("table 1 SGD average speed-up %q, want %.1f×", got, sp)
	}

	// Table 2: per dataset 3 solvers × cold/warm and the exact run.
	if len(t2) != 14 || len(rules2) != 2 || rules2[1] != 7 {
		t.Fatalf("table 2: %d rows, rules %v; want 14 rows in 2 dataset groups", len(t2), rules2)
	}
	row := t2[13] // elevators, exact
	m, se := byHand(res, "elevators", "cholesky", false, total)
	if row[1] != "exact" || row[2] != "0,1" || row[5] != fmt.Sprintf("%.3f ± %.3f", m/60, se/60) || row[8] != "—" {
		t.Errorf("table 2 elevators exact row %q: want total %.3f ± %.3f min", row, m/60, se/60)
	}
	row = t2[3] // pol, AP + ws
	if want := fmt.Sprintf("%.1f×", speedUpByHand(res, "pol", "ap")); row[1] != "+ ws" || row[8] != want {
		t.Errorf("table 2 pol AP + ws row %q: want speed-up %s", row, want)
	}
}

func TestReportDrawsInHeadlessChromium(t *testing.T) {
	chromium := needBrowser(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	rep := fullReport(t)
	if err := rep.Save(path); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Offline: the library is inlined, no script is fetched from anywhere.
	if m := regexp.MustCompile(`(?i)<script[^>]+src=`).Find(page); m != nil {
		t.Fatalf("page references an external script: %s", m)
	}
	if bytes.Contains(page, []byte(EchartsCDN)) || !bytes.Contains(page, []byte("echarts "+EchartsVersion)) {
		t.Fatal("page should inline echarts, not reference the CDN")
	}

	url := "file://" + path
	dom := runChromium(t, chromium, filepath.Join(dir, "profile1"), "--window-size=1400,1000", "--dump-dom", url)
	var lay layout
	var errs []string
	gotErrs, gotLayout := false, false
	for _, m := range preRe.FindAllSubmatch(dom, -1) {
		text := html.UnescapeString(string(m[2]))
		switch string(m[1]) {
		case "gpnb-errors":
			gotErrs = true
			if err := json.Unmarshal([]byte(text), &errs); err != nil {
				t.Fatalf("error list %q: %v", text, err)
			}
		case "gpnb-layout":
			gotLayout = true
			if err := json.Unmarshal([]byte(text), &lay); err != nil {
				t.Fatalf("layout %q: %v", text, err)
			}
		}
	}
	if !gotErrs || !gotLayout {
		t.Fatalf("the page's checks did not run (errors %v, layout %v): the scripts failed early", gotErrs, gotLayout)
	}
	if len(errs) > 0 {
		t.Fatalf("JavaScript errors: %q", errs)
	}
	wantPanels := 0
	for _, c := range rep.chart {
		wantPanels += len(c.Panels)
	}
	if len(lay.Panels) != wantPanels {
		t.Fatalf("%d panels in the DOM, want %d", len(lay.Panels), wantPanels)
	}

	// Screenshot the whole page and look for ink inside every panel.
	h := int(lay.Height) + 20
	shot := filepath.Join(dir, "shot.png")
	runChromium(t, chromium, filepath.Join(dir, "profile2"), fmt.Sprintf("--window-size=1400,%d", h), "--screenshot="+shot, url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dy() < int(lay.Height) {
		t.Fatalf("screenshot is %v, page height %v", img.Bounds(), lay.Height)
	}
	for _, p := range lay.Panels {
		if !p.Chart {
			t.Errorf("panel %s (%q): no echarts instance", p.ID, p.Title)
			continue
		}
		if p.W < 100 || p.H < 100 {
			t.Errorf("panel %s (%q) is %v×%v px", p.ID, p.Title, p.W, p.H)
			continue
		}
		ink, colour := inkIn(img, image.Rect(int(p.X), int(p.Y), int(p.X+p.W), int(p.Y+p.H)))
		total := int(p.W * p.H)
		if ink < total/200 || colour < 60 {
			t.Errorf("panel %s (%q): %d of %d pixels drawn, %d coloured: the chart did not draw", p.ID, p.Title, ink, total, colour)
		}
	}
	if keepDir := os.Getenv("GPNB_VIZ_KEEP"); keepDir != "" {
		// Keep the page and screenshot for a human look.
		for _, name := range []string{"report.html", "shot.png"} {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
				_ = os.WriteFile(filepath.Join(keepDir, name), b, 0o644)
			}
		}
	}
	if t.Failed() {
		keep := filepath.Join(os.TempDir(), "gpnb-viz-failed-shot.png")
		if b, err := os.ReadFile(shot); err == nil && os.WriteFile(keep, b, 0o644) == nil {
			t.Logf("screenshot kept at %s", keep)
		}
	}
}

// inkIn counts pixels in r that differ from the white background, and
// those that are clearly coloured (not grey: series, not text).
func inkIn(img image.Image, r image.Rectangle) (ink, colour int) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			R, G, B := int(cr>>8), int(cg>>8), int(cb>>8)
			if R < 245 || G < 245 || B < 245 {
				ink++
			}
			if max(R, G, B)-min(R, G, B) > 40 {
				colour++
			}
		}
	}
	return ink, colour
}
