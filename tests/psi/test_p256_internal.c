/* psi/p256.c against OpenSSL: field multiplication, squaring, inversion,
 * square root and the 512-bit reduction of the hash against BN on edge and
 * random values; batched Jacobian-to-compressed conversion against
 * point2oct; decompression against
 * EC_POINT_set_compressed_coordinates; scalar multiplication against
 * EC_POINT_mul for edge scalars (1, 2, n - 1, n - 2 ... where the last
 * addition meets the doubling case), structured points and random pairs.
 * Built in every configuration, and again (tests/psi/meson.build) for each
 * other field implementation the machine can compile.  Random cases print their seed
 * (PSI_TEST_SEED replays); PSI_TEST_ITERS sets the number of random
 * scalar multiplications (default 10,000). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>

#include "p256.h"
#include "test_util.h"

static const char P_HEX[] = "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff";

/* OpenSSL objects shared by the tests of this file. */
typedef struct fixture {
    EC_GROUP *g;
    BN_CTX *ctx;
    BIGNUM *p, *n;
    uint64_t rng;
} fixture;

static fixture fx;

static void rand_bytes(uint8_t *b, size_t len)
{
    for (size_t i = 0; i < len; i++)
        b[i] = (uint8_t)(tu_rand(&fx.rng) >> 56);
}

/* 32 bytes whose 32-bit words are each 0, ffffffff, 1, fffffffe or random. */
static void pattern_bytes(uint8_t b[32])
{
    static const uint32_t words[4] = {0, 0xffffffff, 1, 0xfffffffe};
    for (int i = 0; i < 8; i++) {
        uint64_t r = tu_rand(&fx.rng);
        uint32_t w = (r & 7) < 4 ? words[r & 3] : (uint32_t)(r >> 32);
        for (int j = 0; j < 4; j++)
            b[4 * i + j] = (uint8_t)(w >> (24 - 8 * j));
    }
}

static BIGNUM *bn_of(const uint8_t b[32])
{
    BIGNUM *r = BN_bin2bn(b, 32, NULL);
    assert_non_null(r);
    return r;
}

static void bytes_of(uint8_t b[32], const BIGNUM *v)
{
    assert_int_equal(BN_bn2binpad(v, b, 32), 32);
}

/* Field edge values (all below p), big-endian hex. */
static const char *const FIELD_EDGES[] = {
    "00", "01", "02", "03",
    "ffffffff00000001000000000000000000000000fffffffffffffffffffffffe", /* p - 1 */
    "ffffffff00000001000000000000000000000000fffffffffffffffffffffffd", /* p - 2 */
    "ffffffff00000001000000000000000000000000fffffffffffffffffffffffc", /* p - 3 */
    "8000000000000000000000000000000000000000000000000000000000000000", /* 2^255 */
    "7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "ffffffff00000000ffffffffffffffffffffffffffffffffffffffffffffffff",
    "ffffffff00000000000000000000000000000000000000000000000000000000",
    "0000000100000000000000000000000000000000000000000000000000000000", /* 2^224 */
    "0000000000000001000000000000000000000000000000000000000000000000", /* 2^192 */
    "0000000000000000000000000000000100000000000000000000000000000000", /* 2^128 */
    "0000000000000000000000000000000000000001000000000000000000000000", /* 2^96 */
    "00000000000000000000000000000000000000000000000000000000ffffffff",
    "00000000ffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "fffffffeffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b", /* b */
};
#define N_FIELD_EDGES (sizeof FIELD_EDGES / sizeof FIELD_EDGES[0])
#define N_FIELD_RANDOM 2000

/* The i-th field test value: the edges, then random and word-pattern
 * values below p. */
static void field_value(uint8_t b[32], size_t i)
{
    if (i < N_FIELD_EDGES) {
        BIGNUM *v = NULL;
        assert_true(BN_hex2bn(&v, FIELD_EDGES[i]) > 0);
        bytes_of(b, v);
        BN_free(v);
        return;
    }
    for (;;) {
        if (i % 2)
            pattern_bytes(b);
        else
            rand_bytes(b, 32);
        BIGNUM *v = bn_of(b);
        int below = BN_cmp(v, fx.p) < 0;
        BN_free(v);
        if (below)
            return;
    }
}

