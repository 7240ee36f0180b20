package cuda

import "fmt"

// The column groups of the product kernels: each thread keeps NC
// accumulators per output row for up to NC right-hand sides, NC a multiple
// of mulkStep (mulk: every width, so exactly as many accumulators as
// columns), trimulStep (trimul) or freeStep (mulfree, mulrows) up to maxNC.
// A product over k columns runs in groups of maxNC, the last group with the
// smallest NC ≥ its width: 17 columns take mulk's NC = 17, trimul's 20 and
// mulfree's 24.
const (
	maxNC      = 32
	mulkStep   = 1
	trimulStep = 4
	freeStep   = 8
)

// Precision suffixes of the kernel names, indexed by Precision.
var precSuffix = [2]string{"f64", "f32"}

// dVariants are the register variants of the matrix-free and reduce kernels:
// d ≤ 8, d ≤ 32, and the generic one for d ≤ maxDims.
var dVariants = [3]int{8, 32, 0}

// kfn is a kernel: its index in kernelNames.
type kfn int

// Kernel handles, by precision (Float64, Float32) where they have one;
// buildKernelNames sets them.
var (
	kScale, kBuild, kBlock [2]kfn
	kMulk                  [2][maxNC / mulkStep]kfn
	kTrimul                [maxNC / trimulStep]kfn
	kMulfree               [2][len(dVariants)][maxNC / freeStep]kfn
	kMulrows, kMulrowsFree [2][maxNC / freeStep]kfn
	kReduce                [2][len(dVariants)]kfn

	kReduceSum, kCGCoef                                   kfn
	kSumpart, kVec, kDotsPart, kDotsFinal, kMult, kMuladd kfn
	kCholInit, kCholDiag, kCholPanel, kCholUpd            kfn
	kTrinvDiag, kTrinvCol, kTrinvMirror                   kfn
)

// kernelNames lists every entry point of gpnb.cu in a fixed order; kfn
// values index it. The drivers resolve them all when they open a device (a
// stale module fails at once, naming the missing kernel), and
// TestPTXEntries checks the list against the checked-in PTX and cubin.
var kernelNames = buildKernelNames()

// buildKernelNames lists the entry points in kernelNames' order and sets
// each kernel handle to its index: one walk names a kernel and gives it its
// handle, so the two cannot disagree.
func buildKernelNames() []string {
	var names []string
	add := func(k *kfn, format string, a ...any) {
		*k = kfn(len(names))
		names = append(names, fmt.Sprintf(format, a...))
	}
	for p, s := range precSuffix {
		add(&kScale[p], "gpnb_scale_%s", s)
		add(&kBuild[p], "gpnb_build_%s", s)
		add(&kBlock[p], "gpnb_block_%s", s)
		for g := range kMulk[p] {
			add(&kMulk[p][g], "gpnb_mulk_%s_c%d", s, (g+1)*mulkStep)
		}
		for v, d := range dVariants {
			for g := range kMulfree[p][v] {
				add(&kMulfree[p][v][g], "gpnb_mulfree_%s_d%d_c%d", s, d, (g+1)*freeStep)
			}
			add(&kReduce[p][v], "gpnb_reduce_%s_d%d", s, d)
		}
		for g := range kMulrows[p] {
			add(&kMulrows[p][g], "gpnb_mulrows_%s_c%d", s, (g+1)*freeStep)
			add(&kMulrowsFree[p][g], "gpnb_mulrowsfree_%s_c%d", s, (g+1)*freeStep)
		}
	}
	for g := range kTrimul {
		add(&kTrimul[g], "gpnb_trimul_c%d", (g+1)*trimulStep)
	}
	for _, k := range []struct {
		h    *kfn
		name string
	}{
		{&kReduceSum, "reduce_sum"}, {&kCGCoef, "cgcoef"},
		{&kSumpart, "sumpart"}, {&kVec, "vec"}, {&kDotsPart, "dots_part"}, {&kDotsFinal, "dots_final"},
		{&kMult, "mult"}, {&kMuladd, "muladd"},
		{&kCholInit, "chol_init"}, {&kCholDiag, "chol_diag"}, {&kCholPanel, "chol_panel"}, {&kCholUpd, "chol_update"},
		{&kTrinvDiag, "trinv_diag"}, {&kTrinvCol, "trinv_col"}, {&kTrinvMirror, "trinv_mirror"},
	} {
		add(k.h, "gpnb_%s", k.name)
	}
	return names
}
