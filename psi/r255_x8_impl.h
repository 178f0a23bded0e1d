/* ristretto255 over eight lanes (RFC 9496), written once over lanes.h so
 * that it compiles both to AVX-512 IFMA (r255_x8_ifma.c) and to plain C
 * loops (r255_x8_c.c, the form run under valgrind).  Included by those two
 * files only; everything here is static.
 *
 * Field elements mod p = 2^255 - 19 are five lv limbs in radix 2^52, one
 * lv per limb and one lane per element.  Every function here returns a
 * "weak" element: limbs 0..3 below 2^52 and limb 4 below 2^48, so value
 * below 2^256.  The multiply-adds read only the low 52 bits of a factor,
 * so that bound is what makes any result safe to multiply again.
 *
 * Constant time: no branch and no memory index depends on a lane's value;
 * the only values made public are the decode validity mask and the
 * "result is the identity" flag, which the callers report. */
#ifndef PSI_R255_X8_IMPL_H
#define PSI_R255_X8_IMPL_H

#include <stdint.h>
#include <string.h>

#include <sodium.h>

#include "ctcheck.h"
#include "lanes.h"

#define R255_M47 ((uint64_t)0x7fffffffffff)

/* The field and group operations inlined into their callers.  For IFMA
 * that is forced: out of line, an fe8 (five 64-byte registers) goes
 * through the stack at every call, which measured twice as slow.  The
 * plain C form is left to the compiler: forced there, every multiply
 * becomes 400 inlined 64x64 products and the file takes minutes to
 * build. */
#ifdef PSI_LANES_IFMA
#define R255_INLINE LV_INLINE
#else
#define R255_INLINE static inline
#endif

typedef struct fe8 {
    lv v[5];
} fe8;

/* ---------------------------------------------------------------- field */

static fe8 fe8_const(const uint64_t c[5])
{
    fe8 r;
    LV_UNROLL for (int i = 0; i < 5; i++) r.v[i] = lv_set1(c[i]);
    return r;
}

/* Constants of RFC 9496 §4.1 and curve25519's d, radix-2^52 limbs. */
static const uint64_t fe_c_one[5] = {1, 0, 0, 0, 0};
static const uint64_t fe_c_d[5] = {0xb4dca135978a3, 0x4d4141d8ab75e, 0x779e89800700a,
                                   0xfe738cc740797, 0x052036cee2b6f};
static const uint64_t fe_c_d2[5] = {0x69b9426b2f159, 0x9a8283b156ebd, 0xef3d13000e014,
                                    0xfce7198e80f2e, 0x02406d9dc56df};
static const uint64_t fe_c_sqrt_m1[5] = {0xe1b274a0ea0b0, 0x06ad2fe478c4e, 0xdfbd7a72f4318,
                                         0xdf0b2b4d00993, 0x02b8324804fc1};
static const uint64_t fe_c_invsqrt_a_minus_d[5] = {0x8fdaa805d40ea, 0x175a4172be99c,
                                                   0xe01d8409d2f16, 0xfca216c27b91f,
                                                   0x0786c8905cfaf};
static const uint64_t fe_c_sqrt_ad_minus_one[5] = {0x7f6a0497b2e1b, 0x0c1b7854bd7e9,
                                                   0x1f5d1fdaf9d8e, 0x48ac0f3cfcc93,
                                                   0x0376931bf2b83};
static const uint64_t fe_c_one_minus_d_sq[5] = {0xc09c1945fc176, 0x38cd5e350fe27,
                                                0xe70dfe42c81a1, 0xe0d79994abddb,
                                                0x0029072a8b2b3};
static const uint64_t fe_c_d_minus_one_sq[5] = {0xd5aaa44ed4d20, 0x2cb01e199931a,
                                                0x29b4eebd29e4a, 0x22414cdcd32f5,
                                                0x05968b37af66c};

/* Limbs below 2^62 back to the weak form.  The top is
 * folded first (2^255 = 19 mod p), then the carries run upward and end in
 * limb 4, which has room: limbs 0..3 come out below 2^52 exactly and limb
 * 4 below 2^47 plus a small carry. */
