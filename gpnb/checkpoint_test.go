package gpnb

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/fieldtest"
	"github.com/gpnb/gpnb/solvers"
)

// savedCheckpoint returns the bytes of a checkpoint taken mid-solve, small
// (n = 20, 2 probes) so that the fuzzer mutates it quickly.
func savedCheckpoint(t testing.TB) ([]byte, string) {
	ds := synth(t, 20, 2, 1)
	o, err := NewOptimiser(ds, Config{WarmStart: true, Probes: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.AddRecorder(Hooks{Iteration: func(p IterationRecord) {
		if p.Step == 2 && p.Iteration == 1 {
			cancel()
		}
	}})
	if err := o.Run(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	b, err := EncodeCheckpoint(o.State())
	if err != nil {
		t.Fatal(err)
	}
	return b, ds.Fingerprint()
}

// resealed rewrites the version field and fixes the checksum.
func resealed(b []byte, version uint32) []byte {
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(c[8:12], version)
	sum := sha256.Sum256(c[:len(c)-sha256.Size])
	copy(c[len(c)-sha256.Size:], sum[:])
	return c
}

func TestCheckpointErrors(t *testing.T) {
	good, _ := savedCheckpoint(t)
	if _, err := DecodeCheckpoint(good); err != nil {
		t.Fatalf("good checkpoint: %v", err)
	}
	// Version 4 differs only in having no subset stage, which an iterative
	// run has neither.
	if _, err := DecodeCheckpoint(resealed(good, 4)); err != nil {
		t.Errorf("version 4: %v", err)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 0x10
	badMagic := append([]byte(nil), good...)
	badMagic[0] = 'X'
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrCheckpointCorrupt},
		{"truncated header", good[:10], ErrCheckpointCorrupt},
		{"truncated", good[:len(good)-100], ErrCheckpointCorrupt},
		{"truncated by one", good[:len(good)-1], ErrCheckpointCorrupt},
		{"appended", append(append([]byte(nil), good...), 0), ErrCheckpointCorrupt},
		{"flipped byte", flipped, ErrCheckpointCorrupt},
		{"bad magic", badMagic, ErrCheckpointCorrupt},
		{"version 6", resealed(good, 6), ErrCheckpointVersion},
		{"version 2", resealed(good, 2), ErrCheckpointVersion},
		{"version 0", resealed(good, 0), ErrCheckpointVersion},
	}
	for _, c := range cases {
		_, err := DecodeCheckpoint(c.b)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

func TestResumeErrors(t *testing.T) {
	ds := synth(t, 60, 2, 1)
	dir := t.TempDir()
	path := dir + "/a.ckpt"
	cfg := Config{WarmStart: true, Probes: 4, Solver: solvers.CG{}}
	o, err := NewOptimiser(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	if err := o.Save(path); err != nil {
		t.Fatal(err)
	}
	// Same config: fine, and safe fields may change.
	if _, err := Resume(path, ds, WithConfig(Config{WarmStart: true, Probes: 4, LearningRate: 0.01}), WithChanges(func(c *Config) { c.Settings.MaxIterations = 5 })); err != nil {
		t.Fatalf("compatible resume: %v", err)
	}
	// The machine's resources may change: another memory budget and worker
	// count, and the run goes on with them, bit for bit (still dense).
	ro, err := Resume(path, ds, WithConfig(Config{WarmStart: true, Probes: 4, Operator: kernel.Options{MemoryBudget: 1 << 20, Workers: 1}}))
	if err != nil {
		t.Fatalf("resume with another memory budget and worker count: %v", err)
	}
	if ro.Config().Operator.MemoryBudget != 1<<20 || ro.Config().Operator.Workers != 1 {
		t.Errorf("resumed operator options %+v, want the requested budget and workers", ro.Config().Operator)
	}
	ref, _ := Resume(path, ds)
	if err := ro.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ref.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ro.Hyper(), ref.Hyper()) {
		t.Errorf("θ after a step with other workers/budget %v, with the stored ones %v", ro.Hyper(), ref.Hyper())
	}
	other := synth(t, 60, 2, 2)
	if _, err := Resume(path, other); !errors.Is(err, ErrDataMismatch) {
		t.Errorf("other data: got %v, want ErrDataMismatch", err)
	}
	sub := synth(t, 60, 2, 1)
	sub.YTrain[0] += 1e-12
	if _, err := Resume(path, sub); !errors.Is(err, ErrDataMismatch) {
		t.Errorf("perturbed data: got %v, want ErrDataMismatch", err)
	}
	for _, c := range []Config{
		{WarmStart: false, Probes: 4},
		{WarmStart: true, Probes: 8},
		{WarmStart: true, Probes: 4, Solver: solvers.AP{BlockSize: 10}},
		{WarmStart: true, Probes: 4, Kernel: RBF},
		{WarmStart: true, Probes: 4, Seed: 1},
		{WarmStart: true, Probes: 4, FixedProbes: ProbesResampled},
		{WarmStart: true, Probes: 4, Estimator: ExactGradient},
		{WarmStart: true, Probes: 4, Solver: solvers.CG{PrecondRank: 3, PrecondDiagonal: true}},
		{WarmStart: true, Probes: 4, ProbeDist: Rademacher},
		{WarmStart: true, Probes: 4, Operator: kernel.Options{Precision: kernel.Float32}},
		{WarmStart: true, Probes: 4, Operator: kernel.Options{Mode: kernel.ModeMatrixFree}},
	} {
		if _, err := Resume(path, ds, WithConfig(c)); !errors.Is(err, ErrConfigMismatch) {
			t.Errorf("config %+v: got %v, want ErrConfigMismatch", c, err)
		}
	}
	b, _ := os.ReadFile(path)
	for name, bb := range map[string][]byte{
		"truncated": b[:len(b)/2],
		"flipped":   func() []byte { c := append([]byte(nil), b...); c[100] ^= 1; return c }(),
	} {
		p := dir + "/" + name
		os.WriteFile(p, bb, 0o644)
		if _, err := Resume(p, ds); !errors.Is(err, ErrCheckpointCorrupt) {
			t.Errorf("%s: got %v, want ErrCheckpointCorrupt", name, err)
		}
	}
	p := dir + "/v9"
	os.WriteFile(p, resealed(b, 9), 0o644)
	if _, err := Resume(p, ds); !errors.Is(err, ErrCheckpointVersion) {
		t.Errorf("version: got %v, want ErrCheckpointVersion", err)
	}
	if _, err := Resume(dir+"/missing", ds); err == nil {
		t.Error("missing file: no error")
	}
	if _, err := Resume(path, ds, WithChanges(func(c *Config) { c.LearningRate = -1 })); err == nil {
		t.Error("negative learning rate on resume: no error")
	}
}

// TestSaveAtomic: a failed save leaves the previous checkpoint intact and
// no temporary files behind.
func TestSaveAtomic(t *testing.T) {
	ds := synth(t, 40, 2, 1)
	dir := t.TempDir()
	path := dir + "/c.ckpt"
	o, _ := NewOptimiser(ds, Config{CheckpointPath: path})
	if err := o.Run(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if err := o.Save(dir + "/nonexistent/dir/c.ckpt"); err == nil {
		t.Error("save into a missing directory: no error")
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Error("checkpoint changed")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want just the checkpoint", len(ents))
	}
}

// FuzzDecodeCheckpoint: decoding arbitrary bytes never panics, and a
// successful decode yields a state that passes its own consistency check.
func FuzzDecodeCheckpoint(f *testing.F) {
	good, _ := savedCheckpoint(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(resealed(good, 2))
	// A payload of garbage with a valid checksum reaches the gob decoder.
	garbage := append([]byte(nil), good...)
	for i := headerLen; i < headerLen+64 && i < len(garbage)-sha256.Size; i++ {
		garbage[i] ^= 0xa5
	}
	f.Add(resealed(garbage, CheckpointVersion))
	f.Add([]byte(checkpointMagic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := DecodeCheckpoint(b)
		if err == nil {
			if cerr := st.check(); cerr != nil {
				t.Fatalf("decoded state fails its check: %v", cerr)
			}
		} else if !errors.Is(err, ErrCheckpointCorrupt) && !errors.Is(err, ErrCheckpointVersion) {
			t.Fatalf("error %v wraps no sentinel", err)
		}
	})
}

// TestOperatorRecorded: every step records its operator, and a run resumed
// at its final step (which builds none) still reports the operator its
// steps used.
func TestOperatorRecorded(t *testing.T) {
	ds := synth(t, 40, 2, 5)
	o, err := NewOptimiser(ds, Config{WarmStart: true, Probes: 2, Operator: kernel.Options{Mode: kernel.ModeMatrixFree}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	want := o.Result().Operator
	if want == "" {
		t.Fatal("no operator in the result of a run that stepped")
	}
	for _, r := range o.History() {
		if r.Operator != want {
			t.Errorf("step %d records operator %q, want %q", r.Step, r.Operator, want)
		}
	}
	path := t.TempDir() + "/op.ckpt"
	if err := o.Save(path); err != nil {
		t.Fatal(err)
	}
	r, err := Resume(path, ds)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Result().Operator; got != want {
		t.Errorf("resumed at its final step: operator %q, want %q", got, want)
	}
}

// TestCheckpointColumns: a checkpoint records the CSV columns its data
// were read from, which read the file again to the data it was trained on,
// and a record that does not fit the data is refused as corrupt.
func TestCheckpointColumns(t *testing.T) {
	dir := t.TempDir()
	csv := dir + "/h.csv"
	var b strings.Builder
	b.WriteString("y,a,junk,b\n")
	for i := range 12 {
		fmt.Fprintf(&b, "%g,%d,x%d,%g\n", math.Sin(float64(i)), i, i, math.Cos(float64(i)))
	}
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := data.LoadCSV(csv, data.Target("y"), data.Inputs("b", "a"))
	if err != nil {
		t.Fatal(err)
	}
	path := dir + "/run.ckpt"
	o, err := NewOptimiser(ds, Config{Probes: 2, CheckpointPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	st, err := ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Columns, ds.Columns) || st.Dataset != csv {
		t.Fatalf("checkpoint columns %+v of %s, dataset's %+v", st.Columns, st.Dataset, ds.Columns)
	}
	again, err := data.LoadCSV(st.Dataset, st.Columns.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(path, again); err != nil {
		t.Errorf("resume on the file read again: %v", err)
	}
	other, err := data.LoadCSV(csv, data.Target("y"), data.Inputs("a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(path, other); !errors.Is(err, ErrDataMismatch) || !strings.Contains(err.Error(), `target "y" and inputs "b,a"`) {
		t.Errorf("resume on other columns: %v", err)
	}
	bad := o.State()
	bad.Columns.Inputs = []int{0, 5}
	enc, err := EncodeCheckpoint(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeCheckpoint(enc); !errors.Is(err, ErrCheckpointCorrupt) {
		t.Errorf("columns out of range: %v", err)
	}
}

// TestStepRecordRoundTrip: every field of a step's record (the backoff
// counts included) survives JSON (result.json) and a checkpoint's history,
// one field at a time; a field added later is covered without editing
// this test (fieldtest), but for the kinds fieldtest cannot set (the
// residual trace, the optional exact MLL), set here.
func TestStepRecordRoundTrip(t *testing.T) {
	ds := synth(t, 30, 2, 1)
	o, err := NewOptimiser(ds, Config{Probes: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	mll := -3.5
	for i, path := range fieldtest.Leaves(reflect.TypeFor[StepRecord]()) {
		var r StepRecord
		switch path {
		case "Residuals":
			r.Residuals = [][]float64{{1, 0.5}, {0.25, 0.125}}
		case "ExactMLL":
			r.ExactMLL = &mll
		default:
			if err := fieldtest.Set(&r, path, i, 2); err != nil {
				t.Fatal(err)
			}
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back StepRecord
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, r) {
			t.Errorf("%s: JSON round trip gives %+v (%v), want %+v", path, back, err, r)
		}
		st := o.State()
		st.History = History{r}
		enc, err := EncodeCheckpoint(st)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := DecodeCheckpoint(enc)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !reflect.DeepEqual(dec.History[0], r) {
			t.Errorf("%s: checkpoint round trip gives %+v, want %+v", path, dec.History[0], r)
		}
	}
}
