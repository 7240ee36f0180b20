// Package gpnb is levels 1 and 2 of the paper's hierarchy of marginal
// likelihood optimisation for iterative Gaussian processes: an Adam optimiser
// over softplus-raw hyperparameters (level 1) driven by a Hutchinson gradient
// estimator (level 2, eq. 5) whose linear systems are solved by package
// solvers (level 3). Its contribution is the warm start: probes kept fixed and
// each solve started at the previous step's solution.
package gpnb
