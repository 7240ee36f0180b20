package results

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
)

// The modes of a run: how its solves start. The exact gradient solves
// nothing, so its mode is "exact" whatever the warm-start setting says.
const (
	Cold  = "cold"
	Warm  = "warm"
	Exact = "exact"
)

// Method is how a run computes its gradients: the solver, the gradient
// estimator and what sets it apart from the paper's method. MethodOf makes
// it from a configuration, and its methods make every name a run has in
// the tables, the charts and a job's ID, so that a name is decided in one
// place: "exact" names the exact estimator, never a solver.
type Method struct {
	// Solver is the linear solver's name: cg, ap, sgd or cholesky
	// (solvers.Method.Name); cholesky for the exact estimator, whose
	// gradient is by Cholesky.
	Solver    string
	Estimator gpnb.EstimatorKind
	// Warm is warm start (false for the exact estimator).
	Warm bool
	// Features is the pathwise estimator's number of random features when
	// it is not kernel.DefaultFeatures (0 otherwise).
	Features int
	// Budget is the solver budget in epochs a step (0: none).
	Budget float64
}

// MethodOf returns the method of a run with configuration c. A nil solver
// is CG, the default.
func MethodOf(c gpnb.Config) Method {
	if c.Estimator == gpnb.ExactGradient {
		return Method{Solver: "cholesky", Estimator: gpnb.ExactGradient}
	}
	m := Method{Solver: "cg", Estimator: c.Estimator, Warm: c.WarmStart, Budget: c.Settings.Budget}
	if c.Solver != nil {
		m.Solver = c.Solver.Name()
	}
	if c.Estimator == gpnb.Pathwise && c.Features != 0 && c.Features != kernel.DefaultFeatures {
		m.Features = c.Features
	}
	if !(m.Budget > 0) {
		m.Budget = 0
	}
	return m
}

// Mode is Cold, Warm, or Exact for the exact estimator.
func (m Method) Mode() string {
	switch {
	case m.Estimator == gpnb.ExactGradient:
		return Exact
	case m.Warm:
		return Warm
	}
	return Cold
}

// Variant names what sets the method apart from the paper's (the
// Hutchinson estimator without a budget), "" for nothing: "pathwise" for
// the pathwise estimator ("pathwise-f500" with 500 random features), and
// "b20" for a budget of 20 epochs, joined by "-" ("pathwise-b20").
func (m Method) Variant() string {
	var parts []string
	if m.Estimator == gpnb.Pathwise {
		parts = append(parts, "pathwise")
		if m.Features != 0 {
			parts = append(parts, fmt.Sprintf("f%d", m.Features))
		}
	}
	if m.Budget > 0 {
		parts = append(parts, "b"+strconv.FormatFloat(m.Budget, 'g', -1, 64))
	}
	return strings.Join(parts, "-")
}

// Key is the method without its mode, as the tables group their rows and
// the charts their series: the solver ("cg"), followed by "/" and the
// variant when there is one ("cg/pathwise-b20"); "exact" for the exact
// estimator.
func (m Method) Key() string {
	if m.Estimator == gpnb.ExactGradient {
		return Exact
	}
	if v := m.Variant(); v != "" {
		return m.Solver + "/" + v
	}
	return m.Solver
}

var solverLabels = map[string]string{"cg": "CG", "ap": "AP", "sgd": "SGD", "cholesky": "Cholesky"}

// SolverLabel is Key in words: "CG", "CG pathwise", "CG budget 20",
// "CG pathwise (500 features) budget 20", "Cholesky" (the Cholesky solver
// with Hutchinson's probes), or "exact".
func (m Method) SolverLabel() string {
	if m.Estimator == gpnb.ExactGradient {
		return Exact
	}
	label, ok := solverLabels[m.Solver]
	if !ok {
		label = strings.ToUpper(m.Solver)
	}
	if m.Estimator == gpnb.Pathwise {
		label += " pathwise"
		if m.Features != 0 {
			label += fmt.Sprintf(" (%d features)", m.Features)
		}
	}
	if m.Budget > 0 {
		label += " budget " + strconv.FormatFloat(m.Budget, 'g', -1, 64)
	}
	return label
}

// Label names the method with its mode, as the paper's tables do:
// SolverLabel, followed by " + ws" for warm start ("CG + ws").
func (m Method) Label() string {
	if m.Mode() == Warm {
		return m.SolverLabel() + " + ws"
	}
	return m.SolverLabel()
}

// RunID names a run of method m: <dataset>-s<split>-<solver>-<mode>,
// followed by -<variant> when there is one and by -seed<k> for a seed other
// than 0 (pol-s0-cg-warm, pol-s0-cholesky-exact, pol-s0-cg-warm-pathwise-b20,
// pol-s0-sgd-cold-seed3). It is a reproduction job's directory name.
func RunID(dataset string, split int, seed uint64, m Method) string {
	id := fmt.Sprintf("%s-s%d-%s-%s", dataset, split, m.Solver, m.Mode())
	if v := m.Variant(); v != "" {
		id += "-" + v
	}
	if seed != 0 {
		id += fmt.Sprintf("-seed%d", seed)
	}
	return id
}

// less orders methods as the tables list them: cg, ap, sgd (other solvers
// after them, by name), each with the Hutchinson estimator first, then the
// pathwise one, by features, then by budget; cold before warm.
func (m Method) less(o Method) bool {
	rank := func(m Method) int {
		switch m.Solver {
		case "cg":
			return 0
		case "ap":
			return 1
		case "sgd":
			return 2
		}
		return 3
	}
	est := func(m Method) int {
		if m.Estimator == gpnb.Pathwise {
			return 1
		}
		return 0
	}
	switch {
	case rank(m) != rank(o):
		return rank(m) < rank(o)
	case m.Solver != o.Solver:
		return m.Solver < o.Solver
	case est(m) != est(o):
		return est(m) < est(o)
	case m.Features != o.Features:
		return m.Features < o.Features
	case m.Budget != o.Budget:
		return m.Budget < o.Budget
	}
	return !m.Warm && o.Warm
}
