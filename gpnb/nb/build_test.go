package nb

import (
	"runtime"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/cuda"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/gptest"
)

// TestBuild: this test binary's BuildInfo against the settings the go
// command recorded in it (CGO_ENABLED, -tags): its line names pure Go
// kernel values and gonum exactly when they are in use.
func TestBuild(t *testing.T) {
	b := Build()
	line := b.String()
	t.Logf("%s\n%s", line, strings.Join(b.Upgrades(), "\n"))
	if b.CPU != kernel.ThisBuild() || b.Host != kernel.ThisHost() || b.CUDA != cuda.Built || b.NVIDIADriver != cuda.InstalledDriver() {
		t.Errorf("Build() = %+v: not this binary's facts", b)
	}
	setting, ok := gptest.BuildSettings()
	if !ok {
		t.Skip("no build information in this binary")
	}
	if pure := setting["CGO_ENABLED"] != "1"; pure != strings.Contains(line, "kernel values pure Go (built without cgo)") {
		t.Errorf("CGO_ENABLED=%q, but the line says %q", setting["CGO_ENABLED"], line)
	}
	if openblas := gptest.HasTag(setting, "openblas"); openblas != strings.Contains(line, "BLAS OpenBLAS (-tags openblas)") {
		t.Errorf("-tags %q, but the line says %q", setting["-tags"], line)
	}
	if !strings.HasPrefix(line, "gpnb build: backend "+b.Backend.String()+" · kernel values ") {
		t.Errorf("the line %q does not start with the backend %q", line, b.Backend)
	}
}

// TestBuildWords: the line and the upgrades for builds and machines made
// up, so that every wording is seen whatever this machine and build are.
func TestBuildWords(t *testing.T) {
	pureGo := kernel.Build{BLAS: "gonum"}
	fast := kernel.Build{Cgo: true, Vector: "avx2+fma", Mixed: "avx2+fma", BLAS: "openblas"}
	cgoNoAVX2 := kernel.Build{Cgo: true, BLAS: "gonum"}
	rich := kernel.Host{AVX2: true, FMA: true, CC: "/usr/bin/gcc", OpenBLAS: "/usr/lib/libopenblas.so"}
	amd64 := runtime.GOARCH == "amd64"
	for _, c := range []struct {
		name     string
		b        BuildInfo
		line     string
		upgrades []string // each a prefix of the upgrade
	}{
		{"pure Go on a machine with everything", BuildInfo{CPU: pureGo, Host: rich, NVIDIADriver: "580.1", Backend: Backend{Why: "built without -tags cuda"}},
			"gpnb build: backend CPU (built without -tags cuda) · kernel values pure Go (built without cgo) · mixed precision pure Go (slower than float64) · BLAS gonum (pure Go)",
			[]string{"cgo (CGO_ENABLED=1, the default where a C compiler is found; /usr/bin/gcc here) would add the vectorised C kernel values and mixed precision's vectorised product",
				"-tags openblas (with cgo) would add OpenBLAS's dgemm to the dense products (/usr/lib/libopenblas.so here)",
				"-tags cuda would add training on the GPU (NVIDIA driver 580.1 here"}},
		{"pure Go without a compiler", BuildInfo{CPU: pureGo, Host: kernel.Host{AVX2: true}, Backend: Backend{Why: "built without -tags cuda"}},
			"", []string{"a C compiler (gcc) and cgo would add the vectorised C kernel values"}},
		{"cgo without OpenBLAS", BuildInfo{CPU: kernel.Build{Cgo: true, Vector: "avx2", BLAS: "gonum"}, Host: kernel.Host{AVX2: true, CC: "/usr/bin/cc"}},
			"", []string{"-tags openblas would add OpenBLAS's dgemm to the dense products, once libopenblas is installed"}},
		{"cgo on a CPU without AVX2", BuildInfo{CPU: cgoNoAVX2, Host: kernel.Host{CC: "/usr/bin/cc"}, Backend: Backend{Why: "x"}},
			"", []string{"-tags openblas would add"}},
		{"the fast build", BuildInfo{CPU: fast, Host: rich, Backend: Backend{Why: "built without -tags cuda"}},
			"gpnb build: backend CPU (built without -tags cuda) · kernel values vectorised C (avx2+fma) · mixed precision vectorised C (avx2+fma) · BLAS OpenBLAS (-tags openblas)", nil},
		{"the GPU", BuildInfo{CPU: fast, Host: rich, CUDA: true, NVIDIADriver: "580.1",
			Backend: Backend{Device: &cuda.DeviceInfo{Ordinal: 0, Name: "Test GPU", TotalMemory: 8 << 30, DriverVersion: "580.1"}}},
			"gpnb build: backend CUDA on GPU 0: Test GPU (8.0 GiB, driver 580.1) · kernel values vectorised C (avx2+fma) · mixed precision vectorised C (avx2+fma) · BLAS OpenBLAS (-tags openblas)", nil},
	} {
		if c.line != "" && c.b.String() != c.line {
			t.Errorf("%s: line\n%s\nwant\n%s", c.name, c.b.String(), c.line)
		}
		want := c.upgrades
		if !amd64 && len(want) > 0 && strings.Contains(want[0], "cgo would add") {
			want = want[1:] // no vectorised kernel off amd64
		}
		got := c.b.Upgrades()
		if len(got) != len(want) {
			t.Errorf("%s: upgrades %q, want %d starting %q", c.name, got, len(want), want)
			continue
		}
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) {
				t.Errorf("%s: upgrade %d is %q, want it to start %q", c.name, i, got[i], want[i])
			}
		}
	}
	if cpu := (BuildInfo{CPU: cgoNoAVX2}).kernelValues(); amd64 && cpu != "pure Go (this CPU lacks AVX2)" {
		t.Errorf("cgo on amd64 without AVX2: kernel values %q", cpu)
	}
}