LV_INLINE fe8 fe8_carry(fe8 a)
{
    const lv m52 = lv_set1(LV_M52), m47 = lv_set1(R255_M47), k19 = lv_set1(19);
    lv c = lv_shr(a.v[4], 47);
    a.v[4] = lv_and(a.v[4], m47);
    a.v[0] = lv_madd52lo(a.v[0], c, k19); /* c < 2^15: 19c is exact */
    LV_UNROLL for (int i = 0; i < 4; i++)
    {
        lv t = lv_shr(a.v[i], 52);
        a.v[i] = lv_and(a.v[i], m52);
        a.v[i + 1] = lv_add(a.v[i + 1], t);
    }
    return a;
}

R255_INLINE fe8 fe8_add(fe8 a, fe8 b)
{
    LV_UNROLL for (int i = 0; i < 5; i++) a.v[i] = lv_add(a.v[i], b.v[i]);
    return fe8_carry(a);
}

/* a - b + 4p, 4p written with every limb at least as large as a weak
 * limb (limb 4 of b is below 2^48), so no limb goes negative. */
R255_INLINE fe8 fe8_sub(fe8 a, fe8 b)
{
    static const uint64_t four_p[5] = {
        ((uint64_t)1 << 53) - 76, ((uint64_t)1 << 53) - 2, ((uint64_t)1 << 53) - 2,
        ((uint64_t)1 << 53) - 2, ((uint64_t)1 << 49) - 2};
    LV_UNROLL for (int i = 0; i < 5; i++)
        a.v[i] = lv_sub(lv_add(a.v[i], lv_set1(four_p[i])), b.v[i]);
    return fe8_carry(a);
}

R255_INLINE fe8 fe8_neg(fe8 a)
{
    fe8 z;
    LV_UNROLL for (int i = 0; i < 5; i++) z.v[i] = lv_zero();
    return fe8_sub(z, a);
}

/* Ten product columns down to five limbs, 2^260 = 32 * 2^255 = 608 mod p.
 * A high column (below 2^57) is split at bit 52 so that each part times
 * 608 is a multiply-add whose factor fits 52 bits; the splits are
 * independent of one another, so no carry chain runs before the fold.
 * Column 9 (below 2^44: it holds only the high half of a4*b4, both below
 * 2^48) is added by shifts, 608 = 2^9 + 2^6 + 2^5, as its product with
 * 608 may pass 52 bits (it stays below 2^54).  Every limb of r stays below
 * 2^58 before the carry. */
LV_INLINE fe8 fe8_fold(lv col[10])
{
    const lv m52 = lv_set1(LV_M52), k608 = lv_set1(608);
    fe8 r;
    LV_UNROLL for (int i = 0; i < 5; i++) r.v[i] = col[i];
    LV_UNROLL for (int i = 0; i < 4; i++)
    {
        lv lo = lv_and(col[i + 5], m52), hi = lv_shr(col[i + 5], 52);
        r.v[i] = lv_madd52lo(r.v[i], lo, k608);
        r.v[i + 1] = lv_madd52hi(r.v[i + 1], lo, k608);
        r.v[i + 1] = lv_madd52lo(r.v[i + 1], hi, k608);
    }
    lv c9 = col[9];
    r.v[4] = lv_add(r.v[4], lv_add(lv_shl(c9, 9), lv_add(lv_shl(c9, 6), lv_shl(c9, 5))));
    return fe8_carry(r);
}

R255_INLINE fe8 fe8_mul(fe8 a, fe8 b)
{
    lv col[10];
    LV_UNROLL for (int i = 0; i < 10; i++) col[i] = lv_zero();
    LV_UNROLL for (int i = 0; i < 5; i++)
    {
        LV_UNROLL for (int j = 0; j < 5; j++)
        {
            col[i + j] = lv_madd52lo(col[i + j], a.v[i], b.v[j]);
            col[i + j + 1] = lv_madd52hi(col[i + j + 1], a.v[i], b.v[j]);
        }
    }
    return fe8_fold(col);
}

