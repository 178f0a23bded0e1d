/* The two arithmetics of the engine (psi.h psi_arith_set, PROTOCOL.md §21)
 * give the same bytes, the same error codes and the same error details:
 * masking, re-masking and unmasking of batches of every length around the
 * groups of eight the IFMA lanes take, and batches with a bad point at
 * places inside and outside those groups.  Public API only.  Where the CPU
 * has no IFMA both runs take the portable path; the program says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psi.h"

#define EB PSI_ELEMENT_BYTES
#define MAXN 160

static int failures;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "FAIL line %d: ", __LINE__);                                      \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fprintf(stderr, "\n");                                                            \
            failures++;                                                                       \
        }                                                                                     \
    } while (0)

typedef struct result {
    int rc;
    psi_error_detail d;
    uint8_t out[MAXN * EB];
} result;

/* op 0 mask values, 1 remask points, 2 unmask points, under one arithmetic */
static void run(result *r, psi_arith arith, const psi_engine *e, int op, const psi_value *v,
                const uint8_t *pts, size_t n)
{
    size_t len = sizeof r->out;
    memset(r, 0, sizeof *r);
    if (psi_arith_set(arith) != PSI_OK)
        abort();
    if (op == 0)
        r->rc = psi_engine_mask(e, r->out, &len, v, n);
    else if (op == 1)
        r->rc = psi_engine_remask(e, r->out, &len, pts, n);
    else
        r->rc = psi_engine_unmask(e, r->out, &len, pts, n);
    psi_error_detail_get(&r->d);
}

static void same(const char *what, int suite, size_t n, const psi_engine *e, int op,
                 const psi_value *v, const uint8_t *pts)
{
    static result a, b;
    run(&a, PSI_ARITH_AUTO, e, op, v, pts, n);
    run(&b, PSI_ARITH_PORTABLE, e, op, v, pts, n);
    CHECK(a.rc == b.rc, "%s suite %d n %zu op %d: rc %d vs %d", what, suite, n, op, a.rc, b.rc);
    CHECK(a.d.code == b.d.code && a.d.index == b.d.index && a.d.offset == b.d.offset &&
              (a.d.field == b.d.field || (a.d.field && b.d.field && !strcmp(a.d.field, b.d.field))),
          "%s suite %d n %zu op %d: detail %d/%lld vs %d/%lld", what, suite, n, op, a.d.code,
          (long long)a.d.index, b.d.code, (long long)b.d.index);
    CHECK(memcmp(a.out, b.out, n * EB) == 0, "%s suite %d n %zu op %d: bytes differ", what, suite,
          n, op);
}

int main(void)
{
    static const size_t sizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 72, 100, MAXN};
    static const int suites[] = {PSI_SUITE_OPENMINED_P256, PSI_SUITE_P256_SSWU,
                                 PSI_SUITE_RISTRETTO255};
    static uint8_t bufs[MAXN][16], pts[MAXN * EB], bad[MAXN * EB];
    psi_value v[MAXN];
    for (size_t i = 0; i < MAXN; i++) {
        int len = snprintf((char *)bufs[i], sizeof bufs[i], "value-%zu", i * 7919);
        v[i].data = bufs[i];
        v[i].len = (size_t)len;
    }
    CHECK(psi_arith_set(PSI_ARITH_PORTABLE) == PSI_OK, "set portable");
    CHECK(psi_arith_get() == PSI_ARITH_PORTABLE, "get portable");
    CHECK(psi_arith_set(PSI_ARITH_AUTO) == PSI_OK, "set auto");
    int ifma = psi_arith_get() == PSI_ARITH_IFMA;
    printf("arith: the IFMA path %s\n", ifma ? "runs" : "is NOT available here: both runs portable");

    for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++) {
        psi_settings st;
        psi_settings_default(&st);
        st.suite = suites[s];
        st.role = PSI_ROLE_SERVER;
        psi_engine *e = NULL;
        uint8_t key[32];
        for (int i = 0; i < 32; i++)
            key[i] = (uint8_t)(0x5a ^ (i * 29));
        key[31] &= 0x0f; /* below l for ristretto255 (little-endian), below n for P-256 */
        key[0] &= 0x7f;
        if (psi_engine_create_from_key(&e, &st, key, sizeof key) != PSI_OK)
            abort();
        size_t len = sizeof pts;
        psi_arith_set(PSI_ARITH_PORTABLE);
        if (psi_engine_mask(e, pts, &len, v, MAXN) != PSI_OK)
            abort();
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t n = sizes[k];
            same("mask", suites[s], n, e, 0, v, NULL);
            same("remask", suites[s], n, e, 1, NULL, pts);
            same("unmask", suites[s], n, e, 2, NULL, pts);
        }
        /* A point that does not decode: P-256, an x that is not an
         * abscissa (x = t, t = 1, 2, ...); ristretto255, s = t that is not
         * an encoding (even, canonical, no point). */
        int r255 = suites[s] == PSI_SUITE_RISTRETTO255;
        uint8_t off[EB] = {0};
        int found = 0;
        for (int t = 2; t < 256; t += r255 ? 2 : 1) {
            memset(off, 0, sizeof off);
            if (r255) {
                off[0] = (uint8_t)t;
            } else {
                off[0] = 0x02;
                off[EB - 1] = (uint8_t)t;
            }
            int want = r255 ? PSI_E_POINT_ENCODING : PSI_E_POINT_NOT_ON_CURVE;
            if ((found = psi_point_check(suites[s], off, r255 ? 32 : EB) == want))
                break;
        }
        CHECK(found, "suite %d: no point that fails to decode", suites[s]);
        static const size_t places[] = {0, 3, 7, 8, 13, 23, 64, 70, 99};
        for (size_t k = 0; k < sizeof places / sizeof places[0]; k++) {
            for (int kind = 0; kind < 5; kind++) {
                memcpy(bad, pts, sizeof bad);
                uint8_t *p = bad + places[k] * EB;
                switch (kind) {
                case 0: memcpy(p, off, EB); break; /* does not decode */
                case 1:                            /* P-256 prefix; r255 33rd byte */
                    p[r255 ? 32 : 0] = 0x04;
                    break;
                case 2: /* P-256 x >= p; r255 the identity */
                    memset(p + (r255 ? 0 : 1), r255 ? 0 : 0xff, 32);
                    break;
                case 3: /* r255: bit 255; P-256: another point off the curve */
                    if (r255)
                        p[31] |= 0x80;
                    else
                        memcpy(p, off, EB);
                    break;
                default: /* two: one that does not decode, a byte error later */
                    memcpy(p, off, EB);
                    bad[(places[k] + 5) * EB + (r255 ? 32 : 0)] = 0x05;
                    break;
                }
                same("bad point", suites[s], 100, e, 1, NULL, bad);
                same("bad point", suites[s], 100, e, 2, NULL, bad);
            }
        }
        psi_engine_free(e);
    }
    psi_arith_set(PSI_ARITH_AUTO);
    printf("arith: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
