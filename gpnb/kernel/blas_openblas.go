//go:build openblas

package kernel

// The netlib cgo wrapper sets no link flags of its own; Debian's
// libopenblas-dev provides libopenblas.so.

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int num_threads);
// int openblas_get_num_threads(void);
import "C"

import (
	"os"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
)

// With -tags openblas every blas64 and blas32 call in the program (this
// package's gemms and sgemms, and gonum/mat's) goes to OpenBLAS through cgo.
//
// OpenBLAS gives the same bits run after run for a fixed thread count, but
// not across thread counts. So unless the user sets
// OPENBLAS_NUM_THREADS (or GOTO_NUM_THREADS or OMP_NUM_THREADS) explicitly,
// OpenBLAS is pinned to one thread: this package parallelises over its own
// fixed tiles anyway, and results then do not depend on the core count.
func init() {
	blas64.Use(netlib.Implementation{})
	blas32.Use(netlib.Implementation{})
	for _, v := range []string{"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"} {
		if os.Getenv(v) != "" {
			return
		}
	}
	C.openblas_set_num_threads(1)
}

// BLASName reports the BLAS implementation that blas64 uses: "openblas" in
// this build (-tags openblas), "gonum" otherwise.
func BLASName() string { return "openblas" }

// setBLASThreads sets OpenBLAS's thread count and returns the previous one;
// the benchmarks use it so that reference gemms use every core.
func setBLASThreads(n int) int {
	old := int(C.openblas_get_num_threads())
	if n > 0 {
		C.openblas_set_num_threads(C.int(n))
	}
	return old
}
