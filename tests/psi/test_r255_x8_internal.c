/* The eight-lane ristretto255 code (psi/r255_x8.h) against libsodium and
 * against a plain big-integer field reference, both forms: the plain C one
 * always, the IFMA one where the CPU has it (it says so when it skips).
 *
 *   test_r255_x8_internal [batches] [--bench] [--ct]
 *
 * batches: random batches per check (default 2000).  --bench: lanes per
 * second of the eight-lane multiply against crypto_scalarmult_ristretto255.
 * --ct: the constant-time check, for a build of the plain C form with
 * -DPSI_CTCHECK run under valgrind memcheck: the scalars, points and hash
 * inputs are marked undefined, so any branch or memory index that depends
 * on them is reported; only the outputs and the returned masks are marked
 * defined again before they are compared. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "r255_x8.h"
#ifdef PSI_HAVE_IFMA
#include "cpu.h"
#endif

#if defined(PSI_CTCHECK)
#include <valgrind/memcheck.h>
#define SECRET(p, n) ((void)VALGRIND_MAKE_MEM_UNDEFINED((p), (n)))
#define PUBLIC(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#else
#define SECRET(p, n) ((void)(p), (void)(n))
#define PUBLIC(p, n) ((void)(p), (void)(n))
#endif

#ifdef PSI_HAVE_IFMA
#define HAVE_IFMA_FORM 1
#else
#define HAVE_IFMA_FORM 0
#endif

typedef int (*mul_fn)(uint8_t[8][32], const uint8_t[8][32], const uint8_t[8][32]);
typedef void (*hash_fn)(uint8_t[8][32], const uint8_t[8][64]);
typedef void (*fmul_fn)(uint8_t[8][32], const uint8_t[8][32], const uint8_t[8][32]);
typedef void (*fsqr_fn)(uint8_t[8][32], const uint8_t[8][32]);

struct form {
    const char *name;
    mul_fn mul;
    hash_fn from_hash;
    fmul_fn fe_mul;
    fsqr_fn fe_sqr;
};

static struct form forms[2];
static int n_forms;
static unsigned long failures;

static void hex(const char *label, const uint8_t *b, size_t n)
{
    printf("  %s ", label);
    for (size_t i = 0; i < n; i++)
        printf("%02x", b[i]);
    printf("\n");
}

static void fail(const char *what, const char *form, int lane)
{
    failures++;
    printf("FAIL %s (%s form, lane %d)\n", what, form, lane);
}

/* ------------------------------------------------ field reference */

__extension__ typedef unsigned __int128 u128; /* gcc and clang: fine for a test */

/* a = a mod p for a < 2^256, four little-endian 64-bit words; slow and
 * plain on purpose. */
static const uint64_t ref_p[4] = {0xffffffffffffffedu, 0xffffffffffffffffu,
                                  0xffffffffffffffffu, 0x7fffffffffffffffu};

static int ref_geq_p(const uint64_t a[4])
{
    for (int i = 3; i >= 0; i--)
        if (a[i] != ref_p[i])
            return a[i] > ref_p[i];
    return 1;
}

static void ref_sub_p(uint64_t a[4])
{
    u128 borrow = 0;
    for (int i = 0; i < 4; i++) {
        u128 d = (u128)a[i] - ref_p[i] - borrow;
        a[i] = (uint64_t)d;
        borrow = (d >> 64) & 1;
    }
}

/* a * b mod p, inputs below 2^256 */
static void ref_mul(uint64_t r[4], const uint64_t a[4], const uint64_t b[4])
{
    uint64_t w[8] = {0};
    for (int i = 0; i < 4; i++) {
        u128 c = 0;
        for (int j = 0; j < 4; j++) {
            c += (u128)a[i] * b[j] + w[i + j];
            w[i + j] = (uint64_t)c;
            c >>= 64;
        }
        w[i + 4] = (uint64_t)c;
    }
    /* 2^256 = 38 mod p, folded twice */
    u128 c = 0;
    for (int i = 0; i < 4; i++) {
        c += (u128)w[i] + (u128)w[i + 4] * 38;
        r[i] = (uint64_t)c;
        c >>= 64;
    }
    while (c) {
        u128 t = c * 38;
        c = 0;
        for (int i = 0; i < 4; i++) {
            t += r[i];
            r[i] = (uint64_t)t;
            t >>= 64;
        }
        c = t;
    }
    while (ref_geq_p(r))
        ref_sub_p(r);
}

