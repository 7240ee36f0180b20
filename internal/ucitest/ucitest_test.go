package ucitest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRule(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("HOME", home)
	full := t.TempDir()
	for _, f := range Files {
		os.MkdirAll(filepath.Join(full, "pol"), 0o755)
		if err := os.WriteFile(filepath.Join(full, "pol", f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(t.TempDir(), "uci")
	cache := filepath.Join(home, "cache", "gpnb", "uci")
	for _, tc := range []struct {
		data, download string
		names          []string
		dir            string
		ok             bool
		says           string // "" for no message
	}{
		{full, "", []string{"pol"}, full, true, ""},
		{full, "", []string{"pol", "bike"}, full, true, "lacks bike/data.csv.gz"},
		{full, "1", []string{"bike"}, full, true, ""},
		{missing, "", []string{"pol"}, missing, false, "$GPNB_DATA=" + missing + " is not a folder"},
		{"", "", []string{"pol"}, "", false, "$GPNB_DATA is not set"},
		{missing, "1", []string{"pol"}, missing, true, ""},
		{"", "1", []string{"pol"}, cache, true, ""},
		{"uci", "", []string{"pol"}, "uci", true, "relative path"},
	} {
		t.Setenv("GPNB_DATA", tc.data)
		t.Setenv("GPNB_DOWNLOAD", tc.download)
		dir, ok, why := find(tc.names)
		if dir != tc.dir || ok != tc.ok || (tc.says == "") != (why == "") || !strings.Contains(why, tc.says) {
			t.Errorf("GPNB_DATA=%q GPNB_DOWNLOAD=%q %v: got %q, %v, %q; want %q, %v, saying %q", tc.data, tc.download, tc.names, dir, ok, why, tc.dir, tc.ok, tc.says)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("%s was created: %v", missing, err)
	}
}

func TestSkipLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "skipped")
	t.Setenv("GPNB_SKIPLOG", log)
	t.Setenv("GPNB_DATA", "")
	t.Setenv("GPNB_DOWNLOAD", "")
	t.Run("skips", func(t *testing.T) { Dir(t, "pol") })
	b, err := os.ReadFile(log)
	if err != nil || string(b) != "internal/ucitest.TestSkipLog/skips\n" {
		t.Errorf("skip log %q, %v", b, err)
	}
}
