// Package ucitest is the one place where a test finds the UCI files
// (<name>/data.csv.gz and <name>/test_mask.csv.gz, as package data reads
// them) and decides what to do without them. The rule:
//
//   - $GPNB_DATA names a folder: the datasets' files must be in it. A
//     missing file fails the test, so a broken data set never hides behind a
//     skip; a corrupt one fails at data.Load's checksum.
//   - $GPNB_DATA is unset or names nothing: the test skips with one line
//     naming $GPNB_DATA, and adds its name to the file $GPNB_SKIPLOG when
//     that is set (`make test` counts them there). With GPNB_DOWNLOAD=1 it
//     runs instead, and data.Load downloads the files into the user cache.
//
// Tests run in their package's folder, so a relative $GPNB_DATA fails the
// test. The package imports no gpnb package, so that package data's own
// tests can use it; only tests import it.
package ucitest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Files are the names of a dataset's files inside its folder: package
// data's DataFile and MaskFile (its tests check that they agree).
var Files = []string{"data.csv.gz", "test_mask.csv.gz"}

// Dir returns the folder holding the files of the UCI datasets names, to
// pass to data.Dir, or skips or fails tb as the package documentation says.
func Dir(tb testing.TB, names ...string) string {
	tb.Helper()
	dir, ok, why := find(names)
	if !ok {
		logSkip(tb)
		tb.Skip(why)
	}
	if why != "" {
		tb.Fatal(why)
	}
	return dir
}

// Find is Dir for a caller that has something else to use without the files
// (a benchmark on synthetic data): ok is false where Dir would skip. It
// fails tb where Dir would.
func Find(tb testing.TB, names ...string) (dir string, ok bool) {
	tb.Helper()
	dir, ok, why := find(names)
	if ok && why != "" {
		tb.Fatal(why)
	}
	return dir, ok
}

// Download reports whether tests may download the UCI files
// (GPNB_DOWNLOAD=1).
func Download() bool { return os.Getenv("GPNB_DOWNLOAD") == "1" }

// find applies the rule: ok false means skip (why says so); ok true with a
// non-empty why means fail.
func find(names []string) (dir string, ok bool, why string) {
	dir = os.Getenv("GPNB_DATA")
	if dir != "" && !filepath.IsAbs(dir) {
		return dir, true, fmt.Sprintf("$GPNB_DATA=%s is a relative path, and tests run in their package's folder: give an absolute path", dir)
	}
	if fi, err := os.Stat(dir); dir == "" || err != nil || !fi.IsDir() {
		where := "$GPNB_DATA is not set"
		if dir != "" {
			where = fmt.Sprintf("$GPNB_DATA=%s is not a folder", dir)
		}
		if !Download() {
			return dir, false, fmt.Sprintf("needs the UCI files: %s (set it to their folder, or GPNB_DOWNLOAD=1 to download them)", where)
		}
		if dir == "" {
			// Where data.Load looks last and downloads to.
			cache, err := os.UserCacheDir()
			if err != nil {
				return "", true, fmt.Sprintf("GPNB_DOWNLOAD=1 and %s, but there is no user cache folder to download into (%v)", where, err)
			}
			dir = filepath.Join(cache, "gpnb", "uci")
		}
		return dir, true, ""
	}
	if Download() {
		return dir, true, "" // missing files go to the user cache
	}
	for _, name := range names {
		for _, f := range Files {
			p := filepath.Join(dir, name, f)
			if _, err := os.Stat(p); err != nil {
				return dir, true, fmt.Sprintf("$GPNB_DATA=%s is a folder but lacks %s (%v): a broken data set; restore the file, or unset GPNB_DATA to skip the tests that need it", dir, filepath.Join(name, f), err)
			}
		}
	}
	return dir, true, ""
}

// logSkip appends tb's package folder and name to $GPNB_SKIPLOG, one line.
func logSkip(tb testing.TB) {
	log := os.Getenv("GPNB_SKIPLOG")
	if log == "" {
		return
	}
	f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		tb.Logf("GPNB_SKIPLOG: %v", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s.%s\n", pkgDir(), tb.Name())
}

// pkgDir returns the test's package folder relative to the module root
// (tests run in their package's folder), or its base name.
func pkgDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "?"
	}
	for root := wd; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			if rel, err := filepath.Rel(root, wd); err == nil {
				return filepath.ToSlash(rel)
			}
			break
		}
		up := filepath.Dir(root)
		if up == root {
			break
		}
		root = up
	}
	return filepath.Base(wd)
}
