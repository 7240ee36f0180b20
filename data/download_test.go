package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gpnb/gpnb/internal/ucitest"
)

// fakeUCI makes small files for UCI dataset name (40 rows of its d inputs
// and a target, and a mask putting every tenth row in each split's test
// part) and makes them its checksums until the test ends, so that Load
// takes them for the real ones. It returns them by "<name>/<file>", the
// paths Load requests under BaseURL.
func fakeUCI(t *testing.T, name string) map[string][]byte {
	t.Helper()
	i := slices.IndexFunc(uciDatasets, func(u UCIDataset) bool { return u.Name == name })
	if i < 0 {
		t.Fatalf("no UCI dataset %q", name)
	}
	saved := uciDatasets[i]
	t.Cleanup(func() { uciDatasets[i] = saved })
	const rows = 40
	var d, m strings.Builder
	for r := range rows {
		for j := range saved.D {
			fmt.Fprintf(&d, "%d,", (r*7+j*3)%11)
		}
		fmt.Fprintf(&d, "%d.5\n", (r*r)%13)
		for s := range NumSplits {
			if s > 0 {
				m.WriteByte(',')
			}
			m.WriteString(map[bool]string{true: "1", false: "0"}[r%NumSplits == s])
		}
		m.WriteByte('\n')
	}
	gz := func(s string) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	data, mask := gz(d.String()), gz(m.String())
	uciDatasets[i].DataSHA256, uciDatasets[i].MaskSHA256 = sha256Hex(data), sha256Hex(mask)
	return map[string][]byte{name + "/" + DataFile: data, name + "/" + MaskFile: mask}
}

// writeFiles writes files (by "<name>/<file>") under dir.
func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for rel, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// userCache points os.UserCacheDir at a new empty folder for the test and
// returns the folder Load downloads into.
func userCache(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache")) // Linux
	t.Setenv("HOME", home)                                   // macOS
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(cache, "gpnb", "uci")
}

