package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/internal/ucitest"
)

func TestDataCommandUCI(t *testing.T) {
	ucitest.Dir(t, "pol", "protein", "bike", "elevators") // gpnb data finds them through $GPNB_DATA
	for _, tc := range []struct {
		args          []string
		name          string
		split         int
		nTrain, nTest int
		d             int
	}{
		{[]string{"--data", "pol", "--split", "0"}, "pol", 0, 13500, 1500, 26},
		{[]string{"--data", "Protein"}, "protein", 0, 41157, 4573, 9},
		{[]string{"--data", "bike", "--split", "0", "--subset", "1000"}, "bike", 0, 1000, 1737, 17},
	} {
		got, _ := runJSON[dataSummary](t, append(append([]string{"data"}, tc.args...), "--json", "-")...)
		if got.Dataset != tc.name || got.Split != tc.split || got.NTrain != tc.nTrain || got.NTest != tc.nTest || got.D != tc.d || !got.Normalised {
			t.Errorf("%v: got %+v", tc.args, got)
		}
	}
	// Split 9 of pol: n_train + n_test is the row count.
	if s9, _ := runJSON[dataSummary](t, "data", "--data", "pol", "--split", "9", "--json", "-"); s9.NTrain+s9.NTest != 15000 || s9.Split != 9 {
		t.Errorf("split 9: %+v", s9)
	}
	// The human summary.
	code, out, _ := runCmd(t, "data", "--data", "elevators")
	if code != 0 || !strings.Contains(out, "elevators split 0: 14940 train, 1659 test, d=18") {
		t.Errorf("summary: exit %d, %q", code, out)
	}
}

func TestDataCommandSyntheticAndCSV(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "s.json")
	code, _, errs := runCmd(t, "data", "--data", "synthetic-120-3-0", "--json", jsonPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	got := readJSON[dataSummary](t, jsonPath)
	want, err := data.Synthetic(120, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Dataset != "synthetic" || got.NTrain != 120 || got.NTest != 24 || got.D != 3 || got.Fingerprint != want.Fingerprint() {
		t.Errorf("synthetic: %+v", got)
	}

	train := filepath.Join(dir, "mine.csv")
	test := filepath.Join(dir, "mine_test.csv")
	os.WriteFile(train, []byte("1,2,3\n4,5,6\n7,8,10\n"), 0o644)
	os.WriteFile(test, []byte("0,0,0\n"), 0o644)
	got, _ = runJSON[dataSummary](t, "data", "--data", train, "--test", test, "--normalise=false", "--json", "-")
	if got.Dataset != "mine" || got.NTrain != 3 || got.NTest != 1 || got.D != 2 || got.Normalised {
		t.Errorf("CSV: %+v", got)
	}
}

func TestDataCommandErrors(t *testing.T) {
	dir := t.TempDir()
	ragged := filepath.Join(dir, "ragged.csv")
	os.WriteFile(ragged, []byte("1,2,3\n4,5\n"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		says []string
	}{
		{[]string{"--data", "boston"}, 1, append([]string{"boston"}, data.Names()...)},
		{[]string{"--data", "pol", "--split", "12"}, 1, []string{"--split 12", "0-9"}},
		{[]string{"--data", "pol", "--split", "-1"}, 1, []string{"0-9"}},
		{[]string{}, 1, []string{"--data is required"}},
		{[]string{"--data", "synthetic-30-2-1", "--split", "11"}, 1, []string{"--split 11: use 0-9"}},
		{[]string{"--data", "synthetic-30-2-1", "--data-dir", "x"}, 1, []string{"--data-dir applies only to UCI"}},
		{[]string{"--data", "synthetic-500-4-0", "--test", "x.csv"}, 1, []string{"--test applies only to CSV"}},
		{[]string{"--data", "synthetic"}, 1, []string{"synthetic-N-D-SEED"}},
		{[]string{"--data", "synthetic-500-4-0", "--subset", "-2"}, 1, []string{"--subset -2"}},
		{[]string{"--data", "synthetic-0-4-0"}, 1, []string{"N ≥ 2"}},
		{[]string{"--data", "synthetic-0-2-1"}, 1, []string{"N ≥ 2"}},
		{[]string{"--data", ragged}, 1, []string{"line 2 has 2 fields, expected 3"}},
		{[]string{"--data", "synthetic-500-4-0", "--bogus"}, 2, []string{"bogus"}},
		{[]string{"--data", "synthetic-500-4-0", "extra"}, 2, []string{"unexpected argument"}},
	} {
		code, _, errs := runCmd(t, append([]string{"data"}, tc.args...)...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, code, tc.code, errs)
		}
		for _, s := range tc.says {
			if !strings.Contains(errs, s) {
				t.Errorf("%v: stderr %q does not say %q", tc.args, errs, s)
			}
		}
	}
}
