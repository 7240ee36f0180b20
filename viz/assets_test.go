package viz

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBundle writes a file that passes the bundle check (size, licence
// header) but is not the real library.
func fakeBundle(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "/* Licensed to the Apache Software Foundation */\nwindow.echarts = {fake: true};\n/*" + strings.Repeat("x", 120_000) + "*/\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// noCheckoutCopy hides the checkout's echarts copy, as for a viz compiled
// from the module cache.
func noCheckoutCopy(t *testing.T) {
	t.Helper()
	checkoutDir = func() string { return "" }
	t.Cleanup(func() { checkoutDir = checkoutRoot })
}

func TestEchartsSourceOrder(t *testing.T) {
	t.Cleanup(resetEcharts)
	noCheckoutCopy(t)
	work := t.TempDir()
	cache := t.TempDir()
	t.Chdir(work)
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	t.Setenv(EnvNoInstall, "1")

	// Nothing anywhere: CDN fallback, with the reasons in a comment.
	t.Setenv(EnvEchartsJS, filepath.Join(work, "missing.js"))
	resetEcharts()
	if src := Echarts(); src.Local() || !strings.Contains(src.Why, EnvEchartsJS) || !strings.Contains(src.Why, "installing is off") {
		t.Fatalf("source %+v, want a CDN fallback that explains why", src)
	}
	s := echartsScript()
	if !strings.Contains(s, `<script src="`+EchartsCDN+`">`) || !strings.Contains(s, "<!-- gpnb: no local echarts copy") {
		t.Errorf("fallback script %q", s)
	}

	// The user cache copy.
	user := filepath.Join(cache, "gpnb", "echarts", distPath)
	fakeBundle(t, user)
	resetEcharts()
	if src := Echarts(); src.Path != user {
		t.Errorf("path %q, want the user cache copy %q", src.Path, user)
	}

	// A repository copy above the working directory wins over the user cache.
	repo := filepath.Join(work, ".cache", "echarts", distPath)
	fakeBundle(t, repo)
	sub := filepath.Join(work, "notebooks", "x")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	resetEcharts()
	if src := Echarts(); src.Path != repo {
		t.Errorf("path %q, want the repository copy %q", src.Path, repo)
	}

	// GPNB_ECHARTS_JS wins over everything; a file that is not a bundle is
	// passed over with a reason.
	own := filepath.Join(t.TempDir(), "echarts.min.js")
	fakeBundle(t, own)
	t.Setenv(EnvEchartsJS, own)
	resetEcharts()
	if src := Echarts(); src.Path != own {
		t.Errorf("path %q, want $%s %q", src.Path, EnvEchartsJS, own)
	}
	s = echartsScript()
	if !strings.Contains(s, "window.echarts = {fake: true}") || strings.Contains(s, "src=") {
		t.Errorf("the library should be inlined: %.200q", s)
	}
	notJS := filepath.Join(t.TempDir(), "tiny.js")
	if err := os.WriteFile(notJS, []byte("alert(1)"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvEchartsJS, notJS)
	resetEcharts()
	if src := Echarts(); src.Path != repo {
		t.Errorf("path %q, want the repository copy after a bad $%s", src.Path, EnvEchartsJS)
	}
}

func TestPagesEmbedEverything(t *testing.T) {
	t.Cleanup(resetEcharts)
	own := filepath.Join(t.TempDir(), "echarts.min.js")
	fakeBundle(t, own)
	t.Setenv(EnvEchartsJS, own)
	resetEcharts()
	r := synthResult("pol", "cg", true, 0, 3, 1, 2)
	c, err := Distances(r.History)
	if err != nil {
		t.Fatal(err)
	}
	h1, h2 := c.HTML(), c.HTML()
	for _, h := range []string{h1, h2} {
		if !strings.Contains(h, "window.echarts = {fake: true}") || !strings.Contains(h, ".gpnb-panel{") {
			t.Fatal("every HTML() call must embed the library and the styles")
		}
	}
	id := func(h string) string { i := strings.Index(h, `class="gpnb-chart" id="`); return h[i+23 : i+40] }
	if id(h1) == id(h2) {
		t.Error("two HTML() calls should use different element ids")
	}
	p1, err := c.Page()
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := c.Page()
	if p1 != p2 {
		t.Error("Page() should be deterministic")
	}
	if strings.Count(p1, "window.echarts = {fake: true}") != 1 || !strings.Contains(p1, `"animation":false`) {
		t.Error("a page inlines the library once, with animations off")
	}
}

// A program run outside the checkout (a notebook elsewhere on disk) finds
// the checkout's copy from viz's own source path.
func TestEchartsFromCheckoutElsewhere(t *testing.T) {
	t.Cleanup(resetEcharts)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, ".cache", "echarts", distPath)
	if _, err := os.Stat(want); err != nil {
		t.Skipf("no checkout copy to find (%v): run `%s`", err, MakeTarget)
	}
	t.Chdir(t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv(EnvNoInstall, "1")
	t.Setenv(EnvEchartsJS, "")
	resetEcharts()
	if src := Echarts(); src.Path != want {
		t.Errorf("source %+v, want the checkout copy %s", src, want)
	}
}