/* The cross products once, doubled by a shift of the columns (doubling a
 * factor could pass 52 bits), then the squares. */
R255_INLINE fe8 fe8_sqr(fe8 a)
{
    lv col[10];
    LV_UNROLL for (int i = 0; i < 10; i++) col[i] = lv_zero();
    LV_UNROLL for (int i = 0; i < 5; i++)
    {
        LV_UNROLL for (int j = i + 1; j < 5; j++)
        {
            col[i + j] = lv_madd52lo(col[i + j], a.v[i], a.v[j]);
            col[i + j + 1] = lv_madd52hi(col[i + j + 1], a.v[i], a.v[j]);
        }
    }
    LV_UNROLL for (int i = 0; i < 10; i++) col[i] = lv_shl(col[i], 1);
    LV_UNROLL for (int i = 0; i < 5; i++)
    {
        col[2 * i] = lv_madd52lo(col[2 * i], a.v[i], a.v[i]);
        col[2 * i + 1] = lv_madd52hi(col[2 * i + 1], a.v[i], a.v[i]);
    }
    return fe8_fold(col);
}

static fe8 fe8_sqr_n(fe8 a, int n)
{
    for (int i = 0; i < n; i++)
        a = fe8_sqr(a);
    return a;
}

/* The unique representative below p.  Two carries bring the value below
 * 2^255 + 2^215 < 2p; then q = (v + 19) >> 255 is 1 exactly when v >= p,
 * and v - q*p = v + 19q - q*2^255. */
static fe8 fe8_canon(fe8 a)
{
    const lv m52 = lv_set1(LV_M52), m47 = lv_set1(R255_M47), k19 = lv_set1(19);
    a = fe8_carry(fe8_carry(a));
    lv t = lv_add(a.v[0], k19);
    LV_UNROLL for (int i = 1; i < 5; i++) t = lv_add(a.v[i], lv_shr(t, 52));
    lv q = lv_shr(t, 47);
    a.v[0] = lv_madd52lo(a.v[0], q, k19);
    LV_UNROLL for (int i = 0; i < 4; i++)
    {
        lv c = lv_shr(a.v[i], 52);
        a.v[i] = lv_and(a.v[i], m52);
        a.v[i + 1] = lv_add(a.v[i + 1], c);
    }
    a.v[4] = lv_and(a.v[4], m47);
    return a;
}

R255_INLINE fe8 fe8_select(lv mask, fe8 a, fe8 b)
{
    LV_UNROLL for (int i = 0; i < 5; i++) b.v[i] = lv_select(mask, a.v[i], b.v[i]);
    return b;
}

/* all ones where the canonical value is odd ("negative", RFC 9496 §4.1) */
static lv fe8_is_negative(fe8 a)
{
    a = fe8_canon(a);
    return lv_sub(lv_zero(), lv_and(a.v[0], lv_set1(1)));
}

static lv fe8_is_zero(fe8 a)
{
    a = fe8_canon(a);
    lv o = a.v[0];
    LV_UNROLL for (int i = 1; i < 5; i++) o = lv_or(o, a.v[i]);
    return lv_eqmask(o, lv_zero());
}

static lv fe8_eq(fe8 a, fe8 b) { return fe8_is_zero(fe8_sub(a, b)); }

static fe8 fe8_cneg(lv mask, fe8 a) { return fe8_select(mask, fe8_neg(a), a); }

static fe8 fe8_abs(fe8 a) { return fe8_cneg(fe8_is_negative(a), a); }

/* z^((p-5)/8) = z^(2^252 - 3): z^(2^250 - 1) by the usual chain of runs
 * of ones, then two squarings and a multiply by z. */
