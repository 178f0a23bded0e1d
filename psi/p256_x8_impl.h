/* P-256 on eight lanes (PROTOCOL.md §21): the field in radix 2^52, the
 * complete projective group law and the variable-base scalar
 * multiplication, written once over lanes.h's lv.  Included by
 * p256_x8_ifma.c (AVX-512 IFMA) and p256_x8_c.c (plain C), which name the
 * exported functions; everything here is static.
 *
 * Field: five 52-bit limbs, Montgomery form with R = 2^260.  Since
 * p = 2^256 - 2^224 + 2^192 + 2^96 - 1 is -1 mod 2^52, -p^-1 mod 2^52 is
 * 1 and each reduction step's multiplier is the low limb itself.  Values
 * are kept in [0, 2p) with every limb below 2^52 (the multiply-adds read
 * 52 bits of each factor): a product of two such values reduces to below
 * (4p^2 + R p) / R < 2p because 4p < R, and additions and subtractions
 * subtract 2p when the result would reach it.
 *
 * Points: projective (X : Y : Z) with the complete formulas of Renes,
 * Costello and Batina (2016), algorithms 4 and 6 for a = -3: correct for
 * every pair of inputs, the identity (0 : 1 : 0) and doublings included,
 * so no case needs ruling out and none branches.
 *
 * Scalar multiplication: 64 fixed 4-bit windows, most significant first,
 * over a table of 0P..15P (0P the identity) read by scanning all sixteen
 * entries with lane masks.  Each lane has its own scalar.  No branch and
 * no memory index depends on a scalar or a coordinate. */
#ifndef PSI_P256_X8_IMPL_H
#define PSI_P256_X8_IMPL_H

#include <stdint.h>
#include <string.h>

#include <sodium.h>

#include "lanes.h"
#include "p256_x8.h"

#define X8_LIMBS 5

typedef struct x8_fe {
    lv v[X8_LIMBS];
} x8_fe;

typedef struct x8_pt {
    x8_fe x, y, z;
} x8_pt;

/* p, 2p, R^2 mod p, R mod p (one), b R mod p, in 52-bit limbs. */
static const uint64_t x8_p[X8_LIMBS] = {0xfffffffffffff, 0xfffffffffff, 0x0, 0x1000000000,
                                        0xffffffff0000};
static const uint64_t x8_2p[X8_LIMBS] = {0xffffffffffffe, 0x1fffffffffff, 0x0, 0x2000000000,
                                         0x1fffffffe0000};
static const uint64_t x8_r2[X8_LIMBS] = {0x300, 0xffffffff00000, 0xffffefffffffb,
                                         0xfdfffffffffff, 0x4ffffff};
static const uint64_t x8_one[X8_LIMBS] = {0x10, 0xf000000000000, 0xfffffffffffff,
                                          0xffeffffffffff, 0xfffff};
static const uint64_t x8_three[X8_LIMBS] = {0x30, 0xd000000000000, 0xfffffffffffff,
                                            0xffcffffffffff, 0x2fffff};
static const uint64_t x8_b[X8_LIMBS] = {0xdf6229c4bddfd, 0xca8843090d89c, 0x212ed6acf005c,
                                        0x83415a220abf7, 0xc30061dd4874};

static void x8_fe_const(x8_fe *r, const uint64_t c[X8_LIMBS])
{
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++) r->v[i] = lv_set1(c[i]);
}

/* r = t - c (c a constant of at most 2p) with signed carries, and the
 * all-ones lane mask where that went below zero. */
LV_INLINE lv x8_sub_const(x8_fe *r, const x8_fe *t, const uint64_t c[X8_LIMBS])
{
    lv m52 = lv_set1(LV_M52), carry = lv_zero();
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++)
    {
        lv s = lv_add(lv_sub(t->v[i], lv_set1(c[i])), carry);
        carry = lv_sar(s, 52);
        r->v[i] = lv_and(s, m52);
    }
    return carry; /* 0 or all ones: the sign of the whole difference */
}


/* r = a + b mod 2p and r = a - b mod 2p, in [0, 2p).  Each computes the
 * two candidates (d and d - 2p, or d and d + 2p, for d = a + b or a - b)
 * with two independent carry chains and keeps the one in range by the
 * sign of the lower: half the latency of one chain after the other. */
static void x8_add(x8_fe *r, const x8_fe *a, const x8_fe *b)
{
    lv m52 = lv_set1(LV_M52), ct = lv_zero(), cs = lv_zero();
    x8_fe t, u;
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++)
    {
        lv d = lv_add(a->v[i], b->v[i]);
        lv dt = lv_add(d, ct);
        lv ds = lv_add(lv_sub(d, lv_set1(x8_2p[i])), cs);
        ct = lv_shr(dt, 52);
        cs = lv_sar(ds, 52);
        t.v[i] = lv_and(dt, m52);
        u.v[i] = lv_and(ds, m52);
    }
    /* a + b < 4p < 2^258: no carry out of t; cs is the sign of a + b - 2p */
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++) r->v[i] = lv_select(cs, t.v[i], u.v[i]);
}

static void x8_sub(x8_fe *r, const x8_fe *a, const x8_fe *b)
{
    lv m52 = lv_set1(LV_M52), ct = lv_zero(), cs = lv_zero();
    x8_fe t, u;
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++)
    {
        lv d = lv_sub(a->v[i], b->v[i]);
        lv dt = lv_add(lv_add(d, lv_set1(x8_2p[i])), ct);
        lv ds = lv_add(d, cs);
        ct = lv_sar(dt, 52);
        cs = lv_sar(ds, 52);
        t.v[i] = lv_and(dt, m52);
        u.v[i] = lv_and(ds, m52);
    }
    /* cs is the sign of a - b: then a - b + 2p (in [0, 2p)), else a - b */
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++) r->v[i] = lv_select(cs, t.v[i], u.v[i]);
}

