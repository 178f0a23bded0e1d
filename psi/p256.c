/* P-256 variable-base scalar multiplication, point decompression and the
 * field helpers of the OpenMined hash (PROTOCOL.md §1, §3, §4.3).
 *
 * Field: see p256_field_ops.h (limb size, Montgomery form, inversion),
 * shared with p256_sswu.c.
 *
 * Points: Jacobian coordinates for a = -3 (EFD dbl-2001-b, add-2007-bl).
 * Scalar: made odd (k or n - k), recoded into 64 odd signed digits of
 * 4-bit windows (Joye-Tunstall regular recoding), so no digit is zero and
 * the accumulator is never infinity; see scalar_mul for why only the
 * last addition can meet the doubling case.
 *
 * Constant time: no branch or memory index depends on the scalar or on
 * field values; table entries are selected by scanning with masks. */
#include <stdint.h>
#include <string.h>

#include <sodium.h>

#include "p256.h"
#include "p256_field_ops.h"

typedef struct jac {
    fe x, y, z;
} jac;

/* The group order n, in the 32-bit limbs of the scalar code. */
static const uint32_t sc_n[8] = {0xfc632551, 0xf3b9cac2, 0xa7179e84, 0xbce6faad,
                                 0xffffffff, 0xffffffff, 0x00000000, 0xffffffff};

/* r = a^((p+1)/4) = a^(2^254 - 2^222 + 2^190 + 2^94). */
static void fe_sqrt_pow(fe r, const fe a)
{
    fe x32, x30, t;
    fe_pow_ones(x32, x30, a);
    fe_sqr_n(t, x32, 32);
    fe_mul(t, t, a);         /* bits 222..253 and 190, relative */
    fe_sqr_n(t, t, 96);
    fe_mul(t, t, a);         /* bit 94 */
    fe_sqr_n(r, t, 94);
}

/* dbl-2001-b: 3M + 5S; a = -3.  Correct for every point but infinity
 * (P-256 has no point of order 2). */
static void jac_dbl(jac *r, const jac *a)
{
    fe delta, gamma, beta, alpha, t, u, x3;
    fe_sqr(delta, a->z);
    fe_sqr(gamma, a->y);
    fe_mul(beta, a->x, gamma);
    fe_sub(t, a->x, delta);
    fe_add(u, a->x, delta);
    fe_mul(t, t, u);
    fe_add(alpha, t, t);
    fe_add(alpha, alpha, t);              /* 3(x - delta)(x + delta) */
    fe_add(beta, beta, beta);
    fe_add(beta, beta, beta);             /* 4 beta */
    fe_sqr(x3, alpha);
    fe_sub(x3, x3, beta);
    fe_sub(x3, x3, beta);                 /* alpha^2 - 8 beta */
    fe_add(t, a->y, a->z);
    fe_sqr(t, t);
    fe_sub(t, t, gamma);
    fe_sub(r->z, t, delta);               /* (y + z)^2 - gamma - delta */
    fe_sqr(gamma, gamma);
    fe_add(gamma, gamma, gamma);
    fe_add(gamma, gamma, gamma);
    fe_add(gamma, gamma, gamma);          /* 8 gamma^2 */
    fe_sub(t, beta, x3);
    fe_mul(t, alpha, t);
    fe_sub(r->y, t, gamma);
    memcpy(r->x, x3, sizeof x3);
}

/* add-2007-bl: 11M + 5S.  Returns all ones when H = 0, i.e. when a and b
 * have the same x (then r is wrong: the caller must rule the case out or
 * replace r); neither input may be infinity.  r may alias a or b. */