static fe8 fe8_pow22523(fe8 z)
{
    fe8 z2 = fe8_sqr(z);
    fe8 z9 = fe8_mul(fe8_sqr_n(z2, 2), z);
    fe8 z11 = fe8_mul(z9, z2);
    fe8 e5 = fe8_mul(fe8_sqr(z11), z9);        /* 2^5 - 1 */
    fe8 e10 = fe8_mul(fe8_sqr_n(e5, 5), e5);   /* 2^10 - 1 */
    fe8 e20 = fe8_mul(fe8_sqr_n(e10, 10), e10); /* 2^20 - 1 */
    fe8 e40 = fe8_mul(fe8_sqr_n(e20, 20), e20);
    fe8 e50 = fe8_mul(fe8_sqr_n(e40, 10), e10);
    fe8 e100 = fe8_mul(fe8_sqr_n(e50, 50), e50);
    fe8 e200 = fe8_mul(fe8_sqr_n(e100, 100), e100);
    fe8 e250 = fe8_mul(fe8_sqr_n(e200, 50), e50);
    return fe8_mul(fe8_sqr_n(e250, 2), z);
}

/* SQRT_RATIO_M1 of RFC 9496 §4.2: r = the non-negative sqrt(u/v) or
 * sqrt(i*u/v); *was_square all ones where u/v is a square (or u = 0). */
static fe8 fe8_sqrt_ratio_m1(lv *was_square, fe8 u, fe8 v)
{
    const fe8 sqrt_m1 = fe8_const(fe_c_sqrt_m1);
    fe8 v3 = fe8_mul(fe8_sqr(v), v);
    fe8 v7 = fe8_mul(fe8_sqr(v3), v);
    fe8 r = fe8_mul(fe8_mul(u, v3), fe8_pow22523(fe8_mul(u, v7)));
    fe8 check = fe8_mul(v, fe8_sqr(r));
    fe8 neg_u = fe8_neg(u);
    lv correct = fe8_eq(check, u);
    lv flipped = fe8_eq(check, neg_u);
    lv flipped_i = fe8_eq(check, fe8_mul(neg_u, sqrt_m1));
    r = fe8_select(lv_or(flipped, flipped_i), fe8_mul(r, sqrt_m1), r);
    *was_square = lv_or(correct, flipped);
    return fe8_abs(r);
}

/* 32 little-endian bytes per lane; bit 255 is ignored, as libsodium's
 * fe25519_frombytes ignores it.  The value may be p or more. */
static fe8 fe8_from_bytes(const uint8_t in[LV_LANES][32])
{
    uint64_t l[5][LV_LANES];
    for (int k = 0; k < LV_LANES; k++) {
        uint64_t w[4] = {0, 0, 0, 0};
        for (int i = 0; i < 32; i++)
            w[i / 8] |= (uint64_t)in[k][i] << (8 * (i % 8));
        l[0][k] = w[0] & LV_M52;
        l[1][k] = ((w[0] >> 52) | (w[1] << 12)) & LV_M52;
        l[2][k] = ((w[1] >> 40) | (w[2] << 24)) & LV_M52;
        l[3][k] = ((w[2] >> 28) | (w[3] << 36)) & LV_M52;
        l[4][k] = (w[3] >> 16) & R255_M47;
    }
    fe8 r;
    for (int i = 0; i < 5; i++)
        r.v[i] = lv_load(l[i]);
    return r;
}

static void fe8_to_bytes(uint8_t out[LV_LANES][32], fe8 a)
{
    uint64_t l[5][LV_LANES];
    a = fe8_canon(a);
    for (int i = 0; i < 5; i++)
        lv_store(l[i], a.v[i]);
    for (int k = 0; k < LV_LANES; k++) {
        uint64_t w[4];
        w[0] = l[0][k] | (l[1][k] << 52);
        w[1] = (l[1][k] >> 12) | (l[2][k] << 40);
        w[2] = (l[2][k] >> 24) | (l[3][k] << 28);
        w[3] = (l[3][k] >> 36) | (l[4][k] << 16);
        for (int i = 0; i < 32; i++)
            out[k][i] = (uint8_t)(w[i / 8] >> (8 * (i % 8)));
    }
}

/* A lane mask to a byte of bits, lane i in bit i. */
static unsigned lv_bits(lv mask)
{
    uint64_t m[LV_LANES];
    lv_store(m, mask);
    unsigned bits = 0;
    for (int k = 0; k < LV_LANES; k++)
        bits |= (unsigned)(m[k] & 1) << k;
    return bits;
}

