/* Checks the result of `shardpsi demo` against the plain intersection. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "app_sets.h"
#include "app_util.h"

// How many false positives are printed.
#define DEMO_FP_SHOWN 10

#define DEMO_PLAIN "plain comparison"

size_t psi_app_demo_fp_limit(const psi_app_demo_opts *o)
{
    if (o->structure == PSI_STRUCTURE_RAW)
        return 0;
    return (size_t)floor(10.0 * o->fpr) + 5;
}

void psi_app_demo_print_fp(uint64_t i, const char *text, size_t len, size_t shown)
{
    if (shown < DEMO_FP_SHOWN)
        printf("  false positive: client value %" PRIu64 " \"%.*s\"\n", i, (int)len, text);
    else if (shown == DEMO_FP_SHOWN)
        printf("  (more false positives not shown)\n");
}

int psi_app_demo_judge(const psi_app_demo_opts *o, uint64_t n_true, const char *how,
                       uint64_t found_true, uint64_t fp)
{
    uint64_t limit = psi_app_demo_fp_limit(o);

    printf("expected (%s): %" PRIu64 ", false positives: %" PRIu64 " (allowed %" PRIu64
           ")\n", how, n_true, fp, limit);
    if (found_true < n_true) {
        printf("WRONG: %" PRIu64 " true matches are missing\n", n_true - found_true);
        return -1;
    }
    if (fp > limit) {
        printf("WRONG: %" PRIu64 " false positives, more than the %" PRIu64 " allowed\n", fp,
               limit);
        return -1;
    }
    return 0;
}

int psi_app_demo_check_indices(const psi_app_demo_opts *o, const psi_app_demo_sets *s,
                               const size_t *idx, size_t n)
{
    unsigned char *seen = calloc(s->n_client ? s->n_client : 1, 1);
    size_t found_true = 0, fp = 0;
    int bad = 0;

    if (seen == NULL) {
        psi_app_error("demo: out of memory");
        return -1;
    }
    for (size_t j = 0; j < n; j++) {
        if (idx[j] >= s->n_client || seen[idx[j]]) {
            printf("WRONG: index %zu at position %zu is %s\n", idx[j], j,
                   idx[j] >= s->n_client ? "out of range" : "repeated");
            bad = 1;
            continue;
        }
        seen[idx[j]] = 1;
        if (s->is_true[idx[j]])
            found_true++;
        else
            psi_app_demo_print_fp(idx[j], (const char *)s->client[idx[j]].data,
                                  s->client[idx[j]].len, fp++);
    }
    free(seen);
    return psi_app_demo_judge(o, s->n_true, DEMO_PLAIN, found_true, fp) != 0 || bad ? -1 : 0;
}

int psi_app_demo_check_count(const psi_app_demo_opts *o, uint64_t n_true, const char *how,
                             uint64_t count)
{
    // Without indices, a count below the truth means missing matches and a
    // count above it means false positives.
    if (count < n_true)
        return psi_app_demo_judge(o, n_true, how, count, 0);
    return psi_app_demo_judge(o, n_true, how, n_true, count - n_true);
}
