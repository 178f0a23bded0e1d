/* P-256 field arithmetic with 8 x 32-bit limbs, for targets without a
 * 64x64->128-bit multiply (wasm32, where OpenSSL's nistp256 calls __multi3
 * for every product).  Included by p256_field_ops.h only, which selects this file or
 * p256_field_4x64.h; both define the same fe_* names (see p256.c).
 *
 * Montgomery form with R = 2^256, always fully reduced to [0, p).  Since
 * p = -1 mod 2^32 the Montgomery factor of each reduction round is the low
 * limb itself, and m*p only touches limbs 0, 3, 6, 7 and 8
 * (p = 2^256 - 2^224 + 2^192 + 2^96 - 1), so the reduction is a column
 * pass of additions. */
#ifndef PSI_P256_FIELD_8X32_H
#define PSI_P256_FIELD_8X32_H

#include <stdint.h>

typedef uint32_t fe_limb;
#define FE_LIMBS 8
#define FE_LIMB_BITS 32
typedef fe_limb fe[FE_LIMBS];

static const uint32_t fe_p[8] = {0xffffffff, 0xffffffff, 0xffffffff, 0, 0, 0, 1, 0xffffffff};
/* R^2 and R^3 mod p, and R, 3R and bR mod p (1, 3 and b in Montgomery
 * form). */
static const uint32_t fe_r2[8] = {0x00000003, 0x00000000, 0xffffffff, 0xfffffffb,
                                  0xfffffffe, 0xffffffff, 0xfffffffd, 0x00000004};
static const uint32_t fe_r3[8] = {0x0000000a, 0xfffffffd, 0xfffffff7, 0xffffffed,
                                  0xfffffffc, 0x00000005, 0x00000001, 0x00000018};
static const uint32_t fe_one[8] = {0x00000001, 0x00000000, 0x00000000, 0xffffffff,
                                   0xffffffff, 0xffffffff, 0xfffffffe, 0x00000000};
static const uint32_t fe_three[8] = {0x00000003, 0x00000000, 0x00000000, 0xfffffffd,
                                     0xffffffff, 0xffffffff, 0xfffffffc, 0x00000002};
static const uint32_t fe_b[8] = {0x29c4bddf, 0xd89cdf62, 0x78843090, 0xacf005cd,
                                 0xf7212ed6, 0xe5a220ab, 0x04874834, 0xdc30061d};
static const uint32_t fe_zero[8] = {0};

#include "p256_field_ct.h"

/* d = a - b mod 2^256; returns the borrow, 0 or -1. */
static int64_t limbs_sub(uint32_t d[8], const uint32_t a[8], const uint32_t b[8])
{
    int64_t acc = 0;
    for (int i = 0; i < 8; i++) {
        acc += (int64_t)a[i] - b[i];
        d[i] = (uint32_t)acc;
        acc >>= 32;
    }
    return acc;
}

/* r = v mod p, given v = s + carry * 2^256 < 2p with carry 0 or 1. */
static void fe_final_sub(uint32_t r[8], const uint32_t s[8], int64_t carry)
{
    uint32_t d[8];
    int64_t borrow = limbs_sub(d, s, fe_p);
    /* borrow + carry is 0 when v >= p (keep d), -1 when v < p (keep s). */
    fe_select(r, d, s, (uint32_t)(borrow + carry));
}

/* Montgomery reduction: r = c / 2^256 mod p, where c = sum col[k] 2^(32k)
 * < p * 2^256 and each col[k] < 2^37.  Round i's factor m_i is the low
 * limb of column i; m_i * p adds m_i to columns i+3, i+6, i+8 and takes it
 * from i+7 (the -m_i of column i clears its low limb).  Signed carries. */
static void fe_reduce(uint32_t r[8], const uint64_t col[16])
{
    int64_t m[8], acc, carry = 0;
    uint32_t s[8];
    UNROLL
    for (int i = 0; i < 16; i++) {
        acc = carry + (int64_t)col[i];
        if (i >= 3 && i - 3 < 8)
            acc += m[i - 3];
        if (i >= 6 && i - 6 < 8)
            acc += m[i - 6];
        if (i >= 7 && i - 7 < 8)
            acc -= m[i - 7];
        if (i >= 8)
            acc += m[i - 8];
        if (i < 8)
            m[i] = acc & 0xffffffff;
        else
            s[i - 8] = (uint32_t)acc;
        carry = acc >> 32; /* arithmetic: floor division of a signed sum */
    }
    fe_final_sub(r, s, carry);
}

/* r = a * b / R mod p.  Products are summed by column in 32-bit halves,
 * so no carry chain runs through the 64 multiplications. */
static void fe_mul(uint32_t r[8], const uint32_t a[8], const uint32_t b[8])
{
    uint64_t lo[16] = {0}, hi[17] = {0}, col[16];
    UNROLL
    for (int i = 0; i < 8; i++) {
        UNROLL
        for (int j = 0; j < 8; j++) {
            uint64_t t = (uint64_t)a[i] * b[j];
            lo[i + j] += t & 0xffffffff;
            hi[i + j + 1] += t >> 32;
        }
    }
    UNROLL
    for (int k = 0; k < 16; k++)
        col[k] = lo[k] + hi[k];
    fe_reduce(r, col);
}

/* r = a^2 / R mod p: 28 cross products doubled, plus 8 squares. */
static void fe_sqr(uint32_t r[8], const uint32_t a[8])
{
    uint64_t lo[16] = {0}, hi[17] = {0}, col[16];
    UNROLL
    for (int i = 0; i < 8; i++) {
        UNROLL
        for (int j = i + 1; j < 8; j++) {
            uint64_t t = (uint64_t)a[i] * a[j];
            lo[i + j] += t & 0xffffffff;
            hi[i + j + 1] += t >> 32;
        }
    }
    UNROLL
    for (int k = 0; k < 16; k++)
        col[k] = 2 * (lo[k] + hi[k]);
    UNROLL
    for (int i = 0; i < 8; i++) {
        uint64_t t = (uint64_t)a[i] * a[i];
        col[2 * i] += t & 0xffffffff;
        col[2 * i + 1] += t >> 32;
    }
    fe_reduce(r, col);
}

/* r = d + p when borrow is -1, r = d when it is 0 (mod 2^256). */
static void fe_add_p_on_borrow(uint32_t r[8], const uint32_t d[8], int64_t borrow)
{
    uint32_t mask = ct_barrier((uint32_t)borrow);
    int64_t acc = 0;
    for (int i = 0; i < 8; i++) {
        acc += (int64_t)d[i] + (fe_p[i] & mask);
        r[i] = (uint32_t)acc;
        acc >>= 32;
    }
}

static void fe_add(uint32_t r[8], const uint32_t a[8], const uint32_t b[8])
{
    uint32_t d[8];
    int64_t acc = 0;
    for (int i = 0; i < 8; i++) {
        acc += (int64_t)a[i] + b[i] - fe_p[i];
        d[i] = (uint32_t)acc;
        acc >>= 32;
    }
    /* a + b - p is in [-p, p): on a borrow (acc = -1) add p back. */
    fe_add_p_on_borrow(r, d, acc);
}

static void fe_sub(uint32_t r[8], const uint32_t a[8], const uint32_t b[8])
{
    uint32_t d[8];
    /* On borrow (-1) add p back. */
    fe_add_p_on_borrow(r, d, limbs_sub(d, a, b));
}

#endif /* PSI_P256_FIELD_8X32_H */