static void ref_load(uint64_t a[4], const uint8_t b[32])
{
    for (int i = 0; i < 4; i++) {
        a[i] = 0;
        for (int j = 0; j < 8; j++)
            a[i] |= (uint64_t)b[8 * i + j] << (8 * j);
    }
    a[3] &= 0x7fffffffffffffffu; /* bit 255 ignored, as the hook documents */
}

static void ref_store(uint8_t b[32], const uint64_t a[4])
{
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)(a[i / 8] >> (8 * (i % 8)));
}

/* Field inputs: random, or one of the values near 0, p and 2^255. */
static void field_input(uint8_t b[32])
{
    uint8_t pick;
    randombytes_buf(&pick, 1);
    randombytes_buf(b, 32);
    if (pick < 128)
        return;
    uint64_t a[4] = {0, 0, 0, 0};
    uint8_t delta;
    randombytes_buf(&delta, 1);
    delta %= 40;
    switch (pick % 4) {
    case 0: /* small */
        a[0] = delta;
        break;
    case 1: /* p - 20 .. p + 19 */
    case 2:
        memcpy(a, ref_p, sizeof a);
        a[0] = a[0] - 20 + delta;
        break;
    default: /* 2^255 - 40 .. 2^255 - 1, top bits all ones */
        a[0] = (uint64_t)0 - 40 + delta;
        a[1] = a[2] = ~(uint64_t)0;
        a[3] = 0x7fffffffffffffffu;
        break;
    }
    ref_store(b, a);
    if (pick & 1)
        b[31] |= 0x80; /* bit 255 set: ignored */
}

static void check_field(const struct form *f, long batches)
{
    for (long n = 0; n < batches; n++) {
        uint8_t a[8][32], b[8][32], r[8][32], s[8][32];
        for (int i = 0; i < 8; i++) {
            field_input(a[i]);
            field_input(b[i]);
        }
        f->fe_mul(r, (const uint8_t(*)[32])a, (const uint8_t(*)[32])b);
        f->fe_sqr(s, (const uint8_t(*)[32])a);
        for (int i = 0; i < 8; i++) {
            uint64_t x[4], y[4], z[4];
            uint8_t want[32];
            ref_load(x, a[i]);
            ref_load(y, b[i]);
            ref_mul(z, x, y);
            ref_store(want, z);
            if (memcmp(want, r[i], 32) != 0) {
                fail("fe_mul", f->name, i);
                hex("a   ", a[i], 32);
                hex("b   ", b[i], 32);
                hex("want", want, 32);
                hex("got ", r[i], 32);
            }
            ref_mul(z, x, x);
            ref_store(want, z);
            if (memcmp(want, s[i], 32) != 0) {
                fail("fe_sqr", f->name, i);
                hex("a   ", a[i], 32);
                hex("want", want, 32);
                hex("got ", s[i], 32);
            }
        }
    }
}

/* ---------------------------------------------- scalar multiplication */

/* l, little-endian */
static const uint8_t group_l[32] = {
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10};

/* b = l + d for a small signed d (l is far from any byte boundary) */
static void l_plus(uint8_t b[32], int d)
{
    memcpy(b, group_l, 32);
    b[0] = (uint8_t)(b[0] + d); /* 0xed + d stays within a byte for |d| < 18 */
}

