//go:build amd64 && cgo

package kernel

// Vectorised kernel evaluation (vec_amd64.c): fillK and fillMD four values
// at a time with AVX2, giving the same bits as the Go code (its exp is Go's
// math.Exp for amd64 ported lane by lane), about four times as fast.

// #cgo CFLAGS: -O2
// int gpnb_vec_level(void);
// void gpnb_fill_k_fma(int fam, double s2, double *r2, long n);
// void gpnb_fill_md_fma(int fam, const double *r2, double *m, double *dm, long n);
// void gpnb_fill_k_nofma(int fam, double s2, double *r2, long n);
// void gpnb_fill_md_nofma(int fam, const double *r2, double *m, double *dm, long n);
// long gpnb_pair_row_fma(int fam, double *g, const double *w, const double *qc, double thr, double *cs, long nc, double *sums, long long *near, double *nearG);
// long gpnb_pair_row_nofma(int fam, double *g, const double *w, const double *qc, double thr, double *cs, long nc, double *sums, long long *near, double *nearG);
// long gpnb_sqdist_fix_fma(double *dst, const double *qr, const double *qc, long nr, long nc);
// long gpnb_sqdist_fix_nofma(double *dst, const double *qr, const double *qc, long nr, long nc);
// void gpnb_store_tile(void *k, long n, const double *buf, long nr, long nc, long i0, long j0, int f32);
import "C"

import "unsafe"

// vecLevel is gpnb_vec_level(): 0 without AVX2, 1 with AVX2 but no FMA, 2
// with FMA (when Go's math.Exp uses it too).
var vecLevel = int(C.gpnb_vec_level())

// vectorKernel names the vectorised kernel evaluation in use, or is "" when
// the CPU lacks AVX2 (then every operator uses the Go code).
var vectorKernel = map[int]string{0: "", 1: "avx2", 2: "avx2+fma"}[vecLevel]

// fillKVec is fillK by the vectorised evaluation (only where vectorKernel
// is not "").
func fillKVec(f Family, s2 float64, r2 []float64) { fillKLevel(vecLevel, f, s2, r2) }

// fillMDVec is fillMD by the vectorised evaluation (only where
// vectorKernel is not "").
func fillMDVec(f Family, r2, m, dm []float64) { fillMDLevel(vecLevel, f, r2, m, dm) }

// fillKLevel is fillKVec with the FMA path (level 2) or the plain one (1).
func fillKLevel(level int, f Family, s2 float64, r2 []float64) {
	if !f.Valid() {
		fillK(f, s2, r2) // NaN, as the Go path
		return
	}
	if len(r2) == 0 {
		return
	}
	if level == 2 {
		C.gpnb_fill_k_fma(C.int(f), C.double(s2), (*C.double)(&r2[0]), C.long(len(r2)))
	} else {
		C.gpnb_fill_k_nofma(C.int(f), C.double(s2), (*C.double)(&r2[0]), C.long(len(r2)))
	}
}

// fillMDLevel is fillMDVec with the FMA path (level 2) or the plain one (1).
func fillMDLevel(level int, f Family, r2, m, dm []float64) {
	if !f.Valid() {
		fillMD(f, r2, m, dm)
		return
	}
	if len(r2) == 0 {
		return
	}
	_, _ = m[len(r2)-1], dm[len(r2)-1]
	if level == 2 {
		C.gpnb_fill_md_fma(C.int(f), (*C.double)(&r2[0]), (*C.double)(&m[0]), (*C.double)(&dm[0]), C.long(len(r2)))
	} else {
		C.gpnb_fill_md_nofma(C.int(f), (*C.double)(&r2[0]), (*C.double)(&m[0]), (*C.double)(&dm[0]), C.long(len(r2)))
	}
}

// pairRowVec is Operator.pairRow by the vectorised evaluation, for a valid
// family; near and nearG receive the near pairs (len(g) of each at most).
func pairRowVec(f Family, g, w, qc []float64, thr float64, cs []float64, near []int, nearG []float64) (acc, rs float64, nn int) {
	nc := len(g)
	if nc == 0 {
		return 0, 0, 0
	}
	_, _, _, _, _ = w[nc-1], qc[nc-1], cs[nc-1], near[nc-1], nearG[nc-1]
	var sums [2]float64
	pg, pw, pq, pc := (*C.double)(&g[0]), (*C.double)(&w[0]), (*C.double)(&qc[0]), (*C.double)(&cs[0])
	ps, pn, pnG := (*C.double)(&sums[0]), (*C.longlong)(unsafe.Pointer(&near[0])), (*C.double)(&nearG[0])
	var r C.long
	if vecLevel == 2 {
		r = C.gpnb_pair_row_fma(C.int(f), pg, pw, pq, C.double(thr), pc, C.long(nc), ps, pn, pnG)
	} else {
		r = C.gpnb_pair_row_nofma(C.int(f), pg, pw, pq, C.double(thr), pc, C.long(nc), ps, pn, pnG)
	}
	return sums[0], sums[1], int(r)
}

// sqdistFixVec is sqdist's second pass by the vectorised code: dst (len(qr)×
// len(qc)) holds −2 z_a·z_b on entry and r² on return, except NaN for the
// pairs to compute directly, whose number it returns.
func sqdistFixVec(dst, qr, qc []float64) int {
	nr, nc := len(qr), len(qc)
	if nr == 0 || nc == 0 {
		return 0
	}
	_ = dst[nr*nc-1]
	if vecLevel == 2 {
		return int(C.gpnb_sqdist_fix_fma((*C.double)(&dst[0]), (*C.double)(&qr[0]), (*C.double)(&qc[0]), C.long(nr), C.long(nc)))
	}
	return int(C.gpnb_sqdist_fix_nofma((*C.double)(&dst[0]), (*C.double)(&qr[0]), (*C.double)(&qc[0]), C.long(nr), C.long(nc)))
}

// storeTileVec is build's store of one tile by the vectorised code: buf
// (nr×nc, rows i0.., columns j0 ≥ i0..) into the n×n cache k (float64 or
// float32) on and above the diagonal, and mirrored below it.
func storeTileVec[T float](k []T, n int, buf []float64, nr, nc, i0, j0 int) {
	if nr == 0 || nc == 0 {
		return
	}
	_, _ = buf[nr*nc-1], k[(j0+nc-1)*n+i0+nr-1]
	f32 := C.int(1)
	if _, ok := asT[float64](k); ok {
		f32 = 0
	}
	C.gpnb_store_tile(unsafe.Pointer(&k[0]), C.long(n), (*C.double)(&buf[0]), C.long(nr), C.long(nc), C.long(i0), C.long(j0), f32)
}
