//go:build cudaemu && !cuda

package cuda

import "testing"

// The emulation dispatches every kernel the operator launches.
func TestEmuHasEveryKernel(t *testing.T) {
	for _, name := range kernelNames {
		if !emuHas(name) {
			t.Errorf("emu.cc has no entry for %s", name)
		}
	}
}