static void check_mul(const uint8_t a[32], const uint8_t b[32])
{
    uint8_t got[32], want[32];
    BIGNUM *x = bn_of(a), *y = bn_of(b), *r = BN_new();
    assert_true(BN_mod_mul(r, x, y, fx.p, fx.ctx));
    bytes_of(want, r);
    psi_p256_fe_mul(got, a, b);
    assert_memory_equal(got, want, 32);
    if (memcmp(a, b, 32) == 0) {
        psi_p256_fe_sqr(got, a);
        assert_memory_equal(got, want, 32);
    }
    BN_free(x);
    BN_free(y);
    BN_free(r);
}

static void test_p256_field_mul_sqr(void **state)
{
    (void)state;
    uint8_t a[32], b[32];
    for (size_t i = 0; i < N_FIELD_EDGES; i++) {
        field_value(a, i);
        check_mul(a, a);
        for (size_t j = 0; j < N_FIELD_EDGES; j++) {
            field_value(b, j);
            check_mul(a, b);
        }
    }
    for (size_t i = 0; i < N_FIELD_RANDOM; i++) {
        field_value(a, N_FIELD_EDGES + i);
        field_value(b, N_FIELD_EDGES + i + 1);
        check_mul(a, b);
        check_mul(a, a);
        field_value(b, i % N_FIELD_EDGES);
        check_mul(a, b);
    }
}

static void test_p256_field_inv(void **state)
{
    (void)state;
    uint8_t a[32], got[32], want[32];
    for (size_t i = 0; i < N_FIELD_EDGES + N_FIELD_RANDOM / 4; i++) {
        field_value(a, i);
        BIGNUM *x = bn_of(a), *r = BN_new();
        if (BN_is_zero(x))
            BN_zero(r); /* a^(p-2) = 0 for 0 */
        else
            assert_non_null(BN_mod_inverse(r, x, fx.p, fx.ctx));
        bytes_of(want, r);
        psi_p256_fe_inv(got, a);
        assert_memory_equal(got, want, 32);
        BN_free(x);
        BN_free(r);
    }
}

static void test_p256_field_sqrt(void **state)
{
    (void)state;
    BIGNUM *e = NULL, *half = NULL;
    assert_true(BN_hex2bn(&e, P_HEX) > 0);
    assert_true(BN_add_word(e, 1) && BN_rshift(e, e, 2)); /* (p + 1) / 4 */
    half = BN_dup(fx.p);
    assert_true(BN_sub_word(half, 1) && BN_rshift1(half, half)); /* (p - 1) / 2 */
    uint8_t a[32], got[32], want[32];
    int squares = 0;
    for (size_t i = 0; i < N_FIELD_EDGES + N_FIELD_RANDOM / 4; i++) {
        field_value(a, i);
        /* Every value, and the square of every value. */
        for (int sq = 0; sq < 2; sq++) {
            BIGNUM *t = bn_of(a), *r = BN_new(), *leg = BN_new();
            if (sq) {
                assert_true(BN_mod_sqr(t, t, fx.p, fx.ctx));
                bytes_of(a, t);
            }
            assert_true(BN_mod_exp(r, t, e, fx.p, fx.ctx));
            assert_true(BN_mod_exp(leg, t, half, fx.p, fx.ctx));
            bytes_of(want, r);
            int ok = psi_p256_sqrt(got, a);
            assert_int_equal(ok, BN_is_one(leg));
            assert_memory_equal(got, want, 32);
            squares += ok;
            BN_free(t);
            BN_free(r);
            BN_free(leg);
        }
    }
    assert_true(squares > (int)N_FIELD_RANDOM / 4);
    BN_free(e);
    BN_free(half);
}

/* Decompression against OpenSSL for both parities. */
static void check_decompress(const uint8_t x[32])
{
    EC_POINT *pt = EC_POINT_new(fx.g);
    BIGNUM *bx = bn_of(x), *by = BN_new();
    uint8_t got[32], want[32];
    for (int odd = 0; odd < 2; odd++) {
        int ok = EC_POINT_set_compressed_coordinates(fx.g, pt, bx, odd, fx.ctx);
        assert_int_equal(psi_p256_decompress(got, x, odd), ok);
        if (ok) {
            assert_true(EC_POINT_get_affine_coordinates(fx.g, pt, NULL, by, fx.ctx));
            bytes_of(want, by);
            assert_memory_equal(got, want, 32);
        } else {
            memset(want, 0, 32);
            assert_memory_equal(got, want, 32);
        }
    }
    BN_free(bx);
    BN_free(by);
    EC_POINT_free(pt);
}

