package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
)

// SegmentsFile is the name of a job's provenance file, DIR/jobs/<id>/runs.json.
const SegmentsFile = "runs.json"

// Segment records one stretch of a job run by one process: which steps it
// ran, with which build on which machine, and how loaded the machine was. A
// job that is interrupted and resumed (possibly in another session, with
// another binary) has several, in order; together they say where every
// step's wall time comes from. A process killed (SIGKILL, not the SIGTERM
// the runner checkpoints on) after a step's checkpoint but before that
// step's report leaves the step in no segment: the next segment begins one
// step after this one ends, and JobConditions counts the step like one run
// outside the runner.
type Segment struct {
	FromStep int       `json:"from_step"` // steps already done when it began
	ToStep   int       `json:"to_step"`   // steps done when it last reported
	Started  time.Time `json:"started"`
	Updated  time.Time `json:"updated"`
	// Environment is repro.Runner.Environment: Go version, BLAS, cores, build
	// tags, VCS revision of the binary, ...
	Environment map[string]string `json:"environment,omitempty"`
	// LoadMean and LoadMax summarise the 1-minute load average sampled at
	// every step (repro.Runner.LoadAverage); LoadSamples says how many samples.
	LoadMean    float64 `json:"load_mean"`
	LoadMax     float64 `json:"load_max"`
	LoadSamples int     `json:"load_samples"`
	// MachineGFLOPS is repro.Runner.MachineRate measured when the segment began
	// (0: not measured): wall times of segments with different rates came
	// from machines of different speeds.
	MachineGFLOPS float64 `json:"machine_gflops,omitempty"`
}

// ReadSegments returns the segments stored in a job directory (none when
// the file does not exist).
func ReadSegments(jobDir string) ([]Segment, error) {
	b, err := os.ReadFile(filepath.Join(jobDir, SegmentsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var segs []Segment
	if err := json.Unmarshal(b, &segs); err != nil {
		return nil, fmt.Errorf("results: %s/%s is not a list of segments (%v): delete it; it only records provenance", jobDir, SegmentsFile, err)
	}
	return segs, nil
}

// AddLoad adds one load-average reading to LoadMean, LoadMax and
// LoadSamples; NaN and negative readings are skipped.
func (s *Segment) AddLoad(load float64) {
	if math.IsNaN(load) || load < 0 {
		return
	}
	s.LoadMean = (s.LoadMean*float64(s.LoadSamples) + load) / float64(s.LoadSamples+1)
	s.LoadMax = max(s.LoadMax, load)
	s.LoadSamples++
}

// Conditions summarises how a job's wall time was spent, from its segments:
// how loaded the machine was and which kernel backends ran the steps.
type Conditions struct {
	// LoadPerCore is the segments' mean 1-minute load average, weighted by
	// each segment's wall time and divided by its machine's cores (numcpu):
	// about 1 when the job ran alone on all cores, well above 1 when other
	// work competed for them. NaN when no segment recorded a load.
	LoadPerCore float64
	// Backends lists the backends the steps ran on, sorted: each segment's
	// ("cpu" for a segment that names none) and, for steps no segment
	// covers (run outside the runner, e.g. by gpnb train, and resumed from
	// that checkpoint), the one their step records' operator names.
	Backends []string
}

// JobConditions summarises a job's segments and the steps of its history
// that no segment covers; ok is false when neither says anything.
func JobConditions(segs []Segment, h gpnb.History) (c Conditions, ok bool) {
	var sum, weight float64
	backends := map[string]bool{}
	WalkSegments(segs, len(h), func(s Segment) {
		b := s.Environment["backend"]
		if b == "" {
			b = "cpu"
		}
		backends[b] = true
		cores, _ := strconv.Atoi(s.Environment["numcpu"])
		if cores <= 0 {
			cores, _ = strconv.Atoi(s.Environment["gomaxprocs"])
		}
		if s.LoadSamples == 0 || cores <= 0 {
			return
		}
		w := max(s.Updated.Sub(s.Started).Seconds(), 1)
		sum += w * s.LoadMean / float64(cores)
		weight += w
	}, func(from, to int) {
		for _, r := range h[min(from, len(h)):min(to, len(h))] {
			if b := operatorBackend(r.Operator); b != "" {
				backends[b] = true
			}
		}
	})
	if len(backends) == 0 {
		return Conditions{LoadPerCore: math.NaN()}, false
	}
	c.LoadPerCore = math.NaN()
	if weight > 0 {
		c.LoadPerCore = sum / weight
	}
	c.Backends = slices.Sorted(maps.Keys(backends))
	return c, true
}

// WalkSegments visits a job's segments in order, calling seg for each, and
// outside(from, to) for each span of steps no segment covers: before a
// segment that begins after the steps covered so far, and after the last
// segment up to steps (none when steps is 0).
func WalkSegments(segs []Segment, steps int, seg func(Segment), outside func(from, to int)) {
	at := 0
	for _, s := range segs {
		if at < s.FromStep {
			outside(at, s.FromStep)
		}
		seg(s)
		at = max(at, s.ToStep)
	}
	if at < steps {
		outside(at, steps)
	}
}

// operatorBackend is the backend that built a step's kernel operator, from
// its description (kernel.Describe; a GPU operator's begins with
// kernel.GPUStoragePrefix): "cuda" or "cpu"; "" for a record that does not
// say (a record with no operator).
func operatorBackend(op string) string {
	switch {
	case op == "":
		return ""
	case strings.HasPrefix(op, kernel.GPUStoragePrefix):
		return "cuda"
	default:
		return "cpu"
	}
}

// unlikeLoad is how far apart (as a ratio) the slowdowns max(1, load per
// core) of a cold and a warm run may be before their wall-time ratio is
// flagged as no fair speed-up.
const unlikeLoad = 1.25

// unlike says why the wall times of a cold and a warm run do not compare
// (different backends, or machine loads further apart than unlikeLoad),
// or returns "" when they do or when the runs recorded no conditions.
func unlike(cold, warm Conditions) string {
	cb, wb := strings.Join(cold.Backends, "+"), strings.Join(warm.Backends, "+")
	if cb != "" && wb != "" && cb != wb {
		return fmt.Sprintf("cold ran on %s, warm on %s", cb, wb)
	}
	if math.IsNaN(cold.LoadPerCore) || math.IsNaN(warm.LoadPerCore) {
		return ""
	}
	sc, sw := max(1, cold.LoadPerCore), max(1, warm.LoadPerCore)
	if max(sc, sw)/min(sc, sw) > unlikeLoad {
		return fmt.Sprintf("mean load per core %.1f cold, %.1f warm", cold.LoadPerCore, warm.LoadPerCore)
	}
	return ""
}

// mergeConditions pools the conditions of several runs (the splits of one
// table cell): the mean of their loads per core, the union of backends.
func mergeConditions(cs []Conditions) Conditions {
	var loads []float64
	backends := map[string]bool{}
	for _, c := range cs {
		if !math.IsNaN(c.LoadPerCore) {
			loads = append(loads, c.LoadPerCore)
		}
		for _, b := range c.Backends {
			backends[b] = true
		}
	}
	m := Conditions{LoadPerCore: math.NaN()}
	if len(loads) > 0 {
		m.LoadPerCore = NewStat(loads).Mean
	}
	m.Backends = slices.Sorted(maps.Keys(backends))
	return m
}