/* r = a + b and r = a - b + 2p, in [0, 4p) and not reduced further: only
 * for a result that goes straight into x8_mul or x8_sqr, which take
 * factors below 4p (16 p^2 + R p < 2 R p). */
static void x8_add_lazy(x8_fe *r, const x8_fe *a, const x8_fe *b)
{
    lv m52 = lv_set1(LV_M52), carry = lv_zero();
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++)
    {
        lv s = lv_add(lv_add(a->v[i], b->v[i]), carry);
        carry = lv_shr(s, 52);
        r->v[i] = lv_and(s, m52);
    }
}

static void x8_sub_lazy(x8_fe *r, const x8_fe *a, const x8_fe *b)
{
    lv m52 = lv_set1(LV_M52), carry = lv_zero();
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++)
    {
        lv s = lv_add(lv_sub(lv_add(a->v[i], lv_set1(x8_2p[i])), b->v[i]), carry);
        carry = lv_sar(s, 52);
        r->v[i] = lv_and(s, m52);
    }
}

/* r = t / R mod p, in [0, 2p), for a double-width product t of two
 * values below 4p (t < 16 p^2 < R p; columns of 52-bit weight, each below
 * 2^58). */
LV_INLINE void x8_reduce(x8_fe *r, lv t[2 * X8_LIMBS])
{
    lv m52 = lv_set1(LV_M52);
    /* Montgomery reduction, a limb at a time: m = t[i] mod 2^52 makes
     * t + m p divisible by 2^52 (p = -1 mod 2^52).  p's limb 0 is
     * 2^52 - 1, so t[i] + m p_0 = (t[i] - m) + m 2^52 and that limb only
     * carries t[i] / 2^52 + m on, with no multiplication; limb 2 is zero. */
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++)
    {
        lv m = lv_and(t[i], m52);
        LV_UNROLL for (int j = 1; j < X8_LIMBS; j++)
        {
            if (x8_p[j] == 0)
                continue; /* a constant: the same in every lane and call */
            lv pj = lv_set1(x8_p[j]);
            t[i + j] = lv_madd52lo(t[i + j], m, pj);
            t[i + j + 1] = lv_madd52hi(t[i + j + 1], m, pj);
        }
        t[i + 1] = lv_add(t[i + 1], lv_add(lv_shr(t[i], 52), m));
    }
    LV_UNROLL for (int i = X8_LIMBS; i < 2 * X8_LIMBS - 1; i++)
    {
        t[i + 1] = lv_add(t[i + 1], lv_shr(t[i], 52));
        r->v[i - X8_LIMBS] = lv_and(t[i], m52);
    }
    r->v[X8_LIMBS - 1] = t[2 * X8_LIMBS - 1];
}

/* r = a b / R mod p, in [0, 2p). */
static void x8_mul(x8_fe *r, const x8_fe *a, const x8_fe *b)
{
    lv t[2 * X8_LIMBS];
    LV_UNROLL for (int i = 0; i < 2 * X8_LIMBS; i++) t[i] = lv_zero();
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++)
    {
        LV_UNROLL for (int j = 0; j < X8_LIMBS; j++)
        {
            t[i + j] = lv_madd52lo(t[i + j], a->v[i], b->v[j]);
            t[i + j + 1] = lv_madd52hi(t[i + j + 1], a->v[i], b->v[j]);
        }
    }
    x8_reduce(r, t);
}

/* r = a^2 / R mod p: the ten cross products once, doubled, then the
 * squares (30 multiply-adds instead of 50). */
static void x8_sqr(x8_fe *r, const x8_fe *a)
{
    lv t[2 * X8_LIMBS];
    LV_UNROLL for (int i = 0; i < 2 * X8_LIMBS; i++) t[i] = lv_zero();
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++)
    {
        LV_UNROLL for (int j = i + 1; j < X8_LIMBS; j++)
        {
            t[i + j] = lv_madd52lo(t[i + j], a->v[i], a->v[j]);
            t[i + j + 1] = lv_madd52hi(t[i + j + 1], a->v[i], a->v[j]);
        }
    }
    LV_UNROLL for (int i = 0; i < 2 * X8_LIMBS; i++) t[i] = lv_add(t[i], t[i]);
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++)
    {
        t[2 * i] = lv_madd52lo(t[2 * i], a->v[i], a->v[i]);
        t[2 * i + 1] = lv_madd52hi(t[2 * i + 1], a->v[i], a->v[i]);
    }
    x8_reduce(r, t);
}

static void x8_mul_b(x8_fe *r, const x8_fe *a)
{
    x8_fe b;
    x8_fe_const(&b, x8_b);
    x8_mul(r, &b, a);
}

/* r = a mod p, canonical, for a in [0, 2p). */
static void x8_canon(x8_fe *r, const x8_fe *a)
{
    x8_fe s;
    lv neg = x8_sub_const(&s, a, x8_p);
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++) r->v[i] = lv_select(neg, a->v[i], s.v[i]);
}

/* Canonical value (below p) of a Montgomery-form element, out of that form. */
static void x8_from_mont(x8_fe *r, const x8_fe *a)
{
    static const uint64_t one[X8_LIMBS] = {1, 0, 0, 0, 0};
    x8_fe u, t;
    x8_fe_const(&u, one);
    x8_mul(&t, a, &u); /* (a + m p) / R <= p */
    x8_canon(r, &t);
}