static void test_p256_decompress(void **state)
{
    (void)state;
    uint8_t x[32];
    for (size_t i = 0; i < N_FIELD_EDGES + N_FIELD_RANDOM / 4; i++) {
        field_value(x, i);
        check_decompress(x);
    }
}

/* out = ser(k * P) by both implementations. */
static void check_scalar_mul(const BIGNUM *k, const EC_POINT *pt)
{
    BIGNUM *x = BN_new(), *y = BN_new();
    EC_POINT *q = EC_POINT_new(fx.g);
    uint8_t kb[32], xb[32], yb[32], got[33], want[33];
    assert_true(EC_POINT_get_affine_coordinates(fx.g, pt, x, y, fx.ctx));
    bytes_of(xb, x);
    bytes_of(yb, y);
    bytes_of(kb, k);
    assert_true(EC_POINT_mul(fx.g, q, NULL, pt, k, fx.ctx));
    assert_int_equal(EC_POINT_point2oct(fx.g, q, POINT_CONVERSION_COMPRESSED, want, 33, fx.ctx),
                     33);
    psi_p256_mul_compressed(got, kb, xb, yb);
    if (memcmp(got, want, 33) != 0) {
        char *hk = BN_bn2hex(k), *hx = BN_bn2hex(x);
        print_error("k = %s, x = %s\n", hk, hx);
        OPENSSL_free(hk);
        OPENSSL_free(hx);
    }
    assert_memory_equal(got, want, 33);
    BN_free(x);
    BN_free(y);
    EC_POINT_free(q);
}

/* Points for the edge scalars: G, -G, 2G, and random multiples of G. */
static EC_POINT *test_point(int i)
{
    EC_POINT *pt = EC_POINT_new(fx.g);
    BIGNUM *r = BN_new();
    assert_non_null(pt);
    switch (i) {
    case 0:
        assert_true(EC_POINT_copy(pt, EC_GROUP_get0_generator(fx.g)));
        break;
    case 1:
        assert_true(EC_POINT_copy(pt, EC_GROUP_get0_generator(fx.g)));
        assert_true(EC_POINT_invert(fx.g, pt, fx.ctx));
        break;
    case 2:
        assert_true(BN_set_word(r, 2));
        assert_true(EC_POINT_mul(fx.g, pt, r, NULL, NULL, fx.ctx));
        break;
    default: {
        uint8_t b[32];
        rand_bytes(b, 32);
        assert_non_null(BN_bin2bn(b, 32, r));
        assert_true(BN_nnmod(r, r, fx.n, fx.ctx));
        if (BN_is_zero(r))
            BN_one(r);
        assert_true(EC_POINT_mul(fx.g, pt, r, NULL, NULL, fx.ctx));
    }
    }
    BN_free(r);
    return pt;
}

static void test_p256_mul_edge_scalars(void **state)
{
    (void)state;
    static const char *const fixed[] = {
        "8000000000000000000000000000000000000000000000000000000000000000",
        "7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "00ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "ffffffff00000000ffffffffffffffff00000000000000000000000000000000",
        "fffffffe00000000ffffffffffffffffffffffffffffffffffffffffffffffff",
        "7fffffff800000007fffffffffffffffde737d56d38bcf4279dce5617e3192a8", /* (n-1)/2 */
        "7fffffff800000007fffffffffffffffde737d56d38bcf4279dce5617e3192a9", /* (n+1)/2 */
        "0000000000000000000000000000000100000000000000000000000000000000",
        "1111111111111111111111111111111111111111111111111111111111111111",
        "0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f",
    };
    BIGNUM *k = BN_new();
    for (int p = 0; p < 6; p++) {
        EC_POINT *pt = test_point(p);
        for (unsigned long s = 1; s <= 64; s++) {
            assert_true(BN_set_word(k, s)); /* 1 .. 64 */
            check_scalar_mul(k, pt);
            assert_true(BN_sub(k, fx.n, k)); /* n - 1 .. n - 64 */
            check_scalar_mul(k, pt);
        }
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
            assert_true(BN_hex2bn(&k, fixed[i]) > 0);
            check_scalar_mul(k, pt);
        }
        for (int i = 0; i < 200; i++) { /* word patterns below n */
            uint8_t b[32];
            pattern_bytes(b);
            assert_non_null(BN_bin2bn(b, 32, k));
            if (BN_is_zero(k) || BN_cmp(k, fx.n) >= 0)
                continue;
            check_scalar_mul(k, pt);
        }
        EC_POINT_free(pt);
    }
    BN_free(k);
}

