/*
 * bench_tail: the serial steps of a round at a given size, which run on one
 * thread after (or without) the shards and so send no keepalives unless
 * they tick the progress callback (PROTOCOL.md §14.4, §15.1).
 *
 *   bench_tail [N]   N elements (default 10000000)
 *
 * Elements are random 33-byte strings (no step here checks points).  Each
 * line times one step, in seconds:
 *
 *   whole_sort        psi_elements_sort of all N: what a response without
 *                     reveal cost before the shards sorted their slices
 *   slice_sorts       psi_elements_sort of each of 8 slices (psi_shard_plan),
 *                     one after another; the shards run them on their
 *                     threads, so divide by the thread count
 *   merge             psi_shard_merge_sorted of the 8 slices (ticks)
 *   setup_encode      psi_setup_encode of a raw setup of the N elements
 *   setup_parse       psi_setup_parse of it
 *   match_unsorted    psi_setup_match of N client elements in response
 *                     order (half of them in the setup): the walk's own sort
 *   match_presorted   the same elements, sorted by slices and merged as the
 *                     shards now hand them over: the walk alone
 *
 * The two matches must find the same number of elements, else exit 1.
 * Public API only.
 */
#include "psi.h"
#include "psi_shard.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SHARDS 8
#define EB PSI_ELEMENT_BYTES

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void fill(uint8_t *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = e + EB * i;
        p[0] = (uint8_t)(2 + (next() & 1));
        for (size_t k = 1; k < EB; k += 8) {
            uint64_t r = next();
            memcpy(p + k, &r, EB - k < 8 ? EB - k : 8);
        }
    }
}

static int check(int rc, const char *what)
{
    if (rc != PSI_OK)
        fprintf(stderr, "bench_tail: %s: %s\n", what, psi_error_name(rc));
    return rc != PSI_OK;
}

/* Sorts the slices of a in place (perm: their global indices) and merges
 * them into out, out_perm; prints both times. */
static int slices_and_merge(uint8_t *out, size_t *out_perm, uint8_t *a, size_t *perm, size_t n,
                            const char *prefix)
{
    double t = now_s();
    for (size_t k = 0; k < SHARDS; k++) {
        size_t off, cnt;
        psi_shard_plan(&off, &cnt, n, SHARDS, k);
        if (check(psi_elements_sort(a + off * EB, perm + off, cnt), "slice sort"))
            return 1;
        for (size_t j = 0; j < cnt; j++)
            perm[off + j] += off;
    }
    printf("%sslice_sorts,%.3f\n", prefix, now_s() - t);
    t = now_s();
    if (check(psi_shard_merge_sorted(out, out_perm, a, perm, n, SHARDS), "merge"))
        return 1;
    printf("%smerge,%.3f\n", prefix, now_s() - t);
    return 0;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
    if (n == 0 || n > SIZE_MAX / EB / 4) {
        fprintf(stderr, "usage: bench_tail [N]   (N > 0 elements)\n");
        return 2;
    }
    uint8_t *a = malloc(n * EB), *b = malloc(n * EB), *msg = NULL;
    size_t *perm = malloc(n * sizeof *perm), *mp = malloc(n * sizeof *mp);
    size_t *idx = malloc(n * sizeof *idx), cap = 0, len, found = n, found2 = n;
    psi_setup_params p = {PSI_STRUCTURE_RAW, 1e-9, 0};
    psi_setup *s = NULL;
    int bad = 1;
    double t;
    if (a == NULL || b == NULL || perm == NULL || mp == NULL || idx == NULL) {
        fprintf(stderr, "bench_tail: out of memory for %zu elements\n", n);
        goto done;
    }
    printf("step,seconds (n=%zu, %d slices)\n", n, SHARDS);
    fill(a, n);
    memcpy(b, a, n * EB);
    t = now_s();
    if (check(psi_elements_sort(b, NULL, n), "whole sort"))
        goto done;
    printf("whole_sort,%.3f\n", now_s() - t);
    if (slices_and_merge(b, mp, a, perm, n, "setup_"))
        goto done;
    if (check(psi_setup_bound(&cap, &p, n), "bound"))
        goto done;
    if ((msg = malloc(cap)) == NULL) {
        fprintf(stderr, "bench_tail: out of memory for the setup\n");
        goto done;
    }
    len = cap;
    t = now_s();
    if (check(psi_setup_encode(msg, &len, &p, b, n), "encode"))
        goto done;
    printf("setup_encode,%.3f\n", now_s() - t);
    t = now_s();
    if (check(psi_setup_parse(&s, msg, len), "parse"))
        goto done;
    printf("setup_parse,%.3f\n", now_s() - t);
    // The client's elements: random, every other one a setup element.
    fill(a, n);
    for (size_t i = 0; i < n; i += 2)
        memcpy(a + EB * i, b + EB * (next() % n), EB);
    memcpy(b, a, n * EB);
    t = now_s();
    if (check(psi_setup_match(s, idx, &found, b, n), "match"))
        goto done;
    printf("match_unsorted,%.3f\n", now_s() - t);
    if (slices_and_merge(b, mp, a, perm, n, "match_"))
        goto done;
    t = now_s();
    if (check(psi_setup_match(s, idx, &found2, b, n), "match"))
        goto done;
    printf("match_presorted,%.3f\n", now_s() - t);
    bad = found != found2;
    if (bad)
        fprintf(stderr, "bench_tail: the matches differ: %zu and %zu\n", found, found2);
done:
    psi_setup_free(s);
    free(a);
    free(b);
    free(msg);
    free(perm);
    free(mp);
    free(idx);
    return bad;
}
