/* P-256 field arithmetic with 4 x 64-bit limbs and 128-bit products, for
 * 64-bit targets whose compiler has unsigned __int128 (x86-64, aarch64).
 * Included by p256_field_ops.h only, which selects this file or p256_field_8x32.h;
 * both define the same fe_* names (see p256.c).
 *
 * Montgomery form with R = 2^256, always fully reduced to [0, p).  In
 * 64-bit limbs p = (2^64 - 1, 2^32 - 1, 0, 2^64 - 2^32 + 1), so
 * -p^-1 = 1 mod 2^64: each reduction round's factor is the low limb m
 * itself, m * p0 + m = m * 2^64 carries exactly m, and limb 2 of p adds
 * nothing.  A round costs two 64x64 products instead of four.
 *
 * Constant time: no branch or memory index depends on limb values; the
 * conditional subtractions are masked selects behind ct_barrier. */
#ifndef PSI_P256_FIELD_4X64_H
#define PSI_P256_FIELD_4X64_H

#include <stdint.h>

typedef uint64_t fe_limb;
#define FE_LIMBS 4
#define FE_LIMB_BITS 64
typedef fe_limb fe[FE_LIMBS];

__extension__ typedef unsigned __int128 fe_wide;

#define FE_P1 UINT64_C(0x00000000ffffffff)
#define FE_P3 UINT64_C(0xffffffff00000001)

static const uint64_t fe_p[4] = {UINT64_C(0xffffffffffffffff), FE_P1, 0, FE_P3};
/* R^2 and R^3 mod p, and R, 3R and bR mod p (1, 3 and b in Montgomery
 * form). */
static const uint64_t fe_r2[4] = {UINT64_C(0x0000000000000003), UINT64_C(0xfffffffbffffffff),
                                  UINT64_C(0xfffffffffffffffe), UINT64_C(0x00000004fffffffd)};
static const uint64_t fe_r3[4] = {UINT64_C(0xfffffffd0000000a), UINT64_C(0xffffffedfffffff7),
                                  UINT64_C(0x00000005fffffffc), UINT64_C(0x0000001800000001)};
static const uint64_t fe_one[4] = {UINT64_C(0x0000000000000001), UINT64_C(0xffffffff00000000),
                                   UINT64_C(0xffffffffffffffff), UINT64_C(0x00000000fffffffe)};
static const uint64_t fe_three[4] = {UINT64_C(0x0000000000000003), UINT64_C(0xfffffffd00000000),
                                     UINT64_C(0xffffffffffffffff), UINT64_C(0x00000002fffffffc)};
static const uint64_t fe_b[4] = {UINT64_C(0xd89cdf6229c4bddf), UINT64_C(0xacf005cd78843090),
                                 UINT64_C(0xe5a220abf7212ed6), UINT64_C(0xdc30061d04874834)};
static const uint64_t fe_zero[4] = {0};

#include "p256_field_ct.h"

/* Carry and borrow steps.  gcc turns a chain of 128-bit additions into
 * several instructions a limb; on x86-64 the intrinsics give one adc or
 * sbb each (a squaring took 33 ns against 50 ns, gcc 12 -O3
 * -fno-tree-vectorize, in one scratch timing).  The portable
 * form is the reference; the tests build it too (PSI_P256_NO_INTRINSICS). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) &&                   \
    !defined(PSI_P256_NO_INTRINSICS)
#include <immintrin.h>
#define FE_X86_CARRY 1
#endif

/* *r = a + b + c mod 2^64; returns the carry out (c is 0 or 1). */
static inline unsigned char fe_adc(unsigned char c, uint64_t a, uint64_t b, uint64_t *r)
{
#ifdef FE_X86_CARRY
    unsigned long long t;
    c = _addcarry_u64(c, a, b, &t);
    *r = t;
    return c;
#else
    fe_wide x = (fe_wide)a + b + c;
    *r = (uint64_t)x;
    return (unsigned char)(x >> 64);
#endif
}

