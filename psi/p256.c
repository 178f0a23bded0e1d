/* P-256 variable-base scalar multiplication with 32-bit limbs
 * (PROTOCOL.md §1, §4), for targets without a 64x64->128-bit multiply
 * (wasm32, where OpenSSL's nistp256 calls __multi3 for every product).
 *
 * Field: 8 x 32-bit little-endian limbs, Montgomery form with R = 2^256,
 * always fully reduced to [0, p).  Since p = -1 mod 2^32 the Montgomery
 * factor of each reduction round is the low limb itself, and m*p only
 * touches limbs 0, 3, 6, 7 and 8 (p = 2^256 - 2^224 + 2^192 + 2^96 - 1),
 * so the reduction is a column pass of additions.
 *
 * Points: Jacobian coordinates for a = -3 (EFD dbl-2001-b, add-2007-bl).
 * Scalar: made odd (k or n - k), recoded into 64 odd signed digits of
 * 4-bit windows (Joye-Tunstall regular recoding), so no digit is zero and
 * the accumulator is never infinity; see scalar_mul for why only the
 * last addition can meet the doubling case.
 *
 * Constant time: no branch or memory index depends on the scalar or on
 * field values; table entries are selected by scanning with masks. */
#include <string.h>

#include <sodium.h>

#include "p256.h"

#if defined(__clang__)
#define UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__) && __GNUC__ >= 8
#define UNROLL _Pragma("GCC unroll 16")
#else
#define UNROLL
#endif

typedef struct jac {
    uint32_t x[8], y[8], z[8];
} jac;

static const uint32_t fe_p[8] = {0xffffffff, 0xffffffff, 0xffffffff, 0, 0, 0, 1, 0xffffffff};
static const uint32_t sc_n[8] = {0xfc632551, 0xf3b9cac2, 0xa7179e84, 0xbce6faad,
                                 0xffffffff, 0xffffffff, 0x00000000, 0xffffffff};
/* R^2 mod p, and R, 3R and bR mod p (1, 3 and b in Montgomery form). */
static const uint32_t fe_r2[8] = {0x00000003, 0x00000000, 0xffffffff, 0xfffffffb,
                                  0xfffffffe, 0xffffffff, 0xfffffffd, 0x00000004};
static const uint32_t fe_one[8] = {0x00000001, 0x00000000, 0x00000000, 0xffffffff,
                                   0xffffffff, 0xffffffff, 0xfffffffe, 0x00000000};
static const uint32_t fe_three[8] = {0x00000003, 0x00000000, 0x00000000, 0xfffffffd,
                                     0xffffffff, 0xffffffff, 0xfffffffc, 0x00000002};
static const uint32_t fe_b[8] = {0x29c4bddf, 0xd89cdf62, 0x78843090, 0xacf005cd,
                                 0xf7212ed6, 0xe5a220ab, 0x04874834, 0xdc30061d};
static const uint32_t fe_zero[8] = {0};

static void fe_from_bytes(uint32_t r[8], const uint8_t b[32])
{
    for (int i = 0; i < 8; i++) {
        const uint8_t *q = b + 28 - 4 * i;
        r[i] = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
    }
}

static void fe_to_bytes(uint8_t b[32], const uint32_t a[8])
{
    for (int i = 0; i < 8; i++) {
        uint8_t *q = b + 28 - 4 * i;
        q[0] = (uint8_t)(a[i] >> 24);
        q[1] = (uint8_t)(a[i] >> 16);
        q[2] = (uint8_t)(a[i] >> 8);
        q[3] = (uint8_t)a[i];
    }
}

/* Zero, read through a volatile lvalue: XORed into every mask before it is
 * used, so that the compiler cannot see that the mask is 0 or all ones and
 * turn a masked select into a branch on a secret.  clang -O3 (and so emcc)
 * does exact that to table_lookup without it: valgrind reported the key
 * reaching a conditional jump.  libsecp256k1 guards its selects the same way. */
static volatile uint32_t ct_opaque_zero;

static uint32_t ct_barrier(uint32_t mask)
{
    return mask ^ ct_opaque_zero;
}

/* All ones when a == 0, else 0. */
static uint32_t mask_is_zero(uint32_t a)
{
    return ct_barrier(((a | (0u - a)) >> 31) - 1u);
}

