package gpnb

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/internal/atomicfile"
	"github.com/gpnb/gpnb/solvers"
)

// CheckpointVersion is the format version Save writes. Resume reads it,
// version 4, which has no subset stage (OptimiserState.Subset), and
// version 3, whose exact-path L-BFGS state is in log s and log σ where
// later versions' is in log s² and log σ² (PathExact); it converts such a
// state exactly (v3Powers).
const CheckpointVersion uint32 = 5

// v3Powers returns the factors that take a version-3 exact path's L-BFGS
// coordinates for p hyperparameters to version 4's: 1 for the length
// scales, 2 for s and σ.
func v3Powers(p int) []float64 {
	c := make([]float64, p)
	for i := range c {
		c[i] = exactPower(i, p)
	}
	return c
}

// checkpointMagic opens every checkpoint file.
const checkpointMagic = "GPNBCKPT"

// headerLen is magic (8) + version (4) + payload length (8).
const headerLen = 8 + 4 + 8

// Checkpoint errors; Resume and DecodeCheckpoint wrap one of them with the
// details, so test them with errors.Is.
var (
	// ErrCheckpointCorrupt: the file is not a checkpoint, is truncated, or
	// fails its SHA-256 check or decoding.
	ErrCheckpointCorrupt = errors.New("checkpoint is corrupt")
	// ErrCheckpointVersion: the file was written by an incompatible version.
	ErrCheckpointVersion = errors.New("checkpoint format version not supported")
	// ErrDataMismatch: the dataset given to Resume is not the one the
	// checkpoint was trained on (different fingerprint).
	ErrDataMismatch = errors.New("checkpoint was made with other data")
	// ErrConfigMismatch: the configuration given to Resume differs from the
	// checkpoint's in a field that cannot change mid-run.
	ErrConfigMismatch = errors.New("checkpoint configuration differs")
)

// EncodeCheckpoint returns the checkpoint bytes for st: magic, format
// version, payload length, gob payload (st), SHA-256 of everything before it.
func EncodeCheckpoint(st OptimiserState) ([]byte, error) {
	var body bytes.Buffer
	if err := gob.NewEncoder(&body).Encode(st); err != nil {
		return nil, fmt.Errorf("gpnb: encoding checkpoint: %w", err)
	}
	out := make([]byte, 0, headerLen+body.Len()+sha256.Size)
	out = append(out, checkpointMagic...)
	out = binary.LittleEndian.AppendUint32(out, CheckpointVersion)
	out = binary.LittleEndian.AppendUint64(out, uint64(body.Len()))
	out = append(out, body.Bytes()...)
	sum := sha256.Sum256(out)
	return append(out, sum[:]...), nil
}

// DecodeCheckpoint parses checkpoint bytes and checks the result for
// internal consistency. It never panics: bad input gives an error wrapping
// ErrCheckpointCorrupt or ErrCheckpointVersion.
func DecodeCheckpoint(b []byte) (*OptimiserState, error) {
	if len(b) < headerLen+sha256.Size {
		return nil, fmt.Errorf("gpnb: %w: %d bytes is too short to be a checkpoint (truncated?)", ErrCheckpointCorrupt, len(b))
	}
	if string(b[:8]) != checkpointMagic {
		return nil, fmt.Errorf("gpnb: %w: not a gpnb checkpoint (bad magic bytes)", ErrCheckpointCorrupt)
	}
	n := binary.LittleEndian.Uint64(b[12:20])
	if n != uint64(len(b)-headerLen-sha256.Size) {
		return nil, fmt.Errorf("gpnb: %w: header says %d payload bytes but the file holds %d (truncated or appended to)", ErrCheckpointCorrupt, n, len(b)-headerLen-sha256.Size)
	}
	body := b[:len(b)-sha256.Size]
	sum := sha256.Sum256(body)
	if !bytes.Equal(sum[:], b[len(b)-sha256.Size:]) {
		return nil, fmt.Errorf("gpnb: %w: SHA-256 mismatch (the file was damaged or partly written): use an older checkpoint or start again", ErrCheckpointCorrupt)
	}
	st := new(OptimiserState)
	v := binary.LittleEndian.Uint32(b[8:12])
	if v != CheckpointVersion && v != 4 && v != 3 {
		return nil, fmt.Errorf("gpnb: %w: file has version %d, this build reads versions 3 to %d: use the gpnb version that wrote it", ErrCheckpointVersion, v, CheckpointVersion)
	}
	if err := safeGobDecode(body[headerLen:], st); err != nil {
		return nil, fmt.Errorf("gpnb: %w: decoding: %v", ErrCheckpointCorrupt, err)
	}
	if err := st.check(); err != nil {
		return nil, fmt.Errorf("gpnb: %w: %v", ErrCheckpointCorrupt, err)
	}
	if v == 3 {
		st.LBFGS.rescale(v3Powers(st.D + 2))
	}
	return st, nil
}