static void x8_to_mont(x8_fe *r, const x8_fe *a)
{
    x8_fe r2;
    x8_fe_const(&r2, x8_r2);
    x8_mul(r, a, &r2);
}

/* Lane i of r from the 32-byte big-endian integer in[i] (below p). */
static void x8_fe_from_bytes(x8_fe *r, const uint8_t in[LV_LANES][32])
{
    uint64_t limb[X8_LIMBS][LV_LANES];
    for (int l = 0; l < LV_LANES; l++) {
        uint64_t w[4];
        for (int k = 0; k < 4; k++) {
            w[k] = 0;
            for (int j = 0; j < 8; j++)
                w[k] |= (uint64_t)in[l][31 - 8 * k - j] << (8 * j);
        }
        limb[0][l] = w[0] & LV_M52;
        limb[1][l] = (w[0] >> 52 | w[1] << 12) & LV_M52;
        limb[2][l] = (w[1] >> 40 | w[2] << 24) & LV_M52;
        limb[3][l] = (w[2] >> 28 | w[3] << 36) & LV_M52;
        limb[4][l] = w[3] >> 16;
    }
    for (int i = 0; i < X8_LIMBS; i++)
        r->v[i] = lv_load(limb[i]);
}

/* out[i] = the 32-byte big-endian form of lane i of a (canonical). */
static void x8_fe_to_bytes(uint8_t out[LV_LANES][32], const x8_fe *a)
{
    uint64_t limb[X8_LIMBS][LV_LANES];
    for (int i = 0; i < X8_LIMBS; i++)
        lv_store(limb[i], a->v[i]);
    for (int l = 0; l < LV_LANES; l++) {
        uint64_t w[4] = {
            limb[0][l] | limb[1][l] << 52,
            limb[1][l] >> 12 | limb[2][l] << 40,
            limb[2][l] >> 24 | limb[3][l] << 28,
            limb[3][l] >> 36 | limb[4][l] << 16,
        };
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 8; j++)
                out[l][31 - 8 * k - j] = (uint8_t)(w[k] >> (8 * j));
    }
    sodium_memzero(limb, sizeof limb);
}

static void x8_pt_select(x8_pt *r, lv mask, const x8_pt *a)
{
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++)
    {
        r->x.v[i] = lv_select(mask, a->x.v[i], r->x.v[i]);
        r->y.v[i] = lv_select(mask, a->y.v[i], r->y.v[i]);
        r->z.v[i] = lv_select(mask, a->z.v[i], r->z.v[i]);
    }
}

/* Complete addition, a = -3 (RCB 2016, algorithm 4): 12M + 2 mul by b.
 * r may alias p or q. */
static void x8_pt_add(x8_pt *r, const x8_pt *p, const x8_pt *q)
{
    x8_fe t0, t1, t2, t3, t4, x3, y3, z3;
    x8_mul(&t0, &p->x, &q->x);
    x8_mul(&t1, &p->y, &q->y);
    x8_mul(&t2, &p->z, &q->z);
    x8_add_lazy(&t3, &p->x, &p->y);
    x8_add_lazy(&t4, &q->x, &q->y);
    x8_mul(&t3, &t3, &t4);
    x8_add(&t4, &t0, &t1);
    x8_sub(&t3, &t3, &t4);
    x8_add_lazy(&t4, &p->y, &p->z);
    x8_add_lazy(&x3, &q->y, &q->z);
    x8_mul(&t4, &t4, &x3);
    x8_add(&x3, &t1, &t2);
    x8_sub(&t4, &t4, &x3);
    x8_add_lazy(&x3, &p->x, &p->z);
    x8_add_lazy(&y3, &q->x, &q->z);
    x8_mul(&x3, &x3, &y3);
    x8_add(&y3, &t0, &t2);
    x8_sub(&y3, &x3, &y3);
    x8_mul_b(&z3, &t2);
    x8_sub(&x3, &y3, &z3);
    x8_add(&z3, &x3, &x3);
    x8_add(&x3, &x3, &z3);
    x8_sub(&z3, &t1, &x3);
    x8_add(&x3, &t1, &x3);
    x8_mul_b(&y3, &y3);
    x8_add(&t1, &t2, &t2);
    x8_add(&t2, &t1, &t2);
    x8_sub(&y3, &y3, &t2);
    x8_sub(&y3, &y3, &t0);
    x8_add(&t1, &y3, &y3);
    x8_add(&y3, &t1, &y3);
    x8_add(&t1, &t0, &t0);
    x8_add(&t0, &t1, &t0);
    x8_sub(&t0, &t0, &t2);
    x8_mul(&t1, &t4, &y3);
    x8_mul(&t2, &t0, &y3);
    x8_mul(&y3, &x3, &z3);
    x8_add(&y3, &y3, &t2);
    x8_mul(&x3, &t3, &x3);
    x8_sub(&x3, &x3, &t1);
    x8_mul(&z3, &t4, &z3);
    x8_mul(&t1, &t3, &t0);
    x8_add(&z3, &z3, &t1);
    r->x = x3;
    r->y = y3;
    r->z = z3;
}