// uciServer serves files (by "<name>/<file>") under /<name>/<file>, with
// a byte altered in those corrupt names. It counts requests.
func uciServer(t *testing.T, files map[string][]byte, corrupt map[string]bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		rel := strings.TrimPrefix(r.URL.Path, "/")
		b, ok := files[rel]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if corrupt[rel] {
			b = append([]byte(nil), b...)
			b[len(b)/2] ^= 0xff
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// emptyFolder fails t unless dir is missing or empty.
func emptyFolder(t *testing.T, dir, what string) {
	t.Helper()
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("%s: %s holds %v, want nothing", what, dir, entries)
	}
}

// TestDownloadFetchesVerifiesAndCaches: files found nowhere are downloaded
// into the user cache folder, never into the data folder searched, and are
// found there next time without a request.
func TestDownloadFetchesVerifiesAndCaches(t *testing.T) {
	files := fakeUCI(t, "pol")
	srv, hits := uciServer(t, files, nil)
	cache := userCache(t)
	dir := t.TempDir()
	missing := filepath.Join(t.TempDir(), "nothing-here")
	ds, err := Load("pol", Dir(dir, missing), BaseURL(srv.URL), HTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 2 {
		t.Errorf("%d requests, want 2 (data and mask)", hits.Load())
	}
	for rel, want := range files {
		got, err := os.ReadFile(filepath.Join(cache, rel))
		if err != nil {
			t.Fatalf("%s not in the user cache: %v", rel, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("cached %s differs from the served file", rel)
		}
	}
	emptyFolder(t, dir, "the data folder searched")
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing data folder was created: %v", err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(cache, "pol", "*.tmp")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
	// The same data as loading the files from a data folder.
	writeFiles(t, dir, files)
	ref, err := Load("pol", Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if ds.Fingerprint() != ref.Fingerprint() || ds.NTrain() != 36 || ds.NTest() != 4 || ds.D() != 26 {
		t.Errorf("downloaded %s, from the folder %s", ds, ref)
	}
	// Second load: from the cache, no request.
	if _, err := Load("pol", Dir(missing), BaseURL(srv.URL), HTTPClient(srv.Client())); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 2 {
		t.Errorf("cached files were downloaded again (%d requests)", hits.Load())
	}
}

// TestDownloadRejectsCorruptFile: a download whose checksum is wrong
// leaves nothing; a failed request leaves no folder, in the data folders
// or the cache.
func TestDownloadRejectsCorruptFile(t *testing.T) {
	files := fakeUCI(t, "bike")
	srv, _ := uciServer(t, files, map[string]bool{"bike/" + DataFile: true})
	cache := userCache(t)
	dir := t.TempDir()
	_, err := Load("bike", Dir(dir), BaseURL(srv.URL), HTTPClient(srv.Client()))
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("corrupt download: got %v, want ErrChecksum", err)
	}
	if !strings.Contains(err.Error(), mustUCI(t, "bike").DataSHA256) {
		t.Errorf("error does not give the expected hash: %v", err)
	}
	emptyFolder(t, filepath.Join(cache, "bike"), "after a rejected download")
	emptyFolder(t, dir, "the data folder after a rejected download")
	// A server that answers 404.
	_, err = Load("protein", Dir(dir), BaseURL(srv.URL+"/nothing"), HTTPClient(srv.Client()))
	if !errors.Is(err, ErrDownload) || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
	emptyFolder(t, dir, "the data folder after a 404")
	if _, err := os.Stat(filepath.Join(cache, "protein")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a 404 left a folder in the cache: %v", err)
	}
}

func TestCorruptLocalFileIsRefused(t *testing.T) {
	files := fakeUCI(t, "pol")
	srv, hits := uciServer(t, files, nil)
	userCache(t)
	dir := t.TempDir()
	b := append([]byte(nil), files["pol/"+DataFile]...)
	b[len(b)/2] ^= 1
	writeFiles(t, dir, map[string][]byte{"pol/" + DataFile: b, "pol/" + MaskFile: files["pol/"+MaskFile]})
	bad := filepath.Join(dir, "pol", DataFile)
	_, err := Load("pol", Dir(dir), BaseURL(srv.URL), HTTPClient(srv.Client()))
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("got %v, want ErrChecksum", err)
	}
	for _, want := range []string{bad, mustUCI(t, "pol").DataSHA256, sha256Hex(b), "delete"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("a corrupt local file was replaced by a download (%d requests)", hits.Load())
	}
}

// TestDefaultDirectories checks the search order without Dir: $GPNB_DATA,
// then the user cache folder, which is where downloads go, even when
// $GPNB_DATA names a folder that does not exist.
func TestDefaultDirectories(t *testing.T) {
	files := fakeUCI(t, "pol")
	for rel, b := range fakeUCI(t, "elevators") {
		files[rel] = b
	}
	srv, hits := uciServer(t, files, nil)
	cache := userCache(t)
	src := t.TempDir()
	writeFiles(t, src, map[string][]byte{"pol/" + DataFile: files["pol/"+DataFile], "pol/" + MaskFile: files["pol/"+MaskFile]})
	t.Setenv("GPNB_DATA", src)
	if _, err := Load("pol", BaseURL(srv.URL), HTTPClient(srv.Client())); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 0 {
		t.Errorf("files in $GPNB_DATA were downloaded (%d requests)", hits.Load())
	}
	missing := filepath.Join(t.TempDir(), "uci")
	t.Setenv("GPNB_DATA", missing)
	if _, err := Load("elevators", BaseURL(srv.URL), HTTPClient(srv.Client())); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cache, "elevators", DataFile)); err != nil {
		t.Errorf("download not in the user cache folder: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the missing $GPNB_DATA was created: %v", err)
	}
	if hits.Load() != 2 {
		t.Errorf("%d requests, want 2", hits.Load())
	}
	t.Setenv("GPNB_DATA", "")
	if _, err := Load("elevators", BaseURL(srv.URL), HTTPClient(srv.Client())); err != nil || hits.Load() != 2 {
		t.Errorf("from the cache without $GPNB_DATA: %v, %d requests", err, hits.Load())
	}
}

// TestUcitestAgrees: the test helper looks for the files Load reads, and
// with GPNB_DOWNLOAD=1 names the folder Load downloads into.
func TestUcitestAgrees(t *testing.T) {
	if !slices.Equal(ucitest.Files, []string{DataFile, MaskFile}) {
		t.Errorf("ucitest.Files = %q, want %q", ucitest.Files, []string{DataFile, MaskFile})
	}
	cache := userCache(t)
	t.Setenv("GPNB_DATA", "")
	t.Setenv("GPNB_DOWNLOAD", "1")
	_, dl, err := (&config{}).dirs()
	if got := ucitest.Dir(t, "pol"); err != nil || got != dl || got != cache {
		t.Errorf("ucitest.Dir = %q, Load downloads into %q (%v)", got, dl, err)
	}
}

func mustUCI(t *testing.T, name string) UCIDataset {
	t.Helper()
	u, ok := LookupUCI(name)
	if !ok {
		t.Fatalf("no UCI dataset %q", name)
	}
	return u
}