static fe_limb jac_add(jac *r, const jac *a, const jac *b)
{
    fe z1z1, z2z2, u1, u2, s1, s2, h, i, j, rr, v, x3, y3, t;
    fe_sqr(z1z1, a->z);
    fe_sqr(z2z2, b->z);
    fe_mul(u1, a->x, z2z2);
    fe_mul(u2, b->x, z1z1);
    fe_mul(s1, a->y, b->z);
    fe_mul(s1, s1, z2z2);
    fe_mul(s2, b->y, a->z);
    fe_mul(s2, s2, z1z1);
    fe_sub(h, u2, u1);
    fe_add(i, h, h);
    fe_sqr(i, i);                         /* (2h)^2 */
    fe_mul(j, h, i);
    fe_sub(rr, s2, s1);
    fe_add(rr, rr, rr);
    fe_mul(v, u1, i);
    fe_sqr(x3, rr);
    fe_sub(x3, x3, j);
    fe_sub(x3, x3, v);
    fe_sub(x3, x3, v);                    /* rr^2 - j - 2v */
    fe_sub(t, v, x3);
    fe_mul(y3, rr, t);
    fe_mul(t, s1, j);
    fe_add(t, t, t);
    fe_sub(y3, y3, t);                    /* rr(v - x3) - 2 s1 j */
    fe_add(t, a->z, b->z);
    fe_sqr(t, t);
    fe_sub(t, t, z1z1);
    fe_sub(t, t, z2z2);
    fe_mul(r->z, t, h);                   /* ((z1 + z2)^2 - z1z1 - z2z2) h */
    memcpy(r->x, x3, sizeof x3);
    memcpy(r->y, y3, sizeof y3);
    return fe_mask_zero(h);
}

/* r = table[idx] for a public table, reading every entry. */
static void table_lookup(jac *r, const jac table[8], uint32_t idx)
{
    enum { WORDS = 3 * FE_LIMBS };
    const fe_limb *t = (const fe_limb *)table;
    fe_limb *o = (fe_limb *)r;
    memset(r, 0, sizeof *r);
    for (uint32_t e = 0; e < 8; e++) {
        fe_limb mask = mask_is_zero((fe_limb)(e ^ idx));
        UNROLL
        for (int w = 0; w < WORDS; w++)
            o[w] |= t[WORDS * e + w] & mask;
    }
}

/* Bits 4i .. 4i+4 of k (9 limbs, the last zero). */
static uint32_t window5(const uint32_t k[9], int i)
{
    int bit = 4 * i;
    uint64_t w = (uint64_t)k[bit / 32 + 1] << 32 | k[bit / 32];
    return (uint32_t)(w >> (bit % 32)) & 31;
}

/* r = d * P for the signed odd digit d = (window | 1) - 16 in [-15, 15]. */
static void table_lookup_signed(jac *r, const jac table[8], uint32_t window)
{
    uint32_t v = (window | 1) - 16;
    uint32_t neg = 0u - (v >> 31);
    uint32_t abs = (v ^ neg) - neg;
    fe ny;
    table_lookup(r, table, (abs - 1) >> 1);
    fe_sub(ny, fe_zero, r->y);
    fe_select(r->y, r->y, ny, (fe_limb)0 - (neg & 1));
}

/* Secret-dependent state of one multiplication, wiped as a whole. */
typedef struct mul_state {
    uint32_t k[9], nk[8];
    jac table[8], acc, q, dq;
    fe zi, zi2, x, y;
} mul_state;

/* Sets s->k to the odd one of k and n - k; returns 1 when it is n - k
 * (then k * P = -(s->k * P)). */
static uint32_t scalar_make_odd(mul_state *s, const uint8_t k[32])
{
    for (int i = 0; i < 8; i++) {
        const uint8_t *q = k + 28 - 4 * i;
        s->k[i] = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
    }
    s->k[8] = 0;
    int64_t acc = 0;
    for (int i = 0; i < 8; i++) {
        acc += (int64_t)sc_n[i] - s->k[i];
        s->nk[i] = (uint32_t)acc;
        acc >>= 32;
    }
    uint32_t even = (s->k[0] & 1) ^ 1;
    uint32_t mask = (uint32_t)ct_barrier(0u - (fe_limb)even);
    for (int i = 0; i < 8; i++)
        s->k[i] = (s->k[i] & ~mask) | (s->nk[i] & mask);
    return even;
}