/* A scalar: random below l, or one of the edge values. */
static void scalar_input(uint8_t k[32], int which)
{
    memset(k, 0, 32);
    switch (which) {
    case 0: k[0] = 0; break;              /* 0 -> identity -> failure */
    case 1: k[0] = 1; break;
    case 2: k[0] = 2; break;
    case 3: l_plus(k, -1); break;         /* l - 1 */
    case 4: l_plus(k, -2); break;         /* l - 2 */
    case 5: l_plus(k, 0); break;          /* l -> identity */
    case 6: l_plus(k, 1); break;          /* l + 1 */
    case 7: k[31] = 0x10; break;          /* 2^252 */
    case 8: memset(k, 0xff, 32); break;   /* 2^256 - 1; bit 255 cleared */
    case 9: memset(k, 0xff, 31); k[31] = 0x7f; break; /* 2^255 - 1 */
    case 10: k[31] = 0x80; break;         /* 2^255: bit 255 only -> 0 */
    case 11: {                            /* 2^j - 1, 2^j, 2^j + 1 */
        uint8_t r[2];
        randombytes_buf(r, 2);
        int j = r[0] % 255;
        k[j / 8] = (uint8_t)(1u << (j % 8));
        if (r[1] % 3 == 1) { /* 2^j - 1 */
            memset(k, 0, 32);
            for (int b = 0; b < j; b++)
                k[b / 8] |= (uint8_t)(1u << (b % 8));
        } else if (r[1] % 3 == 2) {
            k[0] ^= 1; /* 2^j + 1 (or 0 when j = 0) */
        }
        break;
    }
    case 12: randombytes_buf(k, 32); break; /* any 256 bits */
    default: crypto_core_ristretto255_scalar_random(k); break;
    }
}

/* A point encoding: a random valid one, or one of the edge strings.
 * libsodium 1.0.18's crypto_scalarmult_ristretto255 ignores bit 255 of the
 * encoding (its canonical check and its field decoding both mask it off),
 * so a valid encoding with bit 255 set decodes as the same point; it
 * rejects s >= p, odd ("negative") s, and strings that are not the
 * encoding of a point; 32 zero bytes decode as the identity, whose product
 * is the identity, reported as a failure. */
static void point_input(uint8_t p[32], int which)
{
    switch (which) {
    case 0: memset(p, 0, 32); break; /* identity */
    case 1: /* p itself: non-canonical */
        memset(p, 0xff, 32);
        p[0] = 0xed;
        p[31] = 0x7f;
        break;
    case 2: /* p + 1 .. p + 18 even or odd: non-canonical */
        memset(p, 0xff, 32);
        randombytes_buf(p, 1);
        p[0] |= 0xed;
        p[31] = 0x7f;
        break;
    case 3: /* 2^255 - 1 with bit 255: non-canonical and odd */
        memset(p, 0xff, 32);
        break;
    case 4: /* a valid encoding made odd: negative s */
        crypto_core_ristretto255_random(p);
        p[0] |= 1;
        break;
    case 5: /* a valid encoding with bit 255 set: libsodium accepts */
        crypto_core_ristretto255_random(p);
        p[31] |= 0x80;
        break;
    case 6: /* random even bytes: about half are not points */
        randombytes_buf(p, 32);
        p[0] &= 0xfe;
        p[31] &= 0x7f;
        break;
    case 7: /* identity with bit 255 set */
        memset(p, 0, 32);
        p[31] = 0x80;
        break;
    case 8: /* p - 1 and other small negatives are odd; p - 2 is even */
        memset(p, 0xff, 32);
        p[0] = 0xeb;
        p[31] = 0x7f;
        break;
    case 9: /* small even s */
        memset(p, 0, 32);
        randombytes_buf(p, 1);
        p[0] &= 0xfe;
        break;
    default: crypto_core_ristretto255_random(p); break;
    }
}

struct batch {
    uint8_t k[8][32], p[8][32], want[8][32];
    int want_mask;
};