/* Complete doubling, a = -3 (RCB 2016, algorithm 6): 8M + 3S + 2 mul by b. */
static void x8_pt_dbl(x8_pt *r, const x8_pt *p)
{
    x8_fe t0, t1, t2, t3, x3, y3, z3;
    x8_sqr(&t0, &p->x);
    x8_sqr(&t1, &p->y);
    x8_sqr(&t2, &p->z);
    x8_mul(&t3, &p->x, &p->y);
    x8_add(&t3, &t3, &t3);
    x8_mul(&z3, &p->x, &p->z);
    x8_add(&z3, &z3, &z3);
    x8_mul_b(&y3, &t2);
    x8_sub(&y3, &y3, &z3);
    x8_add(&x3, &y3, &y3);
    x8_add(&y3, &x3, &y3);
    x8_sub(&x3, &t1, &y3);
    x8_add(&y3, &t1, &y3);
    x8_mul(&y3, &x3, &y3);
    x8_mul(&x3, &x3, &t3);
    x8_add(&t3, &t2, &t2);
    x8_add(&t2, &t2, &t3);
    x8_mul_b(&z3, &z3);
    x8_sub(&z3, &z3, &t2);
    x8_sub(&z3, &z3, &t0);
    x8_add(&t3, &z3, &z3);
    x8_add(&z3, &z3, &t3);
    x8_add(&t3, &t0, &t0);
    x8_add(&t0, &t3, &t0);
    x8_sub(&t0, &t0, &t2);
    x8_mul(&t0, &t0, &z3);
    x8_add(&y3, &y3, &t0);
    x8_mul(&t0, &p->y, &p->z);
    x8_add(&t0, &t0, &t0);
    x8_mul(&z3, &t0, &z3);
    x8_sub(&x3, &x3, &z3);
    x8_mul(&z3, &t0, &t1);
    x8_add(&z3, &z3, &z3);
    x8_add(&z3, &z3, &z3);
    r->x = x3;
    r->y = y3;
    r->z = z3;
}

/* Jacobian doubling (EFD dbl-2001-b, a = -3: 3M + 5S, the formulas of
 * p256.c's jac_dbl), for the four doublings between additions: cheaper
 * than algorithm 6 by about 40% of the multiply-adds.  Correct for every
 * point but the identity, since P-256 has no point of order 2; the
 * identity enters as (0, 0, 0) (x8_to_jac) and stays that, every term
 * being a multiple of a coordinate.  r may alias a. */
static void x8_jac_dbl(x8_pt *r, const x8_pt *a)
{
    x8_fe delta, gamma, beta, alpha, t, u, x3;
    x8_sqr(&delta, &a->z);
    x8_sqr(&gamma, &a->y);
    x8_mul(&beta, &a->x, &gamma);
    x8_sub_lazy(&t, &a->x, &delta);
    x8_add_lazy(&u, &a->x, &delta);
    x8_mul(&t, &t, &u);
    x8_add(&alpha, &t, &t);
    x8_add(&alpha, &alpha, &t);   /* 3 (x - delta)(x + delta) */
    x8_add(&beta, &beta, &beta);
    x8_add(&beta, &beta, &beta);  /* 4 beta */
    x8_sqr(&x3, &alpha);
    x8_sub(&x3, &x3, &beta);
    x8_sub(&x3, &x3, &beta);      /* alpha^2 - 8 beta */
    x8_add_lazy(&t, &a->y, &a->z);
    x8_sqr(&t, &t);
    x8_sub(&t, &t, &gamma);
    x8_sub(&r->z, &t, &delta);    /* (y + z)^2 - gamma - delta */
    x8_sqr(&gamma, &gamma);
    x8_add(&gamma, &gamma, &gamma);
    x8_add(&gamma, &gamma, &gamma);
    x8_add(&gamma, &gamma, &gamma); /* 8 gamma^2 */
    x8_sub(&t, &beta, &x3);
    x8_mul(&t, &alpha, &t);
    x8_sub(&r->y, &t, &gamma);
    r->x = x3;
}

/* Projective (X : Y : Z) to Jacobian (X Z, Y Z^2, Z); the identity
 * (0 : Y : 0) becomes (0, 0, 0). */
static void x8_to_jac(x8_pt *r, const x8_pt *a)
{
    x8_fe z2;
    x8_sqr(&z2, &a->z);
    x8_mul(&r->x, &a->x, &a->z);
    x8_mul(&r->y, &a->y, &z2);
    r->z = a->z;
}

/* All ones in the lanes where a is 0 mod p (a in [0, 2p): 0 or p). */
static lv x8_is_zero(const x8_fe *a)
{
    lv zero = lv_set1(~(uint64_t)0), is_p = zero;
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++)
    {
        zero = lv_and(zero, lv_eqmask(a->v[i], lv_zero()));
        is_p = lv_and(is_p, lv_eqmask(a->v[i], lv_set1(x8_p[i])));
    }
    return lv_or(zero, is_p);
}

/* Jacobian (X, Y, Z) to projective (X Z, Y, Z^3); a Z of 0 gives the
 * identity (0 : 1 : 0), whatever X and Y were. */
static void x8_from_jac(x8_pt *r, const x8_pt *a)
{
    x8_fe z2, one;
    lv inf = x8_is_zero(&a->z);
    x8_fe_const(&one, x8_one);
    x8_sqr(&z2, &a->z);
    x8_mul(&r->x, &a->x, &a->z);
    x8_mul(&r->z, &z2, &a->z);
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++) r->y.v[i] = lv_select(inf, one.v[i], a->y.v[i]);
}

/* The 4-bit window w (0 = least significant) of each lane's 32-byte
 * big-endian scalar, as lane values. */
static lv x8_window(const uint8_t k[LV_LANES][32], int w)
{
    uint64_t d[LV_LANES];
    for (int l = 0; l < LV_LANES; l++)
        d[l] = (uint64_t)(k[l][31 - w / 2] >> (4 * (w & 1))) & 15;
    lv r = lv_load(d);
    sodium_memzero(d, sizeof d);
    return r;
}

typedef struct x8_mul_ws {
    x8_pt table[16];
    x8_pt acc, entry;
} x8_mul_ws;

