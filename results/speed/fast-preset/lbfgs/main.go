// lbfgs compares Adam with L-BFGS (gonum.org/v1/gonum/optimize) on the
// marginal likelihood, both fed the same estimated gradient: Hutchinson's
// with fixed probes, CG warm-started from the previous solve, in log θ.
// With fixed probes that gradient is a deterministic function of θ (up to
// the solves' tolerances), which is what a quasi-Newton method needs. The
// log marginal likelihood itself is not estimated, so L-BFGS's line search
// is given a constant value and steers by the directional derivative
// alone: gonum's Bisection (the strong Wolfe conditions with a decrease
// factor of zero), here within a trust region of -max-log-step in every
// log θ_i (see capped).
//
//	cd results/speed/fast-preset/lbfgs && go run -tags openblas . -method lbfgs -subset 2000 -subset-seed 58 -evals 300 -out FILE
//
// Every gradient evaluation (an Adam step, or a point L-BFGS asks for) is
// one line of FILE (JSON): the evaluation count, the seconds so far, the
// solver iterations and θ; for L-BFGS, "major" marks the points it
// accepted. With -eval, the test log-likelihood of the exact GP at θ
// (Cholesky, not timed) is added to every -eval-th line and to the last.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"time"

	"gonum.org/v1/gonum/optimize"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
)

type line struct {
	Eval       int       `json:"eval"`
	Seconds    float64   `json:"seconds"`
	Iterations int       `json:"solver_iterations"`
	Major      bool      `json:"major,omitempty"`
	Theta      []float64 `json:"theta"`
	TestLLH    *float64  `json:"test_llh,omitempty"`
}

func main() {
	method := flag.String("method", "lbfgs", "adam or lbfgs")
	name := flag.String("data", "pol", "UCI dataset")
	subset := flag.Int("subset", 2000, "training points")
	seed := flag.Uint64("subset-seed", 58, "subset seed")
	evals := flag.Int("evals", 300, "gradient evaluations at most")
	maxLog := flag.Float64("max-log-step", 1, "L-BFGS: the most a line search may change any log θ_i")
	every := flag.Int("eval", 10, "test log-likelihood every this many lines (0: none)")
	out := flag.String("out", "", "output file (JSON lines)")
	flag.Parse()
	ds, err := data.Load(*name, data.Subset(*subset), data.SubsetSeed(*seed))
	if err != nil {
		log.Fatal(err)
	}
	// The fast preset's estimator: fixed probes, warm start, mixed
	// precision, automatic preconditioner.
	cfg := gpnb.Fast()
	cfg.ExactUpTo = 0 // the iterative path at every n
	var lines []line
	start := time.Now()
	switch *method {
	case "adam":
		o, err := gpnb.NewOptimiser(ds, cfg)
		if err != nil {
			log.Fatal(err)
		}
		for i := 0; i < *evals; i++ {
			if err := o.Step(context.Background()); err != nil {
				log.Fatal(err)
			}
			r := o.History()[i]
			lines = append(lines, line{Eval: i + 1, Seconds: time.Since(start).Seconds(), Iterations: r.SolverIterations, Theta: o.Hyper().Vector()})
		}
	case "lbfgs":
		est, err := gpnb.NewEstimator(ds, cfg)
		if err != nil {
			log.Fatal(err)
		}
		d := ds.D()
		g := make([]float64, d+2)
		var lastX []float64
		prob := optimize.Problem{
			// No estimate of L: the line search goes by the gradient.
			Func: func(x []float64) float64 { return 0 },
			Grad: func(grad, x []float64) {
				lastX = append(lastX[:0], x...)
				theta := make([]float64, len(x))
				for i, v := range x {
					theta[i] = math.Exp(v)
				}
				k := kernel.Kernel{Family: cfg.Kernel, Hyper: kernel.HyperFromVector(theta)}
				var rec gpnb.StepRecord
				if err := est.Gradient(context.Background(), k, g, &rec); err != nil {
					log.Fatal(err)
				}
				for i := range grad {
					grad[i] = -g[i] * theta[i] // minimise −L over log θ
				}
				lines = append(lines, line{Eval: len(lines) + 1, Seconds: time.Since(start).Seconds(), Iterations: rec.SolverIterations, Theta: theta})
			},
		}
		x0 := make([]float64, d+2) // log θ: the paper's θ = 1
		settings := &optimize.Settings{
			Converger:       optimize.NeverTerminate{},
			GradEvaluations: *evals,
			Recorder:        recorder{&lines},
		}
		res, err := optimize.Minimize(prob, x0, settings, &optimize.LBFGS{Linesearcher: &capped{MaxLogStep: *maxLog, last: &lastX}})
		if err != nil {
			fmt.Fprintln(os.Stderr, "lbfgs:", err)
		}
		if res != nil {
			fmt.Fprintf(os.Stderr, "lbfgs: status %v after %d major iterations, %d gradients\n", res.Status, res.Stats.MajorIterations, res.Stats.GradEvaluations)
		}
	default:
		log.Fatalf("-method %q: use adam or lbfgs", *method)
	}
	for i := range lines {
		if *every > 0 && ((i+1)%*every == 0 || i == len(lines)-1) {
			v := testLLH(ds, cfg.Kernel, lines[i].Theta)
			lines[i].TestLLH = &v
		}
	}
	f := os.Stdout
	if *out != "" {
		if f, err = os.Create(*out); err != nil {
			log.Fatal(err)
		}
	}
	enc := json.NewEncoder(f)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			log.Fatal(err)
		}
	}
}

