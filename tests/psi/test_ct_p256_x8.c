/* Constant time of the eight-lane P-256 code (psi/p256_x8_impl.h), checked
 * with valgrind memcheck on its plain-C form, which is the same source as
 * the IFMA form over lanes.h's loops (valgrind cannot run AVX-512): every
 * scalar and coordinate is marked undefined (secret) before the call and
 * only the coordinates that psi_p256_jacobian_compress turns into wire
 * bytes are marked defined afterwards, so a branch or memory index that
 * depends on a secret is reported (see test_ct_p256_internal.c).  The
 * lanes mix the scalars that reach the formulas' special inputs: 0 and n
 * (identity), n + 30 (a doubling in the last addition), 1, n - 1, and
 * scalars with zero windows.  Without valgrind the program only checks its
 * results against psi/p256.c.  The RFC 9380 hash (its field elements
 * secret) likewise.  Decompression (the square root of point
 * decoding and of the OpenMined hash) likewise, x and parity secret, and
 * the batch compression, the Jacobian coordinates secret. */
#include <stdio.h>
#include <string.h>

#include <valgrind/memcheck.h>

#include "p256.h"
#include "p256_g.h"
#include "p256_x8.h"

#define SECRET(p, n) VALGRIND_MAKE_MEM_UNDEFINED((p), (n))
#define PUBLIC(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))
#define L PSI_X8_LANES

static const uint8_t order[32] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51};

/* r = n + d for a small d (no carry past byte 30 for these d) */
static void n_plus(uint8_t r[32], int d)
{
    memcpy(r, order, 32);
    int v = r[31] + d;
    r[31] = (uint8_t)v;
    r[30] = (uint8_t)(r[30] + (v >> 8));
}

