/* The eight-lane P-256 code (psi/p256_x8_*.c) against OpenSSL, in both of
 * its forms: plain C always, AVX-512 IFMA where the CPU has it (said
 * plainly when skipped).  Field operations over random and edge values;
 * scalar multiplications over random and edge scalars and points, lanes
 * of one batch mixing them; the batch compression against p256.c's.
 *
 * Usage: test_p256_x8 [BATCHES [FIELD_BATCHES]] (defaults 300 and 20000:
 * 2,400 multiplications and 160,000 field operations per form; the closing
 * note of issue 24 gives a run with millions). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>
#include <sodium.h>

#include "cpu.h"
#include "p256.h"
#include "p256_x8.h"

#define L PSI_X8_LANES

typedef void (*mul_fn)(uint8_t xyz[L][96], const uint8_t k[L][32], const uint8_t x[L][32],
                       const uint8_t y[L][32]);
typedef void (*dec_fn)(uint8_t y[L][32], uint8_t ok[L], const uint8_t x[L][32],
                       const uint8_t odd[L]);
typedef void (*sswu_fn)(uint8_t x[L][32], uint8_t y[L][32], uint8_t inf[L],
                        const uint8_t u0[L][32], const uint8_t u1[L][32]);
typedef void (*fe_fn)(uint8_t r[L][32], const uint8_t a[L][32], const uint8_t b[L][32], int op);

static EC_GROUP *group;
static BN_CTX *bn;
static BIGNUM *bn_p, *bn_n;
static int failures;

static void fail(const char *what, int lane, const uint8_t *a, size_t alen)
{
    fprintf(stderr, "FAIL %s, lane %d:", what, lane);
    for (size_t i = 0; i < alen; i++)
        fprintf(stderr, "%02x", a[i]);
    fprintf(stderr, "\n");
    if (++failures > 20)
        exit(1);
}

static void be32(uint8_t out[32], const BIGNUM *v)
{
    if (BN_bn2binpad(v, out, 32) != 32)
        abort();
}

/* A field element: random, or one of the edge values by index. */
static void field_value(uint8_t out[32], unsigned pick)
{
    BIGNUM *v = BN_new();
    switch (pick % 12) {
    case 0: BN_zero(v); break;
    case 1: BN_one(v); break;
    case 2: BN_set_word(v, 2); break;
    case 3: BN_sub(v, bn_p, BN_value_one()); break;
    case 4: BN_copy(v, bn_p); BN_sub_word(v, 2); break;
    case 5: BN_set_bit(v, 255); break;
    case 6: BN_set_bit(v, 224); BN_sub_word(v, 1); break;
    case 7: BN_set_bit(v, 52 * (1 + pick / 12 % 4)); BN_sub_word(v, 1); break;
    default: {
        uint8_t wide[64];
        randombytes_buf(wide, sizeof wide);
        psi_p256_reduce_wide(out, wide);
        BN_free(v);
        return;
    }
    }
    be32(out, v);
    BN_free(v);
}

static void check_field(const char *name, fe_fn fn, long batches)
{
    uint8_t a[L][32], b[L][32], r[L][32], want[32];
    BIGNUM *ba = BN_new(), *bb = BN_new(), *br = BN_new();
    for (long it = 0; it < batches; it++) {
        for (int l = 0; l < L; l++) {
            field_value(a[l], (unsigned)(it * L + l) * 7 + (it < 64 ? 0 : 8));
            field_value(b[l], (unsigned)(it * L + l) * 5 + 3 + (it < 64 ? 0 : 8));
        }
        for (int op = 0; op < 4; op++) {
            fn(r, a, b, op);
            for (int l = 0; l < L; l++) {
                BN_bin2bn(a[l], 32, ba);
                BN_bin2bn(b[l], 32, bb);
                switch (op) {
                case 0: BN_mod_mul(br, ba, bb, bn_p, bn); break;
                case 1: BN_mod_sqr(br, ba, bn_p, bn); break;
                case 2: BN_mod_add(br, ba, bb, bn_p, bn); break;
                default: BN_mod_sub(br, ba, bb, bn_p, bn); break;
                }
                be32(want, br);
                if (memcmp(want, r[l], 32) != 0) {
                    char what[64];
                    snprintf(what, sizeof what, "%s field op %d, a", name, op);
                    fail(what, l, a[l], 32);
                }
            }
        }
    }
    BN_free(ba);
    BN_free(bb);
    BN_free(br);
}

