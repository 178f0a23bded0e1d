/* A statistical timing test of the IFMA form of the eight-lane P-256 and
 * ristretto255 code
 * (valgrind cannot run it; its plain-C twin is checked by ct_p256_x8):
 * fixed against random secrets, in the manner of dudect (Reparaz, Balasch
 * and Verbauwhede, 2017).  Calls of the two classes are interleaved in a
 * random order, each timed with a monotonic clock, and Welch's t statistic
 * compares the classes, on all measurements and on those below the 50th,
 * 75th and 90th percentiles (cropping the long tail a shared machine
 * adds).  The fixed class is the most special input there is: the scalar
 * 1 (63 zero windows, the identity as accumulator until the last) on G,
 * and G's x for decompression, the scalar 1 on one ristretto255 point;
 * the random class draws scalars, points and abscissas afresh.  Fails when |t| exceeds 10 (dudect's "definitely not
 * constant time"); a run prints the largest |t| of each operation.
 *
 * Exit 77 (skipped) where the CPU or the build has no IFMA.
 * Usage: test_timing_x8 [MEASUREMENTS] (default 6000 per operation). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "cpu.h"
#include "p256.h"
#include "p256_g.h"
#include "p256_x8.h"
#include "r255_x8.h"

#define L PSI_X8_LANES
#define POOL 64


static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Welch's t of the two classes over the measurements below `limit`. */
static double welch(const double *t, const int *cls, int n, double limit)
{
    double s[2] = {0, 0}, ss[2] = {0, 0};
    int c[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        if (t[i] > limit)
            continue;
        s[cls[i]] += t[i];
        ss[cls[i]] += t[i] * t[i];
        c[cls[i]]++;
    }
    if (c[0] < 2 || c[1] < 2)
        return 0;
    double m0 = s[0] / c[0], m1 = s[1] / c[1];
    double v0 = (ss[0] - c[0] * m0 * m0) / (c[0] - 1), v1 = (ss[1] - c[1] * m1 * m1) / (c[1] - 1);
    double den = sqrt(v0 / c[0] + v1 / c[1]);
    return den > 0 ? (m0 - m1) / den : 0;
}

static double max_t(const double *t, const int *cls, int n)
{
    double *sorted = malloc((size_t)n * sizeof *sorted);
    if (sorted == NULL)
        abort();
    memcpy(sorted, t, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    double worst = fabs(welch(t, cls, n, INFINITY));
    static const double pct[] = {0.50, 0.75, 0.90};
    for (int i = 0; i < 3; i++) {
        double w = fabs(welch(t, cls, n, sorted[(int)(pct[i] * (n - 1))]));
        if (w > worst)
            worst = w;
    }
    free(sorted);
    return worst;
}

#ifdef PSI_HAVE_IFMA
/* Random points: k G for random k, from the portable code. */
static void random_point(uint8_t x[32], uint8_t y[32])
{
    uint8_t k[32], c[33];
    do {
        randombytes_buf(k, sizeof k);
        k[0] &= 0x7f; /* below n */
    } while (sodium_is_zero(k, 32));
    psi_p256_mul_compressed(c, k, gx, gy);
    memcpy(x, c + 1, 32);
    if (!psi_p256_decompress(y, x, c[0] & 1))
        abort();
}

static int run(int n)
{
    static uint8_t px[POOL][32], py[POOL][32];
    for (int i = 0; i < POOL; i++)
        random_point(px[i], py[i]);
    double *t = malloc((size_t)n * sizeof *t);
    int *cls = malloc((size_t)n * sizeof *cls);
    if (t == NULL || cls == NULL)
        abort();
    uint8_t xyz[L][96], ok[L], r[L][32];
    static uint8_t rp[POOL][32];
    for (int i = 0; i < POOL; i++)
        crypto_core_ristretto255_random(rp[i]);
    int failed = 0;
    static const char *names[] = {"P-256 scalar multiplication", "P-256 decompression",
                                  "ristretto255 decode, multiplication, encode"};

    /* Every input is made before the timed loop, so that the work of
     * drawing the random class's inputs (which the fixed class does not
     * do) cannot shift the cache state in front of its measurements. */
    typedef struct input {
        uint8_t k[L][32], x[L][32], y[L][32], odd[L];
    } input;
    input *in = malloc((size_t)n * sizeof *in);
    if (in == NULL)
        abort();
    for (int op = 0; op < 3; op++) {
        for (int i = 0; i < n; i++) {
            cls[i] = (int)(randombytes_random() & 1);
            input *v = &in[i];
            for (int l = 0; l < L; l++) {
                if (op == 2) { /* little-endian scalars, encoded points */
                    memset(v->k[l], 0, 32);
                    v->k[l][0] = 1;
                    memcpy(v->x[l], rp[0], 32);
                    if (cls[i]) {
                        crypto_core_ristretto255_scalar_random(v->k[l]);
                        memcpy(v->x[l], rp[randombytes_uniform(POOL)], 32);
                    }
                } else if (cls[i] == 0) {
                    memset(v->k[l], 0, 32);
                    v->k[l][31] = 1;
                    memcpy(v->x[l], gx, 32);
                    memcpy(v->y[l], gy, 32);
                } else {
                    unsigned j = randombytes_uniform(POOL);
                    randombytes_buf(v->k[l], 32);
                    memcpy(v->x[l], px[j], 32);
                    if (op == 1)
                        randombytes_buf(v->x[l] + 16, 16); /* about half not on the curve */
                    memcpy(v->y[l], py[j], 32);
                }
                v->odd[l] = (uint8_t)(cls[i] ? randombytes_random() & 1 : 0);
            }
        }
        for (int i = 0; i < n; i++) {
            const input *v = &in[i];
            double t0 = now_ns();
            if (op == 0)
                psi_p256_x8_mul_ifma(xyz, (const uint8_t(*)[32])v->k,
                                     (const uint8_t(*)[32])v->x, (const uint8_t(*)[32])v->y);
            else if (op == 1)
                psi_p256_x8_decompress_ifma(r, ok, (const uint8_t(*)[32])v->x, v->odd);
            else
                psi_r255_x8_mul_ifma(r, (const uint8_t(*)[32])v->k, (const uint8_t(*)[32])v->x);
            t[i] = now_ns() - t0;
        }
        double w = max_t(t, cls, n);
        printf("timing_x8: %s: largest |t| %.2f over %d measurements\n",
               names[op], w, n);
        if (w > 10) {
            printf("timing_x8: FAILED: the classes' times differ\n");
            failed = 1;
        }
    }
    free(in);
    free(t);
    free(cls);
    return failed;
}
#endif

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 6000;
    if (sodium_init() < 0)
        return 1;
#ifdef PSI_HAVE_IFMA
    if (!psi_cpu_ifma_supported()) {
        printf("timing_x8: SKIPPED, this CPU or OS has no AVX-512 IFMA\n");
        return 77;
    }
    return run(n);
#else
    (void)n;
    printf("timing_x8: SKIPPED, this build has no IFMA code\n");
    return 77;
#endif
}