/* s->acc = s->k * P for P = s->table[0], s->k odd in [1, n - 1].
 * Digits d_0..d_62 = (window | 1) - 16, d_63 = (k >> 252) | 1, so that
 * the partial sums from the top are k_i = (k >> 4i) | 1, all in [1, n).
 * Adding d_i P to 16 k_{i+1} P meets the same x only if k_i = 2 d_i
 * mod n: impossible by parity and size for i >= 1, possible for i = 0
 * (e.g. k = n - 2), where the doubling of d_0 P is selected instead. */
static void scalar_mul(mul_state *s)
{
    jac two;
    jac_dbl(&two, &s->table[0]);
    for (int e = 1; e < 8; e++)
        jac_add(&s->table[e], &s->table[e - 1], &two); /* (2e + 1) P */
    table_lookup(&s->acc, s->table, (window5(s->k, 63) | 1) >> 1);
    for (int i = 62; i >= 0; i--) {
        for (int d = 0; d < 4; d++)
            jac_dbl(&s->acc, &s->acc);
        table_lookup_signed(&s->q, s->table, window5(s->k, i));
        if (i > 0) {
            jac_add(&s->acc, &s->acc, &s->q);
        } else {
            jac_dbl(&s->dq, &s->q);
            fe_limb same = jac_add(&s->acc, &s->acc, &s->q);
            fe_select(s->acc.x, s->acc.x, s->dq.x, same);
            fe_select(s->acc.y, s->acc.y, s->dq.y, same);
            fe_select(s->acc.z, s->acc.z, s->dq.z, same);
        }
    }
}

void psi_p256_mul_compressed(uint8_t out[33], const uint8_t k[32], const uint8_t x[32],
                             const uint8_t y[32])
{
    mul_state s;
    uint32_t flip = scalar_make_odd(&s, k);
    fe_from_bytes(s.x, x);
    fe_from_bytes(s.y, y);
    fe_to_mont(s.table[0].x, s.x);
    fe_to_mont(s.table[0].y, s.y);
    memcpy(s.table[0].z, fe_one, sizeof fe_one);
    scalar_mul(&s);
    fe_inv(s.zi, s.acc.z);
    fe_sqr(s.zi2, s.zi);
    fe_mul(s.x, s.acc.x, s.zi2);
    fe_mul(s.y, s.acc.y, s.zi2);
    fe_mul(s.y, s.y, s.zi);
    fe_from_mont(s.x, s.x);
    fe_from_mont(s.y, s.y);
    /* -(x, y) = (x, p - y), and p - y has the other parity (y != 0). */
    out[0] = (uint8_t)(0x02 | ((s.y[0] ^ flip) & 1));
    fe_to_bytes(out + 1, s.x);
    sodium_memzero(&s, sizeof s);
    burn_stack();
}

/* Montgomery-form root: returns all ones when a is a non-zero square. */
static fe_limb fe_sqrt(fe r, const fe a)
{
    fe t;
    fe_sqrt_pow(r, a);
    fe_sqr(t, r);
    return fe_mask_equal(t, a) & ~fe_mask_zero(a);
}

int psi_p256_sqrt(uint8_t y[32], const uint8_t t[32])
{
    fe a, r;
    fe_from_bytes(a, t);
    fe_to_mont(a, a);
    fe_limb ok = fe_sqrt(r, a);
    fe_from_mont(r, r);
    fe_to_bytes(y, r);
    return (int)(ok & 1);
}

int psi_p256_decompress(uint8_t y[32], const uint8_t x[32], int odd)
{
    fe xm, t, r, nr;
    fe_from_bytes(xm, x);
    fe_to_mont(xm, xm);
    fe_sqr(t, xm);
    fe_sub(t, t, fe_three);
    fe_mul(t, t, xm);
    fe_add(t, t, fe_b);                   /* x^3 - 3x + b */
    fe_limb ok = fe_sqrt(r, t);
    fe_from_mont(r, r);
    fe_sub(nr, fe_zero, r);
    fe_select(r, r, nr, (fe_limb)0 - ((r[0] ^ (fe_limb)odd) & 1));
    fe_select(r, fe_zero, r, ok);
    fe_to_bytes(y, r);
    return (int)(ok & 1);
}

