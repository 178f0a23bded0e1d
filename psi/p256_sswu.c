/* RFC 9380 hashing to P-256, suites P256_XMD:SHA-256_SSWU_RO_ and _NU_:
 * expand_message_xmd with SHA-256 (§5.3.1), hash_to_field with L = 48
 * (§5.2), the simplified SWU map in the straight-line form of appendix
 * F.2 with sqrt_ratio for q = 3 mod 4 (F.2.1.2), the complete projective
 * addition of Renes, Costello and Batina (2016, algorithm 4, a = -3), and
 * one inversion to affine.  Cofactor 1, so no clearing.
 *
 * The mapped points stay projective, (X : Y : Z) with x = X/Z and
 * y = Y/Z, since the map's x is a fraction anyway: a hash costs two
 * exponentiations (the roots) and one inversion.
 *
 * Constant time in the message bytes: SHA-256 is, and past it no branch
 * or memory index depends on a field value.  The map's exceptional case
 * (Z^2 u^4 + Z u^2 = 0) is a masked select, and the addition is complete,
 * so Q0 = Q1 or Q0 = -Q1 takes the same path.  Lengths and the DST are
 * public. */
#include <stdint.h>
#include <string.h>

#include <sodium.h>

#include "p256.h"
#include "p256_field_ops.h"

/* Bytes per field element in hash_to_field: ceil((256 + 128) / 8). */
#define H2F_L 48

typedef struct proj {
    fe x, y, z;
} proj;

/* Z = -10, the suite's non-square, and sqrt(-Z) = sqrt(10) (either root
 * serves: the sign of y is fixed at the end of the map), big-endian. */
static const uint8_t sswu_z_bytes[32] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf5};
static const uint8_t sswu_c2_bytes[32] = {
    0xda, 0x53, 0x8e, 0x3b, 0xe1, 0xd8, 0x9b, 0x99,
    0xc9, 0x78, 0xfc, 0x67, 0x51, 0x80, 0xaa, 0xb2,
    0x7b, 0x8d, 0x1f, 0xf8, 0x4c, 0x55, 0xd5, 0xb6,
    0x2c, 0xcd, 0x34, 0x27, 0xe4, 0x33, 0xc4, 0x7f};

/* The map's constants in Montgomery form: Z, sqrt(-Z) and A = -3. */
typedef struct sswu_const {
    fe z, c2, a;
} sswu_const;

/* Everything one hash computes from the message, wiped as a whole. */
typedef struct sswu_state {
    uint8_t uniform[2 * H2F_L];
    fe u;
    proj q[2];
    sswu_const k;
} sswu_state;

int psi_p256_expand_xmd(uint8_t *out, size_t out_len, const uint8_t *msg, size_t msg_len,
                        const uint8_t *dst, size_t dst_len)
{
    static const uint8_t z_pad[64] = {0}; /* Z_pad: SHA-256's block size */
    crypto_hash_sha256_state st;
    uint8_t b0[crypto_hash_sha256_BYTES], bi[crypto_hash_sha256_BYTES] = {0};
    if (out_len > PSI_P256_XMD_MAX_BYTES || dst_len == 0 || dst_len > 255) {
        if (out_len > 0)
            memset(out, 0, out_len);
        return 0;
    }
    /* l_i_b_str || I2OSP(0, 1), and DST_prime's length byte. */
    const uint8_t lib[3] = {(uint8_t)(out_len >> 8), (uint8_t)out_len, 0};
    const uint8_t dst_len_byte = (uint8_t)dst_len;
    crypto_hash_sha256_init(&st);
    crypto_hash_sha256_update(&st, z_pad, sizeof z_pad);
    if (msg_len > 0)
        crypto_hash_sha256_update(&st, msg, msg_len);
    crypto_hash_sha256_update(&st, lib, sizeof lib);
    crypto_hash_sha256_update(&st, dst, dst_len);
    crypto_hash_sha256_update(&st, &dst_len_byte, 1);
    crypto_hash_sha256_final(&st, b0);
    /* b_i = H(strxor(b_0, b_(i-1)) || I2OSP(i, 1) || DST_prime), with
     * b_0 xor 0 = b_0 for b_1 since bi starts at zero. */
    for (size_t off = 0, i = 1; off < out_len; off += sizeof bi, i++) {
        const uint8_t ib = (uint8_t)i;
        for (size_t j = 0; j < sizeof bi; j++)
            bi[j] ^= b0[j];
        crypto_hash_sha256_init(&st);
        crypto_hash_sha256_update(&st, bi, sizeof bi);
        crypto_hash_sha256_update(&st, &ib, 1);
        crypto_hash_sha256_update(&st, dst, dst_len);
        crypto_hash_sha256_update(&st, &dst_len_byte, 1);
        crypto_hash_sha256_final(&st, bi);
        size_t n = out_len - off < sizeof bi ? out_len - off : sizeof bi;
        memcpy(out + off, bi, n);
    }
    sodium_memzero(&st, sizeof st);
    sodium_memzero(b0, sizeof b0);
    sodium_memzero(bi, sizeof bi);
    return 1;
}

