package data

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpnb/gpnb/internal/atomicfile"
)

// NumSplits is the number of train/test splits of each UCI dataset.
const NumSplits = 10

// DefaultBaseURL is where missing UCI files are downloaded from: the
// repository treforevans/uci_datasets (MIT licence) at a pinned commit, so
// the files always match the checksums below. File URLs are
// DefaultBaseURL + "/<name>/data.csv.gz" and ".../test_mask.csv.gz".
const DefaultBaseURL = "https://raw.githubusercontent.com/treforevans/uci_datasets/f0737523712fe66a1640e4b980b927e8490b58eb/uci_datasets"

// File names inside a dataset's directory.
const (
	DataFile = "data.csv.gz"      // inputs then target, comma-separated, no header
	MaskFile = "test_mask.csv.gz" // NumSplits 0/1 columns; column s marks split s's test rows
)

// maxDownload bounds a download; the largest file is under 2 MB.
const maxDownload = 64 << 20

// UCIDataset describes one of the UCI regression datasets Load knows: the
// one place that lists them, their sizes and the checksums of their files.
type UCIDataset struct {
	Name string // as Load spells it
	Rows int    // rows of data.csv.gz; each split tests on a tenth of them
	D    int    // input dimensions
	// DataSHA256 and MaskSHA256 are the SHA-256 checksums of the pinned
	// upstream data.csv.gz and test_mask.csv.gz.
	DataSHA256, MaskSHA256 string
}

// TrainSize returns the number of training points of a split, to within one
// point (nine tenths of the rows; the exact count depends on the split).
func (u UCIDataset) TrainSize() int { return u.Rows - u.Rows/NumSplits }

// In reports whether folder dir holds u's files (dir/<name>/DataFile and
// MaskFile).
func (u UCIDataset) In(dir string) bool {
	for _, f := range []string{DataFile, MaskFile} {
		if _, err := os.Stat(filepath.Join(dir, u.Name, f)); err != nil {
			return false
		}
	}
	return true
}

// Synthetic returns synthetic data of u's shape in place of its split
// split: TrainSize training points (n of them when 0 < n < TrainSize) and
// u.D inputs, drawn by Synthetic with seed split+1; opts apply as there.
func (u UCIDataset) Synthetic(split, n int, opts ...Option) (*Dataset, error) {
	if n <= 0 || n > u.TrainSize() {
		n = u.TrainSize()
	}
	return Synthetic(n, u.D, uint64(split)+1, opts...)
}

// uciDatasets are the paper's five datasets in the paper's column order.
var uciDatasets = []UCIDataset{
	{"pol", 15000, 26, "1c16126352954571e78f52d5a9d1b947a38655885d7cadd9407a4c9615fe4e04", "c5540259aabe58f5c7a534ed6f5141f8c1157d5de592e45884b7fced6091e981"},
	{"elevators", 16599, 18, "e39bc18a80ec3611e4fd76d0f86ee377e96ba21b568b9997576d538dafe56b7b", "9fe662eacca95ae2c9301cbc4c4134e55d58e903cb0cfb683771ffdd2d248eb5"},
	{"bike", 17379, 17, "411f76ae426c0e348a2629dcf6b3b29102c7db465eae780a3454c39db1dfac4f", "cf13dc25e80c03019cf2b01666f9cc29b03ea222f5c519536023ea56669bf337"},
	{"protein", 45730, 9, "f709d0107c3ee90ab019b9e5d77fc2ae182158958cb70b1903236a51334fd01b", "22afe05e8d17c428558d78a77efeecc08d58004b6c95741d1c533c3207c69fe9"},
	{"keggdirected", 48827, 20, "51b7bb56e3f3eae36273cdd5a549c042bdf0ec10948a6f8e6b01a1d6912212cd", "b8a7fc902444fdbc5866e8bf314e4778a303d675ef5267c83c5c25b70dacd357"},
}

// UCIDatasets returns the UCI datasets Load knows, in the paper's order
// (pol, elevators, bike, protein, keggdirected).
func UCIDatasets() []UCIDataset { return append([]UCIDataset(nil), uciDatasets...) }

// LookupUCI returns the UCI dataset of a name (case-insensitive).
func LookupUCI(name string) (UCIDataset, bool) {
	key := strings.ToLower(strings.TrimSpace(name))
	for _, u := range uciDatasets {
		if u.Name == key {
			return u, true
		}
	}
	return UCIDataset{}, false
}

// Names returns the names of the UCI datasets Load knows, sorted.
func Names() []string {
	names := make([]string, 0, len(uciDatasets))
	for _, u := range uciDatasets {
		names = append(names, u.Name)
	}
	sort.Strings(names)
	return names
}

// Load loads UCI dataset name (case-insensitive; one of Names()) with the
// train/test split chosen by Split (default 0), keeping the files' row
// order. The target is the last column. Inputs and target are z-scored with
// the training split's statistics unless Normalise(false); Subset and
// SubsetSeed thin the training part. Files come from the Dir folders (else
// $GPNB_DATA) or the user cache folder, and are downloaded into the cache
// when missing (see the package documentation); BaseURL and HTTPClient
// configure the download.
func Load(name string, opts ...Option) (*Dataset, error) {
	c, err := newConfig(loaderUCI, opts)
	if err != nil {
		return nil, err
	}
	u, ok := LookupUCI(name)
	key := u.Name
	if !ok {
		return nil, fmt.Errorf("%w %q: known datasets are %s (use LoadCSV for your own file, Synthetic for generated data)", ErrUnknownDataset, name, strings.Join(Names(), ", "))
	}
	raw, err := c.fetch(key, DataFile, u.DataSHA256)
	if err != nil {
		return nil, err
	}
	src := key + "/" + DataFile
	t, err := readTable(bytes.NewReader(raw), src)
	if err != nil {
		return nil, err
	}
	f, err := t.frame(HeaderNo, nil)
	if err != nil {
		return nil, err
	}
	cols, _, err := f.choose(c)
	if err != nil {
		return nil, err
	}
	train, test, err := c.splitRows(key, t.rows)
	if err != nil {
		return nil, err
	}
	place := &csvPlace{}
	p := &parts{name: key, source: key, split: c.split, place: place}
	if err := place.add(p, 0, f, train, cols.Inputs, cols.Target); err != nil {
		return nil, err
	}
	if err := place.add(p, 1, f, test, cols.Inputs, cols.Target); err != nil {
		return nil, err
	}
	return finish(p, c)
}