/* mixed: each lane picks an edge case with probability about 1/4 */
static void make_batch(struct batch *b, int mixed)
{
    b->want_mask = 0;
    for (int i = 0; i < 8; i++) {
        uint8_t r[3];
        randombytes_buf(r, 3);
        int ks = mixed && r[0] < 64 ? r[1] % 13 : 99;
        int ps = mixed && r[0] >= 192 ? r[2] % 10 : 99;
        scalar_input(b->k[i], ks);
        point_input(b->p[i], ps);
        if (crypto_scalarmult_ristretto255(b->want[i], b->k[i], b->p[i]) != 0) {
            b->want_mask |= 1 << i;
            memset(b->want[i], 0, 32);
        }
    }
}

static void check_batch(const struct form *f, struct batch *b, int secret)
{
    uint8_t out[8][32];
    if (secret) {
        SECRET(b->k, sizeof b->k);
        SECRET(b->p, sizeof b->p);
    }
    int mask = f->mul(out, (const uint8_t(*)[32])b->k, (const uint8_t(*)[32])b->p);
    PUBLIC(&mask, sizeof mask);
    PUBLIC(out, sizeof out);
    PUBLIC(b->k, sizeof b->k);
    PUBLIC(b->p, sizeof b->p);
    for (int i = 0; i < 8; i++) {
        if (((mask >> i) & 1) != ((b->want_mask >> i) & 1) || memcmp(out[i], b->want[i], 32)) {
            fail("mul", f->name, i);
            printf("  mask %02x want %02x\n", (unsigned)mask, (unsigned)b->want_mask);
            hex("k   ", b->k[i], 32);
            hex("p   ", b->p[i], 32);
            hex("want", b->want[i], 32);
            hex("got ", out[i], 32);
        }
    }
}

/* Each edge scalar against each edge point, in whole batches of one. */
static void check_edges(const struct form *f)
{
    for (int ks = 0; ks <= 13; ks++) {
        for (int ps = 0; ps <= 10; ps++) {
            struct batch b;
            b.want_mask = 0;
            for (int i = 0; i < 8; i++) {
                scalar_input(b.k[i], ks);
                point_input(b.p[i], ps);
                if (crypto_scalarmult_ristretto255(b.want[i], b.k[i], b.p[i]) != 0) {
                    b.want_mask |= 1 << i;
                    memset(b.want[i], 0, 32);
                }
            }
            check_batch(f, &b, 0);
        }
    }
}