/* r = mask ? b : a, limb by limb; mask is 0 or all ones. */
static void fe_select(uint32_t r[8], const uint32_t a[8], const uint32_t b[8], uint32_t mask)
{
    mask = ct_barrier(mask);
    for (int i = 0; i < 8; i++)
        r[i] = (a[i] & ~mask) | (b[i] & mask);
}

static uint32_t fe_mask_zero(const uint32_t a[8])
{
    uint32_t acc = 0;
    for (int i = 0; i < 8; i++)
        acc |= a[i];
    return mask_is_zero(acc);
}

static uint32_t fe_mask_equal(const uint32_t a[8], const uint32_t b[8])
{
    uint32_t acc = 0;
    for (int i = 0; i < 8; i++)
        acc |= a[i] ^ b[i];
    return mask_is_zero(acc);
}

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

static void fe_sqr_n(uint32_t r[8], const uint32_t a[8], int n)
{
    fe_sqr(r, a);
    for (int i = 1; i < n; i++)
        fe_sqr(r, r);
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

static void fe_to_mont(uint32_t r[8], const uint32_t a[8])
{
    fe_mul(r, a, fe_r2);
}

static void fe_from_mont(uint32_t r[8], const uint32_t a[8])
{
    static const uint32_t one[8] = {1};
    fe_mul(r, a, one);
}

/* x^(2^32 - 1) into x32, and x^(2^30 - 1) into x30 (for inversion). */
static void fe_pow_ones(uint32_t x32[8], uint32_t x30[8], const uint32_t x[8])
{
    uint32_t x2[8], x3[8], x6[8], x12[8], x15[8];
    fe_sqr(x2, x);
    fe_mul(x2, x2, x);       /* 2^2 - 1 */
    fe_sqr(x3, x2);
    fe_mul(x3, x3, x);       /* 2^3 - 1 */
    fe_sqr_n(x6, x3, 3);
    fe_mul(x6, x6, x3);      /* 2^6 - 1 */
    fe_sqr_n(x12, x6, 6);
    fe_mul(x12, x12, x6);    /* 2^12 - 1 */
    fe_sqr_n(x15, x12, 3);
    fe_mul(x15, x15, x3);    /* 2^15 - 1 */
    fe_sqr_n(x30, x15, 15);
    fe_mul(x30, x30, x15);   /* 2^30 - 1 */
    fe_sqr_n(x32, x30, 2);
    fe_mul(x32, x32, x2);    /* 2^32 - 1 */
}

/* r = a^(p-2); p - 2 = ffffffff 00000001 00000000 00000000 00000000
 * ffffffff ffffffff fffffffd in 32-bit words. */
static void fe_inv(uint32_t r[8], const uint32_t a[8])
{
    uint32_t x32[8], x30[8], t[8];
    fe_pow_ones(x32, x30, a);
    fe_sqr_n(t, x32, 32);
    fe_mul(t, t, a);         /* ffffffff 00000001 */
    fe_sqr_n(t, t, 128);
    fe_mul(t, t, x32);       /* ... 00000000 x3, ffffffff */
    fe_sqr_n(t, t, 32);
    fe_mul(t, t, x32);       /* ffffffff */
    fe_sqr_n(t, t, 30);
    fe_mul(t, t, x30);       /* 30 ones ... */
    fe_sqr_n(t, t, 2);
    fe_mul(r, t, a);         /* ... then 01: fffffffd */
}

/* r = a^((p+1)/4) = a^(2^254 - 2^222 + 2^190 + 2^94). */
static void fe_sqrt_pow(uint32_t r[8], const uint32_t a[8])
{
    uint32_t x32[8], x30[8], t[8];
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
    uint32_t delta[8], gamma[8], beta[8], alpha[8], t[8], u[8], x3[8];
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
static uint32_t jac_add(jac *r, const jac *a, const jac *b)
{
    uint32_t z1z1[8], z2z2[8], u1[8], u2[8], s1[8], s2[8], h[8], i[8], j[8], rr[8],
        v[8], x3[8], y3[8], t[8];
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
    const uint32_t *t = (const uint32_t *)table;
    uint32_t *o = (uint32_t *)r;
    memset(r, 0, sizeof *r);
    for (uint32_t e = 0; e < 8; e++) {
        uint32_t mask = mask_is_zero(e ^ idx);
        UNROLL
        for (int w = 0; w < 24; w++)
            o[w] |= t[24 * e + w] & mask;
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
    uint32_t ny[8];
    table_lookup(r, table, (abs - 1) >> 1);
    fe_sub(ny, fe_zero, r->y);
    fe_select(r->y, r->y, ny, neg);
}

/* Secret-dependent state of one multiplication, wiped as a whole. */
typedef struct mul_state {
    uint32_t k[9], nk[8];
    jac table[8], acc, q, dq;
    uint32_t zi[8], zi2[8], x[8], y[8];
} mul_state;

/* Sets s->k to the odd one of k and n - k; returns 1 when it is n - k
 * (then k * P = -(s->k * P)). */
static uint32_t scalar_make_odd(mul_state *s, const uint8_t k[32])
{
    fe_from_bytes(s->k, k);
    s->k[8] = 0;
    int64_t acc = 0;
    for (int i = 0; i < 8; i++) {
        acc += (int64_t)sc_n[i] - s->k[i];
        s->nk[i] = (uint32_t)acc;
        acc >>= 32;
    }
    uint32_t even = (s->k[0] & 1) ^ 1;
    fe_select(s->k, s->k, s->nk, 0u - even);
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
            uint32_t same = jac_add(&s->acc, &s->acc, &s->q);
            fe_select(s->acc.x, s->acc.x, s->dq.x, same);
            fe_select(s->acc.y, s->acc.y, s->dq.y, same);
            fe_select(s->acc.z, s->acc.z, s->dq.z, same);
        }
    }
}

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

/* The field and point functions leave secret-dependent temporaries in
 * their dead stack frames; this overwrites that region once per
 * multiplication (called at the depth scalar_mul ran at). */
static NOINLINE void burn_stack(void)
{
    uint8_t buf[4096];
    sodium_memzero(buf, sizeof buf);
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
static uint32_t fe_sqrt(uint32_t r[8], const uint32_t a[8])
{
    uint32_t t[8];
    fe_sqrt_pow(r, a);
    fe_sqr(t, r);
    return fe_mask_equal(t, a) & ~fe_mask_zero(a);
}

int psi_p256_sqrt(uint8_t y[32], const uint8_t t[32])
{
    uint32_t a[8], r[8];
    fe_from_bytes(a, t);
    fe_to_mont(a, a);
    uint32_t ok = fe_sqrt(r, a);
    fe_from_mont(r, r);
    fe_to_bytes(y, r);
    return (int)(ok & 1);
}

int psi_p256_decompress(uint8_t y[32], const uint8_t x[32], int odd)
{
    uint32_t xm[8], t[8], r[8], nr[8];
    fe_from_bytes(xm, x);
    fe_to_mont(xm, xm);
    fe_sqr(t, xm);
    fe_sub(t, t, fe_three);
    fe_mul(t, t, xm);
    fe_add(t, t, fe_b);                   /* x^3 - 3x + b */
    uint32_t ok = fe_sqrt(r, t);
    fe_from_mont(r, r);
    fe_sub(nr, fe_zero, r);
    fe_select(r, r, nr, 0u - ((r[0] ^ (uint32_t)odd) & 1));
    fe_select(r, fe_zero, r, ok);
    fe_to_bytes(y, r);
    return (int)(ok & 1);
}

void psi_p256_fe_mul(uint8_t r[32], const uint8_t a[32], const uint8_t b[32])
{
    uint32_t x[8], y[8];
    fe_from_bytes(x, a);
    fe_from_bytes(y, b);
    fe_to_mont(x, x);
    fe_mul(x, x, y); /* (aR) b / R = a b */
    fe_to_bytes(r, x);
}

void psi_p256_fe_sqr(uint8_t r[32], const uint8_t a[32])
{
    uint32_t x[8];
    fe_from_bytes(x, a);
    fe_to_mont(x, x);
    fe_sqr(x, x);
    fe_from_mont(x, x);
    fe_to_bytes(r, x);
}

void psi_p256_fe_inv(uint8_t r[32], const uint8_t a[32])
{
    uint32_t x[8];
    fe_from_bytes(x, a);
    fe_to_mont(x, x);
    fe_inv(x, x);
    fe_from_mont(x, x);
    fe_to_bytes(r, x);
}
