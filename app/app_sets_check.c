/* Checks the result of `shardpsi demo` against the plain intersection. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "app_sets.h"
#include "app_util.h"

// How many false positives are printed.
#define DEMO_FP_SHOWN 10

size_t psi_app_demo_fp_limit(const psi_app_demo_opts *o)
{
    if (o->structure == PSI_STRUCTURE_RAW)
        return 0;
    return (size_t)floor(10.0 * o->fpr) + 5;
}

static void demo_print_fp(const psi_app_demo_sets *s, size_t i, size_t shown)
{
    if (shown < DEMO_FP_SHOWN)
        printf("  false positive: client value %zu \"%.*s\"\n", i,
               (int)s->client[i].len, (const char *)s->client[i].data);
    else if (shown == DEMO_FP_SHOWN)
        printf("  (more false positives not shown)\n");
}

/* Returns: 0 if the counts are within what the structure allows. */
static int demo_judge(const psi_app_demo_opts *o, const psi_app_demo_sets *s,
                      size_t found_true, size_t fp)
{
    size_t limit = psi_app_demo_fp_limit(o);

    printf("expected (plain comparison): %zu, false positives: %zu (allowed %zu)\n",
           s->n_true, fp, limit);
    if (found_true < s->n_true) {
        printf("WRONG: %zu true matches are missing\n", s->n_true - found_true);
        return -1;
    }
    if (fp > limit) {
        printf("WRONG: %zu false positives, more than the %zu allowed\n", fp, limit);
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
            demo_print_fp(s, idx[j], fp++);
    }
    free(seen);
    return demo_judge(o, s, found_true, fp) != 0 || bad ? -1 : 0;
}

int psi_app_demo_check_count(const psi_app_demo_opts *o, const psi_app_demo_sets *s,
                             size_t count)
{
    // Without indices, a count below the truth means missing matches and a
    // count above it means false positives.
    if (count < s->n_true)
        return demo_judge(o, s, count, 0);
    return demo_judge(o, s, s->n_true, count - s->n_true);
}
