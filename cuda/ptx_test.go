package cuda

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The checked-in PTX holds exactly the kernels the Go code launches, for
// the targets and the PTX ISA the driver-loading code expects, compiled
// with -fmad=false; the cubin holds them all too.
func TestPTXEntries(t *testing.T) {
	entry := regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\(`)
	// Without -fmad=false nvcc writes float multiplies and adds with no
	// rounding modifier, which the JIT may fuse into a multiply-add.
	fusable := regexp.MustCompile(`(?m)^\s+(mul|add|sub)\.f(32|64)\s`)
	for file, target := range map[string]string{"kernels/gpnb_sm90.ptx": "sm_90", "kernels/gpnb_sm60.ptx": "sm_60"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v: regenerate the kernels with cuda/kernels/gen.sh (make ptx)", err)
		}
		ptx := string(b)
		if !strings.Contains(ptx, "\n.target "+target+"\n") {
			t.Errorf("%s: not for target %s", file, target)
		}
		// PTX ISA 7.8 (CUDA 11.8) loads on every driver from CUDA 11.8 on.
		if !strings.Contains(ptx, "\n.version 7.8\n") {
			t.Errorf("%s: PTX ISA is not 7.8: generate it with CUDA 11.8's nvcc so older drivers can load it", file)
		}
		if m := fusable.FindString(ptx); m != "" {
			t.Errorf("%s has %q, an instruction the JIT may fuse: compile with -fmad=false (gen.sh)", file, strings.TrimSpace(m))
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
	cubin, err := os.ReadFile("kernels/gpnb_sm90.cubin")
	if err != nil {
		t.Fatalf("%v: regenerate the kernels with cuda/kernels/gen.sh (make ptx)", err)
	}
	if !bytes.HasPrefix(cubin, []byte("\x7fELF")) {
		t.Error("kernels/gpnb_sm90.cubin is not an ELF file")
	}
	for _, name := range kernelNames {
		if !bytes.Contains(cubin, []byte("\x00"+name+"\x00")) {
			t.Errorf("kernels/gpnb_sm90.cubin: kernel %s missing", name)
		}
	}
}

// The PTX and cubin were generated from the current kernels/gpnb.cu.
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
		t.Errorf("kernels/gpnb.cu changed since the kernels were generated (sha256 %s, kernels made from %s): run cuda/kernels/gen.sh (make ptx)", got, strings.TrimSpace(string(want)))
	}
}
