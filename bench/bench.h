/*
 * Timing harness shared by the benchmarks.
 *
 * A case is a setup/run/teardown triple.  Only run() is timed; it is called
 * `iters` times on the state setup() built, so it must be repeatable: every
 * run() does the same work.  Output is one CSV row per case:
 *
 *   name,min_s,avg_s,max_s,us_per_element,values_per_s
 *
 * The per-element figures use the average.  After the last run, check()
 * (untimed, may be NULL) verifies the output so a fast wrong answer cannot
 * pass as a result.  Header-only (static inline) so each bench program stays
 * a single translation unit.
 */
#ifndef PSI_BENCH_H
#define PSI_BENCH_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct bench_case {
    const char *name;
    size_t n;                    /* elements one run() processes */
    int (*setup)(void **state, const struct bench_case *c);
    int (*run)(void *state);     /* the measured operation; 0 on success */
    int (*check)(void *state);   /* untimed, after the runs; may be NULL */
    void (*teardown)(void *state);
    const void *arg;             /* case-specific parameters for setup() */
} bench_case;

static inline double bench_now(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        perror("clock_gettime");
        exit(2);
    }
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* PSI_BENCH_ITERS if set (a positive integer), else `dflt`.  Returns 0 when
 * the variable is malformed. */
static inline unsigned bench_iters(unsigned dflt)
{
    const char *s = getenv("PSI_BENCH_ITERS");
    char *end;
    unsigned long v;

    if (s == NULL || *s == '\0')
        return dflt;
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v == 0 || v > 1000000 || s[0] == '-')
        return 0;
    return (unsigned)v;
}

/* A case runs when no filter is given or its name contains any filter. */
static inline int bench_selected(const char *name, int nfilters, char **filters)
{
    int i;

    if (nfilters == 0)
        return 1;
    for (i = 0; i < nfilters; i++)
        if (strstr(name, filters[i]) != NULL)
            return 1;
    return 0;
}

static inline void bench_print_header(void)
{
    printf("name,min_s,avg_s,max_s,us_per_element,values_per_s\n");
    fflush(stdout);
}

/* Runs one case and prints its row.  Returns 0, or 1 after printing the
 * failure to stderr. */
static inline int bench_run_case(const bench_case *c, unsigned iters)
{
    void *state = NULL;
    double min = 0.0, max = 0.0, sum = 0.0, avg;
    unsigned i;
    int rc = 1;

    if (c->setup(&state, c) != 0) {
        fprintf(stderr, "%s: setup failed\n", c->name);
        goto done;
    }
    for (i = 0; i < iters; i++) {
        double t0 = bench_now(), dt;
        int r = c->run(state);
        dt = bench_now() - t0;
        if (r != 0) {
            fprintf(stderr, "%s: run %u failed\n", c->name, i);
            goto done;
        }
        if (i == 0 || dt < min)
            min = dt;
        if (i == 0 || dt > max)
            max = dt;
        sum += dt;
    }
    if (c->check != NULL && c->check(state) != 0) {
        fprintf(stderr, "%s: wrong result\n", c->name);
        goto done;
    }
    avg = sum / iters;
    printf("%s,%.6f,%.6f,%.6f,%.3f,%.1f\n", c->name, min, avg, max,
           avg * 1e6 / (double)c->n, avg > 0.0 ? (double)c->n / avg : 0.0);
    fflush(stdout);
    rc = 0;
done:
    if (state != NULL)
        c->teardown(state);
    return rc;
}

#endif /* PSI_BENCH_H */
