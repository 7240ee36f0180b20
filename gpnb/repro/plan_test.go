package repro

import "testing"

// TestProvenanceOutsideSteps: the provenance of a job names the steps no
// runs.json segment covers, before, between and after its segments, but
// not after the last segment of a job another process is running now (its
// report of the step it just checkpointed may still be on its way).
func TestProvenanceOutsideSteps(t *testing.T) {
	seg := func(from, to int, rev string, load float64) Segment {
		return Segment{FromStep: from, ToStep: to, Environment: map[string]string{"vcs.revision": rev}, LoadMean: load}
	}
	for _, c := range []struct {
		name string
		p    PlannedJob
		want string
	}{
		{"none", PlannedJob{Step: 5}, ""},
		{"contiguous", PlannedJob{Step: 5, Segments: []Segment{seg(0, 3, "aaa", 1.5), seg(3, 5, "bbb", 3)}},
			"; steps 0-3 by aaa (load 1.5), 3-5 by bbb (load 3.0)"},
		{"first steps by gpnb train", PlannedJob{Step: 100, Segments: []Segment{seg(76, 100, "8415159abc", 2.1)}},
			"; steps 0-76 outside the runner's records, 76-100 by 8415159 (load 2.1)"},
		{"a step killed before its report", PlannedJob{Step: 20, Segments: []Segment{seg(0, 3, "aaa", 1), seg(4, 20, "aaa", 1)}},
			"; steps 0-3 by aaa (load 1.0), 3-4 outside the runner's records, 4-20 by aaa (load 1.0)"},
		{"checkpoint ahead of the report", PlannedJob{Step: 4, Segments: []Segment{seg(0, 3, "", 2)}},
			"; steps 0-3 by an unrecorded build (load 2.0), 3-4 outside the runner's records"},
		{"running now", PlannedJob{Step: 4, RunningBy: "another gpnb reproduce", Segments: []Segment{seg(0, 3, "aaa", 2)}},
			"; steps 0-3 by aaa (load 2.0)"},
	} {
		if got := c.p.provenance(); got != c.want {
			t.Errorf("%s: provenance %q, want %q", c.name, got, c.want)
		}
	}
}