static void check_from_hash(const struct form *f, long batches, int secret)
{
    for (long n = 0; n < batches; n++) {
        uint8_t h[8][64], out[8][32], want[8][32];
        randombytes_buf(h, sizeof h);
        if (n == 0) {
            memset(h[0], 0, 64);
            memset(h[1], 0xff, 64);
            memset(h[2], 0, 32); /* one half zero */
        }
        for (int i = 0; i < 8; i++)
            crypto_core_ristretto255_from_hash(want[i], h[i]);
        if (secret)
            SECRET(h, sizeof h);
        f->from_hash(out, (const uint8_t(*)[64])h);
        PUBLIC(out, sizeof out);
        PUBLIC(h, sizeof h);
        for (int i = 0; i < 8; i++) {
            if (memcmp(out[i], want[i], 32) != 0) {
                fail("from_hash", f->name, i);
                hex("h   ", h[i], 64);
                hex("want", want[i], 32);
                hex("got ", out[i], 32);
            }
        }
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench(long batches)
{
    struct batch b;
    make_batch(&b, 0);
    uint8_t out[8][32];
    for (int f = 0; f < n_forms; f++) {
        double t0 = now();
        for (long n = 0; n < batches; n++) {
            forms[f].mul(out, (const uint8_t(*)[32])b.k, (const uint8_t(*)[32])b.p);
            b.k[0][0] ^= out[0][0]; /* a dependence, so no call is dropped */
        }
        double t = now() - t0;
        printf("bench: psi_r255_x8_mul_%s: %.0f lanes/s (%.2f us/lane)\n", forms[f].name,
               8.0 * (double)batches / t, 1e6 * t / (8.0 * (double)batches));
    }
    double t0 = now();
    long calls = 8 * batches;
    int rcs = 0;
    for (long n = 0; n < calls; n++) {
        rcs |= crypto_scalarmult_ristretto255(out[0], b.k[n % 8], b.p[n % 8]);
        b.k[n % 8][0] ^= out[0][0];
    }
    double t = now() - t0;
    printf("bench: crypto_scalarmult_ristretto255: %.0f /s (%.2f us)\n", (double)calls / t,
           1e6 * t / (double)calls);
    if (rcs != 0)
        printf("bench: (some libsodium calls failed)\n");

    uint8_t h[8][64];
    randombytes_buf(h, sizeof h);
    for (int f = 0; f < n_forms; f++) {
        t0 = now();
        for (long n = 0; n < batches; n++) {
            forms[f].from_hash(out, (const uint8_t(*)[64])h);
            h[0][0] ^= out[0][0];
        }
        t = now() - t0;
        printf("bench: psi_r255_x8_from_hash_%s: %.0f lanes/s (%.2f us/lane)\n", forms[f].name,
               8.0 * (double)batches / t, 1e6 * t / (8.0 * (double)batches));
    }
    t0 = now();
    for (long n = 0; n < calls; n++) {
        crypto_core_ristretto255_from_hash(out[0], h[n % 8]);
        h[n % 8][0] ^= out[0][0];
    }
    t = now() - t0;
    printf("bench: crypto_core_ristretto255_from_hash: %.0f /s (%.2f us)\n", (double)calls / t,
           1e6 * t / (double)calls);
}

int main(int argc, char **argv)
{
    long batches = 2000;
    int do_bench = 0, do_ct = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bench") == 0)
            do_bench = 1;
        else if (strcmp(argv[i], "--ct") == 0)
            do_ct = 1;
        else
            batches = strtol(argv[i], NULL, 10);
    }
    if (sodium_init() < 0) {
        printf("FAIL sodium_init\n");
        return 1;
    }

    forms[n_forms++] = (struct form){"c", psi_r255_x8_mul_c, psi_r255_x8_from_hash_c,
                                     psi_r255_x8_fe_mul_c, psi_r255_x8_fe_sqr_c};
#if HAVE_IFMA_FORM
    if (!do_ct && psi_cpu_ifma_supported())
        forms[n_forms++] = (struct form){"ifma", psi_r255_x8_mul_ifma,
                                         psi_r255_x8_from_hash_ifma, psi_r255_x8_fe_mul_ifma,
                                         psi_r255_x8_fe_sqr_ifma};
    else
        printf("SKIPPED ifma form: %s\n", do_ct ? "--ct runs the plain C form only"
                                                : "this CPU or OS has no AVX-512 IFMA");
#else
    printf("SKIPPED ifma form: this build has no IFMA code (compiler or target)\n");
#endif

    if (do_ct) {
#if !defined(PSI_CTCHECK)
        printf("note: built without -DPSI_CTCHECK; --ct checks results only\n");
#endif
        /* under valgrind the plain form runs ~50x slower: a few batches */
        for (long n = 0; n < batches; n++) {
            struct batch b;
            make_batch(&b, 1);
            check_batch(&forms[0], &b, 1);
        }
        check_from_hash(&forms[0], batches, 1);
        printf("%s: --ct, %ld batches, %lu failures\n", failures ? "FAIL" : "PASS", batches,
               failures);
        return failures != 0;
    }

    if (do_bench) {
        bench(batches);
        return 0;
    }

    for (int f = 0; f < n_forms; f++) {
        check_field(&forms[f], batches);
        check_edges(&forms[f]);
        check_from_hash(&forms[f], batches / 4 + 1, 0);
    }
    for (long n = 0; n < batches; n++) {
        struct batch b;
        make_batch(&b, n % 2);
        for (int f = 0; f < n_forms; f++)
            check_batch(&forms[f], &b, 0);
    }
    printf("%s: %ld batches, %d form(s), %lu failures\n", failures ? "FAIL" : "PASS", batches,
           n_forms, failures);
    return failures != 0;
}
