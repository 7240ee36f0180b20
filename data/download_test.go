package data

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// uciServer serves the real files of dir under /<name>/<file>, except that
// corrupt names files whose bytes are altered. It counts requests.
func uciServer(t *testing.T, dir string, corrupt map[string]bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		rel := strings.TrimPrefix(r.URL.Path, "/")
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
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

func TestDownloadFetchesVerifiesAndCaches(t *testing.T) {
	src := dataDir(t)
	srv, hits := uciServer(t, src, nil)
	dir := t.TempDir()
	ds, err := Load("pol", Dir(dir), BaseURL(srv.URL), HTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 2 {
		t.Errorf("%d requests, want 2 (data and mask)", hits.Load())
	}
	for _, f := range []string{DataFile, MaskFile} {
		got, err := os.ReadFile(filepath.Join(dir, "pol", f))
		if err != nil {
			t.Fatalf("%s not cached: %v", f, err)
		}
		want, _ := os.ReadFile(filepath.Join(src, "pol", f))
		if string(got) != string(want) {
			t.Errorf("cached %s differs from the served file", f)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "pol", "*.tmp"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
	// The same data as loading the shared copy.
	ref, err := Load("pol", Dir(src))
	if err != nil {
		t.Fatal(err)
	}
	if ds.Fingerprint() != ref.Fingerprint() {
		t.Error("downloaded dataset differs from the shared copy")
	}
	// Second load: from the cache, no request.
	if _, err := Load("pol", Dir(dir), BaseURL(srv.URL), HTTPClient(srv.Client())); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 2 {
		t.Errorf("cached files were downloaded again (%d requests)", hits.Load())
	}
}

func TestDownloadRejectsCorruptFile(t *testing.T) {
	src := dataDir(t)
	srv, _ := uciServer(t, src, map[string]bool{"bike/" + DataFile: true})
	dir := t.TempDir()
	_, err := Load("bike", Dir(dir), BaseURL(srv.URL), HTTPClient(srv.Client()))
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("corrupt download: got %v, want ErrChecksum", err)
	}
	if !strings.Contains(err.Error(), mustUCI(t, "bike").DataSHA256) {
		t.Errorf("error does not give the expected hash: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "bike"))
	if len(entries) != 0 {
		t.Errorf("files left after a rejected download: %v", entries)
	}
	// A server that answers 404.
	_, err = Load("protein", Dir(dir), BaseURL(srv.URL+"/nothing"), HTTPClient(srv.Client()))
	if !errors.Is(err, ErrDownload) || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
}

func TestCorruptLocalFileIsRefused(t *testing.T) {
	src := dataDir(t)
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(src, "pol", DataFile))
	if err != nil {
		t.Fatal(err)
	}
	b[100] ^= 1
	if err := os.MkdirAll(filepath.Join(dir, "pol"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "pol", DataFile)
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load("pol", Dir(dir))
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("got %v, want ErrChecksum", err)
	}
	for _, want := range []string{bad, mustUCI(t, "pol").DataSHA256, sha256Hex(b), "delete"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// TestDefaultDirectories checks the search order without Dir: $GPNB_DATA,
// then the user cache directory, which is where downloads go.
func TestDefaultDirectories(t *testing.T) {
	src := dataDir(t)
	srv, hits := uciServer(t, src, nil)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache) // os.UserCacheDir on Linux
	t.Setenv("HOME", cache)           // and on macOS
	if _, err := Load("pol", BaseURL(srv.URL), HTTPClient(srv.Client())); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 0 {
		t.Errorf("files in $GPNB_DATA were downloaded (%d requests)", hits.Load())
	}
	t.Setenv("GPNB_DATA", "")
	if _, err := Load("elevators", BaseURL(srv.URL), HTTPClient(srv.Client())); err != nil {
		t.Fatal(err)
	}
	cacheDir, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cacheDir, "gpnb", "uci", "elevators", DataFile)); err != nil {
		t.Errorf("download not in the user cache directory: %v", err)
	}
	if hits.Load() != 2 {
		t.Errorf("%d requests, want 2", hits.Load())
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