/* Points whose x has 0, 1, fffffffe or ffffffff words, and their negations. */
static void test_p256_mul_pattern_points(void **state)
{
    (void)state;
    EC_POINT *pt = EC_POINT_new(fx.g);
    BIGNUM *x = BN_new(), *k = BN_new();
    int found = 0;
    for (size_t i = 0; found < 300 && i < 100000; i++) {
        uint8_t b[32];
        if (i < N_FIELD_EDGES)
            field_value(b, i);
        else
            pattern_bytes(b);
        assert_non_null(BN_bin2bn(b, 32, x));
        if (BN_cmp(x, fx.p) >= 0 ||
            !EC_POINT_set_compressed_coordinates(fx.g, pt, x, (int)(i & 1), fx.ctx))
            continue;
        found++;
        uint8_t kb[32];
        rand_bytes(kb, 32);
        assert_non_null(BN_bin2bn(kb, 32, k));
        assert_true(BN_nnmod(k, k, fx.n, fx.ctx));
        if (BN_is_zero(k))
            BN_one(k);
        check_scalar_mul(k, pt);
        assert_true(BN_sub(k, fx.n, k));
        if (!BN_is_zero(k))
            check_scalar_mul(k, pt);
        assert_true(BN_set_word(k, 2));
        assert_true(BN_sub(k, fx.n, k));
        check_scalar_mul(k, pt);
    }
    assert_true(found >= 100);
    BN_free(x);
    BN_free(k);
    EC_POINT_free(pt);
}

static unsigned long iters(void)
{
    const char *env = getenv("PSI_TEST_ITERS");
    return env != NULL ? strtoul(env, NULL, 10) : 10000;
}

static void test_p256_mul_random(void **state)
{
    (void)state;
    BIGNUM *k = BN_new();
    EC_POINT *pt = NULL;
    unsigned long n = iters();
    for (unsigned long i = 0; i < n; i++) {
        if (i % 4 == 0) { /* a new point now and then */
            EC_POINT_free(pt);
            pt = test_point(3 + (int)i);
        }
        uint8_t kb[32];
        rand_bytes(kb, 32);
        assert_non_null(BN_bin2bn(kb, 32, k));
        if (BN_is_zero(k) || BN_cmp(k, fx.n) >= 0)
            continue;
        check_scalar_mul(k, pt);
    }
    EC_POINT_free(pt);
    BN_free(k);
}

/* psi_p256_reduce_wide against BN_nnmod: 64-byte edges (0, p, p - 1,
 * 2^512 - 1, p * 2^256, multiples of p, each half p or 2^256 - 1) and
 * random and word-pattern halves. */
static void check_reduce_wide(const uint8_t wide[64])
{
    uint8_t got[32], want[32];
    BIGNUM *w = BN_bin2bn(wide, 64, NULL), *r = BN_new();
    assert_non_null(w);
    assert_true(BN_nnmod(r, w, fx.p, fx.ctx));
    bytes_of(want, r);
    psi_p256_reduce_wide(got, wide);
    assert_memory_equal(got, want, 32);
    BN_free(w);
    BN_free(r);
}

static void test_p256_reduce_wide(void **state)
{
    (void)state;
    uint8_t wide[64], p[32], pm1[32];
    bytes_of(p, fx.p);
    memcpy(pm1, p, 32);
    pm1[31]--;
    const uint8_t *halves[4] = {NULL, p, pm1, NULL};
    for (int hi = 0; hi < 4; hi++) {
        for (int lo = 0; lo < 4; lo++) {
            /* NULL picks 0 (index 0) or all ones (index 3). */
            if (halves[hi] != NULL)
                memcpy(wide, halves[hi], 32);
            else
                memset(wide, hi == 0 ? 0x00 : 0xff, 32);
            if (halves[lo] != NULL)
                memcpy(wide + 32, halves[lo], 32);
            else
                memset(wide + 32, lo == 0 ? 0x00 : 0xff, 32);
            check_reduce_wide(wide);
        }
    }
    for (int i = 0; i < N_FIELD_RANDOM; i++) {
        if (i % 2) {
            pattern_bytes(wide);
            pattern_bytes(wide + 32);
        } else {
            rand_bytes(wide, 64);
        }
        check_reduce_wide(wide);
    }
}

