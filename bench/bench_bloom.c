/* bench_bloom: the Bloom filters' real false-positive rate and speed in
 * both probe formats (PROTOCOL.md §7.3, §7.4, §12.8 item 2).  For a server
 * set of NS values, NC client values and fpr, it builds FILTERS filters of
 * random elements (each one a server key's), queries each with QUERIES
 * random non-members, and prints per format: the elements whose probes
 * cover fewer than k distinct bits, the measured rate per query with its
 * count, the rate asked (fpr / NC), and the build and match time per
 * element.  Random elements stand in for masked values, which are uniform
 * to the hashes.
 *   bench_bloom [NS NC FPR FILTERS QUERIES [SEED]]
 * default: 240 94 1e-9 200 50000 (the sets of wasm/test/suites.test.mjs). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bloom.h"

static uint64_t rng = 1;

/* splitmix64 */
static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rnd();
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs one format; returns 0 or 1 on a failure of the library. */
static int run(psi_bloom_format format, size_t ns, int64_t nc, double fpr, int filters,
               size_t queries)
{
    int32_t k;
    size_t nb;
    if (psi_bloom_params(&k, &nb, fpr, nc, ns) != PSI_OK)
        return 1;
    uint8_t *el = malloc(ns * PSI_ELEMENT_BYTES + 1), *q = malloc(queries * PSI_ELEMENT_BYTES);
    uint8_t *bits = malloc(nb), *seen = calloc(nb, 1);
    size_t *out = malloc(queries * sizeof *out);
    uint64_t *idx = malloc(PSI_BLOOM_K_MAX * sizeof *idx);
    psi_bloom_prober pr;
    if (el == NULL || q == NULL || bits == NULL || seen == NULL || out == NULL || idx == NULL ||
        psi_bloom_prober_init(&pr, format, k, nb) != PSI_OK)
        return 1;
    /* elements on fewer than k distinct bits, over all server elements */
    uint64_t short_c = 0, total = 0, hits = 0;
    double t_build = 0, t_match = 0;
    for (int f = 0; f < filters; f++) {
        fill(el, ns * PSI_ELEMENT_BYTES);
        for (size_t i = 0; i < ns; i++) {
            uint64_t n = psi_bloom_probes(idx, &pr, el + i * PSI_ELEMENT_BYTES, 33), d = 0;
            for (uint64_t j = 0; j < n; j++) {
                d += ((seen[idx[j] >> 3] >> (idx[j] & 7)) & 1) == 0;
                seen[idx[j] >> 3] |= (uint8_t)(1u << (idx[j] & 7));
            }
            for (uint64_t j = 0; j < n; j++)
                seen[idx[j] >> 3] = 0;
            short_c += d < (uint64_t)k;
            total++;
        }
        memset(bits, 0, nb);
        double t0 = now();
        if (psi_bloom_build(bits, nb, k, format, el, ns, 33) != PSI_OK)
            return 1;
        double t1 = now();
        fill(q, queries * PSI_ELEMENT_BYTES);
        size_t count = queries;
        if (psi_bloom_match(out, &count, k, format, bits, nb, q, queries, 33) != PSI_OK)
            return 1;
        t_match += now() - t1;
        t_build += t1 - t0;
        hits += count;
    }
    double nq = (double)filters * (double)queries;
    printf("%-22s k %d, %zu bytes: %" PRIu64 " of %" PRIu64 " elements (%.3f%%) on fewer than "
           "k bits; %" PRIu64 " false positives in %.0f queries = %.2e a query (asked %.2e); "
           "build %.2f us, match %.2f us an element\n",
           format == PSI_BLOOM_FORMAT_PSIJS ? "psi.js (openmined)" : "format 2 (own suites)",
           (int)k, nb, short_c, total, 100.0 * (double)short_c / (double)total, hits, nq,
           (double)hits / nq, fpr / (double)nc, 1e6 * t_build / ((double)filters * (double)ns),
           1e6 * t_match / nq);
    psi_bloom_prober_free(&pr);
    free(el), free(q), free(bits), free(seen), free(out), free(idx);
    return 0;
}

int main(int argc, char **argv)
{
    size_t ns = argc > 1 ? strtoull(argv[1], NULL, 0) : 240;
    int64_t nc = argc > 2 ? strtoll(argv[2], NULL, 0) : 94;
    double fpr = argc > 3 ? strtod(argv[3], NULL) : 1e-9;
    int filters = argc > 4 ? atoi(argv[4]) : 200;
    size_t queries = argc > 5 ? strtoull(argv[5], NULL, 0) : 50000;
    rng = argc > 6 ? strtoull(argv[6], NULL, 0) : 1;
    if (ns < 1 || nc < 1 || filters < 1 || queries < 1) {
        fprintf(stderr, "usage: bench_bloom [NS NC FPR FILTERS QUERIES [SEED]]\n");
        return 2;
    }
    printf("bench_bloom: %zu server values, %" PRId64 " client values, fpr %g, %d filters x %zu "
           "non-members\n", ns, nc, fpr, filters, queries);
    return run(PSI_BLOOM_FORMAT_PSIJS, ns, nc, fpr, filters, queries) ||
           run(PSI_BLOOM_FORMAT_DISTINCT, ns, nc, fpr, filters, queries);
}
