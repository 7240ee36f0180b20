package viz_test

import (
	"fmt"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/viz"
)

// Figure 3 from two runs of CG on pol, one initialised at zero and one
// warm-started.
func ExampleIterations() {
	run := func(warm bool, iters ...int) gpnb.Result {
		r := gpnb.Result{Dataset: "pol", Solver: "cg", WarmStart: warm, Config: &gpnb.Config{WarmStart: warm}}
		for i, n := range iters {
			r.History = append(r.History, gpnb.StepRecord{Step: i + 1, SolverIterations: n})
		}
		return r
	}
	c, err := viz.Iterations([]gpnb.Result{run(false, 120, 118, 121), run(true, 120, 35, 20)})
	if err != nil {
		fmt.Println(err)
		return
	}
	p := c.Panels[0]
	fmt.Println(c.Title)
	fmt.Println(p.Title, p.SeriesNames())
	fmt.Println(p.Series[1].Name, p.Series[1].Y)
	opts, _ := c.Options()
	fmt.Println("y axis:", opts[0]["yAxis"].([]any)[0].(map[string]any)["type"], "animation:", opts[0]["animation"])
	// c.Show() would draw it in a GoNB cell; c.Save("fig3.html") or
	// c.Save("fig3.png") writes it to a file.

	// Output:
	// Solver iterations per marginal likelihood step
	// pol — CG [CG CG + ws]
	// CG + ws [120 35 20]
	// y axis: value animation: false
}

// The residual trajectories of one solve, on a log axis.
func ExampleResidualTrace() {
	trace := [][]float64{{1, 1, 1}, {0.1, 0.4, 0.2}, {0.008, 0.09, 0.05}}
	c, err := viz.ResidualTrace("step 12", trace)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range c.Panels[0].Series {
		fmt.Println(s.Name, s.Y)
	}
	fmt.Println("log y:", c.Panels[0].LogY)
	// Output:
	// mean system (column 0) [1 0.1 0.008]
	// probes: max of 2 [1 0.4 0.09]
	// probes: median of 2 [1 0.30000000000000004 0.07]
	// tolerance 0.01 (mean) [0.01 0.01]
	// tolerance 0.1 (probes) [0.1 0.1]
	// log y: true
}

// A predictive band from plain slices: any predictor's mean and standard
// deviation at new inputs, with the training data.
func ExamplePredictive() {
	x := []float64{0, 0.5, 1, 1.5, 2}
	mean := []float64{0, 0.48, 0.84, 1.0, 0.91}
	sd := []float64{0.1, 0.1, 0.2, 0.4, 0.6}
	lower, upper := make([]float64, len(x)), make([]float64, len(x))
	for i := range x {
		lower[i], upper[i] = mean[i]-1.96*sd[i], mean[i]+1.96*sd[i]
	}
	c, err := viz.Predictive(viz.PredictiveData{X: x, Mean: mean, Lower: lower, Upper: upper,
		DataX: []float64{0.1, 0.6, 0.9}, DataY: []float64{0.12, 0.55, 0.8}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range c.Panels[0].Series {
		fmt.Println(s.Name, s.Kind == viz.Band)
	}
	// c.Show() draws it in a GoNB cell.

	// Output:
	// 95% band true
	// predictive mean false
	// data false
}
