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
 *   slice_sorts       psi_elements_sort of each of 8 slices (the cut of §14.1),
 *                     one after another; the shards run them on their
 *                     threads, so divide by the thread count
 *   merge             the library's merge of the 8 slices (an external plan)
 *   setup_encode      psi_setup_encode of a raw setup of the N elements
 *   setup_parse       psi_setup_parse of it
 *   match_unsorted    psi_setup_match of N client elements in response
 *                     order (half of them in the setup): the walk's own sort
 *   match_presorted   the same elements, sorted by slices and merged as the
 *                     shards now hand them over: the walk alone
 *
 * The two matches must find the same number of elements, else exit 1.
 * Links psi/ statically: the serial steps it times are internal (codec.h).
 */
#include "psi.h"
#include "codec.h"

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

/* An external plan's source: slice k of the sorted slices, whole. */
typedef struct slices {
    const uint8_t *a;
    const size_t *perm;
    size_t off[SHARDS], cnt[SHARDS];
} slices;

static int slices_source(void *arg, size_t k, const uint8_t **elements, const size_t **index,
                         size_t *count)
{
    const slices *sl = arg;
    *elements = sl->a + sl->off[k] * EB;
    *index = sl->perm + sl->off[k];
    *count = sl->cnt[k];
    return PSI_OK;
}

/* Sorts the slices of a in place (perm: their global indices) and merges
 * them into out, out_perm with the library's merge (an external plan fed
 * the sorted slices); prints both times. */
static int slices_and_merge(const psi_engine *e, uint8_t *out, size_t *out_perm, uint8_t *a,
                            size_t *perm, size_t n, const char *prefix)
{
    psi_op_args pa = {.op = PSI_OP_STEP, .step = PSI_STEP_MASK_SORT, .n_values = n,
                      .slices = SHARDS, .external = 1};
    psi_plan *p = NULL;
    slices sl = {a, perm, {0}, {0}};
    if (check(psi_plan_begin(&p, e, &pa), "plan"))
        return 1;
    for (size_t k = 0; k < SHARDS; k++) {
        psi_step st;
        psi_plan_step(p, &st, k);
        sl.off[k] = st.offset;
        sl.cnt[k] = st.count;
    }
    double t = now_s();
    for (size_t k = 0; k < SHARDS; k++) {
        if (check(psi_elements_sort(a + sl.off[k] * EB, perm + sl.off[k], sl.cnt[k]),
                  "slice sort"))
            return 1;
        for (size_t j = 0; j < sl.cnt[k]; j++)
            perm[sl.off[k] + j] += sl.off[k];
    }
    printf("%sslice_sorts,%.3f\n", prefix, now_s() - t);
    t = now_s();
    psi_op_output o = {.bytes = out, .len = n * EB, .perm = out_perm};
    int rc = psi_plan_source(p, slices_source, &sl);
    if (rc == PSI_OK)
        rc = psi_plan_finish(p, &o);
    psi_plan_free(p);
    if (check(rc, "merge"))
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
    psi_engine *e = NULL;
    psi_settings es;
    int bad = 1;
    double t;
    psi_settings_default(&es);
    if (check(psi_engine_create(&e, &es), "engine"))
        goto done;
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
    if (slices_and_merge(e, b, mp, a, perm, n, "setup_"))
        goto done;
    if (check(psi_setup_bound(&cap, PSI_SUITE_OPENMINED_P256, &p, n), "bound"))
        goto done;
    if ((msg = malloc(cap)) == NULL) {
        fprintf(stderr, "bench_tail: out of memory for the setup\n");
        goto done;
    }
    len = cap;
    t = now_s();
    if (check(psi_setup_encode(msg, &len, PSI_SUITE_OPENMINED_P256, &p, b, n), "encode"))
        goto done;
    printf("setup_encode,%.3f\n", now_s() - t);
    t = now_s();
    if (check(psi_setup_parse(&s, PSI_SUITE_OPENMINED_P256, msg, len), "parse"))
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
    if (slices_and_merge(e, b, mp, a, perm, n, "match_"))
        goto done;
    t = now_s();
    if (check(psi_setup_match(s, idx, &found2, b, n), "match"))
        goto done;
    printf("match_presorted,%.3f\n", now_s() - t);
    bad = found != found2;
    if (bad)
        fprintf(stderr, "bench_tail: the matches differ: %zu and %zu\n", found, found2);
done:
    psi_engine_free(e);
    psi_setup_free(s);
    free(a);
    free(b);
    free(msg);
    free(perm);
    free(mp);
    free(idx);
    return bad;
}