/* xyz[i] = Jacobian coordinates (X Z, Y Z^2, Z: the affine point is
 * (X/Z^2, Y/Z^3)) of k[i] (x[i], y[i]), each 32 bytes big-endian and
 * canonical, 96 bytes a lane.  (x[i], y[i]) must be on the curve; k[i] is
 * any 256-bit integer.  A lane whose product is the identity gives Z = 0.
 * ws is wiped by the caller. */
static void x8_scalar_mul(x8_mul_ws *ws, uint8_t xyz[LV_LANES][96],
                          const uint8_t k[LV_LANES][32], const uint8_t x[LV_LANES][32],
                          const uint8_t y[LV_LANES][32])
{
    x8_pt *tab = ws->table;
    x8_fe_const(&tab[0].x, (const uint64_t[X8_LIMBS]){0});
    x8_fe_const(&tab[0].y, x8_one);
    x8_fe_const(&tab[0].z, (const uint64_t[X8_LIMBS]){0});
    x8_fe_from_bytes(&tab[1].x, x);
    x8_fe_from_bytes(&tab[1].y, y);
    x8_to_mont(&tab[1].x, &tab[1].x);
    x8_to_mont(&tab[1].y, &tab[1].y);
    x8_fe_const(&tab[1].z, x8_one);
    for (int i = 2; i < 16; i++) {
        if (i & 1)
            x8_pt_add(&tab[i], &tab[i - 1], &tab[1]);
        else
            x8_pt_dbl(&tab[i], &tab[i / 2]);
    }

    for (int w = 63; w >= 0; w--) {
        if (w != 63) {
            x8_to_jac(&ws->acc, &ws->acc);
            for (int j = 0; j < 4; j++)
                x8_jac_dbl(&ws->acc, &ws->acc);
            x8_from_jac(&ws->acc, &ws->acc);
        }
        lv d = x8_window(k, w);
        ws->entry = tab[0];
        for (int i = 1; i < 16; i++)
            x8_pt_select(&ws->entry, lv_eqmask(d, lv_set1((uint64_t)i)), &tab[i]);
        if (w == 63)
            ws->acc = ws->entry;
        else
            x8_pt_add(&ws->acc, &ws->acc, &ws->entry);
    }

    /* Projective to Jacobian: (X Z, Y Z^2, Z). */
    x8_fe z2, jx, jy, jz;
    x8_sqr(&z2, &ws->acc.z);
    x8_mul(&jx, &ws->acc.x, &ws->acc.z);
    x8_mul(&jy, &ws->acc.y, &z2);
    x8_from_mont(&jx, &jx);
    x8_from_mont(&jy, &jy);
    x8_from_mont(&jz, &ws->acc.z);
    uint8_t buf[LV_LANES][32];
    x8_fe_to_bytes(buf, &jx);
    for (int l = 0; l < LV_LANES; l++)
        memcpy(xyz[l], buf[l], 32);
    x8_fe_to_bytes(buf, &jy);
    for (int l = 0; l < LV_LANES; l++)
        memcpy(xyz[l] + 32, buf[l], 32);
    x8_fe_to_bytes(buf, &jz);
    for (int l = 0; l < LV_LANES; l++)
        memcpy(xyz[l] + 64, buf[l], 32);
    sodium_memzero(buf, sizeof buf);
    sodium_memzero(&z2, sizeof z2);
    sodium_memzero(&jx, sizeof jx);
    sodium_memzero(&jy, sizeof jy);
    sodium_memzero(&jz, sizeof jz);
}

static void x8_sqr_n(x8_fe *r, const x8_fe *a, int n)
{
    x8_sqr(r, a);
    for (int i = 1; i < n; i++)
        x8_sqr(r, r);
}

/* x^(2^32 - 1) into x32 and x^(2^30 - 1) into x30 (the chain of
 * p256_field_ops.h's fe_pow_ones). */
static void x8_pow_ones(x8_fe *x32, x8_fe *x30, const x8_fe *x)
{
    x8_fe x2, x3, x6, x12, x15;
    x8_sqr(&x2, x);
    x8_mul(&x2, &x2, x);     /* 2^2 - 1 */
    x8_sqr(&x3, &x2);
    x8_mul(&x3, &x3, x);     /* 2^3 - 1 */
    x8_sqr_n(&x6, &x3, 3);
    x8_mul(&x6, &x6, &x3);   /* 2^6 - 1 */
    x8_sqr_n(&x12, &x6, 6);
    x8_mul(&x12, &x12, &x6); /* 2^12 - 1 */
    x8_sqr_n(&x15, &x12, 3);
    x8_mul(&x15, &x15, &x3); /* 2^15 - 1 */
    x8_sqr_n(x30, &x15, 15);
    x8_mul(x30, x30, &x15);  /* 2^30 - 1 */
    x8_sqr_n(x32, x30, 2);
    x8_mul(x32, x32, &x2);   /* 2^32 - 1 */
}

/* r = a^((p+1)/4) = a^(2^254 - 2^222 + 2^190 + 2^94), as p256.c's
 * fe_sqrt_pow. */
static void x8_sqrt_pow(x8_fe *r, const x8_fe *a)
{
    x8_fe x32, x30, t;
    x8_pow_ones(&x32, &x30, a);
    x8_sqr_n(&t, &x32, 32);
    x8_mul(&t, &t, a);
    x8_sqr_n(&t, &t, 96);
    x8_mul(&t, &t, a);
    x8_sqr_n(r, &t, 94);
}

/* All ones in the lanes where a = b (mod p). */
static lv x8_equal(const x8_fe *a, const x8_fe *b)
{
    x8_fe ca, cb;
    x8_canon(&ca, a);
    x8_canon(&cb, b);
    lv eq = lv_set1(~(uint64_t)0);
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++) eq = lv_and(eq, lv_eqmask(ca.v[i], cb.v[i]));
    return eq;
}

