package repro

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SegmentsFile is the name of a job's provenance file, DIR/jobs/<id>/runs.json.
const SegmentsFile = "runs.json"

// Segment records one stretch of a job run by one process: which steps it
// ran, with which build on which machine, and how loaded the machine was. A
// job that is interrupted and resumed (possibly in another session, with
// another binary) has several, in order; together they say where every
// step's wall time comes from.
type Segment struct {
	FromStep int       `json:"from_step"` // steps already done when it began
	ToStep   int       `json:"to_step"`   // steps done when it last reported
	Started  time.Time `json:"started"`
	Updated  time.Time `json:"updated"`
	// Environment is Runner.Environment: Go version, BLAS, cores, build
	// tags, VCS revision of the binary, ...
	Environment map[string]string `json:"environment,omitempty"`
	// LoadMean and LoadMax summarise the 1-minute load average sampled at
	// every step (Runner.LoadAverage); LoadSamples says how many samples.
	LoadMean    float64 `json:"load_mean"`
	LoadMax     float64 `json:"load_max"`
	LoadSamples int     `json:"load_samples"`
	// MachineGFLOPS is Runner.MachineRate measured when the segment began
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
		return nil, fmt.Errorf("repro: %s/%s is not a list of segments (%v): delete it; it only records provenance", jobDir, SegmentsFile, err)
	}
	return segs, nil
}

// sample adds one load-average reading (NaN readings are skipped).
func (s *Segment) sample(load float64) {
	if math.IsNaN(load) || load < 0 {
		return
	}
	s.LoadMean = (s.LoadMean*float64(s.LoadSamples) + load) / float64(s.LoadSamples+1)
	s.LoadMax = max(s.LoadMax, load)
	s.LoadSamples++
}

// SystemLoadAverage reads the 1-minute load average from /proc/loadavg, or
// returns NaN where there is none.
func SystemLoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return math.NaN()
	}
	return v
}
