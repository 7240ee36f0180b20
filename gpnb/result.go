package gpnb

// NotEvaluated is Result.EvalMethod when no test metrics were computed.
const NotEvaluated = "not evaluated"

// Result summarises the run so far in the form `gpnb train --json` prints:
// dataset, configuration, timings, final hyperparameters, the history and,
// when ev is not nil, the test metrics (otherwise they are 0 and EvalMethod
// is NotEvaluated, so the Result still marshals to JSON).
func (o *Optimiser) Result(ev *Eval) Result {
	h := o.Hyper()
	solver := o.cfg.Solver.Name()
	if o.cfg.Gradient == ExactGradient {
		solver = "cholesky"
	}
	r := Result{
		Dataset:       o.ds.Name,
		Split:         o.ds.Split,
		NTrain:        o.ds.NTrain(),
		NTest:         o.ds.NTest(),
		D:             o.ds.D(),
		Kernel:        o.cfg.Kernel.String(),
		Solver:        solver,
		WarmStart:     o.cfg.WarmStart,
		Probes:        o.cfg.Probes,
		Seed:          o.cfg.Seed,
		StepsDone:     o.st.Step,
		TotalSeconds:  o.st.History.TotalSeconds(),
		SolverSeconds: o.st.History.TotalSolverSeconds(),
		EvalMethod:    NotEvaluated,
		Operator:      o.est.OperatorDescription(),
		Final:         Final{Noise: h.Noise, Signal: h.Signal, Lengthscales: h.Lengthscales},
		History:       o.History(),
	}
	if r.Operator == "" && len(r.History) > 0 {
		r.Operator = r.History[len(r.History)-1].Operator
	}
	if ev != nil {
		r.TestRMSE, r.TestLLH, r.EvalMethod = ev.TestRMSE, ev.TestLLH, ev.Method
	}
	return r
}
