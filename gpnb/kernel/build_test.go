package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/internal/gptest"
)

// TestThisBuild: Build's facts, set by build constraints and the CPU check,
// agree with the settings the go command recorded in this test binary
// (CGO_ENABLED, -tags), and with what those settings imply on this machine:
// a build that linked -lopenblas found the library, a cgo build a C
// compiler, and no build without cgo or off amd64 has a vectorised kernel.
func TestThisBuild(t *testing.T) {
	setting, ok := gptest.BuildSettings()
	if !ok {
		t.Skip("no build information in this binary")
	}
	b, h := ThisBuild(), ThisHost()
	if want := setting["CGO_ENABLED"] == "1"; b.Cgo != want {
		t.Errorf("Build.Cgo = %v, but the go command recorded CGO_ENABLED=%q", b.Cgo, setting["CGO_ENABLED"])
	}
	if want := map[bool]string{true: "openblas", false: "gonum"}[gptest.HasTag(setting, "openblas")]; b.BLAS != want {
		t.Errorf("Build.BLAS = %q with -tags %q: want %q", b.BLAS, setting["-tags"], want)
	}
	if b.BLAS == "openblas" && h.OpenBLAS == "" {
		t.Errorf("this binary links libopenblas, but Host.OpenBLAS did not find it")
	}
	if b.Cgo && h.CC == "" {
		t.Errorf("this binary was built with cgo, but Host.CC found no C compiler")
	}
	if (!b.Cgo || runtime.GOARCH != "amd64") && (b.Vector != "" || b.Mixed != "") {
		t.Errorf("Build = %+v: a vectorised kernel without cgo on amd64", b)
	}
	if b.Mixed != "" && b.Vector != "avx2+fma" {
		t.Errorf("Build = %+v: the mixed product needs the avx2+fma kernel", b)
	}
}

// TestHostOpenBLAS: Host.OpenBLAS is a library file, and it is found
// whenever the dynamic linker's cache lists libopenblas.so (the name
// -lopenblas links, without a version) and there is a C compiler.
func TestHostOpenBLAS(t *testing.T) {
	h := ThisHost()
	if h.OpenBLAS != "" {
		if fi, err := os.Stat(h.OpenBLAS); err != nil || fi.IsDir() || !strings.HasPrefix(filepath.Base(h.OpenBLAS), "libopenblas") {
			t.Errorf("Host.OpenBLAS = %q: not a libopenblas file (%v)", h.OpenBLAS, err)
		}
	}
	out, err := exec.Command("ldconfig", "-p").Output()
	if err != nil {
		t.Skipf("ldconfig -p: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "libopenblas.so" && h.CC != "" && h.OpenBLAS == "" {
			t.Errorf("ldconfig -p lists %q, but Host.OpenBLAS is empty (C compiler %s)", strings.TrimSpace(line), h.CC)
		}
	}
}
