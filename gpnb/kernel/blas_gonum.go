//go:build !openblas

package kernel

// BLASName reports the BLAS implementation that blas64 uses: "gonum" (pure
// Go) in this build, "openblas" when built with -tags openblas.
func BLASName() string { return "gonum" }

// setBLASThreads sets the BLAS's own thread count and returns the previous
// one. gonum has none to set (its gemm uses GOMAXPROCS goroutines); the
// benchmarks call it so that reference gemms use every core in both builds.
func setBLASThreads(int) int { return 0 }
