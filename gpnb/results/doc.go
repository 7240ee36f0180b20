// Package results reads the records of training runs, summarises them and
// renders the paper's tables, apart from running them (package repro runs
// the grids that write the records).
//
// A Record is one finished run: its gpnb.Result (result.json) and the
// segments of the processes that ran it (runs.json). Load reads the
// finished jobs of a results directory DIR/jobs/<id>/; FromResults takes
// Results collected in a notebook. Summarise aggregates records per
// dataset, method and mode over splits and seeds (mean ± standard error)
// into a Summary, whose methods build the tables: Table1 and Table2 (the
// paper's), PaperComparison (ours beside the paper's published values),
// Ablation (estimators and budgets) and Convergence (how the solves
// ended), BudgetPairs (warm against cold under a budget) and Table1Paper
// (Table 1 with the paper's rows). A Table is independent of its format:
// Markdown, CSV and HTML write it.
//
// Runs side by side: ReadRuns reads the runs of a results directory, of a
// folder of gpnb train results or of one result file under a label (a
// job cut short from its checkpoint or PartialFile), and RunsTable shows
// them a row each with columns chosen by name (ParseColumns), among them
// the same column of another set's run of the same job (RunID) or ratios
// to it; Traces shows σ and iterations by step, TimeSplit where a run's
// step time went. For the GPU runs' files, BenchTable renders go test
// -bench logs, TestsTable counts go test -v logs and JSONLinesTable
// renders JSON lines.
//
//	sum, err := results.Open("results/full") // Load + Summarise
//	sum.Table1(results.Minutes).Markdown(os.Stdout)
//
// Every name a run has, in a table, a chart or a job's ID, comes from its
// Method (MethodOf its configuration): "exact" names the exact estimator
// and nothing else.
//
// Speed-up follows the paper: per dataset and method, the mean total
// runtime cold over the mean total runtime with warm start; Table 1's
// average speed-up is the mean of those ratios over datasets. The tables
// add the same ratio of total solver iterations, which does not depend on
// the machine, and mark a speed-up whose cold and warm runs ran under
// unlike conditions (their segments' loads or backends).
package results