/* Scalars: edge values by index, random otherwise.  Any 256-bit integer
 * is allowed; n + 30 makes the last addition a doubling (15 P + 15 P:
 * (n + 15) / 16 in the upper windows times 16 is 15 mod n). */
static void scalar_value(uint8_t out[32], unsigned pick)
{
    BIGNUM *v = BN_new();
    unsigned e = pick % 24;
    switch (e) {
    case 0: BN_one(v); break;
    case 1: BN_set_word(v, 2); break;
    case 2: BN_sub(v, bn_n, BN_value_one()); break;
    case 3: BN_copy(v, bn_n); BN_sub_word(v, 2); break;
    case 4: BN_copy(v, bn_n); break;                      /* identity */
    case 5: BN_zero(v); break;                            /* identity */
    case 6: BN_copy(v, bn_n); BN_add_word(v, 30); break;  /* doubling case */
    case 7: BN_set_bit(v, 4 * (pick / 24 % 64)); break;   /* 2^(4j): zero windows */
    case 8: BN_set_bit(v, pick / 24 % 256); BN_sub_word(v, 1); break;
    case 9: BN_set_bit(v, 255); break;
    case 10: BN_set_word(v, 15); break;
    case 11: memset(out, 0x11 * (pick / 24 % 16), 32); BN_free(v); return; /* one digit */
    default: randombytes_buf(out, 32); BN_free(v); return;
    }
    be32(out, v);
    BN_free(v);
}

/* A point: random multiples of G, G, -G, and points whose x is near p or
 * small (found by decompression), by index. */
static void point_value(uint8_t x[32], uint8_t y[32], unsigned pick)
{
    unsigned e = pick % 10;
    if (e < 3) {
        BIGNUM *k = BN_new(), *bx = BN_new(), *by = BN_new();
        EC_POINT *pt = EC_POINT_new(group);
        if (e == 2) {
            BN_rand_range(k, bn_n);
            BN_add_word(k, 1);
        } else {
            BN_one(k);
            if (e == 1)
                BN_sub(k, bn_n, k);
        }
        EC_POINT_mul(group, pt, k, NULL, NULL, bn);
        EC_POINT_get_affine_coordinates(group, pt, bx, by, bn);
        be32(x, bx);
        be32(y, by);
        EC_POINT_free(pt);
        BN_free(k);
        BN_free(bx);
        BN_free(by);
        return;
    }
    BIGNUM *v = BN_new();
    int near_p = e < 6;
    unsigned step = pick / 10 % 64;
    for (;;) {
        if (near_p) {
            BN_copy(v, bn_p);
            BN_sub_word(v, 1 + step);
        } else {
            BN_set_word(v, step);
        }
        be32(x, v);
        if (psi_p256_decompress(y, x, (int)(pick & 1)))
            break;
        step++;
    }
    BN_free(v);
}

static void check_mul(const char *name, mul_fn fn, long batches)
{
    uint8_t k[L][32], x[L][32], y[L][32], xyz[L][96], got[L][33], want[33];
    BIGNUM *bk = BN_new(), *bx = BN_new(), *by = BN_new();
    EC_POINT *pt = EC_POINT_new(group);
    for (long it = 0; it < batches; it++) {
        for (int l = 0; l < L; l++) {
            scalar_value(k[l], (unsigned)(it * L + l) * 3 + (it < 100 ? 0 : 12));
            point_value(x[l], y[l], (unsigned)(it * L + l) * 7 + (unsigned)it);
        }
        fn(xyz, k, x, y);
        for (int l = 0; l < L; l++) {
            BN_bin2bn(k[l], 32, bk);
            BN_bin2bn(x[l], 32, bx);
            BN_bin2bn(y[l], 32, by);
            if (!EC_POINT_set_affine_coordinates(group, pt, bx, by, bn) ||
                !EC_POINT_mul(group, pt, NULL, pt, bk, bn))
                abort();
            static const uint8_t zero[32];
            int inf = EC_POINT_is_at_infinity(group, pt);
            if (inf) {
                if (memcmp(xyz[l] + 64, zero, 32) != 0)
                    fail(name, l, k[l], 32);
                continue;
            }
            if (EC_POINT_point2oct(group, pt, POINT_CONVERSION_COMPRESSED, want, 33, bn) != 33)
                abort();
            if (!psi_p256_jacobian_compress(got[l], xyz[l], 1) || memcmp(got[l], want, 33) != 0)
                fail(name, l, k[l], 32);
        }
    }
    EC_POINT_free(pt);
    BN_free(bk);
    BN_free(bx);
    BN_free(by);
}

