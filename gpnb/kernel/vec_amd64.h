// The vectorised kernel evaluation of vec_amd64.c, included twice: with
// GPNB_FMA 1 (target avx2,fma) and 0 (target avx2), the two paths of Go's
// math.Exp on amd64. GPNB_SUF names the functions of each.

// exp4 is math.Exp (src/math/exp_amd64.s, archExp) on four lanes: the same
// operations in the same order, so the same bits.
__attribute__((target(GPNB_TARGET))) static inline __m256d GPNB_SUF(gpnb_exp4)(__m256d x0) {
	const __m256d two = _mm256_set1_pd(2.0);
	__m256i bits = _mm256_castpd_si256(x0);
	__m256i absb = _mm256_and_si256(bits, _mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFLL));
	__m256d notFinite = _mm256_castsi256_pd(_mm256_cmpgt_epi64(absb, _mm256_set1_epi64x(0x7FEFFFFFFFFFFFFFLL)));
	__m256d negInf = _mm256_castsi256_pd(_mm256_cmpeq_epi64(bits, _mm256_set1_epi64x((long long)0xFFF0000000000000ULL)));
	__m256d over = _mm256_cmp_pd(x0, _mm256_set1_pd(GPNB_OVERFLOW), _CMP_GT_OQ);

	__m128i k = _mm256_cvtpd_epi32(_mm256_mul_pd(_mm256_set1_pd(GPNB_LOG2E), x0)); // CVTSD2SL
	__m256d kd = _mm256_cvtepi32_pd(k);
	__m256d x, p;
#if GPNB_FMA
	x = _mm256_fnmadd_pd(kd, _mm256_set1_pd(GPNB_LN2U), x0);
	x = _mm256_fnmadd_pd(kd, _mm256_set1_pd(GPNB_LN2L), x);
	x = _mm256_mul_pd(x, _mm256_set1_pd(0.0625));
	p = _mm256_set1_pd(2.4801587301587301587e-5);
	p = _mm256_fmadd_pd(p, x, _mm256_set1_pd(1.9841269841269841270e-4));
	p = _mm256_fmadd_pd(p, x, _mm256_set1_pd(1.3888888888888888889e-3));
	p = _mm256_fmadd_pd(p, x, _mm256_set1_pd(8.3333333333333333333e-3));
	p = _mm256_fmadd_pd(p, x, _mm256_set1_pd(4.1666666666666666667e-2));
	p = _mm256_fmadd_pd(p, x, _mm256_set1_pd(1.6666666666666666667e-1));
	p = _mm256_fmadd_pd(p, x, _mm256_set1_pd(0.5));
	p = _mm256_fmadd_pd(p, x, _mm256_set1_pd(1.0));
	x = _mm256_mul_pd(x, p);
	x = _mm256_mul_pd(x, _mm256_add_pd(x, two));
	x = _mm256_mul_pd(x, _mm256_add_pd(x, two));
	x = _mm256_mul_pd(x, _mm256_add_pd(x, two));
	x = _mm256_fmadd_pd(_mm256_add_pd(x, two), x, _mm256_set1_pd(1.0));
#else
	x = _mm256_sub_pd(x0, _mm256_mul_pd(_mm256_set1_pd(GPNB_LN2U), kd));
	x = _mm256_sub_pd(x, _mm256_mul_pd(_mm256_set1_pd(GPNB_LN2L), kd));
	x = _mm256_mul_pd(x, _mm256_set1_pd(0.0625));
	p = _mm256_mul_pd(_mm256_set1_pd(2.4801587301587301587e-5), x);
	p = _mm256_mul_pd(_mm256_add_pd(p, _mm256_set1_pd(1.9841269841269841270e-4)), x);
	p = _mm256_mul_pd(_mm256_add_pd(p, _mm256_set1_pd(1.3888888888888888889e-3)), x);
	p = _mm256_mul_pd(_mm256_add_pd(p, _mm256_set1_pd(8.3333333333333333333e-3)), x);
	p = _mm256_mul_pd(_mm256_add_pd(p, _mm256_set1_pd(4.1666666666666666667e-2)), x);
	p = _mm256_mul_pd(_mm256_add_pd(p, _mm256_set1_pd(1.6666666666666666667e-1)), x);
	p = _mm256_mul_pd(_mm256_add_pd(p, _mm256_set1_pd(0.5)), x);
	p = _mm256_add_pd(p, _mm256_set1_pd(1.0));
	x = _mm256_mul_pd(x, p);
	x = _mm256_mul_pd(x, _mm256_add_pd(two, x));
	x = _mm256_mul_pd(x, _mm256_add_pd(two, x));
	x = _mm256_mul_pd(x, _mm256_add_pd(two, x));
	x = _mm256_mul_pd(x, _mm256_add_pd(two, x));
	x = _mm256_add_pd(x, _mm256_set1_pd(1.0));