/* ---------------------------------------------------------------- group */

/* Extended coordinates on -x^2 + y^2 = 1 + d x^2 y^2: x = X/Z, y = Y/Z,
 * T = XY/Z. */
typedef struct ge8 {
    fe8 x, y, z, t;
} ge8;

/* An addend prepared for add-2008-hwcd-3: (Y - X, Y + X, 2d T, 2 Z). */
typedef struct ge8_cached {
    fe8 ymx, ypx, t2d, z2;
} ge8_cached;

static ge8 ge8_identity(void)
{
    ge8 r;
    r.x = fe8_const((const uint64_t[5]){0, 0, 0, 0, 0});
    r.y = fe8_const(fe_c_one);
    r.z = r.y;
    r.t = r.x;
    return r;
}

static ge8_cached ge8_to_cached(ge8 p)
{
    ge8_cached c;
    c.ymx = fe8_sub(p.y, p.x);
    c.ypx = fe8_add(p.y, p.x);
    c.t2d = fe8_mul(p.t, fe8_const(fe_c_d2));
    c.z2 = fe8_add(p.z, p.z);
    return c;
}

/* acc | (mask & e), limb by limb: with exactly one mask all ones over a
 * scan of the table, the accumulated value is that entry. */
R255_INLINE void ge8_cached_or_masked(ge8_cached *acc, lv mask, const ge8_cached *e)
{
    LV_UNROLL for (int i = 0; i < 5; i++)
    {
        acc->ymx.v[i] = lv_or(acc->ymx.v[i], lv_and(mask, e->ymx.v[i]));
        acc->ypx.v[i] = lv_or(acc->ypx.v[i], lv_and(mask, e->ypx.v[i]));
        acc->t2d.v[i] = lv_or(acc->t2d.v[i], lv_and(mask, e->t2d.v[i]));
        acc->z2.v[i] = lv_or(acc->z2.v[i], lv_and(mask, e->z2.v[i]));
    }
}

/* add-2008-hwcd-3 (EFD), complete for a = -1 since d is not a square. */
R255_INLINE ge8 ge8_add(ge8 p, ge8_cached q)
{
    fe8 a = fe8_mul(fe8_sub(p.y, p.x), q.ymx);
    fe8 b = fe8_mul(fe8_add(p.y, p.x), q.ypx);
    fe8 c = fe8_mul(p.t, q.t2d);
    fe8 d = fe8_mul(p.z, q.z2);
    fe8 e = fe8_sub(b, a), f = fe8_sub(d, c), g = fe8_add(d, c), h = fe8_add(b, a);
    ge8 r;
    r.x = fe8_mul(e, f);
    r.y = fe8_mul(g, h);
    r.t = fe8_mul(e, h);
    r.z = fe8_mul(f, g);
    return r;
}

/* dbl-2008-hwcd (EFD) with a = -1: D = -A, so G = B - A, H = -(A + B) and
 * E = (X + Y)^2 + H.  T is not read, and is computed only when asked
 * (the next operation is an addition). */
R255_INLINE ge8 ge8_dbl(ge8 p, int want_t)
{
    fe8 a = fe8_sqr(p.x), b = fe8_sqr(p.y);
    fe8 zz = fe8_sqr(p.z);
    fe8 c = fe8_add(zz, zz);
    fe8 h = fe8_neg(fe8_add(a, b));
    fe8 e = fe8_add(fe8_sqr(fe8_add(p.x, p.y)), h);
    fe8 g = fe8_sub(b, a);
    fe8 f = fe8_sub(g, c);
    ge8 r;
    r.x = fe8_mul(e, f);
    r.y = fe8_mul(g, h);
    r.z = fe8_mul(f, g);
    r.t = want_t ? fe8_mul(e, h) : p.t;
    return r;
}

/* ------------------------------------------------------------ ristretto */