/* u = OS2IP(b[0..48)) mod p, Montgomery form (§5.2): zero-padded to the
 * 64 bytes psi_p256_reduce_wide takes. */
static void hash_to_field(fe u, const uint8_t b[H2F_L])
{
    uint8_t wide[64] = {0}, canon[32];
    memcpy(wide + sizeof wide - H2F_L, b, H2F_L);
    psi_p256_reduce_wide(canon, wide);
    fe_from_bytes(u, canon);
    fe_to_mont(u, u);
    sodium_memzero(wide, sizeof wide);
    sodium_memzero(canon, sizeof canon);
}

/* All ones when the canonical value of a is odd (sgn0, §4.1), else 0. */
static fe_limb fe_sgn0(const fe a)
{
    fe t;
    fe_from_mont(t, a);
    return (fe_limb)0 - (t[0] & 1);
}

/* r = a^((p-3)/4) = a^(2^254 - 2^222 + 2^190 + 2^94 - 1): 32 ones, 31
 * zeros, a one, 96 zeros, then 94 ones = 32 + 32 + 30. */
static void fe_pow_c1(fe r, const fe a)
{
    fe x32, x30, t;
    fe_pow_ones(x32, x30, a);
    fe_sqr_n(t, x32, 32);
    fe_mul(t, t, a);         /* bits 222..253 and 190, relative */
    fe_sqr_n(t, t, 128);
    fe_mul(t, t, x32);       /* bits 62..93, relative */
    fe_sqr_n(t, t, 32);
    fe_mul(t, t, x32);       /* bits 30..61 */
    fe_sqr_n(t, t, 30);
    fe_mul(r, t, x30);       /* bits 0..29 */
}

/* sqrt_ratio(u, v) for q = 3 mod 4 (F.2.1.2), v != 0: returns all ones
 * and y = sqrt(u / v) when u / v is a square, else 0 and
 * y = sqrt(Z u / v). */
static fe_limb sqrt_ratio(fe y, const fe u, const fe v, const sswu_const *k)
{
    fe t1, t2, t3, y1, y2;
    fe_sqr(t1, v);
    fe_mul(t2, u, v);
    fe_mul(t1, t1, t2);
    fe_pow_c1(y1, t1);
    fe_mul(y1, y1, t2);      /* (u v^3)^c1 u v */
    fe_mul(y2, y1, k->c2);
    fe_sqr(t3, y1);
    fe_mul(t3, t3, v);
    fe_limb is_qr = fe_mask_equal(t3, u);
    fe_select(y, y2, y1, is_qr);
    return is_qr;
}

/* q = map_to_curve_simple_swu(u), F.2's steps in F.2's names, with x / tv4
 * left as the projective (x : y tv4 : tv4); tv4 is never 0. */
static void sswu_map(proj *q, const fe u, const sswu_const *k)
{
    fe tv1, tv2, tv3, tv4, tv5, tv6, x, y, y1;
    fe_sqr(tv1, u);
    fe_mul(tv1, k->z, tv1);
    fe_sqr(tv2, tv1);
    fe_add(tv2, tv2, tv1);
    fe_add(tv3, tv2, fe_one);
    fe_mul(tv3, fe_b, tv3);
    fe_sub(tv5, fe_zero, tv2);
    fe_select(tv4, k->z, tv5, ~fe_mask_zero(tv2)); /* CMOV(Z, -tv2, tv2 != 0) */
    fe_mul(tv4, k->a, tv4);
    fe_sqr(tv2, tv3);
    fe_sqr(tv6, tv4);
    fe_mul(tv5, k->a, tv6);
    fe_add(tv2, tv2, tv5);
    fe_mul(tv2, tv2, tv3);
    fe_mul(tv6, tv6, tv4);
    fe_mul(tv5, fe_b, tv6);
    fe_add(tv2, tv2, tv5);                         /* gx1 tv4^3 */
    fe_mul(x, tv1, tv3);
    fe_limb is_square = sqrt_ratio(y1, tv2, tv6, k);
    fe_mul(y, tv1, u);
    fe_mul(y, y, y1);
    fe_select(x, x, tv3, is_square);
    fe_select(y, y, y1, is_square);
    fe_sub(tv5, fe_zero, y);
    fe_select(y, y, tv5, fe_sgn0(u) ^ fe_sgn0(y)); /* sgn0(y) = sgn0(u) */
    memcpy(q->x, x, sizeof x);
    fe_mul(q->y, y, tv4);
    memcpy(q->z, tv4, sizeof tv4);
}

