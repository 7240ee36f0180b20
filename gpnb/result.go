package gpnb

// Result summarises the run so far in the form `gpnb train --json` prints:
// dataset, configuration, timings, final hyperparameters and the history.
// Its Test is nil: set it to an Evaluate's result to record the test
// metrics.
func (o *Optimiser) Result() Result {
	st := o.State()
	r := st.Result()
	r.NTest = o.ds.NTest()
	if d := o.est.OperatorDescription(); d != "" {
		r.Operator = d
	}
	return r
}

// Result is the state's run as a Result, without test metrics (Test
// nil): what the charts of package viz read, so a
// checkpoint (ReadCheckpoint) can be charted as a finished run can.
func (st *OptimiserState) Result() Result {
	h := st.hyper()
	solver := st.Config.Solver.Name()
	if st.Config.Estimator == ExactGradient {
		solver = "cholesky"
	}
	// The configuration as it determines the run: not where it was
	// checkpointed, the machine's memory budget and workers, or whether its
	// residual traces were kept (the history shows that).
	cfg := st.Config
	cfg.CheckpointPath, cfg.Operator.MemoryBudget, cfg.Operator.Workers, cfg.DropResidualTraces = "", 0, 0, false
	r := Result{
		Dataset:       st.Dataset,
		Split:         st.Split,
		NTrain:        st.N,
		D:             st.D,
		Kernel:        st.Config.Kernel.String(),
		Solver:        solver,
		WarmStart:     st.Config.WarmStart,
		Probes:        st.Config.Probes,
		Seed:          st.Config.Seed,
		StepsDone:     st.Step,
		TotalSeconds:  st.History.TotalSeconds(),
		SolverSeconds: st.History.TotalSolverSeconds(),
		Final:         Final{Noise: h.Noise, Signal: h.Signal, Lengthscales: h.Lengthscales},
		History:       cloneHistory(st.History),
		Config:        &cfg,
		Converged:     st.converged(),
		Path:          st.Path,
		ExactFrom:     st.ExactFrom,
	}
	if len(r.History) > 0 {
		r.Operator = r.History[len(r.History)-1].Operator
	}
	return r
}
