//go:build !(amd64 && cgo)

package kernel

// vectorKernel is "" in this build: kernel values are evaluated by the Go
// code (math.Exp). The vectorised evaluation needs cgo on amd64.
const vectorKernel = ""

func fillKVec(f Family, s2 float64, r2 []float64) { fillK(f, s2, r2) }

func fillMDVec(f Family, r2, m, dm []float64) { fillMD(f, r2, m, dm) }

func pairRowVec(Family, []float64, []float64, []float64, float64, []float64, []int, []float64) (float64, float64, int) {
	panic("kernel: no vectorised evaluation in this build")
}

func sqdistFixVec([]float64, []float64, []float64) int {
	panic("kernel: no vectorised evaluation in this build")
}

func storeTileVec[T float]([]T, int, []float64, int, int, int, int) {
	panic("kernel: no vectorised evaluation in this build")
}

// mixedKernel is "" in this build: Mixed products convert K's tiles to
// float64 and use a float64 gemm.
const mixedKernel = ""

func mixedRowsVec([]float32, int, int, int, []float64, int, int, []float64, int) {
	panic("kernel: no vectorised mixed-precision product in this build")
}
