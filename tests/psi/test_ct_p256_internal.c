/* Constant time of psi/p256.c, checked with valgrind memcheck: the scalar
 * and the point coordinates are marked undefined (secret) before each call
 * and only the output that goes on the wire is marked defined afterwards,
 * so any branch or memory index that depends on them is reported as a
 * "conditional jump or move depends on uninitialised value" (the method of
 * Adam Langley's ctgrind).  Run by meson under
 * `valgrind --error-exitcode=99` when valgrind is found and the build has no
 * sanitizer; without valgrind the client requests do nothing and the
 * program only checks its results.
 *
 * The build that matters most is clang -O3 (scripts/test.sh's
 * build-portable): clang is the compiler of the wasm build, and it turned
 * the masked table lookup into branches until p256.c's ct_barrier. */
#include <stdio.h>
#include <string.h>

#include <valgrind/memcheck.h>

#include "p256.h"
#include "p256_g.h"

#define SECRET(p, n) VALGRIND_MAKE_MEM_UNDEFINED((p), (n))
#define PUBLIC(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))

/* n - 1 and n - 2 (scalars that reach the masked doubling); G is p256_g.h's. */
static const uint8_t n_minus_1[32] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x50};

int main(void)
{
    uint8_t k[32], x[32], y[32], out[33], prev[33] = {0};
    int failures = 0;
    memcpy(x, gx, 32);
    memcpy(y, gy, 32);
    /* Scalars: odd, even (the n - k path), n - 1, n - 2, and 1. */
    for (int t = 0; t < 5; t++) {
        for (int i = 0; i < 32; i++)
            k[i] = (uint8_t)(i * 37 + t * 11 + 1);
        k[0] &= 0x7f;
        if (t == 1)
            k[31] &= 0xfe;
        if (t == 2 || t == 3)
            memcpy(k, n_minus_1, 32);
        if (t == 3)
            k[31] = 0x4f; /* n - 2 */
        if (t == 4) {
            memset(k, 0, 32);
            k[31] = 1;
        }
        SECRET(k, sizeof k);
        SECRET(x, sizeof x);
        SECRET(y, sizeof y);
        psi_p256_mul_compressed(out, k, x, y);
        PUBLIC(out, sizeof out); /* the masked element goes on the wire */
        /* 1 * P = P, the previous output; any other scalar moves it */
        if ((out[0] != 2 && out[0] != 3) || (memcmp(out, prev, sizeof out) == 0) != (t == 4)) {
            fprintf(stderr, "ct_p256: scalar %d: bad output\n", t);
            failures++;
        }
        memcpy(prev, out, sizeof out);
        /* The next point: this output, decompressed with its x secret. */
        memcpy(x, out + 1, 32);
        SECRET(x, sizeof x);
        int ok = psi_p256_decompress(y, x, out[0] & 1);
        PUBLIC(&ok, sizeof ok); /* on the wire: whether a partner's point decodes */
        if (!ok) {
            fprintf(stderr, "ct_p256: scalar %d: output does not decompress\n", t);
            failures++;
        }
        PUBLIC(x, sizeof x);
        PUBLIC(y, sizeof y);
    }
    /* Field square root and inversion on a secret value. */
    uint8_t a[32], r[32];
    memcpy(a, gx, 32);
    SECRET(a, sizeof a);
    int sq = psi_p256_sqrt(r, a);
    psi_p256_fe_inv(r, a);
    PUBLIC(&sq, sizeof sq);
    PUBLIC(r, sizeof r);
    /* The hash's 512-bit reduction, and the batched affine conversion of
     * two secret Jacobian points: G with Z = 1, then an arbitrary triple
     * (its output is not a meaningful point, only its timing counts). */
    uint8_t wide[64], xyz[2 * 96], pts[2 * 33];
    memcpy(wide, gx, 32);
    memcpy(wide + 32, gy, 32);
    SECRET(wide, sizeof wide);
    psi_p256_reduce_wide(r, wide);
    PUBLIC(r, sizeof r);
    if (memcmp(r, gy, 32) == 0) { /* a stand-in result check: gx 2^256 + gy != gy mod p */
        fprintf(stderr, "ct_p256: reduce_wide: bad output\n");
        failures++;
    }
    memcpy(xyz, gx, 32);
    memcpy(xyz + 32, gy, 32);
    memset(xyz + 64, 0, 32);
    xyz[95] = 1;
    memcpy(xyz + 96, gy, 32);
    memcpy(xyz + 128, gx, 32);
    memcpy(xyz + 160, gy, 32);
    SECRET(xyz, sizeof xyz);
    int conv = psi_p256_jacobian_compress(pts, xyz, 2);
    PUBLIC(&conv, sizeof conv);
    PUBLIC(pts, sizeof pts);
    if (!conv || pts[0] != (uint8_t)(0x02 | (gy[31] & 1)) || memcmp(pts + 1, gx, 32) != 0) {
        fprintf(stderr, "ct_p256: jacobian_compress: bad output\n");
        failures++;
    }
    if (failures == 0)
        printf("ct_p256: 5 multiplications, 5 decompressions, a square root, an inversion, a wide reduction and a batched affine conversion on secret data\n");
    return failures == 0 ? 0 : 1;
}