/* As psi_p256_decompress, lane by lane: y[i] = the root of
 * x[i]^3 - 3 x[i] + b whose parity is odd[i] (0 or 1), and ok[i] = 1,
 * when that is a non-zero square; else y[i] = 0 and ok[i] = 0.  x[i]
 * below p.  Constant time in x and odd. */
static void x8_decompress(uint8_t y[LV_LANES][32], uint8_t ok[LV_LANES],
                          const uint8_t x[LV_LANES][32], const uint8_t odd[LV_LANES])
{
    x8_fe xm, t, r, r2, nr, c;
    x8_fe_from_bytes(&xm, x);
    x8_to_mont(&xm, &xm);
    x8_sqr(&t, &xm);
    x8_fe_const(&c, x8_three);
    x8_sub(&t, &t, &c);
    x8_mul(&t, &t, &xm);
    x8_fe_const(&c, x8_b);
    x8_add(&t, &t, &c); /* x^3 - 3x + b */
    x8_sqrt_pow(&r, &t);
    x8_sqr(&r2, &r);
    lv good = x8_equal(&r2, &t);
    good = lv_and(good, lv_xor(x8_is_zero(&t), lv_set1(~(uint64_t)0)));
    x8_from_mont(&r, &r);
    /* nr = p - r: canonical for r != 0 (r = 0 only when t = 0: not good) */
    lv m52 = lv_set1(LV_M52), carry = lv_zero();
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++)
    {
        lv d = lv_add(lv_sub(lv_set1(x8_p[i]), r.v[i]), carry);
        carry = lv_sar(d, 52);
        nr.v[i] = lv_and(d, m52);
    }
    uint64_t want[LV_LANES];
    for (int l = 0; l < LV_LANES; l++)
        want[l] = odd[l] & 1;
    lv flip = lv_xor(lv_eqmask(lv_and(r.v[0], lv_set1(1)), lv_load(want)), lv_set1(~(uint64_t)0));
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++)
    {
        r.v[i] = lv_select(flip, nr.v[i], r.v[i]);
        r.v[i] = lv_and(r.v[i], good);
    }
    x8_fe_to_bytes(y, &r);
    uint64_t g[LV_LANES];
    lv_store(g, good);
    for (int l = 0; l < LV_LANES; l++)
        ok[l] = (uint8_t)(g[l] & 1);
    sodium_memzero(want, sizeof want);
}

/* r = a^(p-2), the inverse (0 for 0), as p256_field_ops.h's fe_inv. */
static void x8_inv(x8_fe *r, const x8_fe *a)
{
    x8_fe x32, x30, t;
    x8_pow_ones(&x32, &x30, a);
    x8_sqr_n(&t, &x32, 32);
    x8_mul(&t, &t, a);
    x8_sqr_n(&t, &t, 128);
    x8_mul(&t, &t, &x32);
    x8_sqr_n(&t, &t, 32);
    x8_mul(&t, &t, &x32);
    x8_sqr_n(&t, &t, 30);
    x8_mul(&t, &t, &x30);
    x8_sqr_n(&t, &t, 2);
    x8_mul(r, &t, a);
}

/* r = a^((p-3)/4), as p256_sswu.c's fe_pow_c1. */
static void x8_pow_c1(x8_fe *r, const x8_fe *a)
{
    x8_fe x32, x30, t;
    x8_pow_ones(&x32, &x30, a);
    x8_sqr_n(&t, &x32, 32);
    x8_mul(&t, &t, a);
    x8_sqr_n(&t, &t, 128);
    x8_mul(&t, &t, &x32);
    x8_sqr_n(&t, &t, 32);
    x8_mul(&t, &t, &x32);
    x8_sqr_n(&t, &t, 30);
    x8_mul(r, &t, &x30);
}

/* The RFC 9380 map's constants in Montgomery form: Z = -10, sqrt(10),
 * A = -3 (p256_sswu.c). */
static const uint64_t x8_sswu_z[X8_LIMBS] = {0xfffffffffff5f, 0xa0fffffffffff, 0x0,
                                             0xa1000000000, 0xffffff5f0000};
static const uint64_t x8_sswu_c2[X8_LIMBS] = {0x38ee98a195fd9, 0x6b23dcf70a1fd, 0xa8dfee78400ad,
                                              0x303d913c88f9e, 0x51d26ea2a8f};
static const uint64_t x8_sswu_a[X8_LIMBS] = {0xfffffffffffcf, 0x30fffffffffff, 0x0,
                                             0x31000000000, 0xffffffcf0000};

static void x8_select(x8_fe *r, lv mask, const x8_fe *a, const x8_fe *b)
{
    LV_UNROLL for (int i = 0; i < X8_LIMBS; i++) r->v[i] = lv_select(mask, a->v[i], b->v[i]);
}

/* All ones where the canonical value of a is odd (sgn0). */
static lv x8_sgn0(const x8_fe *a)
{
    x8_fe t;
    x8_from_mont(&t, a);
    return lv_sub(lv_zero(), lv_and(t.v[0], lv_set1(1)));
}

/* sqrt_ratio(u, v) for q = 3 mod 4 (RFC 9380 F.2.1.2), v != 0, as
 * p256_sswu.c's: the mask of the lanes where u / v is a square, and y. */