/* The ristretto255 decode of RFC 9496 §4.3.1, as libsodium 1.0.18 does it:
 * bit 255 is ignored (masked off before the canonical check and the field
 * decoding); s must be below p and even.  *valid is all ones in the lanes
 * that decode. */
static ge8 r255_decode(lv *valid, const uint8_t in[LV_LANES][32])
{
    /* canonical and non-negative, from the bytes, branch-free per lane */
    uint64_t ok[LV_LANES];
    for (int k = 0; k < LV_LANES; k++) {
        /* s >= p (bit 255 ignored) iff bytes 1..30 are all 0xff, byte 31
         * is 0x7f or 0xff, and byte 0 is 0xed or more */
        unsigned all = (unsigned)((in[k][31] & 0x7f) ^ 0x7f);
        for (int i = 1; i < 31; i++)
            all |= (unsigned)(in[k][i] ^ 0xff);
        unsigned top_ff = ((all - 1u) >> 8) & 1u;             /* all == 0 */
        unsigned low_big = ((0xecu - (unsigned)in[k][0]) >> 8) & 1u; /* in[0] > 0xec */
        unsigned bad = (top_ff & low_big) | (in[k][0] & 1u);
        ok[k] = (uint64_t)bad - 1; /* all ones when good */
    }
    lv canonical = lv_load(ok);

    const fe8 one = fe8_const(fe_c_one);
    fe8 s = fe8_from_bytes(in);
    fe8 ss = fe8_sqr(s);
    fe8 u1 = fe8_sub(one, ss);
    fe8 u2 = fe8_add(one, ss);
    fe8 u2_sqr = fe8_sqr(u2);
    fe8 v = fe8_sub(fe8_neg(fe8_mul(fe8_const(fe_c_d), fe8_sqr(u1))), u2_sqr);
    lv was_square;
    fe8 invsqrt = fe8_sqrt_ratio_m1(&was_square, one, fe8_mul(v, u2_sqr));
    fe8 den_x = fe8_mul(invsqrt, u2);
    fe8 den_y = fe8_mul(fe8_mul(invsqrt, den_x), v);
    fe8 x = fe8_abs(fe8_mul(fe8_add(s, s), den_x));
    fe8 y = fe8_mul(u1, den_y);
    fe8 t = fe8_mul(x, y);

    lv bad = lv_or(lv_xor(was_square, lv_set1(~(uint64_t)0)),
                   lv_or(fe8_is_negative(t), fe8_is_zero(y)));
    *valid = lv_and(canonical, lv_xor(bad, lv_set1(~(uint64_t)0)));
    ge8 r = {x, y, one, t};
    return r;
}

/* The ristretto255 encode of RFC 9496 §4.3.2. */
static void r255_encode(uint8_t out[LV_LANES][32], ge8 p)
{
    const fe8 sqrt_m1 = fe8_const(fe_c_sqrt_m1);
    fe8 u1 = fe8_mul(fe8_add(p.z, p.y), fe8_sub(p.z, p.y));
    fe8 u2 = fe8_mul(p.x, p.y);
    lv unused;
    fe8 invsqrt =
        fe8_sqrt_ratio_m1(&unused, fe8_const(fe_c_one), fe8_mul(u1, fe8_sqr(u2)));
    fe8 den1 = fe8_mul(invsqrt, u1);
    fe8 den2 = fe8_mul(invsqrt, u2);
    fe8 z_inv = fe8_mul(fe8_mul(den1, den2), p.t);
    fe8 ix0 = fe8_mul(p.x, sqrt_m1);
    fe8 iy0 = fe8_mul(p.y, sqrt_m1);
    fe8 enchanted = fe8_mul(den1, fe8_const(fe_c_invsqrt_a_minus_d));
    lv rotate = fe8_is_negative(fe8_mul(p.t, z_inv));
    fe8 x = fe8_select(rotate, iy0, p.x);
    fe8 y = fe8_select(rotate, ix0, p.y);
    fe8 den_inv = fe8_select(rotate, enchanted, den2);
    y = fe8_cneg(fe8_is_negative(fe8_mul(x, z_inv)), y);
    fe8 s = fe8_abs(fe8_mul(den_inv, fe8_sub(p.z, y)));
    fe8_to_bytes(out, s);
}

