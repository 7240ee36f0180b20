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
	"path/filepath"
	"reflect"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

// CheckpointVersion is the format version Save writes and Resume reads.
const CheckpointVersion uint32 = 1

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

// payload is what the gob part of a checkpoint holds.
type payload struct {
	State   State
	DataTag string // data.Dataset.String() at save time, for messages
}

// EncodeCheckpoint returns the checkpoint bytes for st: magic, format
// version, payload length, gob payload, SHA-256 of everything before it.
func EncodeCheckpoint(st State, dataTag string) ([]byte, error) {
	var body bytes.Buffer
	if err := gob.NewEncoder(&body).Encode(payload{State: st, DataTag: dataTag}); err != nil {
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
func DecodeCheckpoint(b []byte) (st *State, dataTag string, err error) {
	if len(b) < headerLen+sha256.Size {
		return nil, "", fmt.Errorf("gpnb: %w: %d bytes is too short to be a checkpoint (truncated?)", ErrCheckpointCorrupt, len(b))
	}
	if string(b[:8]) != checkpointMagic {
		return nil, "", fmt.Errorf("gpnb: %w: not a gpnb checkpoint (bad magic bytes)", ErrCheckpointCorrupt)
	}
	n := binary.LittleEndian.Uint64(b[12:20])
	if n != uint64(len(b)-headerLen-sha256.Size) {
		return nil, "", fmt.Errorf("gpnb: %w: header says %d payload bytes but the file holds %d (truncated or appended to)", ErrCheckpointCorrupt, n, len(b)-headerLen-sha256.Size)
	}
	body := b[:len(b)-sha256.Size]
	sum := sha256.Sum256(body)
	if !bytes.Equal(sum[:], b[len(b)-sha256.Size:]) {
		return nil, "", fmt.Errorf("gpnb: %w: SHA-256 mismatch (the file was damaged or partly written): use an older checkpoint or start again", ErrCheckpointCorrupt)
	}
	if v := binary.LittleEndian.Uint32(b[8:12]); v != CheckpointVersion {
		return nil, "", fmt.Errorf("gpnb: %w: file has version %d, this build reads version %d: use the gpnb version that wrote it", ErrCheckpointVersion, v, CheckpointVersion)
	}
	var p payload
	if err := safeGobDecode(body[headerLen:], &p); err != nil {
		return nil, "", fmt.Errorf("gpnb: %w: decoding: %v", ErrCheckpointCorrupt, err)
	}
	if err := p.State.check(); err != nil {
		return nil, "", fmt.Errorf("gpnb: %w: %v", ErrCheckpointCorrupt, err)
	}
	return &p.State, p.DataTag, nil
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
func (st *State) check() error {
	p := st.D + 2
	switch {
	case st.N <= 0 || st.D <= 0:
		return fmt.Errorf("state has n = %d, d = %d", st.N, st.D)
	case st.Step < 0:
		return fmt.Errorf("negative step count %d", st.Step)
	case len(st.Raw) != p || len(st.AdamM) != p || len(st.AdamV) != p:
		return fmt.Errorf("parameter vectors have lengths %d, %d, %d, want %d", len(st.Raw), len(st.AdamM), len(st.AdamV), p)
	case len(st.Config.Init) != p:
		return fmt.Errorf("initial θ has %d values, want %d", len(st.Config.Init), p)
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
	if st.Pending != nil {
		if st.Probes.Rows == 0 {
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
	if _, err := kernel.ParseFamily(st.Config.Kernel); err != nil {
		return err
	}
	if _, err := st.Config.Solver.Method(); err != nil {
		return err
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
	b, err := EncodeCheckpoint(o.savedState(), o.ds.String())
	if err != nil {
		return err
	}
	return writeAtomic(path, b)
}

// savedState is State less the n-sized matrices that no later step reads:
// without warm start the previous solution (each solve starts at zero), and
// with resampled probes the probes, unless a solve is pending (its right-hand
// side is built from them). The resumed run is the same bit for bit; only
// inspection of a resumed cold run finds PrevV (and, between steps, Probes)
// empty until its next step.
func (o *Optimiser) savedState() State {
	st := o.State()
	if !o.cfg.WarmStart {
		st.PrevV = Matrix{}
	}
	if !o.cfg.fixedProbes() && st.Pending == nil {
		st.Probes = Matrix{}
	}
	return st
}

func writeAtomic(path string, b []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("gpnb: saving checkpoint: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("gpnb: saving checkpoint: %w", err)
	}
	if err = f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("gpnb: saving checkpoint: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("gpnb: saving checkpoint: %w", err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("gpnb: saving checkpoint: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync() // make the rename durable; best effort
		d.Close()
	}
	return nil
}

// ReadCheckpoint reads and verifies a checkpoint file without data, for
// inspection (e.g. of its History).
func ReadCheckpoint(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gpnb: reading checkpoint: %w", err)
	}
	st, _, err := DecodeCheckpoint(b)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return st, nil
}

// ResumeOption adjusts a resumed optimiser. Only changes that keep the run
// meaningful are possible: the learning rate, the solver's tolerances and
// MaxIterations, the checkpoint path, the hooks, the operator Backend and
// (through WithConfig) the operator's MemoryBudget and Workers. Everything
// else (kernel, solver kind and parameters, probes, warm start, seed,
// initialisation, operator mode and float32 storage, data) is fixed by the
// checkpoint.
type ResumeOption func(*resumeOpts)

type resumeOpts struct {
	expect     *Config
	lr         *float64
	settings   *solvers.Settings
	ckpt       *string
	backend    func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error)
	setBackend bool
	onIter     func(step, iter int, relRes []float64)
	onStep     func(StepRecord)
	setOnIter  bool
	setOnStep  bool
}

// WithLearningRate changes Adam's learning rate from the next step on.
func WithLearningRate(lr float64) ResumeOption { return func(r *resumeOpts) { r.lr = &lr } }

// WithSettings changes the solver tolerances and MaxIterations from the
// next step on (zero tolerances mean the paper's defaults). A pending
// mid-step solve keeps the settings it started with.
func WithSettings(s solvers.Settings) ResumeOption {
	return func(r *resumeOpts) { r.settings = &s }
}

// WithCheckpointPath changes where Step and Run save checkpoints ("" turns
// saving off).
func WithCheckpointPath(path string) ResumeOption { return func(r *resumeOpts) { r.ckpt = &path } }

// WithBackend sets Config.Backend, the kernel operator's builder (nil: the
// CPU operator), which checkpoints do not store.
func WithBackend(f func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error)) ResumeOption {
	return func(r *resumeOpts) { r.backend, r.setBackend = f, true }
}

// WithHooks sets the OnIteration and OnStep hooks (nil clears them).
func WithHooks(onIteration func(step, iter int, relRes []float64), onStep func(StepRecord)) ResumeOption {
	return func(r *resumeOpts) {
		r.onIter, r.onStep, r.setOnIter, r.setOnStep = onIteration, onStep, true, true
	}
}

// WithConfig checks that cfg (after defaults) agrees with the checkpoint in
// every field that cannot change mid-run, failing with ErrConfigMismatch
// otherwise, and takes the changeable fields from it (LearningRate,
// Settings, CheckpointPath, hooks, Backend, DropResidualTraces). The CLI uses it so that resuming with
// other flags is refused instead of silently ignored.
func WithConfig(cfg Config) ResumeOption { return func(r *resumeOpts) { c := cfg; r.expect = &c } }

// Resume continues the run saved at path on the dataset ds, which must be
// the same data (same fingerprint) it was trained on. The resumed optimiser
// continues bit-for-bit: the same further steps give the same θ and history
// as a run that was never interrupted.
func Resume(path string, ds *data.Dataset, opts ...ResumeOption) (*Optimiser, error) {
	st, tag, err := func() (*State, string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, "", fmt.Errorf("gpnb: reading checkpoint: %w", err)
		}
		return DecodeCheckpoint(b)
	}()
	if err != nil {
		return nil, err
	}
	if err := checkDataset(ds); err != nil {
		return nil, err
	}
	if fp := ds.Fingerprint(); fp != st.Fingerprint {
		return nil, fmt.Errorf("gpnb: %w: %s was trained on %q but got %q (fingerprints %.12s… ≠ %.12s…): load the same dataset, split, subset and normalisation", ErrDataMismatch, path, tag, ds.String(), st.Fingerprint, fp)
	}
	if ds.NTrain() != st.N || ds.D() != st.D {
		return nil, fmt.Errorf("gpnb: %w: checkpoint has n = %d, d = %d, data n = %d, d = %d", ErrDataMismatch, st.N, st.D, ds.NTrain(), ds.D())
	}
	var ro resumeOpts
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("gpnb: Resume: nil ResumeOption")
		}
		opt(&ro)
	}
	cfg, err := configFromSpec(st.Config)
	if err != nil {
		return nil, fmt.Errorf("gpnb: %w: %v", ErrCheckpointCorrupt, err)
	}
	if ro.expect != nil {
		want, err := ro.expect.withDefaults(st.D)
		if err != nil {
			return nil, err
		}
		if err := compatible(cfg, want); err != nil {
			return nil, fmt.Errorf("gpnb: %w: %v: resume with the configuration the run started with, or start a new run", ErrConfigMismatch, err)
		}
		cfg.LearningRate, cfg.Settings, cfg.CheckpointPath = want.LearningRate, want.Settings, want.CheckpointPath
		cfg.OnIteration, cfg.OnStep, cfg.Backend = want.OnIteration, want.OnStep, want.Backend
		cfg.DropResidualTraces = want.DropResidualTraces
		// The memory budget and the worker count are the machine's, not the
		// run's: the workers never change the bits; a budget that moves an
		// automatic mode between dense and matrix-free gives a valid
		// continuation, as another Backend does.
		cfg.Operator.MemoryBudget, cfg.Operator.Workers = want.Operator.MemoryBudget, want.Operator.Workers
	}
	if ro.setBackend {
		cfg.Backend = ro.backend
	}
	if ro.lr != nil {
		cfg.LearningRate = *ro.lr
	}
	if ro.settings != nil {
		s := *ro.settings
		if s.RelTolMean == 0 {
			s.RelTolMean = solvers.DefaultRelTolMean
		}
		if s.RelTolProbes == 0 {
			s.RelTolProbes = solvers.DefaultRelTolProbes
		}
		cfg.Settings = s
	}
	if ro.ckpt != nil {
		cfg.CheckpointPath = *ro.ckpt
	}
	if ro.setOnIter {
		cfg.OnIteration = ro.onIter
	}
	if ro.setOnStep {
		cfg.OnStep = ro.onStep
	}
	if err := cfg.check(st.D); err != nil {
		return nil, err
	}
	spec, err := specOf(cfg)
	if err != nil {
		return nil, err
	}
	est := newEstimator(ds, cfg)
	if err := est.restore(st.EstimatorState); err != nil {
		return nil, fmt.Errorf("gpnb: %w: %v", ErrCheckpointCorrupt, err)
	}
	o := &Optimiser{ds: ds, cfg: cfg, est: est, onStep: cfg.OnStep}
	o.OnIteration(cfg.OnIteration)
	o.st = *st
	o.st.Config = spec
	o.st.EstimatorState = EstimatorState{}
	return o, nil
}

// configFromSpec rebuilds a Config from its plain-data form.
func configFromSpec(s ConfigSpec) (Config, error) {
	fam, err := kernel.ParseFamily(s.Kernel)
	if err != nil {
		return Config{}, err
	}
	m, err := s.Solver.Method()
	if err != nil {
		return Config{}, err
	}
	fp := ProbesResampled
	if s.FixedProbes {
		fp = ProbesFixed
	}
	return Config{
		Kernel:         fam,
		Solver:         m,
		Settings:       s.Settings,
		Gradient:       s.Gradient,
		WarmStart:      s.WarmStart,
		FixedProbes:    fp,
		Probes:         s.Probes,
		ProbeDist:      s.ProbeDist,
		LearningRate:   s.LearningRate,
		Seed:           s.Seed,
		Init:           kernel.HyperFromVector(s.Init),
		Operator:       s.Operator,
		TrackExactMLL:  s.TrackExactMLL,
		CheckpointPath: s.CheckpointPath,

		DropResidualTraces: s.DropResidualTraces,
	}, nil
}

// compatible reports the first field that cannot change mid-run and differs.
func compatible(have, want Config) error {
	hs, err := encodeMethod(have.Solver)
	if err != nil {
		return err
	}
	ws, err := encodeMethod(want.Solver)
	if err != nil {
		return err
	}
	switch {
	case have.Kernel != want.Kernel:
		return fmt.Errorf("kernel %v, requested %v", have.Kernel, want.Kernel)
	case hs != ws:
		return fmt.Errorf("solver %+v, requested %+v", hs, ws)
	case have.Gradient != want.Gradient:
		return fmt.Errorf("gradient %v, requested %v", have.Gradient, want.Gradient)
	case have.WarmStart != want.WarmStart:
		return fmt.Errorf("warm start %v, requested %v", have.WarmStart, want.WarmStart)
	case have.fixedProbes() != want.fixedProbes():
		return fmt.Errorf("fixed probes %v, requested %v", have.fixedProbes(), want.fixedProbes())
	case have.Probes != want.Probes:
		return fmt.Errorf("%d probes, requested %d", have.Probes, want.Probes)
	case have.ProbeDist != want.ProbeDist:
		return fmt.Errorf("probe distribution %v, requested %v", have.ProbeDist, want.ProbeDist)
	case have.Seed != want.Seed:
		return fmt.Errorf("seed %d, requested %d", have.Seed, want.Seed)
	case !reflect.DeepEqual(have.Init.Vector(), want.Init.Vector()):
		return fmt.Errorf("initial θ %v, requested %v", have.Init.Vector(), want.Init.Vector())
	case have.Operator.Mode != want.Operator.Mode || have.Operator.Precision != want.Operator.Precision:
		return fmt.Errorf("operator mode %v, precision %v; requested %v, %v", have.Operator.Mode, have.Operator.Precision, want.Operator.Mode, want.Operator.Precision)
	case have.TrackExactMLL != want.TrackExactMLL:
		return fmt.Errorf("TrackExactMLL %v, requested %v", have.TrackExactMLL, want.TrackExactMLL)
	}
	return nil
}
