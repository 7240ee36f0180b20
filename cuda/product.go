//go:build cuda || cudaemu

package cuda

import "fmt"

// Launch geometry of the product kernels; kernels/gpnb.cu relies on these.
const (
	mulkThreads = 128  // MT: threads per block of mulk and trimul
	mulkRows    = 2    // MR: output rows per thread of mulk and trimul
	mulkStages  = 4    // MSTAGES: stages of mulk's copy pipeline
	mulkStage   = 8192 // MSTAGE: bytes of M per stage
	rowThreads  = 128  // mulfree: one output row per thread
	rowsThreads = 64   // mulrows: two warps, two output rows each
	vecThreads  = 256  // element-wise kernels
	chunkRows   = 128  // CH: rows per chunk of dots and mult
	cholNB      = 32   // NB: block of the device Cholesky
	smemLimit   = 48 << 10
	maxTile     = 256 // column tile of mulfree
	maxDims     = 256 // GENMAXD: largest d the generic kernels take
)

// mulkSmem returns the dynamic shared memory of mulk and trimul for NC
// columns and elem-byte values of M: MSTAGES stages of MSTAGE bytes of M and
// TJ rows of V, each padded to an even number of columns.
func mulkSmem(nc, elem int) int {
	tj := mulkStage / (mulkThreads * mulkRows * elem)
	return mulkStages * (mulkStage + tj*(nc+nc%2)*8)
}

// Chunking of the products' sums (see the products in kernels/gpnb.cu): a
// product of nr output rows summing over nj terms is cut into nz chunks, so
// that there are enough blocks to keep the GPU busy, each chunk at least
// minChunk terms. The chunks depend on the sizes only, never on the device,
// so results do not depend on the GPU's number of multiprocessors.
//
// The column products (mulk and trimul: 256 rows a block; mulfree: 128) aim
// at no more than targetBlocks blocks: the kernels' launch bounds put at
// least 3 or 4 blocks on each multiprocessor, so that many run in one wave
// on an H100 or A100 (a second wave of a few blocks would double a
// product's time), and fewer chunks mean fewer partial sums to write. The row products
// (mulrows: a warp per two rows, SGD's few hundred rows) aim at many small
// blocks instead (rowsTargetBlocks), since a mini-batch alone gives too few
// warps to keep the memory busy and its partial sums are small. Variables
// so that tests can force several chunks on small problems.
var (
	targetBlocks     = 384
	rowsTargetBlocks = 4096
	minChunk         = 128
)

// chunking returns the number of chunks nz and their length for a column
// product with rowBlocks blocks along the output rows and nj terms.
func chunking(rowBlocks, nj int) (nz, chunk int) {
	return chunks(max(1, targetBlocks/max(rowBlocks, 1)), nj)
}

// rowsChunking is chunking for the row products.
func rowsChunking(rowBlocks, nj int) (nz, chunk int) {
	return chunks((rowsTargetBlocks+rowBlocks-1)/max(rowBlocks, 1), nj)
}

// chunks cuts nj terms into at most want chunks of at least minChunk.
func chunks(want, nj int) (nz, chunk int) {
	if nj <= 0 {
		return 1, 1
	}
	nz = max(1, min(want, nj/minChunk))
	chunk = (nj + nz - 1) / nz
	return (nj + chunk - 1) / chunk, chunk
}

// prodKind selects the product kernel.
type prodKind int

const (
	pDense    prodKind = iota // mulk over K (or another TK matrix M)
	pFree                     // mulfree: kernel values on the fly
	pRows                     // mulrows over K: rows of H·V
	pRowsFree                 // mulrowsfree
	pTri                      // trimul: a triangle of the float64 M
)

// product describes out = (a product)·V over the columns vcols of V (k of
// them; vcols 0 for 0..k−1), written to the columns vcols of out, plus
// noise2·Vn[nrows_t] when noise (H's σ² term).
type product struct {
	kind   prodKind
	m      uintptr // pDense, pTri: the matrix; pRows: K
	ldm    int
	zr     uintptr // pFree: the row inputs
	jidx   uintptr // pDense, pFree: the summation's row index list (0: 0..nj−1)
	nj     int     // terms of the sum (n for pRows)
	nr     int     // output rows
	rows   uintptr // pRows, pRowsFree: K's rows of the outputs
	tri    int     // pTri: 1 lower (j ≤ t), 2 upper (j ≥ t)
	v      uintptr
	ldv    int
	vcols  uintptr
	k      int
	out    uintptr
	ldo    int
	noise  bool    // add σ²·V[nrows_t] (V's ld)
	nrows  uintptr // noise rows (0: t)
	noise2 float64
}

