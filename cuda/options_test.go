package cuda

import (
	"math"
	"testing"
)

// The peak figures against the published H100 SXM numbers: 132 SMs at
// 1980 MHz boost, 64 FP64 units per SM → 2·64·132·1.98e9 = 33.45 TFLOP/s
// FMA-only fp64 (NVIDIA quotes 34 TFLOP/s fp64 non-tensor); HBM3 at
// 2619 MHz × 5120 bits × 2 = 3.35 TB/s.
func TestDeviceInfoPeaks(t *testing.T) {
	h100 := DeviceInfo{Name: "H100", Major: 9, Minor: 0, SMs: 132, ClockKHz: 1980000, MemClockKHz: 2619000, BusWidthBits: 5120}
	if got, want := h100.FP64Peak(), 2*64*132*1.98e9; math.Abs(got-want) > 1 {
		t.Errorf("FP64Peak = %g, want %g", got, want)
	}
	if got := h100.Bandwidth(); math.Abs(got-3.352e12)/3.352e12 > 1e-3 {
		t.Errorf("Bandwidth = %g, want ≈ 3.352e12", got)
	}
	if h100.String() == "" {
		t.Error("empty String")
	}
}
