//go:build cuda || cudaemu

package cuda

import "fmt"

// kfn is a kernel: its index in kernelNames.
type kfn int

// kernelIndex maps kernel names to their kfn.
var kernelIndex = func() map[string]kfn {
	m := map[string]kfn{}
	for i, n := range kernelNames {
		m[n] = kfn(i)
	}
	return m
}()

// kid returns the kernel of a name.
func kid(format string, a ...any) kfn {
	name := fmt.Sprintf(format, a...)
	k, ok := kernelIndex[name]
	if !ok {
		panic("cuda: no kernel " + name + " in kernelNames")
	}
	return k
}

// Kernel handles, by precision (Float64, Float32) where they have one.
var (
	kScale, kBuild, kBlock [2]kfn
	kMulk                  [2][maxNC / mulkStep]kfn
	kTrimul                [maxNC / mulkStep]kfn
	kMulfree               [2][len(dVariants)][maxNC / freeStep]kfn
	kMulrows, kMulrowsFree [2][maxNC / freeStep]kfn
	kReduce                [2][len(dVariants)]kfn

	kSumpart     = kid("gpnb_sumpart")
	kVec         = kid("gpnb_vec")
	kDotsPart    = kid("gpnb_dots_part")
	kDotsFinal   = kid("gpnb_dots_final")
	kMult        = kid("gpnb_mult")
	kMuladd      = kid("gpnb_muladd")
	kCholInit    = kid("gpnb_chol_init")
	kCholDiag    = kid("gpnb_chol_diag")
	kCholPanel   = kid("gpnb_chol_panel")
	kCholUpd     = kid("gpnb_chol_update")
	kTrinvDiag   = kid("gpnb_trinv_diag")
	kTrinvCol    = kid("gpnb_trinv_col")
	kTrinvMirror = kid("gpnb_trinv_mirror")
)

func init() {
	for p, s := range precSuffix {
		kScale[p] = kid("gpnb_scale_%s", s)
		kBuild[p] = kid("gpnb_build_%s", s)
		kBlock[p] = kid("gpnb_block_%s", s)
		for g := range kMulk[p] {
			kMulk[p][g] = kid("gpnb_mulk_%s_c%d", s, (g+1)*mulkStep)
		}
		for v, d := range dVariants {
			for g := range kMulfree[p][v] {
				kMulfree[p][v][g] = kid("gpnb_mulfree_%s_d%d_c%d", s, d, (g+1)*freeStep)
			}
			kReduce[p][v] = kid("gpnb_reduce_%s_d%d", s, d)
		}
		for g := range kMulrows[p] {
			kMulrows[p][g] = kid("gpnb_mulrows_%s_c%d", s, (g+1)*freeStep)
			kMulrowsFree[p][g] = kid("gpnb_mulrowsfree_%s_c%d", s, (g+1)*freeStep)
		}
	}
	for g := range kTrimul {
		kTrimul[g] = kid("gpnb_trimul_c%d", (g+1)*mulkStep)
	}
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