/* Decompression against psi_p256_decompress: random x (about half of
 * them abscissas), the edge values of field_value, both parities. */
static void check_decompress(const char *name, dec_fn fn, long batches)
{
    uint8_t x[L][32], y[L][32], odd[L], ok[L], want[32];
    for (long it = 0; it < batches; it++) {
        for (int l = 0; l < L; l++) {
            field_value(x[l], (unsigned)(it * L + l) * 3 + (it < 16 ? 0 : 8));
            odd[l] = (uint8_t)((it + l) & 1);
        }
        fn(y, ok, x, odd);
        for (int l = 0; l < L; l++) {
            int w = psi_p256_decompress(want, x[l], odd[l]);
            if (w != ok[l] || memcmp(want, y[l], 32) != 0)
                fail(name, l, x[l], 32);
        }
    }
}

/* The RFC 9380 hash against psi_p256_sswu_hash: messages of every length
 * up to 63 bytes, and field elements 0, 1, p - 1 (the map's exceptional
 * case is u = 0; its result must still match the one-value code). */
static void check_sswu(const char *name, sswu_fn fn, long batches)
{
    static const uint8_t dst[] = "shardpsi-test-P256_XMD:SHA-256_SSWU_RO_";
    uint8_t msg[L][64], u0[L][32], u1[L][32], x[L][32], y[L][32], inf[L], wx[32], wy[32];
    size_t mlen[L];
    for (long it = 0; it < batches; it++) {
        for (int l = 0; l < L; l++) {
            uint8_t uniform[96], wide[64] = {0};
            mlen[l] = (size_t)((it * L + l) % 64);
            randombytes_buf(msg[l], sizeof msg[l]);
            psi_p256_expand_xmd(uniform, 96, msg[l], mlen[l], dst, sizeof dst - 1);
            memcpy(wide + 16, uniform, 48);
            psi_p256_reduce_wide(u0[l], wide);
            memcpy(wide + 16, uniform + 48, 48);
            psi_p256_reduce_wide(u1[l], wide);
        }
        fn(x, y, inf, u0, u1);
        for (int l = 0; l < L; l++) {
            int ok = psi_p256_sswu_hash(wx, wy, msg[l], mlen[l], dst, sizeof dst - 1);
            if (ok == inf[l] || memcmp(wx, x[l], 32) != 0 || memcmp(wy, y[l], 32) != 0)
                fail(name, l, msg[l], mlen[l]);
        }
    }
    /* the map at u = 0, 1, p - 1 against encode: the sum map(u0) + map(u1) with
     * u0 = u1 is a doubling, checked against OpenSSL */
    for (int l = 0; l < L; l++) {
        field_value(u0[l], (unsigned)l % 5);
        memcpy(u1[l], u0[l], 32);
    }
    fn(x, y, inf, u0, u1);
    for (int l = 0; l < L; l++) {
        BIGNUM *bx = BN_new(), *by = BN_new();
        EC_POINT *pt = EC_POINT_new(group);
        BN_bin2bn(x[l], 32, bx);
        BN_bin2bn(y[l], 32, by);
        if (inf[l] || !EC_POINT_set_affine_coordinates(group, pt, bx, by, bn))
            fail(name, l, u0[l], 32); /* 2 map(u) is never the identity, and is on the curve */
        EC_POINT_free(pt);
        BN_free(bx);
        BN_free(by);
    }
}

/* Jacobian points for compression: point_value's affine points with Z
 * random, 1, p - 1 or small, X = x Z^2 and Y = y Z^3. */