// runProduct launches the product on o's device: per group of up to maxNC
// columns its main kernel, which writes chunk sums into o.dPart, and
// gpnb_sumpart, which adds them in order into out. It returns launch (and
// allocation) errors; faults show at the next sync.
func (o *Operator) runProduct(p product) error {
	if p.nr == 0 || p.k == 0 {
		return nil
	}
	prec := o.prec()
	for c0 := 0; c0 < p.k; c0 += maxNC {
		kg := min(maxNC, p.k-c0)
		nc, gi := group(kg, mulkStep)
		ncT, giT := group(kg, trimulStep)
		ncF, giF := group(kg, freeStep)
		var fn kfn
		var gx, bx, smem, tc int
		switch p.kind {
		case pDense:
			fn, bx = kMulk[prec][gi], mulkThreads
			gx = (p.nr + bx*mulkRows - 1) / (bx * mulkRows)
			smem = mulkSmem(nc, int(o.elem))
		case pTri:
			fn, bx = kTrimul[giT], mulkThreads
			gx = (p.nr + bx*mulkRows - 1) / (bx * mulkRows)
			smem = mulkSmem(ncT, 8)
		case pFree:
			fn, bx = kMulfree[prec][dVariant(o.d)][giF], rowThreads
			gx = (p.nr + bx - 1) / bx
			per := ncF*8 + o.d*int(o.elem)
			tc = min(maxTile, smemLimit/per)
			smem = tc * per
		case pRows, pRowsFree:
			fn, bx = kMulrows[prec][giF], rowsThreads
			gx = (p.nr + 3) / 4
			smem = 4 * ncF * 32 * 8
			if p.kind == pRowsFree {
				fn = kMulrowsFree[prec][giF]
				smem += 4 * o.d * int(o.elem)
			}
		default:
			return fmt.Errorf("cuda: unknown product kind %d", p.kind)
		}
		nz, chunk := chunking(gx, p.nj)
		if p.kind == pRows || p.kind == pRowsFree {
			nz, chunk = rowsChunking(gx, p.nj)
		}
		if err := o.dPart.ensure(o.drv, int64(nz)*int64(p.nr)*int64(kg)*8, "the partial sums of a product"); err != nil {
			return err
		}
		s2 := o.k.Hyper.Signal * o.k.Hyper.Signal
		a := o.args[:0]
		switch p.kind {
		case pDense:
			a = a.p(p.m).i(p.ldm).p(p.jidx).i(p.nj).i(p.nr)
		case pTri:
			a = a.p(p.m).i(p.ldm).i(p.nr).i(p.tri)
		case pFree:
			a = a.p(p.zr).i(p.nr).p(o.dZ.p).p(p.jidx).i(p.nj).i(o.d).i(int(o.k.Family)).f(s2)
			o.evals += int64(p.nr) * int64(p.nj)
		case pRows:
			a = a.p(p.m).i(p.ldm).p(p.rows).i(p.nr).i(p.nj)
		case pRowsFree:
			a = a.p(o.dZ.p).i(o.d).i(int(o.k.Family)).f(s2).p(p.rows).i(p.nr).i(p.nj)
			o.evals += int64(p.nr) * int64(p.nj)
		}
		a = a.p(p.v).i(p.ldv).p(p.vcols).i(c0).i(kg).p(o.dPart.p).i(chunk)
		if p.kind == pFree {
			a = a.i(tc)
		}
		o.args = a
		if err := o.drv.launch(fn, gx, nz, bx, 1, smem, a); err != nil {
			return err
		}
		a = o.args[:0].p(o.dPart.p).i(nz).i(p.nr).i(kg).p(p.out).i(p.ldo).p(p.vcols).i(c0)
		if p.noise {
			a = a.p(p.v).i(p.ldv).p(p.nrows).f(p.noise2)
		} else {
			a = a.p(0).i(0).p(0).f(0)
		}
		o.args = a
		if err := o.drv.launch(kSumpart, blocks(p.nr*kg, vecThreads), 1, vecThreads, 1, 0, a); err != nil {
			return err
		}
	}
	return nil
}

// blocks returns the number of blocks of size bs that cover n threads (at
// least one).
func blocks(n, bs int) int { return max(1, (n+bs-1)/bs) }
