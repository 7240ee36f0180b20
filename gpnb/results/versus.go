package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpnb/gpnb/gpnb"
)

// Fit is one model fit in a comparison of fits measured side by side: a
// gpnb train result, or another tool's fit (ExternalFit), with the load of
// the machine it ran under when that was recorded.
type Fit struct {
	Label string
	// N is the number of training points.
	N int
	// Seconds is the fit's time: gpnb's Result.TotalSeconds (the steps,
	// without loading the data or evaluating), another tool's FitSeconds.
	Seconds float64
	// Steps and Iterations are gpnb's steps and solver iterations;
	// Evaluations the marginal likelihood evaluations of another tool or of
	// gpnb's exact path (0 when not counted).
	Steps, Evaluations int
	Iterations         float64 // NaN for another tool and gpnb's exact path
	TestLLH            float64 // NaN when not evaluated
	// Load is the mean of the 1-minute load averages before and after the
	// fit (MetaFile), NaN when not recorded.
	Load float64
}

// ExternalFit is the JSON another tool's fitting script writes for Fit:
// results/speed/fast-preset/sklearn_fit.py's for scikit-learn.
type ExternalFit struct {
	N           int     `json:"n"`
	FitSeconds  float64 `json:"fit_seconds"`
	Evaluations int     `json:"mll_evaluations"`
	TestLLH     float64 `json:"test_llh"`
}

// Meta is what a measurement script records beside a fit's file NAME.json,
// as meta-NAME.json: the command, the build and the machine's load (the
// 1-minute load averages of uptime) before and after it ran.
type Meta struct {
	Command     string  `json:"command"`
	Build       string  `json:"build"`
	WallSeconds float64 `json:"wall_seconds"`
	LoadBefore  float64 `json:"load_before"`
	LoadAfter   float64 `json:"load_after"`
}

// MetaFile returns the path of the Meta of the fit in path: meta-NAME.json
// beside NAME.json.
func MetaFile(path string) string {
	return filepath.Join(filepath.Dir(path), "meta-"+filepath.Base(path))
}

// ReadFit reads the fit in path under label: an ExternalFit when the JSON
// has "fit_seconds", else a gpnb.Result (ReadResult); its Meta, when
// MetaFile exists, gives its load.
func ReadFit(label, path string) (Fit, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Fit{}, err
	}
	f := Fit{Label: label, Iterations: math.NaN(), TestLLH: math.NaN(), Load: math.NaN()}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return f, fmt.Errorf("%w: %s: %v", ErrBadRecord, path, err)
	}
	if _, ok := probe["fit_seconds"]; ok {
		dec := json.NewDecoder(bytes.NewReader(b))
		var e ExternalFit
		if err := dec.Decode(&e); err != nil {
			return f, fmt.Errorf("%w: %s: %v", ErrBadRecord, path, err)
		}
		f.N, f.Seconds, f.Evaluations, f.TestLLH = e.N, e.FitSeconds, e.Evaluations, e.TestLLH
	} else {
		res, err := ReadResult(path)
		if err != nil {
			return f, err
		}
		f.N, f.Seconds, f.Steps = res.NTrain, res.TotalSeconds, res.StepsDone
		f.Iterations = float64(res.History.TotalSolverIterations())
		if res.Path == gpnb.PathExact {
			f.Evaluations = res.History.TotalEvaluations()
			if res.ExactFrom == 0 { // no solver at all; else Adam's and the finish's
				f.Iterations = math.NaN()
			}
		}
		if res.Test != nil {
			f.TestLLH = res.Test.TestLLH
		}
	}
	if mb, err := os.ReadFile(MetaFile(path)); err == nil {
		var m Meta
		if err := json.Unmarshal(mb, &m); err != nil {
			return f, fmt.Errorf("%w: %s: %v", ErrBadRecord, MetaFile(path), err)
		}
		f.Load = (m.LoadBefore + m.LoadAfter) / 2
	} else if !os.IsNotExist(err) {
		return f, err
	}
	return f, nil
}

// group is what a fit is compared within in VersusTable: the label's part
// before ": " where it has one ("pol 2000: scikit-learn"), else its n.
func (f Fit) group() string {
	if g, _, ok := strings.Cut(f.Label, ": "); ok {
		return g
	}
	return fmt.Sprint(f.N)
}

// VersusTable is a row per fit, in order, each compared with the first fit
// of its group (its number of training points, or the part of its label
// before ": "), the reference: its time against the
// reference's (reference / this, so above 1 is faster) and its test
// log-likelihood less the reference's. The reference's own ratio is 1.
func VersusTable(fits []Fit) *Table {
	t := &Table{Title: "Fits side by side", Columns: []Column{
		{Name: "run"}, {Name: "n"}, {Name: "load"}, {Name: "fit s"}, {Name: "steps"}, {Name: "solver iterations"},
		{Name: "MLL evaluations"}, {Name: "test LLH"}, {Name: "Δ test LLH"}, {Name: "time: reference / this"}, {Name: "reference"},
	}}
	ref := map[string]Fit{}
	for _, f := range fits {
		g := f.group()
		r, ok := ref[g]
		if !ok {
			r, ref[g] = f, f
		}
		steps, evals := Missing(), Missing()
		if f.Steps > 0 {
			steps = Number(float64(f.Steps), 0, "")
		}
		if f.Evaluations > 0 {
			evals = Number(float64(f.Evaluations), 0, "")
		}
		t.Rows = append(t.Rows, Row{Text(f.Label), Number(float64(f.N), 0, ""), Number(f.Load, 1, ""), Number(f.Seconds, 1, ""), steps,
			Number(f.Iterations, 0, ""), evals, Number(f.TestLLH, 4, ""), Number(f.TestLLH-r.TestLLH, 4, ""),
			Number(r.Seconds/f.Seconds, 2, "×"), Text(r.Label)})
	}
	t.Notes = append(t.Notes, "Each row is compared with the first row of its n, or of its data set where the run is named \"data set: run\" (the reference column): time = its fit seconds over this row's; Δ test LLH = this row's less its.",
		"Load: the machine's 1-minute load average, the mean of before and after the fit (meta-NAME.json beside NAME.json); the fits of one n ran one after the other.")
	return t
}
