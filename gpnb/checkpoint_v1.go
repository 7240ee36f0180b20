package gpnb

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

// Checkpoints of format version 1 (gpnb before the configuration became one
// plain-data value) are still read: these types are that format's frozen
// configuration part, and upgradeV1 turns it into today's State. Everything
// else in the payload is decoded into today's types, which gob matches by
// field name.

type payloadV1 struct {
	State   stateV1
	DataTag string
}

type stateV1 struct {
	Config               configSpecV1
	Fingerprint          string
	N, D, Step           int
	Raw, Theta, Gradient []float64
	AdamM, AdamV         []float64
	PendingStepSeconds   float64
	EstimatorState       EstimatorState
	History              History
}

type configSpecV1 struct {
	Kernel                 string
	Solver                 methodSpecV1
	Settings               solvers.Settings
	Gradient               int
	WarmStart, FixedProbes bool
	Probes, ProbeDist      int
	LearningRate           float64
	Seed                   uint64
	Init                   []float64
	Operator               struct {
		Mode         int
		MemoryBudget int64
		Float32      bool
		Workers      int
	}
	TrackExactMLL, DropResidualTraces bool
	CheckpointPath                    string
}

type methodSpecV1 struct {
	Name                                                  string
	PrecondRank, BlockSize, BatchSize                     int
	PrecondNoise, LearningRate, RawLearningRate, Momentum float64
	Seed                                                  uint64
}

// upgradeV1 returns the State a version-1 payload describes.
func upgradeV1(p payloadV1) (*OptimiserState, error) {
	c := p.State.Config
	fam, err := kernel.ParseFamily(c.Kernel)
	if err != nil {
		return nil, err
	}
	m, err := solvers.ParseMethod(c.Solver.Name)
	if err != nil {
		return nil, err
	}
	switch m.(type) {
	case solvers.CG:
		m = solvers.CG{PrecondRank: c.Solver.PrecondRank, PrecondNoise: c.Solver.PrecondNoise}
	case solvers.AP:
		m = solvers.AP{BlockSize: c.Solver.BlockSize}
	case solvers.SGD:
		m = solvers.SGD{BatchSize: c.Solver.BatchSize, LearningRate: c.Solver.LearningRate, RawLearningRate: c.Solver.RawLearningRate, Momentum: c.Solver.Momentum, Seed: c.Solver.Seed}
	}
	if c.Operator.Float32 {
		return nil, errors.New("the run used the float32 storage of gpnb's format 1 (float32 K, float64 products), which no longer exists: start the run again (--precision float32 stores and multiplies in float32)")
	}
	if len(c.Init) < 2 {
		return nil, fmt.Errorf("initial θ has %d values", len(c.Init))
	}
	fp := ProbesResampled
	if c.FixedProbes {
		fp = ProbesFixed
	}
	cfg := Config{
		Kernel: fam, Init: kernel.HyperFromVector(c.Init), Solver: m, Settings: c.Settings,
		Estimator: EstimatorKind(c.Gradient), WarmStart: c.WarmStart, FixedProbes: fp, Probes: c.Probes,
		ProbeDist: ProbeDist(c.ProbeDist), LearningRate: c.LearningRate, Seed: c.Seed,
		Operator:      kernel.Options{Mode: kernel.Mode(c.Operator.Mode), MemoryBudget: c.Operator.MemoryBudget, Workers: c.Operator.Workers},
		TrackExactMLL: c.TrackExactMLL, DropResidualTraces: c.DropResidualTraces, CheckpointPath: c.CheckpointPath,
		Rules: solvers.RulesPaperText, // the rules before they had names
	}
	if cfg, err = cfg.Resolve(p.State.D); err != nil {
		return nil, err
	}
	s := p.State
	return &OptimiserState{
		Config: cfg, Fingerprint: s.Fingerprint, DataTag: p.DataTag, Dataset: dataName(p.DataTag), N: s.N, D: s.D, Step: s.Step,
		Raw: s.Raw, Theta: s.Theta, Gradient: s.Gradient, AdamM: s.AdamM, AdamV: s.AdamV,
		PendingStepSeconds: s.PendingStepSeconds, EstimatorState: s.EstimatorState, History: s.History,
	}, nil
}

// dataName returns the dataset name at the start of a data.Dataset.String()
// ("pol split 0: ..."), which format-1 checkpoints kept only there.
func dataName(tag string) string {
	name, _, _ := strings.Cut(tag, " split ")
	return name
}