/* *r = a - b - c mod 2^64; returns the borrow out (c is 0 or 1). */
static inline unsigned char fe_sbb(unsigned char c, uint64_t a, uint64_t b, uint64_t *r)
{
#ifdef FE_X86_CARRY
    unsigned long long t;
    c = _subborrow_u64(c, a, b, &t);
    *r = t;
    return c;
#else
    fe_wide x = (fe_wide)a - b - c;
    *r = (uint64_t)x;
    return (unsigned char)((x >> 64) & 1);
#endif
}

/* d = a - b mod 2^256; returns the borrow, 0 or 1. */
static uint64_t limbs_sub(uint64_t d[4], const uint64_t a[4], const uint64_t b[4])
{
    unsigned char c = fe_sbb(0, a[0], b[0], &d[0]);
    c = fe_sbb(c, a[1], b[1], &d[1]);
    c = fe_sbb(c, a[2], b[2], &d[2]);
    return fe_sbb(c, a[3], b[3], &d[3]);
}

/* r = v mod p, given v = s + carry * 2^256 < 2p with carry 0 or 1. */
static void fe_final_sub(uint64_t r[4], const uint64_t s[4], uint64_t carry)
{
    uint64_t d[4];
    uint64_t borrow = limbs_sub(d, s, fe_p);
    /* v < p exactly when s - p borrows and there is no carry: keep s. */
    fe_select(r, d, s, 0u - (borrow & ~carry & 1));
}

/* r = t / 2^256 mod p for t < p * 2^256 (8 limbs, clobbered).  Round i
 * adds m * p at limb i with m = t[i]: m * p0 + m = m * 2^64 clears limb i
 * and carries m, which with m * p1 = m * 2^32 - m makes m * 2^32 across
 * limbs i+1 and i+2; m * p3 lands on limbs i+3 and i+4.  `top` is the
 * carry pending at limb i+4; the high half of m * p3 is below
 * 2^64 - 2^32, so adding top to it cannot overflow. */
static void fe_reduce(uint64_t r[4], uint64_t t[8])
{
    uint64_t top = 0;
    for (int i = 0; i < 4; i++) {
        uint64_t m = t[i];
        fe_wide m3 = (fe_wide)m * FE_P3;
        unsigned char c = fe_adc(0, t[i + 1], m << 32, &t[i + 1]);
        c = fe_adc(c, t[i + 2], m >> 32, &t[i + 2]);
        c = fe_adc(c, t[i + 3], (uint64_t)m3, &t[i + 3]);
        c = fe_adc(c, t[i + 4], (uint64_t)(m3 >> 64) + top, &t[i + 4]);
        top = c;
    }
    fe_final_sub(r, t + 4, top);
}

/* Column (product-scanning) accumulation into the 192-bit c2:c1:c0. */
#define FE_MULADD(x, y)                                                                   \
    do {                                                                                  \
        fe_wide p_ = (fe_wide)(x) * (y);                                                  \
        unsigned char k_ = fe_adc(0, c0, (uint64_t)p_, &c0);                              \
        k_ = fe_adc(k_, c1, (uint64_t)(p_ >> 64), &c1);                                   \
        c2 += k_;                                                                         \
    } while (0)
/* The same for 2 x y (a cross product of a square). */
#define FE_MULADD2(x, y)                                                                  \
    do {                                                                                  \
        fe_wide p_ = (fe_wide)(x) * (y);                                                  \
        uint64_t l_ = (uint64_t)p_, h_ = (uint64_t)(p_ >> 64);                           \
        c2 += h_ >> 63;                                                                   \
        h_ = h_ << 1 | l_ >> 63;                                                          \
        unsigned char k_ = fe_adc(0, c0, l_ << 1, &c0);                                   \
        k_ = fe_adc(k_, c1, h_, &c1);                                                     \
        c2 += k_;                                                                         \
    } while (0)