void psi_p256_fe_mul(uint8_t r[32], const uint8_t a[32], const uint8_t b[32])
{
    fe x, y;
    fe_from_bytes(x, a);
    fe_from_bytes(y, b);
    fe_to_mont(x, x);
    fe_mul(x, x, y); /* (aR) b / R = a b */
    fe_to_bytes(r, x);
}

void psi_p256_fe_sqr(uint8_t r[32], const uint8_t a[32])
{
    fe x;
    fe_from_bytes(x, a);
    fe_to_mont(x, x);
    fe_sqr(x, x);
    fe_from_mont(x, x);
    fe_to_bytes(r, x);
}

void psi_p256_fe_inv(uint8_t r[32], const uint8_t a[32])
{
    fe x;
    fe_from_bytes(x, a);
    fe_to_mont(x, x);
    fe_inv(x, x);
    fe_from_mont(x, x);
    fe_to_bytes(r, x);
}

void psi_p256_reduce_wide(uint8_t x[32], const uint8_t wide[64])
{
    fe hi, lo;
    fe_from_bytes(hi, wide);
    fe_from_bytes(lo, wide + 32);
    /* hi, lo < 2^256 = R and fe_r3, fe_r2 < p, so each product is below
     * p R, as fe_mul needs: hi R^3 / R = (hi 2^256) R, lo R^2 / R = lo R. */
    fe_mul(hi, hi, fe_r3);
    fe_mul(lo, lo, fe_r2);
    fe_add(hi, hi, lo);
    fe_from_mont(hi, hi);
    fe_to_bytes(x, hi);
}

int psi_p256_jacobian_compress(uint8_t *out, const uint8_t *xyz, size_t n)
{
    /* Montgomery's trick: one inversion for the batch.  pre[i] is the
     * product of z_0..z_i; walking back, inv holds (z_0..z_i)^-1. */
    struct {
        fe z[PSI_P256_BATCH_MAX], pre[PSI_P256_BATCH_MAX];
        fe inv, zi, zi2, x, y;
    } s;
    if (n == 0)
        return 1;
    if (n > PSI_P256_BATCH_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        fe_from_bytes(s.z[i], xyz + 96 * i + 64);
        fe_to_mont(s.z[i], s.z[i]);
        if (i == 0)
            memcpy(s.pre[0], s.z[0], sizeof(fe));
        else
            fe_mul(s.pre[i], s.pre[i - 1], s.z[i]);
    }
    /* A zero z (infinity) makes the product zero.  The engine never
     * produces one; refuse rather than write garbage. */
    fe_limb bad = fe_mask_zero(s.pre[n - 1]);
    fe_inv(s.inv, s.pre[n - 1]);
    for (size_t i = n; i-- > 0;) {
        if (i > 0) {
            fe_mul(s.zi, s.inv, s.pre[i - 1]);
            fe_mul(s.inv, s.inv, s.z[i]);
        } else {
            memcpy(s.zi, s.inv, sizeof(fe));
        }
        fe_sqr(s.zi2, s.zi);
        fe_from_bytes(s.x, xyz + 96 * i);
        fe_from_bytes(s.y, xyz + 96 * i + 32);
        /* X and Y are plain and zi, zi2 in Montgomery form, so each
         * product's 1/R cancels the R of zi: x = X zi^2, y = Y zi^3. */
        fe_mul(s.x, s.x, s.zi2);
        fe_mul(s.y, s.y, s.zi2);
        fe_mul(s.y, s.y, s.zi);
        uint8_t *o = out + 33 * i;
        o[0] = (uint8_t)(0x02 | (s.y[0] & 1));
        fe_to_bytes(o + 1, s.x);
    }
    sodium_memzero(&s, sizeof s);
    /* Without a branch: whether a Z was 0 is the caller's to reveal. */
    uint8_t keep = (uint8_t)~(bad & 0xff);
    for (size_t i = 0; i < 33 * n; i++)
        out[i] &= keep;
    return (int)(~bad & 1);
}
