package cuda

import "fmt"

// The column groups of the product kernels: each thread keeps NC
// accumulators for up to NC right-hand sides, NC a multiple of mulkStep
// (mulk, trimul) or of freeStep (mulfree, mulrows) up to maxNC. A product
// over k columns runs in groups of maxNC, the last group with the smallest
// NC ≥ its width: 17 columns take one group of NC = 20 (mulk), not 32.
const (
	maxNC    = 32
	mulkStep = 4
	freeStep = 8
)

// Precision suffixes of the kernel names, indexed by Precision.
var precSuffix = [2]string{"f64", "f32"}

// dVariants are the register variants of the matrix-free and reduce kernels:
// d ≤ 8, d ≤ 32, and the generic one for d ≤ maxDims.
var dVariants = [3]int{8, 32, 0}

// kernelNames lists every entry point of gpnb.cu in a fixed order; kfn
// values index it. The drivers resolve them all when they open a device (a
// stale module fails at once, naming the missing kernel), and
// TestPTXEntries checks the list against the checked-in PTX and cubin.
var kernelNames = buildKernelNames()

// buildKernelNames lists the entry points in kernelNames' order.
func buildKernelNames() []string {
	var names []string
	add := func(format string, a ...any) { names = append(names, fmt.Sprintf(format, a...)) }
	for _, s := range precSuffix {
		add("gpnb_scale_%s", s)
		add("gpnb_build_%s", s)
		add("gpnb_block_%s", s)
		for nc := mulkStep; nc <= maxNC; nc += mulkStep {
			add("gpnb_mulk_%s_c%d", s, nc)
		}
		for _, d := range dVariants {
			for nc := freeStep; nc <= maxNC; nc += freeStep {
				add("gpnb_mulfree_%s_d%d_c%d", s, d, nc)
			}
			add("gpnb_reduce_%s_d%d", s, d)
		}
		for nc := freeStep; nc <= maxNC; nc += freeStep {
			add("gpnb_mulrows_%s_c%d", s, nc)
			add("gpnb_mulrowsfree_%s_c%d", s, nc)
		}
	}
	for nc := mulkStep; nc <= maxNC; nc += mulkStep {
		add("gpnb_trimul_c%d", nc)
	}
	for _, n := range []string{"sumpart", "vec", "dots_part", "dots_final", "mult", "muladd",
		"chol_init", "chol_diag", "chol_panel", "chol_update", "trinv_diag", "trinv_col", "trinv_mirror"} {
		add("gpnb_%s", n)
	}
	return names
}