// recorder marks the points L-BFGS accepts.
type recorder struct{ lines *[]line }

func (recorder) Init() error { return nil }

func (r recorder) Record(_ *optimize.Location, op optimize.Operation, _ *optimize.Stats) error {
	if op == optimize.MajorIteration && len(*r.lines) > 0 {
		(*r.lines)[len(*r.lines)-1].Major = true
	}
	return nil
}

// testLLH is the test log-likelihood of the exact GP at θ.
func testLLH(ds *data.Dataset, fam kernel.Family, theta []float64) float64 {
	ex, err := gpnb.NewExact(ds.XTrain, ds.YTrain, kernel.Kernel{Family: fam, Hyper: kernel.HyperFromVector(theta)})
	if err != nil {
		log.Fatal(err)
	}
	mean, v, err := ex.Predict(ds.XTest)
	if err != nil {
		log.Fatal(err)
	}
	return gpnb.TestLLH(mean, v, ds.YTest)
}

// capped is gonum's Bisection line search (optimize/bisection.go: a point
// with |φ'(t)| ≤ 0.9|φ'(0)| found by bisection on the sign of φ', the
// function values all being equal here) with a trust region: no trial
// point moves any log θ_i by more than MaxLogStep from the line search's
// start (last, updated by the gradient evaluations, tells it where the
// trial points fell), and a point at that bound whose slope is still
// negative is accepted. Without the bound, doubling the step while the
// slope stays negative drove the signal scale to e⁶⁴.
type capped struct {
	MaxLogStep float64
	last       *[]float64 // x of the latest gradient evaluation

	base                    []float64
	min, max, curr, maxStep float64
	initGrad                float64
}

func (c *capped) Init(_, g float64, step float64) optimize.Operation {
	c.base = append(c.base[:0], (*c.last)...)
	c.min, c.max, c.curr, c.maxStep, c.initGrad = 0, math.Inf(1), step, math.Inf(1), g
	return optimize.GradEvaluation
}

func (c *capped) Iterate(_, g float64) (optimize.Operation, float64, error) {
	if math.IsInf(c.maxStep, 1) { // the first trial tells the direction's size
		dist := 0.0
		for i, x := range *c.last {
			dist = math.Max(dist, math.Abs(x-c.base[i]))
		}
		c.maxStep = c.curr * c.MaxLogStep / dist
		if c.curr > c.maxStep {
			c.curr = c.maxStep // beyond the region: try its edge instead
			return optimize.GradEvaluation, c.curr, nil
		}
	}
	if math.Abs(g) <= 0.9*math.Abs(c.initGrad) || (g < 0 && c.curr >= c.maxStep) {
		return optimize.MajorIteration, c.curr, nil
	}
	if g > 0 {
		c.max = c.curr
	} else {
		c.min = c.curr
	}
	next := (c.min + c.max) / 2
	if math.IsInf(c.max, 1) {
		next = math.Min(2*c.curr, c.maxStep)
	}
	if next == c.curr {
		return optimize.NoOperation, c.curr, optimize.ErrLinesearcherFailure
	}
	c.curr = next
	return optimize.GradEvaluation, c.curr, nil
}
