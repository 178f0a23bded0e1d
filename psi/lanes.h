/* Eight 64-bit lanes, written once for two forms (PROTOCOL.md §21):
 *
 *  - PSI_LANES_IFMA defined: one AVX-512 register (__m512i), the 52-bit
 *    multiply-adds being vpmadd52luq / vpmadd52huq.  The including file
 *    must be compiled with -mavx512f -mavx512ifma and its code run only
 *    where psi_cpu_has_ifma() says the CPU and the OS allow it.
 *  - otherwise: plain C loops over uint64_t[8], the same results bit for
 *    bit.  This form is what the constant-time test runs under valgrind
 *    (which cannot run AVX-512), and what any compiler builds.
 *
 * Every operation is branch-free and the same work in every lane; no
 * memory index depends on a lane's value.  Multiply-adds use the low 52
 * bits of each factor, as the instructions do.  Included by the lane
 * arithmetic files only (p256_x8_impl.h, r255_x8_impl.h). */
#ifndef PSI_LANES_H
#define PSI_LANES_H

#include <stdint.h>

#include <sodium.h>

#define LV_LANES 8
#define LV_M52 ((uint64_t)0xfffffffffffff)

#if defined(__clang__)
#define LV_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__) && __GNUC__ >= 8
#define LV_UNROLL _Pragma("GCC unroll 16")
#else
#define LV_UNROLL
#endif

#if defined(__GNUC__)
#define LV_INLINE static inline __attribute__((always_inline))
#else
#define LV_INLINE static inline
#endif

/* The public name of a function in this form: f_ifma or f_c.  The lane
 * files define their entry points once, as LV_FORM(psi_..._x8_...). */
#ifdef PSI_LANES_IFMA
#define LV_FORM(f) f##_ifma
#else
#define LV_FORM(f) f##_c
#endif

#ifdef PSI_LANES_IFMA
#include <immintrin.h>

typedef __m512i lv;

LV_INLINE lv lv_set1(uint64_t a) { return _mm512_set1_epi64((long long)a); }
LV_INLINE lv lv_zero(void) { return _mm512_setzero_si512(); }
LV_INLINE lv lv_load(const uint64_t a[LV_LANES]) { return _mm512_loadu_si512((const void *)a); }
LV_INLINE void lv_store(uint64_t a[LV_LANES], lv v) { _mm512_storeu_si512((void *)a, v); }
LV_INLINE lv lv_add(lv a, lv b) { return _mm512_add_epi64(a, b); }
LV_INLINE lv lv_sub(lv a, lv b) { return _mm512_sub_epi64(a, b); }
LV_INLINE lv lv_and(lv a, lv b) { return _mm512_and_si512(a, b); }
LV_INLINE lv lv_or(lv a, lv b) { return _mm512_or_si512(a, b); }
LV_INLINE lv lv_xor(lv a, lv b) { return _mm512_xor_si512(a, b); }
LV_INLINE lv lv_shr(lv a, unsigned n) { return _mm512_srli_epi64(a, n); }
LV_INLINE lv lv_sar(lv a, unsigned n) { return _mm512_srai_epi64(a, n); }
LV_INLINE lv lv_shl(lv a, unsigned n) { return _mm512_slli_epi64(a, n); }
/* acc + low 52 bits of (a mod 2^52) * (b mod 2^52) */
LV_INLINE lv lv_madd52lo(lv acc, lv a, lv b) { return _mm512_madd52lo_epu64(acc, a, b); }
/* acc + bits 52..103 of (a mod 2^52) * (b mod 2^52) */
LV_INLINE lv lv_madd52hi(lv acc, lv a, lv b) { return _mm512_madd52hi_epu64(acc, a, b); }
/* all ones in the lanes where a == b, else zero */
LV_INLINE lv lv_eqmask(lv a, lv b)
{
    return _mm512_maskz_mov_epi64(_mm512_cmpeq_epi64_mask(a, b), _mm512_set1_epi64(-1));
}
#else

typedef struct lv {
    uint64_t l[LV_LANES];
} lv;

#define LV_MAP(expr)                                                                          \
    lv r_;                                                                                    \
    LV_UNROLL for (int i_ = 0; i_ < LV_LANES; i_++) r_.l[i_] = (expr);                        \
    return r_