#endif
	// ldexp(x, k) as archExp does it: a normal scale 2^k, or for results
	// below the normal range a scale 2^(k+1022) and then 2^−1022, so that
	// the rounding into the subnormals happens once, in the last product.
	__m256i bx = _mm256_add_epi64(_mm256_cvtepi32_epi64(k), _mm256_set1_epi64x(0x3FF));
	__m256d normal = _mm256_mul_pd(x, _mm256_castsi256_pd(_mm256_slli_epi64(bx, 52)));
	__m256d sub = _mm256_mul_pd(_mm256_mul_pd(x, _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(bx, _mm256_set1_epi64x(0x3FE)), 52))),
		_mm256_castsi256_pd(_mm256_set1_epi64x(1LL << 52)));
	__m256d r = _mm256_blendv_pd(normal, sub, _mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_set1_epi64x(1), bx)));
	r = _mm256_blendv_pd(r, _mm256_setzero_pd(), _mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_set1_epi64x(-52), bx)));
	__m256d inf = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FF0000000000000LL));
	r = _mm256_blendv_pd(r, inf, _mm256_castsi256_pd(_mm256_cmpgt_epi64(bx, _mm256_set1_epi64x(0x7FE))));
	r = _mm256_blendv_pd(r, inf, over);
	// Not finite: −Inf gives 0, NaN and +Inf themselves.
	r = _mm256_blendv_pd(r, _mm256_andnot_pd(negInf, x0), notFinite);
	return r;
}

__attribute__((target(GPNB_TARGET))) static inline __m256d GPNB_SUF(gpnb_neg)(__m256d x) {
	return _mm256_xor_pd(x, _mm256_set1_pd(-0.0));
}

// k4 returns s2·m(r) for four squared distances, as fillK.
__attribute__((target(GPNB_TARGET))) static inline __m256d GPNB_SUF(gpnb_k4)(int fam, __m256d s2, __m256d v) {
	const __m256d one = _mm256_set1_pd(1.0);
	__m256d u, p;
	switch (fam) {
	case GPNB_M12:
		return _mm256_mul_pd(s2, GPNB_SUF(gpnb_exp4)(GPNB_SUF(gpnb_neg)(_mm256_sqrt_pd(v))));
	case GPNB_M32:
		u = _mm256_sqrt_pd(_mm256_mul_pd(_mm256_set1_pd(3.0), v));
		return _mm256_mul_pd(_mm256_mul_pd(s2, _mm256_add_pd(one, u)), GPNB_SUF(gpnb_exp4)(GPNB_SUF(gpnb_neg)(u)));
	case GPNB_M52:
		u = _mm256_sqrt_pd(_mm256_mul_pd(_mm256_set1_pd(5.0), v));
		p = _mm256_add_pd(_mm256_add_pd(one, u), _mm256_div_pd(_mm256_mul_pd(u, u), _mm256_set1_pd(3.0)));
		return _mm256_mul_pd(_mm256_mul_pd(s2, p), GPNB_SUF(gpnb_exp4)(GPNB_SUF(gpnb_neg)(u)));
	default:
		return _mm256_mul_pd(s2, GPNB_SUF(gpnb_exp4)(_mm256_mul_pd(_mm256_set1_pd(-0.5), v)));
	}
}

// md4 sets m(r) and m'(r)/r for four squared distances, as fillMD.
__attribute__((target(GPNB_TARGET))) static inline void GPNB_SUF(gpnb_md4)(int fam, __m256d v, __m256d *m, __m256d *dm) {
	const __m256d one = _mm256_set1_pd(1.0);
	__m256d u, e;
	switch (fam) {
	case GPNB_M12:
		u = _mm256_sqrt_pd(v);
		e = GPNB_SUF(gpnb_exp4)(GPNB_SUF(gpnb_neg)(u));
		*m = e;
		// −e/r, and 0 at r = 0 (the limit of the whole derivative term).
		*dm = _mm256_andnot_pd(_mm256_cmp_pd(u, _mm256_setzero_pd(), _CMP_EQ_OQ), _mm256_div_pd(GPNB_SUF(gpnb_neg)(e), u));
		return;
	case GPNB_M32:
		u = _mm256_sqrt_pd(_mm256_mul_pd(_mm256_set1_pd(3.0), v));
		e = GPNB_SUF(gpnb_exp4)(GPNB_SUF(gpnb_neg)(u));
		*m = _mm256_mul_pd(_mm256_add_pd(one, u), e);
		*dm = _mm256_mul_pd(_mm256_set1_pd(-3.0), e);
		return;
	case GPNB_M52:
		u = _mm256_sqrt_pd(_mm256_mul_pd(_mm256_set1_pd(5.0), v));
		e = GPNB_SUF(gpnb_exp4)(GPNB_SUF(gpnb_neg)(u));
		*m = _mm256_mul_pd(_mm256_add_pd(_mm256_add_pd(one, u), _mm256_div_pd(_mm256_mul_pd(u, u), _mm256_set1_pd(3.0))), e);
		*dm = _mm256_mul_pd(_mm256_mul_pd(_mm256_set1_pd(-5.0 / 3.0), _mm256_add_pd(one, u)), e);
		return;
	default:
		e = GPNB_SUF(gpnb_exp4)(_mm256_mul_pd(_mm256_set1_pd(-0.5), v));
		*m = e;
		*dm = GPNB_SUF(gpnb_neg)(e);
	}
}

