package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The checked-in PTX holds exactly the kernels the Go code launches, for
// the targets and the PTX ISA the driver-loading code expects.
func TestPTXEntries(t *testing.T) {
	entry := regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\(`)
	for file, target := range map[string]string{"kernels/gpnb_sm90.ptx": "sm_90", "kernels/gpnb_sm60.ptx": "sm_60"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v: regenerate the PTX with `make ptx`", err)
		}
		ptx := string(b)
		if !strings.Contains(ptx, "\n.target "+target+"\n") {
			t.Errorf("%s: not for target %s", file, target)
		}
		// PTX ISA 7.8 (CUDA 11.8) loads on every driver from CUDA 11.8 on.
		if !strings.Contains(ptx, "\n.version 7.8\n") {
			t.Errorf("%s: PTX ISA is not 7.8: generate it with CUDA 11.8's nvcc so older drivers can load it", file)
		}
		found := map[string]bool{}
		for _, m := range entry.FindAllStringSubmatch(ptx, -1) {
			found[m[1]] = true
		}
		for _, name := range kernelNames {
			if !found[name] {
				t.Errorf("%s: kernel %s missing", file, name)
			}
			delete(found, name)
		}
		for name := range found {
			t.Errorf("%s: kernel %s is not in kernelNames", file, name)
		}
	}
}

// The PTX was generated from the current kernels/gpnb.cu.
func TestPTXUpToDate(t *testing.T) {
	src, err := os.ReadFile("kernels/gpnb.cu")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("kernels/gpnb.cu.sha256")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	if got := hex.EncodeToString(sum[:]); got != strings.TrimSpace(string(want)) {
		t.Errorf("kernels/gpnb.cu changed since the PTX was generated (sha256 %s, PTX made from %s): run `make ptx`", got, strings.TrimSpace(string(want)))
	}
}
