package viz

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// EchartsVersion is the version of the echarts npm package the pages are
// made for and that the on-first-use install fetches.
const EchartsVersion = "5.6.0"

// EchartsCDN is the public URL a page loads echarts from when no local copy
// can be had (the page then says so in an HTML comment).
const EchartsCDN = "https://cdn.jsdelivr.net/npm/echarts@" + EchartsVersion + "/dist/echarts.min.js"

// EnvEchartsJS names the environment variable that points to a local
// echarts.min.js, which then takes precedence over every other source.
const EnvEchartsJS = "GPNB_ECHARTS_JS"

// EnvNoInstall, when set to 1, stops the on-first-use npm install (tests and
// offline machines use it).
const EnvNoInstall = "GPNB_ECHARTS_NO_INSTALL"

// distPath is where npm puts the minified bundle under an install prefix.
var distPath = filepath.Join("node_modules", "echarts", "dist", "echarts.min.js")

// MakeTarget is the shell command for the Makefile target that installs the
// repository-local echarts copy (run from the repository root; the folder
// is git-ignored).
const MakeTarget = "npm install --no-audit --no-fund --prefix .cache/echarts echarts@" + EchartsVersion

// EchartsSource says where the echarts JavaScript embedded in pages comes
// from.
type EchartsSource struct {
	// Path is the local echarts.min.js, or "" when pages fall back to the CDN.
	Path string
	// Why explains a CDN fallback: every place looked at and why it failed.
	Why string
}

// Local reports whether pages embed a local copy (and so work offline).
func (s EchartsSource) Local() bool { return s.Path != "" }

var (
	assetMu  sync.Mutex
	assetSrc *EchartsSource
	assetJS  string
)

// Echarts returns where the echarts library comes from, looking (once per
// process) in order at: $GPNB_ECHARTS_JS; .cache/echarts in the current
// directory or any parent (the repository's `make echarts` copy); the same
// copy of the checkout viz was compiled from (for a notebook elsewhere);
// os.UserCacheDir()/gpnb/echarts; and, when npm is on the PATH and
// GPNB_ECHARTS_NO_INSTALL is not 1, an `npm install` into that user cache
// folder.
func Echarts() EchartsSource {
	assetMu.Lock()
	defer assetMu.Unlock()
	if assetSrc == nil {
		src, js := resolveEcharts(os.Getenv(EnvNoInstall) != "1")
		assetSrc, assetJS = &src, js
	}
	return *assetSrc
}

// resetEcharts forgets the resolved source (tests).
func resetEcharts() {
	assetMu.Lock()
	assetSrc, assetJS = nil, ""
	assetMu.Unlock()
}

// echartsScript returns the <script> element(s) that define window.echarts:
// the library inlined when a local copy exists, else a CDN reference
// preceded by a comment saying why.
func echartsScript() string {
	src := Echarts()
	assetMu.Lock()
	js := assetJS
	assetMu.Unlock()
	if src.Local() {
		// Shadow AMD/CommonJS globals so the UMD bundle always sets
		// window.echarts (classic Jupyter defines require.js's define).
		// Never re-run the library when a page or notebook already has it.
		// Then draw the charts that were waiting for it (a notebook may
		// render a later output before this one).
		return "<script>/* " + libraryMark + " */\n" +
			"if (!window.echarts) { (function(define, exports, module){\n" + js + "\n}).call(window); }\n" + drainJS + "\n</script>\n"
	}
	// Jupyter inserts outputs' scripts dynamically, so an external script
	// loads asynchronously: the charts wait for its load event.
	return "<!-- gpnb: no local echarts copy could be found, so this page loads it from the public CDN and needs network access. " +
		strings.ReplaceAll(src.Why, "--", "- -") + " Run `" + MakeTarget + "` in the repository, or set " + EnvEchartsJS + ". -->\n" +
		"<script src=\"" + EchartsCDN + "\"></script>\n" +
		"<script>(function(){var s=document.currentScript&&document.currentScript.previousElementSibling;" +
		"function drain(){" + drainJS + "}if(window.echarts){drain();}else if(s){s.addEventListener(\"load\",drain);}})();</script>\n"
}

// libraryMark opens the inlined library's script; the notebook checks
// count it to see that a notebook carries the library once.
const libraryMark = "echarts " + EchartsVersion + " (Apache-2.0), inlined by gpnb"

// drainJS draws the charts queued in window.gpnbPending while the library
// was missing (see Chart.fragment).
const drainJS = "(function(){ var q = window.gpnbPending || []; window.gpnbPending = []; for (var i = 0; i < q.length; i++) { q[i](); } })();"

func resolveEcharts(allowInstall bool) (EchartsSource, string) {
	var why []string
	try := func(path, what string) (string, bool) {
		b, err := os.ReadFile(path)
		if err != nil {
			why = append(why, fmt.Sprintf("%s: %v.", what, err))
			return "", false
		}
		if len(b) < 100_000 || !strings.Contains(string(b[:min(len(b), 4096)]), "Apache") {
			why = append(why, fmt.Sprintf("%s: %s is not an echarts.min.js bundle.", what, path))
			return "", false
		}
		return strings.ReplaceAll(string(b), "</script", "<\\/script"), true
	}
	if p := os.Getenv(EnvEchartsJS); p != "" {
		if js, ok := try(p, EnvEchartsJS); ok {
			return EchartsSource{Path: p}, js
		}
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			p := filepath.Join(dir, ".cache", "echarts", distPath)
			if _, err := os.Stat(p); err == nil {
				if js, ok := try(p, "repository copy"); ok {
					return EchartsSource{Path: p}, js
				}
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
		why = append(why, "no .cache/echarts above "+wd+".")
	}
	// A notebook outside the repository still finds the copy of the
	// checkout viz was compiled from.
	if root := checkoutDir(); root != "" {
		p := filepath.Join(root, ".cache", "echarts", distPath)
		if _, err := os.Stat(p); err == nil {
			if js, ok := try(p, "checkout copy"); ok {
				return EchartsSource{Path: p}, js
			}
		} else {
			why = append(why, "no "+p+".")
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		why = append(why, fmt.Sprintf("user cache folder: %v.", err))
		return EchartsSource{Why: strings.Join(why, " ")}, ""
	}
	prefix := filepath.Join(cache, "gpnb", "echarts")
	p := filepath.Join(prefix, distPath)
	if _, err := os.Stat(p); err == nil {
		if js, ok := try(p, "user cache copy"); ok {
			return EchartsSource{Path: p}, js
		}
	}
	if !allowInstall {
		why = append(why, "no copy in "+prefix+" and installing is off ("+EnvNoInstall+"=1).")
		return EchartsSource{Why: strings.Join(why, " ")}, ""
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		why = append(why, "no copy in "+prefix+" and npm is not on the PATH to install one.")
		return EchartsSource{Why: strings.Join(why, " ")}, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--prefix", prefix, "echarts@"+EchartsVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		why = append(why, fmt.Sprintf("npm install into %s failed: %v: %s.", prefix, err, lastLine(string(out))))
		return EchartsSource{Why: strings.Join(why, " ")}, ""
	}
	if js, ok := try(p, "fresh npm install"); ok {
		return EchartsSource{Path: p}, js
	}
	return EchartsSource{Why: strings.Join(why, " ")}, ""
}

// checkoutDir is checkoutRoot; tests replace it.
var checkoutDir = checkoutRoot

// checkoutRoot returns the folder above this source file's package, when
// viz was compiled from a checkout (not a module cache copy, not
// -trimpath): the checkout's root.
func checkoutRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	root := filepath.Dir(filepath.Dir(file))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return ""
	}
	return root
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
