// Package repro runs the paper's experiments: it expands a grid of
// (dataset, split, solver, estimator, cold|warm, budget, seed) jobs and runs
// them one after another with a checkpoint after every marginal-likelihood
// step. Package results reads what the jobs leave and renders the tables.
//
// A run's output directory holds one folder per job, named by Job.ID
// (results.RunID),
//
//	DIR/jobs/<id>/job.json     the job's configuration
//	DIR/jobs/<id>/checkpoint   while the job runs
//	DIR/jobs/<id>/result.json  a gpnb.Result, once done
//	DIR/jobs/<id>/runs.json    the processes that ran it (results.Segment)
//
// and DIR/status.json with the progress of the whole grid. Every file is
// written atomically (temporary file, then rename), so a run may be killed at
// any moment, SIGKILL included, and rerun with the same arguments: finished
// jobs are skipped and the unfinished one resumes from its last step.
// Runner.Plan says where every job stands without running anything.
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
package repro