static void jacobian_value(uint8_t xyz[96], unsigned pick)
{
    uint8_t x[32], y[32];
    point_value(x, y, pick);
    BIGNUM *bz = BN_new(), *t = BN_new(), *u = BN_new();
    switch (pick % 4) {
    case 0: BN_one(bz); break;
    case 1: BN_sub(bz, bn_p, BN_value_one()); break;
    case 2: BN_set_word(bz, 2 + pick % 7); break;
    default: BN_rand_range(bz, bn_p); if (BN_is_zero(bz)) BN_one(bz); break;
    }
    BN_mod_sqr(t, bz, bn_p, bn);
    BN_bin2bn(x, 32, u);
    BN_mod_mul(u, u, t, bn_p, bn);
    be32(xyz, u);
    BN_mod_mul(t, t, bz, bn_p, bn);
    BN_bin2bn(y, 32, u);
    BN_mod_mul(u, u, t, bn_p, bn);
    be32(xyz + 32, u);
    be32(xyz + 64, bz);
    BN_free(bz);
    BN_free(t);
    BN_free(u);
}

typedef int (*compress_fn)(uint8_t *out, const uint8_t *xyz, size_t n);

/* The lanes' batch compression against psi_p256_jacobian_compress for
 * every n from 8 to 64 in steps of 8; a zero Z in any one point makes
 * both return 0 with out zeroed; other n are refused. */
static void check_compress(const char *name, compress_fn fn, long rounds)
{
    enum { N = PSI_X8_COMPRESS_MAX };
    static uint8_t xyz[N][96], got[N][33], want[N][33];
    static const uint8_t zero[N][33];
    for (long it = 0; it < rounds; it++) {
        size_t n = L * (size_t)(1 + it % (N / L));
        for (size_t i = 0; i < n; i++)
            jacobian_value(xyz[i], (unsigned)(it * N + (long)i));
        int w = psi_p256_jacobian_compress(&want[0][0], &xyz[0][0], n);
        if (!w || fn(&got[0][0], &xyz[0][0], n) != 1 || memcmp(got, want, 33 * n) != 0)
            fail(name, (int)n, &xyz[0][0], 96);
        size_t at = (size_t)randombytes_uniform((uint32_t)n);
        memset(xyz[at] + 64, 0, 32);
        if (fn(&got[0][0], &xyz[0][0], n) != 0 || memcmp(got, zero, 33 * n) != 0)
            fail(name, (int)at, xyz[at], 96);
    }
    memset(got, 0xa5, sizeof got);
    if (fn(&got[0][0], &xyz[0][0], 12) != 0 || fn(&got[0][0], &xyz[0][0], N + L) != 0 ||
        got[0][0] != 0xa5 || fn(&got[0][0], &xyz[0][0], 0) != 1)
        fail(name, -1, &got[0][0], 1);
}

int main(int argc, char **argv)
{
    long batches = argc > 1 ? atol(argv[1]) : 300;
    long field_batches = argc > 2 ? atol(argv[2]) : 20000;
    if (sodium_init() < 0)
        return 1;
    group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    bn = BN_CTX_new();
    bn_p = BN_new();
    bn_n = BN_new();
    EC_GROUP_get_curve(group, bn_p, NULL, NULL, bn);
    EC_GROUP_get_order(group, bn_n, bn);

    check_field("plain C", psi_p256_x8_fe_op_c, field_batches);
    check_mul("plain C", psi_p256_x8_mul_c, batches);
    check_decompress("plain C decompress", psi_p256_x8_decompress_c, batches);
    check_sswu("plain C sswu", psi_p256_x8_sswu_c, batches / 4 + 1);
    check_compress("plain C compress", psi_p256_x8_compress_c, batches / 4 + 8);
    printf("plain C: %ld multiplications and decompressions, %ld field operations\n", batches * L,
           field_batches * L * 4);
#ifdef PSI_HAVE_IFMA
    if (psi_cpu_ifma_supported()) {
        check_field("IFMA", psi_p256_x8_fe_op_ifma, field_batches);
        check_mul("IFMA", psi_p256_x8_mul_ifma, batches);
        check_decompress("IFMA decompress", psi_p256_x8_decompress_ifma, batches);
        check_sswu("IFMA sswu", psi_p256_x8_sswu_ifma, batches);
        check_compress("IFMA compress", psi_p256_x8_compress_ifma, batches);
        printf("IFMA: %ld multiplications and decompressions, %ld field operations\n", batches * L,
               field_batches * L * 4);
    } else {
        printf("IFMA: SKIPPED, this CPU or OS has no AVX-512 IFMA\n");
    }
#else
    printf("IFMA: SKIPPED, this build has no IFMA code (compiler or target)\n");
#endif
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