func safeGobDecode(b []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	dec := gob.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	return nil
}

// check validates a decoded state's shapes and values, so that a resumed
// optimiser cannot index out of range or run on garbage.
func (st *OptimiserState) check() error {
	p := st.D + 2
	switch {
	case st.N <= 0 || st.D <= 0:
		return fmt.Errorf("state has n = %d, d = %d", st.N, st.D)
	case st.Step < 0:
		return fmt.Errorf("negative step count %d", st.Step)
	case len(st.Raw) != p || len(st.AdamM) != p || len(st.AdamV) != p:
		return fmt.Errorf("parameter vectors have lengths %d, %d, %d, want %d", len(st.Raw), len(st.AdamM), len(st.AdamV), p)
	case st.Config.Init.Len() != p:
		return fmt.Errorf("initial θ has %d values, want %d", st.Config.Init.Len(), p)
	case st.Config.Probes < 1:
		return fmt.Errorf("probe count %d", st.Config.Probes)
	case len(st.History) != st.Step:
		return fmt.Errorf("history has %d records for %d steps", len(st.History), st.Step)
	}
	for _, v := range [][]float64{st.Raw, st.AdamM, st.AdamV, st.Gradient} {
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return errors.New("non-finite optimiser parameter")
			}
		}
	}
	if err := st.Columns.Check(st.D); err != nil {
		return err
	}
	if st.Gradient != nil && len(st.Gradient) != p {
		return fmt.Errorf("gradient has %d values, want %d", len(st.Gradient), p)
	}
	s := st.Config.Probes
	if st.Probes.Rows != 0 && (st.Probes.Rows != st.N || st.Probes.Cols != s || len(st.Probes.Data) != st.N*s) {
		return fmt.Errorf("probes are %d×%d with %d values, want %d×%d", st.Probes.Rows, st.Probes.Cols, len(st.Probes.Data), st.N, s)
	}
	if st.PrevV.Rows != 0 && (st.PrevV.Rows != st.N || st.PrevV.Cols != s+1 || len(st.PrevV.Data) != st.N*(s+1)) {
		return fmt.Errorf("previous solution is %d×%d with %d values, want %d×%d", st.PrevV.Rows, st.PrevV.Cols, len(st.PrevV.Data), st.N, s+1)
	}
	if err := st.checkPathwise(); err != nil {
		return err
	}
	if err := st.checkPath(); err != nil {
		return err
	}
	if st.Pending != nil {
		if (st.Config.Estimator == Pathwise && st.Pathwise == nil) || (st.Config.Estimator != Pathwise && st.Probes.Rows == 0) {
			return errors.New("pending solve without probes")
		}
		if st.Pending.N != st.N || st.Pending.M != s+1 {
			return fmt.Errorf("pending solve is %d×%d, want %d×%d", st.Pending.N, st.Pending.M, st.N, s+1)
		}
		if len(st.PendingTheta) != p {
			return fmt.Errorf("pending θ has %d values, want %d", len(st.PendingTheta), p)
		}
		if st.PendingV0R0 != nil && len(st.PendingV0R0) != s+1 {
			return fmt.Errorf("pending v0ᵀr0 has %d values, want %d", len(st.PendingV0R0), s+1)
		}
	}
	if len(st.RNG) == 0 {
		return errors.New("no generator state")
	}
	if err := new(rand.PCG).UnmarshalBinary(st.RNG); err != nil {
		return fmt.Errorf("generator state: %v", err)
	}
	if resolved, err := st.Config.Resolve(st.D); err != nil {
		return err
	} else if d := resolved.Differences(st.Config, false); len(d) > 0 {
		return fmt.Errorf("configuration is not in resolved form (%s)", strings.Join(d, ", "))
	}
	return nil
}

