// Package repro reproduces the paper's experiments: it expands a grid of
// (dataset, split, solver, cold|warm) jobs, runs them one after another with
// a checkpoint after every marginal-likelihood step, and turns the stored
// results into the paper's Table 1 (test log-likelihood, total runtime and
// average warm-start speed-up) and Table 2 (appendix: RMSE, LLH, total and
// solver runtime and speed-up per dataset, mean ± standard error over splits).
//
// A run's output directory holds one folder per job,
//
//	DIR/jobs/<dataset>-s<split>-<solver>-<mode>/job.json     the job's configuration
//	DIR/jobs/<dataset>-s<split>-<solver>-<mode>/checkpoint   while the job runs
//	DIR/jobs/<dataset>-s<split>-<solver>-<mode>/result.json  a gpnb.Result, once done
//
// (mode cold, warm, or exact for the Cholesky reference)
// and DIR/status.json with the progress of the whole grid. Every file is
// written atomically (temporary file, then rename), so a run may be killed at
// any moment, SIGKILL included, and rerun with the same arguments: finished
// jobs are skipped and the unfinished one resumes from its last step.
//
// Several runs may share DIR at once (say, two gpnb reproduce over
// overlapping grids on a machine with cores to spare): the run that works on
// a job holds DIR/jobs/<id>/lock (LockFile, a flock the kernel drops when
// the process ends), the other runs skip that job, and each run beyond the
// first writes its progress to DIR/status-2.json, -3, ... instead of
// status.json.
//
// A cluster runs a grid as N shards over one DIR (Runner.ShardJobs, gpnb
// reproduce --shard K/N): the first shard deals the jobs by estimated cost
// and records the deal in DIR/shards.json (ShardsFile), which keeps every
// job in its shard as the grid grows; see Deal.
//
// The work of one job is behind the Trainer interface; GPTrainer is the real
// one (package gpnb), and tests inject fakes.
//
// Reading results back is one line, in a notebook as in `gpnb table`:
//
//	rep, err := repro.Open("results/run")       // LoadResults + Summarise
//	rep.Table1(repro.Minutes).Markdown(os.Stdout) // or CSV; viz.TableFromRepro draws it in HTML
//	rep.PaperComparison().Markdown(os.Stdout)     // ours next to the paper's numbers
//
// Speed-up follows the paper: per dataset and solver, the mean total runtime
// cold over the mean total runtime with warm start; Table 1's average
// speed-up is the mean of those ratios over datasets. The tables add the
// same ratio for total solver iterations, which does not depend on the
// machine.
package repro
