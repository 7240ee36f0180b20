package solvers

import (
	"math"

	"github.com/gpnb/gpnb/internal/enum"
)

// The stopping rules. The paper's text (appendix B) says the solvers run
// "until all linear systems" reach their tolerance; the authors' public code
// (otss2/iterative-gaussian-processes, linear_solvers.py) differs, and each
// difference is a field here so that either can be run (see DESIGN.md,
// "gpnb and the authors' code"): its probe columns stop on the mean of
// their relative residuals (ProbeMean), no column stops before the whole
// rule is met (FreezeJoint), AP picks its block over every column
// (AP.Pick), and SGD's estimate starts at b and its stop is not confirmed
// by a product (SGD.ResidualStart, SGD.NoVerify). The zero value of every
// such field is the paper's text and this package's behaviour before the
// options existed; Rules names the two sets.

// Rules names a set of stopping rules: values of Settings.ProbeRule,
// Settings.Freeze, AP.Pick, SGD.ResidualStart and SGD.NoVerify together.
// Apply sets them, RulesOf names the set that fields hold.
type Rules int

const (
	// RulesAuthors are the authors' code's rules: ProbeMean, FreezeJoint,
	// PickAll, ResidualB and NoVerify. The paper's SGD numbers were
	// evidently made with them, and under them SGD does not stall where
	// the paper's text can (DESIGN.md). The zero value, and gpnb's default.
	RulesAuthors Rules = iota
	// RulesPaperText is the paper's text: every rule field at its zero
	// value. Apply leaves the fields as they are, so a field set to its
	// other value changes that one rule.
	RulesPaperText
)

var rulesNames = enum.Enum[Rules]{Type: "Rules", What: "rule set", Err: ErrSettings, Names: []string{"authors", "paper-text"}}

// String returns "authors" or "paper-text".
func (r Rules) String() string { return rulesNames.Name(r) }

// MarshalText returns String(), or an error for an unknown value.
func (r Rules) MarshalText() ([]byte, error) { return rulesNames.Marshal(r) }

// UnmarshalText parses authors or paper-text (case-insensitive).
func (r *Rules) UnmarshalText(b []byte) error { return rulesNames.Unmarshal(r, b) }

// Check returns an ErrSettings error for a value that names no rule set.
func (r Rules) Check() error {
	if r != RulesAuthors && r != RulesPaperText {
		return fieldError("Rules", "Rules is %d: use RulesAuthors or RulesPaperText", int(r))
	}
	return nil
}

// Apply returns s and m under the rules r: with RulesAuthors every rule
// field of s and of m (AP's Pick, SGD's ResidualStart and NoVerify; CG and
// Cholesky have none) set to the authors' value; with RulesPaperText s and
// m as they are.
func (r Rules) Apply(s Settings, m Method) (Settings, Method) {
	if r != RulesAuthors {
		return s, m
	}
	s.ProbeRule, s.Freeze = ProbeMean, FreezeJoint
	switch mm := Canonical(m).(type) {
	case AP:
		mm.Pick = PickAll
		m = mm
	case SGD:
		mm.ResidualStart, mm.NoVerify = ResidualB, true
		m = mm
	}
	return s, m
}

// RulesOf returns RulesAuthors when every rule field of s and m holds the
// authors' value, and RulesPaperText otherwise (the paper's text, or the
// paper's text with some rules changed).
func RulesOf(s Settings, m Method) Rules {
	s2, m2 := RulesAuthors.Apply(s, m)
	if s2 == s && m2 == Canonical(m) {
		return RulesAuthors
	}
	return RulesPaperText
}

// ProbeRule says how the probe columns' tolerance RelTolProbes is applied.
type ProbeRule int

const (
	// ProbeEach: every probe column must meet RelTolProbes (the paper's
	// text: "all linear systems"). The default.
	ProbeEach ProbeRule = iota
	// ProbeMean: the mean of the probe columns' relative residuals must be
	// below RelTolProbes, as in the authors' code; single probe columns may
	// stay above it.
	ProbeMean
)

var probeRuleNames = enum.Enum[ProbeRule]{Type: "ProbeRule", What: "probe rule", Err: ErrSettings, Names: []string{"each", "mean"}}

// String returns "each" or "mean".
func (p ProbeRule) String() string { return probeRuleNames.Name(p) }

// MarshalText returns String(), or an error for an unknown value.
func (p ProbeRule) MarshalText() ([]byte, error) { return probeRuleNames.Marshal(p) }

// UnmarshalText parses each or mean (case-insensitive).
func (p *ProbeRule) UnmarshalText(b []byte) error { return probeRuleNames.Unmarshal(p, b) }