/* r = a + b, complete for every input pair including the identity
 * (0 : 1 : 0), doubling and inverses: Renes, Costello, Batina, "Complete
 * addition formulas for prime order elliptic curves" (2016), algorithm 4
 * (a = -3), 12M + 2 mb, step by step.  r may alias a or b. */
static void proj_add(proj *r, const proj *a, const proj *b)
{
    fe t0, t1, t2, t3, t4, x3, y3, z3;
    fe_mul(t0, a->x, b->x);
    fe_mul(t1, a->y, b->y);
    fe_mul(t2, a->z, b->z);
    fe_add(t3, a->x, a->y);
    fe_add(t4, b->x, b->y);
    fe_mul(t3, t3, t4);
    fe_add(t4, t0, t1);
    fe_sub(t3, t3, t4);
    fe_add(t4, a->y, a->z);
    fe_add(x3, b->y, b->z);
    fe_mul(t4, t4, x3);
    fe_add(x3, t1, t2);
    fe_sub(t4, t4, x3);
    fe_add(x3, a->x, a->z);
    fe_add(y3, b->x, b->z);
    fe_mul(x3, x3, y3);
    fe_add(y3, t0, t2);
    fe_sub(y3, x3, y3);
    fe_mul(z3, fe_b, t2);
    fe_sub(x3, y3, z3);
    fe_add(z3, x3, x3);
    fe_add(x3, x3, z3);
    fe_sub(z3, t1, x3);
    fe_add(x3, t1, x3);
    fe_mul(y3, fe_b, y3);
    fe_add(t1, t2, t2);
    fe_add(t2, t1, t2);
    fe_sub(y3, y3, t2);
    fe_sub(y3, y3, t0);
    fe_add(t1, y3, y3);
    fe_add(y3, t1, y3);
    fe_add(t1, t0, t0);
    fe_add(t0, t1, t0);
    fe_sub(t0, t0, t2);
    fe_mul(t1, t4, y3);
    fe_mul(t2, t0, y3);
    fe_mul(y3, x3, z3);
    fe_add(r->y, y3, t2);
    fe_mul(x3, t3, x3);
    fe_sub(r->x, x3, t1);
    fe_mul(z3, t4, z3);
    fe_mul(t1, t3, t0);
    fe_add(r->z, z3, t1);
}

/* (x, y) = q in affine big-endian bytes.  Returns all ones when q is the
 * identity (Z = 0): then the inverse is 0 and so are x and y. */
static fe_limb proj_to_affine(uint8_t x[32], uint8_t y[32], const proj *q)
{
    fe zi, t;
    fe_inv(zi, q->z);
    fe_mul(t, q->x, zi);
    fe_from_mont(t, t);
    fe_to_bytes(x, t);
    fe_mul(t, q->y, zi);
    fe_from_mont(t, t);
    fe_to_bytes(y, t);
    return fe_mask_zero(q->z);
}

/* hash_to_curve (count 2) or encode_to_curve (count 1). */
static int sswu_hash_count(uint8_t x[32], uint8_t y[32], const uint8_t *msg, size_t msg_len,
                           const uint8_t *dst, size_t dst_len, int count)
{
    sswu_state s;
    fe_limb inf = ~(fe_limb)0;
    if (psi_p256_expand_xmd(s.uniform, (size_t)count * H2F_L, msg, msg_len, dst, dst_len)) {
        fe_from_bytes(s.k.z, sswu_z_bytes);
        fe_to_mont(s.k.z, s.k.z);
        fe_from_bytes(s.k.c2, sswu_c2_bytes);
        fe_to_mont(s.k.c2, s.k.c2);
        fe_sub(s.k.a, fe_zero, fe_three);
        for (int i = 0; i < count; i++) {
            hash_to_field(s.u, s.uniform + i * H2F_L);
            sswu_map(&s.q[i], s.u, &s.k);
        }
        if (count == 2)
            proj_add(&s.q[0], &s.q[0], &s.q[1]);
        inf = proj_to_affine(x, y, &s.q[0]);
    } else {
        memset(x, 0, 32);
        memset(y, 0, 32);
    }
    sodium_memzero(&s, sizeof s);
    burn_stack();
    /* Whether the sum was the identity is the caller's to reveal. */
    return (int)(~inf & 1);
}

int psi_p256_sswu_hash(uint8_t x[32], uint8_t y[32], const uint8_t *msg, size_t msg_len,
                       const uint8_t *dst, size_t dst_len)
{
    return sswu_hash_count(x, y, msg, msg_len, dst, dst_len, 2);
}

int psi_p256_sswu_encode(uint8_t x[32], uint8_t y[32], const uint8_t *msg, size_t msg_len,
                         const uint8_t *dst, size_t dst_len)
{
    return sswu_hash_count(x, y, msg, msg_len, dst, dst_len, 1);
}