__attribute__((target(GPNB_TARGET))) void GPNB_SUF(gpnb_fill_k)(int fam, double s2, double *r2, long n) {
	__m256d vs2 = _mm256_set1_pd(s2);
	long i = 0;
	// Two vectors per pass: exp is a long dependency chain, and two
	// independent ones keep the FMA units busy.
	for (; i + 8 <= n; i += 8) {
		__m256d a = GPNB_SUF(gpnb_k4)(fam, vs2, _mm256_loadu_pd(r2 + i));
		__m256d b = GPNB_SUF(gpnb_k4)(fam, vs2, _mm256_loadu_pd(r2 + i + 4));
		_mm256_storeu_pd(r2 + i, a);
		_mm256_storeu_pd(r2 + i + 4, b);
	}
	for (; i + 4 <= n; i += 4) {
		_mm256_storeu_pd(r2 + i, GPNB_SUF(gpnb_k4)(fam, vs2, _mm256_loadu_pd(r2 + i)));
	}
	if (i < n) {
		double t[4] = {0, 0, 0, 0};
		memcpy(t, r2 + i, (n - i) * sizeof(double));
		_mm256_storeu_pd(t, GPNB_SUF(gpnb_k4)(fam, vs2, _mm256_loadu_pd(t)));
		memcpy(r2 + i, t, (n - i) * sizeof(double));
	}
}

__attribute__((target(GPNB_TARGET))) void GPNB_SUF(gpnb_fill_md)(int fam, const double *r2, double *m, double *dm, long n) {
	__m256d vm, vdm, vm2, vdm2;
	long i = 0;
	for (; i + 8 <= n; i += 8) {
		GPNB_SUF(gpnb_md4)(fam, _mm256_loadu_pd(r2 + i), &vm, &vdm);
		GPNB_SUF(gpnb_md4)(fam, _mm256_loadu_pd(r2 + i + 4), &vm2, &vdm2);
		_mm256_storeu_pd(m + i, vm);
		_mm256_storeu_pd(dm + i, vdm);
		_mm256_storeu_pd(m + i + 4, vm2);
		_mm256_storeu_pd(dm + i + 4, vdm2);
	}
	for (; i + 4 <= n; i += 4) {
		GPNB_SUF(gpnb_md4)(fam, _mm256_loadu_pd(r2 + i), &vm, &vdm);
		_mm256_storeu_pd(m + i, vm);
		_mm256_storeu_pd(dm + i, vdm);
	}
	if (i < n) {
		double t[4] = {0, 0, 0, 0}, tm[4], tdm[4];
		memcpy(t, r2 + i, (n - i) * sizeof(double));
		GPNB_SUF(gpnb_md4)(fam, _mm256_loadu_pd(t), &vm, &vdm);
		_mm256_storeu_pd(tm, vm);
		_mm256_storeu_pd(tdm, vdm);
		memcpy(m + i, tm, (n - i) * sizeof(double));
		memcpy(dm + i, tdm, (n - i) * sizeof(double));
	}
}