static lv x8_sqrt_ratio(x8_fe *y, const x8_fe *u, const x8_fe *v)
{
    x8_fe t1, t2, t3, y1, y2, c2;
    x8_sqr(&t1, v);
    x8_mul(&t2, u, v);
    x8_mul(&t1, &t1, &t2);
    x8_pow_c1(&y1, &t1);
    x8_mul(&y1, &y1, &t2);
    x8_fe_const(&c2, x8_sswu_c2);
    x8_mul(&y2, &y1, &c2);
    x8_sqr(&t3, &y1);
    x8_mul(&t3, &t3, v);
    lv is_qr = x8_equal(&t3, u);
    x8_select(y, is_qr, &y1, &y2);
    return is_qr;
}

/* q = map_to_curve_simple_swu(u) (RFC 9380 F.2), step for step as
 * p256_sswu.c's sswu_map, projective (x : y tv4 : tv4). */
static void x8_sswu_map(x8_pt *q, const x8_fe *u)
{
    x8_fe tv1, tv2, tv3, tv4, tv5, tv6, x, y, y1, z, a, one, b, zero;
    x8_fe_const(&z, x8_sswu_z);
    x8_fe_const(&a, x8_sswu_a);
    x8_fe_const(&one, x8_one);
    x8_fe_const(&b, x8_b);
    x8_fe_const(&zero, (const uint64_t[X8_LIMBS]){0});
    x8_sqr(&tv1, u);
    x8_mul(&tv1, &z, &tv1);
    x8_sqr(&tv2, &tv1);
    x8_add(&tv2, &tv2, &tv1);
    x8_add(&tv3, &tv2, &one);
    x8_mul(&tv3, &b, &tv3);
    x8_sub(&tv5, &zero, &tv2);
    x8_select(&tv4, x8_is_zero(&tv2), &z, &tv5); /* CMOV(Z, -tv2, tv2 != 0) */
    x8_mul(&tv4, &a, &tv4);
    x8_sqr(&tv2, &tv3);
    x8_sqr(&tv6, &tv4);
    x8_mul(&tv5, &a, &tv6);
    x8_add(&tv2, &tv2, &tv5);
    x8_mul(&tv2, &tv2, &tv3);
    x8_mul(&tv6, &tv6, &tv4);
    x8_mul(&tv5, &b, &tv6);
    x8_add(&tv2, &tv2, &tv5); /* gx1 tv4^3 */
    x8_mul(&x, &tv1, &tv3);
    lv is_square = x8_sqrt_ratio(&y1, &tv2, &tv6);
    x8_mul(&y, &tv1, u);
    x8_mul(&y, &y, &y1);
    x8_select(&x, is_square, &tv3, &x);
    x8_select(&y, is_square, &y1, &y);
    x8_sub(&tv5, &zero, &y);
    x8_select(&y, lv_xor(x8_sgn0(u), x8_sgn0(&y)), &tv5, &y); /* sgn0(y) = sgn0(u) */
    q->x = x;
    x8_mul(&q->y, &y, &tv4);
    q->z = tv4;
}

/* (x[i], y[i]) = map(u0[i]) + map(u1[i]) in affine big-endian bytes (RFC
 * 9380 hash_to_curve once the field elements are drawn: u0, u1 canonical),
 * and the mask of the lanes where the sum is the identity (then x and y
 * are 0). */
static void x8_sswu_hash(uint8_t x[LV_LANES][32], uint8_t y[LV_LANES][32], uint8_t inf[LV_LANES],
                         const uint8_t u0[LV_LANES][32], const uint8_t u1[LV_LANES][32])
{
    x8_fe u, zi, t;
    x8_pt q0, q1;
    x8_fe_from_bytes(&u, u0);
    x8_to_mont(&u, &u);
    x8_sswu_map(&q0, &u);
    x8_fe_from_bytes(&u, u1);
    x8_to_mont(&u, &u);
    x8_sswu_map(&q1, &u);
    x8_pt_add(&q0, &q0, &q1);
    x8_inv(&zi, &q0.z);
    x8_mul(&t, &q0.x, &zi);
    x8_from_mont(&t, &t);
    x8_fe_to_bytes(x, &t);
    x8_mul(&t, &q0.y, &zi);
    x8_from_mont(&t, &t);
    x8_fe_to_bytes(y, &t);
    uint64_t z[LV_LANES];
    lv_store(z, x8_is_zero(&q0.z));
    for (int l = 0; l < LV_LANES; l++)
        inf[l] = (uint8_t)(z[l] & 1);
    sodium_memzero(&u, sizeof u);
    sodium_memzero(&q0, sizeof q0);
    sodium_memzero(&q1, sizeof q1);
}

/* Up to X8_COMPRESS_GROUPS groups of eight Jacobian points (96 bytes
 * each, as psi_p256_jacobian_compress takes them; point 8 g + l in lane l
 * of group g) to 33-byte encodings with Montgomery's trick across the
 * groups, lane by lane: one lane inversion serves them all.  Returns 1, or
 * 0 with out zeroed when some Z is 0, as psi_p256_jacobian_compress. */
#define X8_COMPRESS_GROUPS 8
typedef struct {
    x8_fe z[X8_COMPRESS_GROUPS], pre[X8_COMPRESS_GROUPS];
    x8_fe inv, zi, zi2, x, y;
    uint8_t buf[LV_LANES][32];
    uint64_t odd[LV_LANES], bad[LV_LANES];
} x8_compress_ws;

/* Lane l of r from bytes [off, off + 32) of point l of group g. */
static void x8_gather(x8_compress_ws *s, x8_fe *r, const uint8_t *xyz, size_t g, size_t off)
{
    for (int l = 0; l < LV_LANES; l++)
        memcpy(s->buf[l], xyz + 96 * (LV_LANES * g + (size_t)l) + off, 32);
    x8_fe_from_bytes(r, (const uint8_t(*)[32])s->buf);
}

