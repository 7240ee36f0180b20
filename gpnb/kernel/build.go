package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Build says how this binary computes the CPU operator. Each field is read
// from the code that decides it: the cgo build constraint, the CPU check
// of the vectorised kernels (VectorKernel, MixedKernel) and the openblas
// build tag (BLASName).
type Build struct {
	// Cgo is true in a build with cgo (CGO_ENABLED=1, the default where a
	// C compiler is found); the vectorised kernels and OpenBLAS need it.
	Cgo bool
	// Vector is VectorKernel(): "avx2+fma" or "avx2" for the vectorised C
	// kernel values, "" for Go's math.Exp.
	Vector string
	// Mixed is MixedKernel(): "avx2+fma" for the vectorised product of
	// Mixed precision, "" for tiles converted to float64 and a float64 gemm.
	Mixed string
	// BLAS is BLASName(): "openblas" (-tags openblas) or "gonum" (pure Go).
	BLAS string
}

// ThisBuild returns this binary's Build.
func ThisBuild() Build {
	return Build{Cgo: cgoBuild, Vector: VectorKernel(), Mixed: MixedKernel(), BLAS: BLASName()}
}

// Host says what this machine offers another build of gpnb: the CPU
// features the vectorised kernels use, a C compiler for cgo and the
// OpenBLAS library that -tags openblas links. It is read when asked for,
// whatever this binary's build; a fact that cannot be read is false or "".
type Host struct {
	// AVX2 and FMA are the CPU's features, from /proc/cpuinfo (false where
	// it cannot be read, as on systems other than Linux).
	AVX2, FMA bool
	// CC is the path of the C compiler cgo would use ($CC, else gcc, else
	// cc, else clang on PATH), or "".
	CC string
	// OpenBLAS is the path of the libopenblas.so that CC links for
	// -lopenblas (Debian's libopenblas-dev), or "" when CC finds none (or
	// there is no CC).
	OpenBLAS string
}

// ThisHost returns this machine's Host.
func ThisHost() Host {
	flags, cc := cpuFlags(), cCompiler()
	return Host{AVX2: slices.Contains(flags, "avx2"), FMA: slices.Contains(flags, "fma"), CC: cc, OpenBLAS: findOpenBLAS(cc)}
}

// cpuFlags returns the feature flags of the first CPU in /proc/cpuinfo
// ("avx2", "fma", ...), or nil where that file cannot be read.
func cpuFlags() []string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			return strings.Fields(v)
		}
	}
	return nil
}

// cCompiler returns the path of the C compiler cgo would use, or "".
func cCompiler() string {
	cands := []string{"gcc", "cc", "clang"}
	if cc := strings.Fields(os.Getenv("CC")); len(cc) > 0 {
		cands = cc[:1]
	}
	for _, c := range cands {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// findOpenBLAS returns the path of the OpenBLAS library that cc would link
// for -lopenblas (its answer to -print-file-name), or "".
func findOpenBLAS(cc string) string {
	if cc == "" {
		return ""
	}
	lib := "libopenblas.so"
	if runtime.GOOS == "darwin" {
		lib = "libopenblas.dylib"
	}
	out, err := exec.Command(cc, "-print-file-name="+lib).Output()
	if p := strings.TrimSpace(string(out)); err == nil && filepath.IsAbs(p) {
		if _, err := os.Stat(p); err == nil {
			return filepath.Clean(p)
		}
	}
	return ""
}
