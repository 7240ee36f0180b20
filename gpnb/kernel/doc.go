// Package kernel holds the stationary covariance functions of gpnb (Matérn-1/2,
// 3/2, 5/2 and RBF with ARD length scales), their hyperparameters in
// constrained and softplus-raw form, and the CPU kernel operator
// H_θ = K_θ(X,X) + σ²I that the solvers iterate on.
//
// Hyperparameters are ordered θ = (ℓ_1..ℓ_d, s, σ) everywhere: length scales,
// signal scale, noise scale. The kernel is k(x,x') = s²·m(r) with
// r = ‖(x−x')/ℓ‖, and H = K + σ²I, as in the paper (section 2).
//
// This package knows nothing of solvers or optimisers; it is the bottom layer
// that both the CPU and the CUDA backends share.
package kernel