// Freeze says whether CG and SGD stop working on a column once it meets its
// own tolerance. AP updates every column at every block update, so it has
// no such choice (AP.Pick is its nearest analogue).
type Freeze int

const (
	// FreezeColumn: a column that meets its tolerance gets no more work
	// (CG drops it from its products, SGD from its batches and momentum);
	// the solve stops when the rule is met for all columns. The default.
	FreezeColumn Freeze = iota
	// FreezeJoint: every column (but those with a zero right-hand side)
	// keeps iterating until the whole rule is met, as in the authors' code;
	// a column that met its tolerance early keeps improving meanwhile.
	FreezeJoint
)

var freezeNames = enum.Enum[Freeze]{Type: "Freeze", What: "freeze rule", Err: ErrSettings, Names: []string{"column", "joint"}}

// String returns "column" or "joint".
func (f Freeze) String() string { return freezeNames.Name(f) }

// MarshalText returns String(), or an error for an unknown value.
func (f Freeze) MarshalText() ([]byte, error) { return freezeNames.Marshal(f) }

// UnmarshalText parses column or joint (case-insensitive).
func (f *Freeze) UnmarshalText(b []byte) error { return freezeNames.Unmarshal(f, b) }

// met reports whether the relative residuals rel (column 0 the mean system,
// the others probes) meet the stopping rule: column 0 below RelTolMean, and
// every probe (ProbeEach) or their mean (ProbeMean) below RelTolProbes.
// Under ProbeEach it is true exactly when every column meets its tolerance.
func (s Settings) met(rel []float64) bool {
	if len(rel) == 0 {
		return true
	}
	if !(rel[0] < s.RelTolMean) {
		return false
	}
	probes := rel[1:]
	if s.ProbeRule == ProbeMean {
		if len(probes) == 0 {
			return true
		}
		sum := 0.0
		for _, r := range probes {
			sum += r
		}
		return sum/float64(len(probes)) < s.RelTolProbes
	}
	for _, r := range probes {
		if !(r < s.RelTolProbes) {
			return false
		}
	}
	return true
}

// excess returns how far the relative residuals rel (column 0 the mean
// system, the others probes) are from the stopping rule, as the largest of
// rel[0]/RelTolMean and the probes' (each, or their mean under ProbeMean)
// relative residual over RelTolProbes: the rule is met when it is below 1.
// SGD and AP watch it for progress (State.Stalled).
func (s Settings) excess(rel []float64) float64 {
	if len(rel) == 0 {
		return 0
	}
	q := rel[0] / s.RelTolMean
	probes := rel[1:]
	if s.ProbeRule == ProbeMean {
		if len(probes) > 0 {
			sum := 0.0
			for _, r := range probes {
				sum += r
			}
			q = math.Max(q, sum/float64(len(probes))/s.RelTolProbes)
		}
		return q
	}
	for _, r := range probes {
		q = math.Max(q, r/s.RelTolProbes)
	}
	return q
}

// checkRules validates the rule fields of s (enumerations and MaxEpochs).
func (s Settings) checkRules() error {
	if s.ProbeRule != ProbeEach && s.ProbeRule != ProbeMean {
		return fieldError("ProbeRule", "ProbeRule is %d: use ProbeEach or ProbeMean", int(s.ProbeRule))
	}
	if s.Freeze != FreezeColumn && s.Freeze != FreezeJoint {
		return fieldError("Freeze", "Freeze is %d: use FreezeColumn or FreezeJoint", int(s.Freeze))
	}
	if s.MaxEpochs < 0 || math.IsNaN(s.MaxEpochs) || math.IsInf(s.MaxEpochs, 0) {
		return fieldError("MaxEpochs", "MaxEpochs is %v: use a finite value > 0, or 0 for the method's iteration cap", s.MaxEpochs)
	}
	return nil
}

// checkCap refuses MaxEpochs and MaxIterations set together (before the
// solver turns MaxEpochs into MaxIterations).
func (s Settings) checkCap() error {
	if s.MaxEpochs > 0 && s.MaxIterations > 0 {
		return fieldError("MaxIterations", "MaxIterations (%d) and MaxEpochs (%v) are both set: set one of them", s.MaxIterations, s.MaxEpochs)
	}
	return nil
}

// EpochIterations returns the iteration cap that e epochs amount to for a
// method that touches rows of the n rows of H per iteration: ⌈e·n/rows⌉
// (at least 1). CG touches all n rows per iteration (rows = n, so e epochs
// are e iterations), AP its block size, SGD its batch size.
func EpochIterations(e float64, n, rows int) int {
	if rows <= 0 || rows > n {
		rows = n
	}
	it := math.Ceil(e * float64(n) / float64(rows))
	if it < 1 {
		return 1
	}
	if it > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(it)
}