// pair_row is Operator.pairRow's far/near loop for one row, four pairs at a
// time, with the same operations and the same four interleaved partial sums
// as the Go code.
__attribute__((target(GPNB_TARGET))) long GPNB_SUF(gpnb_pair_row)(int fam, double *g, const double *w, const double *qc, double thr,
	double *cs, long nc, double *sums, long long *near, double *nearG) {
	const __m256d tau = _mm256_set1_pd(1.0 / 1024), vthr = _mm256_set1_pd(thr);
	__m256d acc = _mm256_setzero_pd(), rs = _mm256_setzero_pd();
	long nn = 0;
	for (long i = 0; i < nc; i += 4) {
		long len = nc - i < 4 ? nc - i : 4;
		double tr[4] = {0, 0, 0, 0}, tw[4] = {0, 0, 0, 0}, tq[4] = {0, 0, 0, 0}, tc[4] = {0, 0, 0, 0};
		const double *pr = g + i, *pw = w + i, *pq = qc + i;
		double *pc = cs + i;
		if (len < 4) {
			// The short tail, padded with zeros: r² = 0 is a near pair, so
			// the padding adds +0 to every sum and lists nothing.
			memcpy(tr, pr, len * sizeof(double));
			memcpy(tw, pw, len * sizeof(double));
			memcpy(tq, pq, len * sizeof(double));
			memcpy(tc, pc, len * sizeof(double));
			pr = tr, pw = tw, pq = tq, pc = tc;
		}
		__m256d r2 = _mm256_loadu_pd(pr), wv = _mm256_loadu_pd(pw), m, dm;
		GPNB_SUF(gpnb_md4)(fam, r2, &m, &dm);
		acc = _mm256_add_pd(acc, _mm256_mul_pd(wv, m));
		__m256d gv = _mm256_mul_pd(GPNB_SUF(gpnb_neg)(wv), dm);
		__m256d near4 = _mm256_cmp_pd(r2, _mm256_add_pd(vthr, _mm256_mul_pd(tau, _mm256_loadu_pd(pq))), _CMP_LE_OQ);
		__m256d far = _mm256_andnot_pd(near4, gv); // +0 for the near pairs
		rs = _mm256_add_pd(rs, far);
		__m256d c = _mm256_add_pd(_mm256_loadu_pd(pc), far);
		int mask = _mm256_movemask_pd(near4);
		if (len < 4) {
			double tg[4];
			_mm256_storeu_pd(tg, far);
			_mm256_storeu_pd(tc, c);
			memcpy(g + i, tg, len * sizeof(double));
			memcpy(cs + i, tc, len * sizeof(double));
		} else {
			_mm256_storeu_pd(g + i, far);
			_mm256_storeu_pd(cs + i, c);
		}
		if (mask != 0) {
			double tv[4], tgv[4];
			_mm256_storeu_pd(tv, r2);
			_mm256_storeu_pd(tgv, gv);
			for (long j = 0; j < len; j++) {
				if ((mask >> j & 1) && tv[j] != 0 && tgv[j] != 0) {
					near[nn] = i + j;
					nearG[nn] = tgv[j];
					nn++;
				}
			}
		}
	}
	double l[4];
	_mm256_storeu_pd(l, acc);
	sums[0] = (l[0] + l[1]) + (l[2] + l[3]);
	_mm256_storeu_pd(l, rs);
	sums[1] = (l[0] + l[1]) + (l[2] + l[3]);
	return nn;
}

// sqdist_fix is sqdist's second pass on an nr×nc tile: r² = (|z_a|² +
// |z_b|²) + g over the gemm's g = −2 z_a·z_b, the same two additions as the
// Go code. Pairs where that form is not trusted (r² ≤ nearTau·(|z_a|² +
// |z_b|²)) are left as NaN for the Go code to compute directly; it returns
// how many there are.
__attribute__((target(GPNB_TARGET))) long GPNB_SUF(gpnb_sqdist_fix)(double *dst, const double *qr, const double *qc, long nr, long nc) {
	const __m256d tau = _mm256_set1_pd(1.0 / 1024), nan = _mm256_set1_pd(__builtin_nan(""));
	long nn = 0;
	for (long a = 0; a < nr; a++) {
		double *row = dst + a * nc;
		__m256d qa = _mm256_set1_pd(qr[a]);
		long b = 0;
		for (; b + 4 <= nc; b += 4) {
			__m256d s = _mm256_add_pd(qa, _mm256_loadu_pd(qc + b));
			__m256d r2 = _mm256_add_pd(s, _mm256_loadu_pd(row + b));
			__m256d near = _mm256_cmp_pd(r2, _mm256_mul_pd(tau, s), _CMP_LE_OQ);
			nn += __builtin_popcount(_mm256_movemask_pd(near));
			_mm256_storeu_pd(row + b, _mm256_blendv_pd(r2, nan, near));
		}
		for (; b < nc; b++) {
			double s = qr[a] + qc[b], r2 = s + row[b];
			if (r2 <= (1.0 / 1024) * s) {
				r2 = __builtin_nan("");
				nn++;
			}
			row[b] = r2;
		}
	}
	return nn;
}
