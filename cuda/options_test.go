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

// The NVIDIA driver's version, from the two forms of the first line of
// /proc/driver/nvidia/version (the proprietary and the open kernel module).
func TestDriverVersion(t *testing.T) {
	for proc, want := range map[string]string{
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Sun Aug 10 09:56:21 UTC 2025\nGCC version:  gcc 12": "580.159.04",
		"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  Release Build  (dvs-builder@U16)\n":        "535.104.05",
		"": "",
	} {
		if got := driverVersion(proc); got != want {
			t.Errorf("driverVersion(%q) = %q, want %q", proc, got, want)
		}
	}
	d := DeviceInfo{Name: "NVIDIA H100 80GB HBM3", TotalMemory: 85 << 30, Driver: 13000, DriverVersion: "580.159.04"}
	if got, want := d.Label(), "NVIDIA H100 80GB HBM3 (85.0 GiB, driver 580.159.04, CUDA 13.0)"; got != want {
		t.Errorf("Label = %q, want %q", got, want)
	}
}
