package cuda

import "fmt"

// kfn is a kernel: its index in kernelNames.
type kfn int

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
var kernelNames []string

// Kernel handles, by precision (Float64, Float32) where they have one.
var (
	kScale, kBuild, kBlock [2]kfn
	kMulk                  [2][maxNC / mulkStep]kfn
	kTrimul                [maxNC / mulkStep]kfn
	kMulfree               [2][len(dVariants)][maxNC / freeStep]kfn
	kMulrows, kMulrowsFree [2][maxNC / freeStep]kfn
	kReduce                [2][len(dVariants)]kfn
	kSumpart, kVec         kfn
	kDotsPart, kDotsFinal  kfn
	kMult, kMuladd         kfn
	kCholInit, kCholDiag   kfn
	kCholPanel, kCholUpd   kfn
	kTrinvDiag, kTrinvCol  kfn
	kTrinvMirror           kfn
)

func init() {
	add := func(format string, a ...any) kfn {
		kernelNames = append(kernelNames, fmt.Sprintf(format, a...))
		return kfn(len(kernelNames) - 1)
	}
	for p, s := range precSuffix {
		kScale[p] = add("gpnb_scale_%s", s)
		kBuild[p] = add("gpnb_build_%s", s)
		kBlock[p] = add("gpnb_block_%s", s)
		for g := range kMulk[p] {
			kMulk[p][g] = add("gpnb_mulk_%s_c%d", s, (g+1)*mulkStep)
		}
		for v, d := range dVariants {
			for g := range kMulfree[p][v] {
				kMulfree[p][v][g] = add("gpnb_mulfree_%s_d%d_c%d", s, d, (g+1)*freeStep)
			}
			kReduce[p][v] = add("gpnb_reduce_%s_d%d", s, d)
		}
		for g := range kMulrows[p] {
			kMulrows[p][g] = add("gpnb_mulrows_%s_c%d", s, (g+1)*freeStep)
			kMulrowsFree[p][g] = add("gpnb_mulrowsfree_%s_c%d", s, (g+1)*freeStep)
		}
	}
	for g := range kTrimul {
		kTrimul[g] = add("gpnb_trimul_c%d", (g+1)*mulkStep)
	}
	kSumpart = add("gpnb_sumpart")
	kVec = add("gpnb_vec")
	kDotsPart = add("gpnb_dots_part")
	kDotsFinal = add("gpnb_dots_final")
	kMult = add("gpnb_mult")
	kMuladd = add("gpnb_muladd")
	kCholInit = add("gpnb_chol_init")
	kCholDiag = add("gpnb_chol_diag")
	kCholPanel = add("gpnb_chol_panel")
	kCholUpd = add("gpnb_chol_update")
	kTrinvDiag = add("gpnb_trinv_diag")
	kTrinvCol = add("gpnb_trinv_col")
	kTrinvMirror = add("gpnb_trinv_mirror")
}

// group returns the NC of a column group of width kg (1 ≤ kg ≤ maxNC) for
// kernels with steps of step, and its index in their tables.
func group(kg, step int) (nc, idx int) {
	nc = (kg + step - 1) / step * step
	return nc, nc/step - 1
}

// dVariant returns the index in dVariants of the kernel variant for d.
func dVariant(d int) int {
	switch {
	case d <= 8:
		return 0
	case d <= 32:
		return 1
	}
	return 2
}
