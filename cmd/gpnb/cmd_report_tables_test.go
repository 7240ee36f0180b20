package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
)

// The same run twice cannot be averaged over splits: the report is still
// written, with the figures, and says why Tables 1 and 2 are missing.
func TestReportRepeatedRunExplainsMissingTables(t *testing.T) {
	t.Setenv("GPNB_ECHARTS_NO_INSTALL", "1")
	dir := t.TempDir()
	r := reportResult("pol", "cg", false, 0)
	writeJSONFile(t, filepath.Join(dir, "a.json"), []gpnb.Result{r, reportResult("pol", "cg", true, 0)})
	writeJSONFile(t, filepath.Join(dir, "b.json"), r)
	out := filepath.Join(dir, "report.html")
	code, _, stderr := runCmd(t, "report", "--in", dir, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if n := strings.Count(page, "Not drawn: "); n < 2 || !strings.Contains(page, "pol-s0-cg-cold") || strings.Contains(page, "<table class=\"gpnb-table\">") {
		t.Errorf("report should explain the two missing tables (%d notes) naming the repeated job pol-s0-cg-cold, and draw no results table", n)
	}
}