/* psi_p256_jacobian_compress against point2oct: batches of 1, 2, 17 and
 * PSI_P256_BATCH_MAX random multiples of G, each given in Jacobian form
 * with a random Z (X = x Z^2, Y = y Z^3), Z = 1 included; then a batch
 * that is one too long and one with a Z of 0 must fail and leave zeros. */
static void jacobian_of(uint8_t xyz[96], const EC_POINT *pt, int z_is_one)
{
    BIGNUM *x = BN_new(), *y = BN_new(), *z = BN_new(), *t = BN_new();
    assert_true(EC_POINT_get_affine_coordinates(fx.g, pt, x, y, fx.ctx));
    if (z_is_one) {
        BN_one(z);
    } else {
        uint8_t zb[32];
        do {
            field_value(zb, N_FIELD_EDGES + 1);
            assert_non_null(BN_bin2bn(zb, 32, z));
        } while (BN_is_zero(z));
    }
    assert_true(BN_mod_sqr(t, z, fx.p, fx.ctx));
    assert_true(BN_mod_mul(x, x, t, fx.p, fx.ctx));
    assert_true(BN_mod_mul(t, t, z, fx.p, fx.ctx));
    assert_true(BN_mod_mul(y, y, t, fx.p, fx.ctx));
    bytes_of(xyz, x);
    bytes_of(xyz + 32, y);
    bytes_of(xyz + 64, z);
    BN_free(x);
    BN_free(y);
    BN_free(z);
    BN_free(t);
}

static void test_p256_jacobian_compress(void **state)
{
    (void)state;
    static uint8_t xyz[(PSI_P256_BATCH_MAX + 1) * 96];
    static uint8_t got[(PSI_P256_BATCH_MAX + 1) * 33], want[(PSI_P256_BATCH_MAX + 1) * 33];
    static const size_t sizes[] = {1, 2, 17, PSI_P256_BATCH_MAX};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        for (size_t i = 0; i < n; i++) {
            EC_POINT *pt = test_point(i < 3 ? (int)i : 3 + (int)i);
            jacobian_of(xyz + 96 * i, pt, i % 5 == 0);
            assert_int_equal(EC_POINT_point2oct(fx.g, pt, POINT_CONVERSION_COMPRESSED,
                                                want + 33 * i, 33, fx.ctx), 33);
            EC_POINT_free(pt);
        }
        memset(got, 0xaa, sizeof got);
        assert_int_equal(psi_p256_jacobian_compress(got, xyz, n), 1);
        assert_memory_equal(got, want, 33 * n);
        assert_int_equal(got[33 * n], 0xaa); /* nothing past the batch */
    }
    uint8_t zeros[33 * 4] = {0};
    assert_int_equal(psi_p256_jacobian_compress(got, xyz, PSI_P256_BATCH_MAX + 1), 0);
    memset(xyz + 96 * 2 + 64, 0, 32); /* the third point's Z */
    memset(got, 0xaa, sizeof got);
    assert_int_equal(psi_p256_jacobian_compress(got, xyz, 4), 0);
    assert_memory_equal(got, zeros, sizeof zeros);
    assert_int_equal(psi_p256_jacobian_compress(got, xyz, 0), 1);
}

static int setup(void **state)
{
    (void)state;
    fx.g = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    fx.ctx = BN_CTX_new();
    fx.p = NULL;
    fx.n = BN_dup(EC_GROUP_get0_order(fx.g));
    fx.rng = tu_seed("p256");
    if (fx.rng == 0)
        fx.rng = 1; /* xorshift needs a non-zero state */
    return fx.g == NULL || fx.ctx == NULL || fx.n == NULL || BN_hex2bn(&fx.p, P_HEX) <= 0;
}

static int teardown(void **state)
{
    (void)state;
    BN_free(fx.p);
    BN_free(fx.n);
    BN_CTX_free(fx.ctx);
    EC_GROUP_free(fx.g);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_p256_field_mul_sqr),
        cmocka_unit_test(test_p256_field_inv),
        cmocka_unit_test(test_p256_field_sqrt),
        cmocka_unit_test(test_p256_decompress),
        cmocka_unit_test(test_p256_mul_edge_scalars),
        cmocka_unit_test(test_p256_mul_pattern_points),
        cmocka_unit_test(test_p256_mul_random),
        cmocka_unit_test(test_p256_reduce_wide),
        cmocka_unit_test(test_p256_jacobian_compress),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