/* k * p for 255-bit k (bit 255 of each scalar is cleared first, as
 * libsodium does), fixed 4-bit windows from the top.  The table holds
 * 0*p .. 15*p; every entry is read and the wanted one kept by a mask, so
 * neither the memory touched nor the work depends on k. */
static ge8 r255_scalarmult(const uint8_t k[LV_LANES][32], ge8 p)
{
    ge8_cached table[16];
    ge8 pts[16];
    pts[0] = ge8_identity();
    pts[1] = p;
    const ge8_cached c1 = ge8_to_cached(p);
    for (int j = 2; j < 16; j++) /* 2j by doubling, odd ones by adding p */
        pts[j] = (j % 2 == 0) ? ge8_dbl(pts[j / 2], 1) : ge8_add(pts[j - 1], c1);
    for (int j = 0; j < 16; j++)
        table[j] = ge8_to_cached(pts[j]);

    ge8 q = ge8_identity();
    for (int w = 63; w >= 0; w--) {
        if (w != 63)
            for (int i = 0; i < 4; i++)
                q = ge8_dbl(q, i == 3);
        uint64_t nib[LV_LANES];
        for (int l = 0; l < LV_LANES; l++) {
            uint8_t byte = k[l][w / 2];
            if (w == 63)
                byte &= 0x7f;
            nib[l] = (uint64_t)((byte >> (4 * (w % 2))) & 0xf);
        }
        lv n = lv_load(nib);
        ge8_cached e;
        memset(&e, 0, sizeof e);
        for (int j = 0; j < 16; j++)
            ge8_cached_or_masked(&e, lv_eqmask(n, lv_set1((uint64_t)j)), &table[j]);
        q = ge8_add(q, e);
    }
    return q;
}

/* The ristretto255 Elligator map of RFC 9496 §4.3.4 (MAP), from a field
 * element to a group element. */
static ge8 r255_elligator(fe8 t)
{
    const fe8 one = fe8_const(fe_c_one), d = fe8_const(fe_c_d);
    fe8 r = fe8_mul(fe8_const(fe_c_sqrt_m1), fe8_sqr(t));
    fe8 u = fe8_mul(fe8_add(r, one), fe8_const(fe_c_one_minus_d_sq));
    fe8 v = fe8_mul(fe8_sub(fe8_neg(one), fe8_mul(r, d)), fe8_add(r, d));
    lv was_square;
    fe8 s = fe8_sqrt_ratio_m1(&was_square, u, v);
    fe8 s_prime = fe8_neg(fe8_abs(fe8_mul(s, t)));
    s = fe8_select(was_square, s, s_prime);
    fe8 c = fe8_select(was_square, fe8_neg(one), r);
    fe8 n = fe8_sub(fe8_mul(fe8_mul(c, fe8_sub(r, one)), fe8_const(fe_c_d_minus_one_sq)), v);
    fe8 w0 = fe8_mul(fe8_add(s, s), v);
    fe8 w1 = fe8_mul(n, fe8_const(fe_c_sqrt_ad_minus_one));
    fe8 ss = fe8_sqr(s);
    fe8 w2 = fe8_sub(one, ss);
    fe8 w3 = fe8_add(one, ss);
    ge8 p = {fe8_mul(w0, w3), fe8_mul(w2, w1), fe8_mul(w1, w3), fe8_mul(w0, w2)};
    return p;
}

/* The one-way map of RFC 9496 §4.3.4 from 64 bytes: each half, bit 255
 * ignored, through the Elligator map, and the two points added. */
static ge8 r255_from_hash(const uint8_t h[LV_LANES][64])
{
    uint8_t half[LV_LANES][32];
    for (int k = 0; k < LV_LANES; k++)
        memcpy(half[k], h[k], 32);
    ge8 p1 = r255_elligator(fe8_from_bytes((const uint8_t(*)[32])half));
    for (int k = 0; k < LV_LANES; k++)
        memcpy(half[k], h[k] + 32, 32);
    ge8 p2 = r255_elligator(fe8_from_bytes((const uint8_t(*)[32])half));
    return ge8_add(p1, ge8_to_cached(p2));
}