int main(void)
{
    uint8_t k[L][32], x[L][32], y[L][32], xyz[L][96];
    int failures = 0;
    memset(k, 0, sizeof k); /* lane 0: k = 0, the identity */
    n_plus(k[1], 0);         /* n: the identity */
    n_plus(k[2], 30);        /* n + 30: the last addition doubles */
    k[3][31] = 1;            /* 1 */
    n_plus(k[4], -1);        /* n - 1 */
    k[5][0] = 0x10;          /* 2^252: every window but the top one is zero */
    for (int i = 0; i < 32; i++) {
        k[6][i] = (uint8_t)(i * 37 + 11);
        k[7][i] = (uint8_t)(0xf0 ^ (i * 91));
    }
    /* points: G, then the outputs of earlier lanes, decompressed */
    for (int l = 0; l < L; l++) {
        memcpy(x[l], gx, 32);
        memcpy(y[l], gy, 32);
    }
    for (int round = 0; round < 2; round++) {
        SECRET(k, sizeof k);
        SECRET(x, sizeof x);
        SECRET(y, sizeof y);
        psi_p256_x8_mul_c(xyz, (const uint8_t(*)[32])k, (const uint8_t(*)[32])x,
                          (const uint8_t(*)[32])y);
        /* Whether a product is the identity is public (the engine reports
         * it as an error); the coordinates become wire bytes once
         * compressed. */
        PUBLIC(xyz, sizeof xyz);
        PUBLIC(k, sizeof k);
        PUBLIC(x, sizeof x);
        PUBLIC(y, sizeof y);
        uint8_t got[L][33];
        for (int l = 0; l < L; l++) {
            static const uint8_t zero[32];
            uint8_t want[33];
            int identity = l < 2;
            if (identity) {
                if (memcmp(xyz[l] + 64, zero, 32) != 0) {
                    fprintf(stderr, "ct_p256_x8: lane %d: not the identity\n", l);
                    failures++;
                }
                continue;
            }
            psi_p256_jacobian_compress(got[l], xyz[l], 1);
            uint8_t kr[32];
            memcpy(kr, k[l], 32);
            if (l == 2) {
                memset(kr, 0, 32);
                kr[31] = 30;
            }
            psi_p256_mul_compressed(want, kr, x[l], y[l]);
            if (memcmp(got[l], want, 33) != 0) {
                fprintf(stderr, "ct_p256_x8: round %d lane %d: differs from p256.c\n", round, l);
                failures++;
            }
        }
        /* the next round's points: the products of the lanes that have one */
        for (int l = 2; l < L; l++) {
            memcpy(x[(l + 1) % L], got[l] + 1, 32);
            if (!psi_p256_decompress(y[(l + 1) % L], x[(l + 1) % L], got[l][0] & 1))
                failures++;
        }
    }
    /* The batch compression on the lanes, its 16 Jacobian points secret:
     * the last round's finite products, each twice; then one with a zero
     * Z, whose refusal is public only once it is returned. */
    uint8_t jac[2 * L][96], cz[2 * L][33], cw[2 * L][33];
    for (int i = 0; i < 2 * L; i++)
        memcpy(jac[i], xyz[2 + i % (L - 2)], 96);
    for (int zero_z = 0; zero_z < 2; zero_z++) {
        if (zero_z)
            memset(jac[11] + 64, 0, 32);
        int want_ok = psi_p256_jacobian_compress(&cw[0][0], &jac[0][0], 2 * L);
        SECRET(jac, sizeof jac);
        int ok_c = psi_p256_x8_compress_c(&cz[0][0], &jac[0][0], 2 * L);
        PUBLIC(&ok_c, sizeof ok_c);
        PUBLIC(cz, sizeof cz); /* wire bytes */
        PUBLIC(jac, sizeof jac);
        if (ok_c != want_ok || ok_c != !zero_z || memcmp(cz, cw, sizeof cz) != 0) {
            fprintf(stderr, "ct_p256_x8: compression (zero Z: %d) differs from p256.c\n", zero_z);
            failures++;
        }
    }
    /* Decompression with x and the parity secret: lanes with and without
     * a root (x = 0, 1, 2, ... and G's x), both parities. */
    uint8_t dx[L][32], dy[L][32], odd[L], ok[L];
    memset(dx, 0, sizeof dx);
    for (int l = 0; l < L; l++) {
        dx[l][31] = (uint8_t)l;
        odd[l] = (uint8_t)(l & 1);
    }
    memcpy(dx[7], gx, 32);
    SECRET(dx, sizeof dx);
    SECRET(odd, sizeof odd);
    psi_p256_x8_decompress_c(dy, ok, (const uint8_t(*)[32])dx, odd);
    PUBLIC(ok, sizeof ok); /* whether a point decodes is public */
    PUBLIC(dy, sizeof dy);
    PUBLIC(dx, sizeof dx);
    PUBLIC(odd, sizeof odd);
    for (int l = 0; l < L; l++) {
        uint8_t want[32];
        int w = psi_p256_decompress(want, dx[l], odd[l]);
        if (w != ok[l] || memcmp(want, dy[l], 32) != 0) {
            fprintf(stderr, "ct_p256_x8: decompress lane %d differs from p256.c\n", l);
            failures++;
        }
    }
    /* The RFC 9380 hash from its field elements, which are secret (the
     * p256-sswu suite hashes in constant time): eight messages, and u = 0
     * (the map's exceptional case) in lane 0. */
    static const uint8_t dst[] = "shardpsi-ct-P256_XMD:SHA-256_SSWU_RO_";
    uint8_t u0[L][32], u1[L][32], hx[L][32], hy[L][32], inf[L], msg[L][3];
    for (int l = 0; l < L; l++) {
        uint8_t uniform[96], wide[64] = {0};
        msg[l][0] = 'm', msg[l][1] = (uint8_t)('0' + l), msg[l][2] = 0;
        psi_p256_expand_xmd(uniform, 96, msg[l], 2, dst, sizeof dst - 1);
        memcpy(wide + 16, uniform, 48);
        psi_p256_reduce_wide(u0[l], wide);
        memcpy(wide + 16, uniform + 48, 48);
        psi_p256_reduce_wide(u1[l], wide);
    }
    memset(u0[0], 0, 32);
    SECRET(u0, sizeof u0);
    SECRET(u1, sizeof u1);
    psi_p256_x8_sswu_c(hx, hy, inf, (const uint8_t(*)[32])u0, (const uint8_t(*)[32])u1);
    PUBLIC(hx, sizeof hx); /* the hashed point is multiplied, then sent */
    PUBLIC(hy, sizeof hy);
    PUBLIC(inf, sizeof inf);
    for (int l = 1; l < L; l++) {
        uint8_t wx[32], wy[32];
        int ok = psi_p256_sswu_hash(wx, wy, msg[l], 2, dst, sizeof dst - 1);
        if (!ok || inf[l] || memcmp(wx, hx[l], 32) != 0 || memcmp(wy, hy[l], 32) != 0) {
            fprintf(stderr, "ct_p256_x8: sswu lane %d differs from p256_sswu.c\n", l);
            failures++;
        }
    }
    printf("ct_p256_x8: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