// checkPathwise checks the pathwise estimator's draws and solved θ against
// the run they belong to.
func (st *OptimiserState) checkPathwise() error {
	p := st.Pathwise
	if p == nil {
		if st.SolvedTheta != nil {
			return errors.New("solved θ without pathwise draws")
		}
		return nil
	}
	c := st.Config
	if c.Estimator != Pathwise {
		return fmt.Errorf("pathwise draws in a run of the %v estimator", c.Estimator)
	}
	if err := p.Validate(); err != nil {
		return err
	}
	if p.N != st.N || p.Prior.Dim != st.D || p.Prior.Samples != c.Probes || p.Prior.Features != c.Features || p.Prior.Family != c.Kernel {
		return fmt.Errorf("pathwise draws are for n = %d, d = %d, %d samples of %d %v features; the run has n = %d, d = %d, %d probes, %d features, kernel %v",
			p.N, p.Prior.Dim, p.Prior.Samples, p.Prior.Features, p.Prior.Family, st.N, st.D, c.Probes, c.Features, c.Kernel)
	}
	if st.SolvedTheta != nil && len(st.SolvedTheta) != st.D+2 {
		return fmt.Errorf("solved θ has %d values, want %d", len(st.SolvedTheta), st.D+2)
	}
	return nil
}

// Save writes a checkpoint of the whole state to path atomically: a
// temporary file in the same directory is written, synced and renamed over
// path, so a crash mid-write leaves the previous checkpoint intact. It
// leaves out the vectors the run will never read again (see savedState),
// so a cold-start run's checkpoint holds O(d + steps) numbers, not O(n·s),
// plus the residual traces unless Config.DropResidualTraces.
func (o *Optimiser) Save(path string) error {
	if path == "" {
		return errors.New("gpnb: Save: empty path: give a file name such as \"run.ckpt\"")
	}
	b, err := EncodeCheckpoint(o.savedState())
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o644)
}

// savedState is OptimiserState less the n-sized matrices that no later step reads:
// without warm start the previous solution (each solve starts at zero), and
// with resampled probes the probes, unless a solve is pending (its right-hand
// side is built from them). The resumed run is the same bit for bit; only
// inspection of a resumed cold run finds PrevV (and, between steps, Probes)
// empty until its next step. The pathwise estimator keeps its previous
// solution and its draws in every case: together they are the posterior
// samples (PosteriorSamples), which a resumed run can then still give.
func (o *Optimiser) savedState() OptimiserState {
	st := o.State()
	if !o.cfg.WarmStart && o.cfg.Estimator != Pathwise {
		st.PrevV = Matrix{}
	}
	if !o.cfg.fixedProbes() && st.Pending == nil {
		st.Probes = Matrix{}
	}
	return st
}

// ReadCheckpoint reads and verifies a checkpoint file without data, for
// inspection (e.g. of its History).
func ReadCheckpoint(path string) (*OptimiserState, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gpnb: reading checkpoint: %w", err)
	}
	st, err := DecodeCheckpoint(b)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return st, nil
}