/* ---------------------------------------------------- exported bodies */

/* Bits of a lane mask made public: the callers report them. */
static unsigned r255_public_bits(lv mask)
{
    unsigned bits = lv_bits(mask);
    PSI_DECLASSIFY(&bits, sizeof bits);
    return bits;
}

/* Bit i set when out[i] is 32 zero bytes (the identity's encoding). */
static unsigned r255_zero_lanes(const uint8_t out[LV_LANES][32])
{
    unsigned bits = 0;
    for (int k = 0; k < LV_LANES; k++) {
        unsigned acc = 0;
        for (int i = 0; i < 32; i++)
            acc |= out[k][i];
        bits |= (((acc - 1u) >> 8) & 1u) << k;
    }
    PSI_DECLASSIFY(&bits, sizeof bits);
    return bits;
}

static int r255_x8_mul(uint8_t out[LV_LANES][32], const uint8_t k[LV_LANES][32],
                       const uint8_t p[LV_LANES][32])
{
    lv valid;
    ge8 pt = r255_decode(&valid, p);
    r255_encode(out, r255_scalarmult(k, pt));
    unsigned failed = (r255_public_bits(valid) ^ 0xffu) | r255_zero_lanes((const uint8_t(*)[32])out);
    /* failed is public: zeroing the lanes it names leaks nothing more */
    for (int i = 0; i < LV_LANES; i++)
        if (failed & (1u << i))
            memset(out[i], 0, 32);
    return (int)failed;
}

static int r255_x8_mask(uint8_t out[LV_LANES][32], const uint8_t k[LV_LANES][32],
                        const uint8_t h[LV_LANES][64])
{
    r255_encode(out, r255_scalarmult(k, r255_from_hash(h)));
    return (int)r255_zero_lanes((const uint8_t(*)[32])out);
}

static void r255_x8_fe_mul(uint8_t r[LV_LANES][32], const uint8_t a[LV_LANES][32],
                           const uint8_t b[LV_LANES][32])
{
    fe8_to_bytes(r, fe8_mul(fe8_from_bytes(a), fe8_from_bytes(b)));
}

static void r255_x8_fe_sqr(uint8_t r[LV_LANES][32], const uint8_t a[LV_LANES][32])
{
    fe8_to_bytes(r, fe8_sqr(fe8_from_bytes(a)));
}

static void r255_x8_from_hash(uint8_t out[LV_LANES][32], const uint8_t h[LV_LANES][64])
{
    r255_encode(out, r255_from_hash(h));
}

/* The entry points of r255_x8.h, in this file's form (lanes.h's LV_FORM):
 * psi_r255_x8_*_c or psi_r255_x8_*_ifma, from the one source. */
int LV_FORM(psi_r255_x8_mul)(uint8_t out[8][32], const uint8_t k[8][32], const uint8_t p[8][32])
{
    int failed = r255_x8_mul(out, k, p);
    lv_burn_stack();
    return failed;
}

int LV_FORM(psi_r255_x8_mask)(uint8_t out[8][32], const uint8_t k[8][32], const uint8_t h[8][64])
{
    int failed = r255_x8_mask(out, k, h);
    lv_burn_stack();
    return failed;
}

void LV_FORM(psi_r255_x8_from_hash)(uint8_t out[8][32], const uint8_t h[8][64])
{
    r255_x8_from_hash(out, h);
    lv_burn_stack();
}

void LV_FORM(psi_r255_x8_fe_mul)(uint8_t r[8][32], const uint8_t a[8][32], const uint8_t b[8][32])
{
    r255_x8_fe_mul(r, a, b);
}

void LV_FORM(psi_r255_x8_fe_sqr)(uint8_t r[8][32], const uint8_t a[8][32]) { r255_x8_fe_sqr(r, a); }

#endif /* PSI_R255_X8_IMPL_H */