// splitRows reads dataset key's test mask and returns the rows of split
// c.split's training and test parts; rows is the data file's row count.
func (c *config) splitRows(key string, rows int) (train, test []int, err error) {
	u, _ := LookupUCI(key)
	raw, err := c.fetch(key, MaskFile, u.MaskSHA256)
	if err != nil {
		return nil, nil, err
	}
	msrc := key + "/" + MaskFile
	m, err := readTable(bytes.NewReader(raw), msrc)
	if err != nil {
		return nil, nil, err
	}
	if m.rows != rows || m.cols != NumSplits {
		return nil, nil, fmt.Errorf("%w: %s is %d×%d, expected %d×%d to match %s/%s", ErrMask, msrc, m.rows, m.cols, rows, NumSplits, key, DataFile)
	}
	for i := 0; i < m.rows; i++ {
		switch m.row(i)[c.split] {
		case 0:
			train = append(train, i)
		case 1:
			test = append(test, i)
		default:
			return nil, nil, fmt.Errorf("%w: %s line %d column %d is %v, expected 0 or 1", ErrMask, msrc, m.lines[i], c.split+1, m.row(i)[c.split])
		}
	}
	if len(train) == 0 || len(test) == 0 {
		return nil, nil, fmt.Errorf("%w: %s split %d has %d training and %d test rows", ErrMask, msrc, c.split, len(train), len(test))
	}
	return train, test, nil
}

// dirs returns the directories searched for files, in order: the Dir
// folders or $GPNB_DATA, then the user cache folder, the only one files are
// downloaded into (download; "" with err saying why when there is none).
// The data folders are only read: a file missing there is never written
// there, so a failed read leaves no folder behind.
func (c *config) dirs() (search []string, download string, err error) {
	if len(c.dirList) > 0 {
		search = append(search, c.dirList...)
	} else if env := os.Getenv("GPNB_DATA"); env != "" {
		search = append(search, env)
	}
	cache, cerr := os.UserCacheDir()
	if cerr != nil {
		return search, "", fmt.Errorf("data: no user cache folder to download into (%v); put the files in $GPNB_DATA or a Dir folder", cerr)
	}
	download = filepath.Join(cache, "gpnb", "uci")
	if !slices.Contains(search, download) {
		search = append(search, download)
	}
	return search, download, nil
}

// fetch returns the bytes of <name>/<file>, checked against sum, from the
// first directory that has it, downloading it when none has.
func (c *config) fetch(name, file, sum string) ([]byte, error) {
	search, dl, dirErr := c.dirs()
	for _, dir := range search {
		path := filepath.Join(dir, name, file)
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("data: %w", err)
		}
		if got := sha256Hex(b); got != sum {
			return nil, fmt.Errorf("%w: %s has sha256 %s, expected %s; delete the file so it is downloaded again", ErrChecksum, path, got, sum)
		}
		return b, nil
	}
	if dirErr != nil {
		return nil, dirErr
	}
	path := filepath.Join(dl, name, file)
	if err := c.download(c.baseURL+"/"+name+"/"+file, path, sum); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if got := sha256Hex(b); got != sum { // changed between rename and read
		return nil, fmt.Errorf("%w: %s has sha256 %s, expected %s; delete the file so it is downloaded again", ErrChecksum, path, got, sum)
	}
	return b, nil
}

// download fetches url into a temporary file next to dst, checks its
// SHA-256 and only then renames it to dst. On any failure nothing is left.
func (c *config) download(url, dst, sum string) error {
	client := c.client
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Minute}
	}
	resp, err := client.Get(url)
	if err != nil {
		return fmt.Errorf("%w: %s is missing and fetching it failed: %v; check the network, or put the file in $GPNB_DATA by hand", ErrDownload, dst, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s is missing and GET %s answered %s", ErrDownload, dst, url, resp.Status)
	}
	// Only now, with the file on its way: a failed request leaves no folder.
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("%w: %v; make the user cache folder writable, or put the files in $GPNB_DATA", ErrDownload, err)
	}
	err = atomicfile.Write(dst, 0o644, func(w io.Writer) error {
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(resp.Body, maxDownload+1))
		switch {
		case err != nil:
			return fmt.Errorf("%w: GET %s: %v", ErrDownload, url, err)
		case n > maxDownload:
			return fmt.Errorf("%w: GET %s: more than %d bytes, not a UCI file; check BaseURL", ErrDownload, url, maxDownload)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != sum {
			return fmt.Errorf("%w: downloaded %s from %s: sha256 %s, expected %s; the file was discarded: check BaseURL and retry", ErrChecksum, filepath.Base(dst), url, got, sum)
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrDownload) && !errors.Is(err, ErrChecksum) {
		return fmt.Errorf("%w: %v", ErrDownload, err)
	}
	return err
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