// Resume continues the run saved at path on the dataset ds, which must be
// the same data (same fingerprint) it was trained on. The resumed optimiser
// continues bit-for-bit: the same further steps give the same θ and history
// as a run that was never interrupted. WithBackend applies as for
// NewOptimiser (checkpoints store no backend);
// WithConfig and WithChanges change what may change mid-run (the fields of
// Config tagged `resume:"change"`: learning rate, solver settings, where to
// checkpoint, residual traces, the evaluation's settings, the operator's
// memory budget and workers) and refuse the rest with ErrConfigMismatch.
// A solve interrupted mid-way continues under the settings it started with,
// except a raised Settings.MaxIterations, which it takes over (so a run
// resumed with a larger cap goes on as one started with it would); the
// other changed settings apply from the next step's solve.
func Resume(path string, ds *data.Dataset, opts ...Option) (*Optimiser, error) {
	st, err := ReadCheckpoint(path)
	if err != nil {
		return nil, err
	}
	if err := checkDataset(ds); err != nil {
		return nil, err
	}
	if fp := ds.Fingerprint(); fp != st.Fingerprint {
		cols := ""
		if c := st.Columns; !c.IsZero() {
			cols = fmt.Sprintf(" (the CSV file's target %q and inputs %q)", c.TargetName(), strings.Join(c.InputNames(), ","))
		}
		return nil, fmt.Errorf("gpnb: %w: %s was trained on %q but got %q (fingerprints %.12s… ≠ %.12s…): load the same dataset, split, subset and normalisation%s", ErrDataMismatch, path, st.DataTag, ds.String(), st.Fingerprint, fp, cols)
	}
	if ds.NTrain() != st.N || ds.D() != st.D {
		return nil, fmt.Errorf("gpnb: %w: checkpoint has n = %d, d = %d, data n = %d, d = %d", ErrDataMismatch, st.N, st.D, ds.NTrain(), ds.D())
	}
	ro, err := collect(opts)
	if err != nil {
		return nil, err
	}
	cfg := st.Config
	if ro.expect != nil {
		want, err := ro.expect.Resolve(st.D)
		if err != nil {
			return nil, err
		}
		if err := changeable(cfg, want); err != nil {
			return nil, err
		}
		cfg = want
	}
	if ro.changes != nil {
		want := cfg
		want.Init = want.Init.Clone()
		ro.changes(&want)
		if want, err = want.Resolve(st.D); err != nil {
			return nil, err
		}
		if err := changeable(cfg, want); err != nil {
			return nil, err
		}
		cfg = want
	}
	ro.expect, ro.changes = nil, nil
	est, err := newEstimator(ds, cfg, ro)
	if err != nil {
		return nil, err
	}
	if err := est.restore(st.EstimatorState); err != nil {
		return nil, fmt.Errorf("gpnb: %w: %v", ErrCheckpointCorrupt, err)
	}
	o := &Optimiser{ds: ds, cfg: cfg, est: est}
	o.st = *st
	o.st.Config = cfg
	o.st.EstimatorState = EstimatorState{}
	return o, nil
}

// changeable returns ErrConfigMismatch naming the fields in which want
// differs from have where a resumed run may not change.
func changeable(have, want Config) error {
	d := have.Differences(want, true)
	if len(d) == 0 {
		return nil
	}
	var parts []string
	for _, f := range d {
		parts = append(parts, fmt.Sprintf("%s is %v in the checkpoint, %v requested", f, fieldString(have, f), fieldString(want, f)))
	}
	return fmt.Errorf("gpnb: %w: %s: resume with the configuration the run started with, or start a new run", ErrConfigMismatch, strings.Join(parts, "; "))
}

// fieldString formats the field of c at a Differences path.
func fieldString(c Config, path string) string {
	if path == "Solver" {
		b, _ := solvers.MarshalMethod(c.Solver)
		return string(b)
	}
	v := reflect.ValueOf(c)
	for _, name := range strings.Split(path, ".") {
		v = v.FieldByName(name)
	}
	return fmt.Sprint(v.Interface())
}