/* Takes column k's limb out and shifts the accumulator down. */
#define FE_COLUMN(out)                                                                    \
    do {                                                                                  \
        (out) = c0;                                                                       \
        c0 = c1;                                                                          \
        c1 = c2;                                                                          \
        c2 = 0;                                                                           \
    } while (0)

/* r = a * b / R mod p. */
static void fe_mul(uint64_t r[4], const uint64_t a[4], const uint64_t b[4])
{
    uint64_t t[8], c0 = 0, c1 = 0, c2 = 0;
    FE_MULADD(a[0], b[0]);
    FE_COLUMN(t[0]);
    FE_MULADD(a[0], b[1]);
    FE_MULADD(a[1], b[0]);
    FE_COLUMN(t[1]);
    FE_MULADD(a[0], b[2]);
    FE_MULADD(a[1], b[1]);
    FE_MULADD(a[2], b[0]);
    FE_COLUMN(t[2]);
    FE_MULADD(a[0], b[3]);
    FE_MULADD(a[1], b[2]);
    FE_MULADD(a[2], b[1]);
    FE_MULADD(a[3], b[0]);
    FE_COLUMN(t[3]);
    FE_MULADD(a[1], b[3]);
    FE_MULADD(a[2], b[2]);
    FE_MULADD(a[3], b[1]);
    FE_COLUMN(t[4]);
    FE_MULADD(a[2], b[3]);
    FE_MULADD(a[3], b[2]);
    FE_COLUMN(t[5]);
    FE_MULADD(a[3], b[3]);
    FE_COLUMN(t[6]);
    t[7] = c0;
    fe_reduce(r, t);
}

/* r = a^2 / R mod p: 6 doubled cross products and 4 squares. */
static void fe_sqr(uint64_t r[4], const uint64_t a[4])
{
    uint64_t t[8], c0 = 0, c1 = 0, c2 = 0;
    FE_MULADD(a[0], a[0]);
    FE_COLUMN(t[0]);
    FE_MULADD2(a[0], a[1]);
    FE_COLUMN(t[1]);
    FE_MULADD2(a[0], a[2]);
    FE_MULADD(a[1], a[1]);
    FE_COLUMN(t[2]);
    FE_MULADD2(a[0], a[3]);
    FE_MULADD2(a[1], a[2]);
    FE_COLUMN(t[3]);
    FE_MULADD2(a[1], a[3]);
    FE_MULADD(a[2], a[2]);
    FE_COLUMN(t[4]);
    FE_MULADD2(a[2], a[3]);
    FE_COLUMN(t[5]);
    FE_MULADD(a[3], a[3]);
    FE_COLUMN(t[6]);
    t[7] = c0;
    fe_reduce(r, t);
}

/* r = a + b mod p. */
static void fe_add(uint64_t r[4], const uint64_t a[4], const uint64_t b[4])
{
    uint64_t s[4];
    unsigned char c = fe_adc(0, a[0], b[0], &s[0]);
    c = fe_adc(c, a[1], b[1], &s[1]);
    c = fe_adc(c, a[2], b[2], &s[2]);
    c = fe_adc(c, a[3], b[3], &s[3]);
    fe_final_sub(r, s, c);
}

/* r = a - b mod p: on a borrow, add p back. */
static void fe_sub(uint64_t r[4], const uint64_t a[4], const uint64_t b[4])
{
    uint64_t d[4];
    uint64_t mask = ct_barrier(0u - limbs_sub(d, a, b));
    unsigned char c = fe_adc(0, d[0], fe_p[0] & mask, &r[0]);
    c = fe_adc(c, d[1], fe_p[1] & mask, &r[1]);
    c = fe_adc(c, d[2], fe_p[2] & mask, &r[2]);
    (void)fe_adc(c, d[3], fe_p[3] & mask, &r[3]);
}

#endif /* PSI_P256_FIELD_4X64_H */