static int x8_compress(x8_compress_ws *s, uint8_t *out, const uint8_t *xyz, size_t groups)
{
    if (groups - 1 >= X8_COMPRESS_GROUPS) /* none, or too many for s */
        return groups == 0;
    for (size_t g = 0; g < groups; g++) {
        x8_gather(s, &s->z[g], xyz, g, 64);
        x8_to_mont(&s->z[g], &s->z[g]);
        if (g == 0)
            s->pre[0] = s->z[0];
        else
            x8_mul(&s->pre[g], &s->pre[g - 1], &s->z[g]);
    }
    /* a zero Z zeroes its lane's product (the engine never makes one) */
    lv_store(s->bad, x8_is_zero(&s->pre[groups - 1]));
    x8_inv(&s->inv, &s->pre[groups - 1]);
    for (size_t g = groups; g-- > 0;) {
        if (g > 0) {
            x8_mul(&s->zi, &s->inv, &s->pre[g - 1]);
            x8_mul(&s->inv, &s->inv, &s->z[g]);
        } else {
            s->zi = s->inv;
        }
        x8_sqr(&s->zi2, &s->zi);
        /* X, Y plain and zi, zi2 in Montgomery form: each product's 1/R
         * cancels zi's R, x = X zi^2 and y = Y zi^3, in [0, 2p) */
        x8_gather(s, &s->x, xyz, g, 0);
        x8_gather(s, &s->y, xyz, g, 32);
        x8_mul(&s->x, &s->x, &s->zi2);
        x8_mul(&s->y, &s->y, &s->zi2);
        x8_mul(&s->y, &s->y, &s->zi);
        x8_canon(&s->x, &s->x);
        x8_canon(&s->y, &s->y);
        lv_store(s->odd, s->y.v[0]);
        x8_fe_to_bytes(s->buf, &s->x);
        for (int l = 0; l < LV_LANES; l++) {
            uint8_t *o = out + 33 * (LV_LANES * g + (size_t)l);
            o[0] = (uint8_t)(0x02 | (s->odd[l] & 1));
            memcpy(o + 1, s->buf[l], 32);
        }
    }
    /* Without a branch: whether a Z was 0 is the caller's to reveal. */
    uint64_t bad = 0;
    for (int l = 0; l < LV_LANES; l++)
        bad |= s->bad[l];
    uint8_t keep = (uint8_t)~(bad & 0xff);
    for (size_t i = 0; i < 33 * LV_LANES * groups; i++)
        out[i] &= keep;
    return (int)(~bad & 1);
}

/* Field operations on canonical big-endian values, for the tests. */
static void x8_fe_op(uint8_t r[LV_LANES][32], const uint8_t a[LV_LANES][32],
                     const uint8_t b[LV_LANES][32], int op)
{
    x8_fe fa, fb, fr;
    x8_fe_from_bytes(&fa, a);
    x8_fe_from_bytes(&fb, b);
    x8_to_mont(&fa, &fa);
    x8_to_mont(&fb, &fb);
    switch (op) {
    case 0: x8_mul(&fr, &fa, &fb); break;
    case 1: x8_sqr(&fr, &fa); break;
    case 2: x8_add(&fr, &fa, &fb); break;
    default: x8_sub(&fr, &fa, &fb); break;
    }
    x8_from_mont(&fr, &fr);
    x8_fe_to_bytes(r, &fr);
}

/* The entry points of p256_x8.h, in this file's form (lanes.h's LV_FORM):
 * psi_p256_x8_*_c or psi_p256_x8_*_ifma, from the one source. */
_Static_assert(PSI_X8_COMPRESS_MAX == X8_COMPRESS_GROUPS * PSI_X8_LANES,
               "p256_x8.h and p256_x8_impl.h agree on the batch");

void LV_FORM(psi_p256_x8_mul)(uint8_t xyz[PSI_X8_LANES][96], const uint8_t k[PSI_X8_LANES][32],
                              const uint8_t x[PSI_X8_LANES][32], const uint8_t y[PSI_X8_LANES][32])
{
    x8_mul_ws ws;
    x8_scalar_mul(&ws, xyz, k, x, y);
    sodium_memzero(&ws, sizeof ws);
    lv_burn_stack();
}

void LV_FORM(psi_p256_x8_decompress)(uint8_t y[PSI_X8_LANES][32], uint8_t ok[PSI_X8_LANES],
                                     const uint8_t x[PSI_X8_LANES][32],
                                     const uint8_t odd[PSI_X8_LANES])
{
    x8_decompress(y, ok, x, odd);
    lv_burn_stack();
}

void LV_FORM(psi_p256_x8_sswu)(uint8_t x[PSI_X8_LANES][32], uint8_t y[PSI_X8_LANES][32],
                               uint8_t inf[PSI_X8_LANES], const uint8_t u0[PSI_X8_LANES][32],
                               const uint8_t u1[PSI_X8_LANES][32])
{
    x8_sswu_hash(x, y, inf, u0, u1);
    lv_burn_stack();
}

int LV_FORM(psi_p256_x8_compress)(uint8_t *out, const uint8_t *xyz, size_t n)
{
    if (n % PSI_X8_LANES != 0) /* x8_compress bounds the number of groups */
        return 0;
    x8_compress_ws ws;
    int r = x8_compress(&ws, out, xyz, n / PSI_X8_LANES);
    sodium_memzero(&ws, sizeof ws);
    lv_burn_stack();
    return r;
}

void LV_FORM(psi_p256_x8_fe_op)(uint8_t r[PSI_X8_LANES][32], const uint8_t a[PSI_X8_LANES][32],
                                const uint8_t b[PSI_X8_LANES][32], int op)
{
    x8_fe_op(r, a, b, op);
}

#endif /* PSI_P256_X8_IMPL_H */