LV_INLINE lv lv_set1(uint64_t a) { LV_MAP(a); }
LV_INLINE lv lv_zero(void) { LV_MAP(0); }
LV_INLINE lv lv_load(const uint64_t a[LV_LANES]) { LV_MAP(a[i_]); }
LV_INLINE void lv_store(uint64_t a[LV_LANES], lv v)
{
    for (int i = 0; i < LV_LANES; i++)
        a[i] = v.l[i];
}
LV_INLINE lv lv_add(lv a, lv b) { LV_MAP(a.l[i_] + b.l[i_]); }
LV_INLINE lv lv_sub(lv a, lv b) { LV_MAP(a.l[i_] - b.l[i_]); }
LV_INLINE lv lv_and(lv a, lv b) { LV_MAP(a.l[i_] & b.l[i_]); }
LV_INLINE lv lv_or(lv a, lv b) { LV_MAP(a.l[i_] | b.l[i_]); }
LV_INLINE lv lv_xor(lv a, lv b) { LV_MAP(a.l[i_] ^ b.l[i_]); }
LV_INLINE lv lv_shr(lv a, unsigned n) { LV_MAP(a.l[i_] >> n); }
/* Arithmetic shift, written without relying on the implementation-defined
 * shift of a negative value: the sign bit spread over the vacated bits. */
LV_INLINE lv lv_sar(lv a, unsigned n)
{
    LV_MAP((a.l[i_] >> n) | ((uint64_t)0 - (a.l[i_] >> 63)) << (63 - n) << 1);
}
LV_INLINE lv lv_shl(lv a, unsigned n) { LV_MAP(a.l[i_] << n); }
#if defined(__SIZEOF_INT128__)
LV_INLINE lv lv_madd52lo(lv acc, lv a, lv b)
{
    LV_MAP(acc.l[i_] + (uint64_t)(((unsigned __int128)(a.l[i_] & LV_M52) * (b.l[i_] & LV_M52)) &
                                  LV_M52));
}
LV_INLINE lv lv_madd52hi(lv acc, lv a, lv b)
{
    LV_MAP(acc.l[i_] +
           (uint64_t)(((unsigned __int128)(a.l[i_] & LV_M52) * (b.l[i_] & LV_M52)) >> 52));
}
#else
/* 52 x 52 bits from 26-bit halves, for targets without 128-bit products. */
LV_INLINE void lv_mul52(uint64_t a, uint64_t b, uint64_t *lo, uint64_t *hi)
{
    const uint64_t m26 = 0x3ffffff;
    a &= LV_M52;
    b &= LV_M52;
    uint64_t a0 = a & m26, a1 = a >> 26, b0 = b & m26, b1 = b >> 26;
    uint64_t p00 = a0 * b0, p01 = a0 * b1 + a1 * b0, p11 = a1 * b1; /* < 2^53 each */
    uint64_t low = p00 + ((p01 & m26) << 26);                        /* < 2^54 */
    *lo = low & LV_M52;
    *hi = (low >> 52) + (p01 >> 26) + p11;
}
LV_INLINE lv lv_madd52lo(lv acc, lv a, lv b)
{
    lv r;
    for (int i = 0; i < LV_LANES; i++) {
        uint64_t lo, hi;
        lv_mul52(a.l[i], b.l[i], &lo, &hi);
        r.l[i] = acc.l[i] + lo;
    }
    return r;
}
LV_INLINE lv lv_madd52hi(lv acc, lv a, lv b)
{
    lv r;
    for (int i = 0; i < LV_LANES; i++) {
        uint64_t lo, hi;
        lv_mul52(a.l[i], b.l[i], &lo, &hi);
        r.l[i] = acc.l[i] + hi;
    }
    return r;
}
#endif
/* all ones in the lanes where a == b, else zero; no comparison branch */
LV_INLINE lv lv_eqmask(lv a, lv b)
{
    LV_MAP(((((a.l[i_] ^ b.l[i_]) | ((uint64_t)0 - (a.l[i_] ^ b.l[i_]))) >> 63) - 1));
}
#endif

/* The lane functions leave secret temporaries in their dead stack frames
 * (a field element is 320 bytes, a point 960, a window table 15 KiB); the
 * exported functions of both suites call this after each computation, at
 * the depth it ran at, to overwrite them. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void lv_burn_stack(void)
{
    uint8_t buf[32768];
    sodium_memzero(buf, sizeof buf);
}

/* mask ? a : b, lane by lane, for a mask of all ones or zero */
LV_INLINE lv lv_select(lv mask, lv a, lv b) { return lv_xor(b, lv_and(mask, lv_xor(a, b))); }

#endif /* PSI_LANES_H */
