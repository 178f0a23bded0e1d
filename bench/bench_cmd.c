/* `shardpsi bench`: every operation's values per second against the hardware
 * limit, on one engine, on shards and on psi.js, in one run.  The options
 * are in bench_cmd_opts.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_cmd.h"
#include "bench_command.h"
#include "app_clock.h"
#include "app_util.h"

/* The ops whose output an op reads (-1: none). */
static const int bench_needs[PSI_BENCH_CMD_OPS][2] = {
    {-1, -1}, {-1, -1}, {-1, -1},
    {PSI_BENCH_CMD_REQUEST, -1},
    {PSI_BENCH_CMD_SETUP_GCS, PSI_BENCH_CMD_RESPONSE},
    {PSI_BENCH_CMD_SETUP_RAW, PSI_BENCH_CMD_RESPONSE},
};

/* Everything one run holds. */
typedef struct bench_run {
    psi_bench_opts o;
    psi_bench_report r;
    psi_app_demo_sets sets;
    psi_bench_c c;
    psi_bench_js js;
    int js_on;
    int have_openssl;        // the openssl cross-check ran (once a run)
    double openssl_speed;
    char openssl_note[160];
} bench_run;

static void bench_progress(const bench_run *b, int op, size_t round, const char *what,
                           double rate, const char *unit, double seconds)
{
    char num[32];

    psi_bench_fmt_rate(num, sizeof num, rate);
    fprintf(stderr, "%s round %zu/%zu: %s %s %s (%.2f s)\n", psi_bench_op_name(op),
            round + 1, b->o.rounds, what, num, unit, seconds);
}

/* Makes the inputs of op that no op made yet: their ops run once, untimed,
 * on the single engine and in psi.js.  Returns: 0, or non-zero after a
 * message. */
static int bench_prepare(bench_run *b, int op)
{
    psi_bench_figure fig;

    for (int k = 0; k < 2; k++) {
        int p = bench_needs[op][k], rc;
        if (p < 0 || (b->c.have[p] && (!b->js_on || b->js.have[p])))
            continue;
        if ((rc = bench_prepare(b, p)) != 0)
            return rc;
        fprintf(stderr, "%s: making its input with %s (untimed)\n",
                psi_bench_op_name(op), psi_bench_op_name(p));
        if (!b->c.have[p] &&
            (rc = psi_bench_c_run(&b->c, p, PSI_BENCH_CMD_ONE, &fig)) != 0)
            return rc;
        if (b->js_on && !b->js.have[p] &&
            (rc = psi_bench_js_run(&b->js, p, b->o.values, &fig)) != 0)
            return rc;
    }
    return 0;
}

static int bench_s(const bench_run *b, int op, size_t round, double *s)
{
    double t0 = psi_app_now_ms();

    if (psi_bench_ecdh_rate(s, b->o.s_seconds) != 0)
        return -1;
    bench_progress(b, op, round, "S", *s, "ECDH/s", (psi_app_now_ms() - t0) / 1000.0);
    return 0;
}

/* Checks psi.js's result: the matches as for the C columns, and the size
 * of its messages against ours, which must be equal (same element count,
 * same wire format) except for GCS, whose size depends on the key.
 * Returns: 0, or 1 after a message. */
static int bench_js_check(const bench_run *b, int op, const psi_bench_figure *fig)
{
    if (op >= PSI_BENCH_CMD_INTERSECTION) {
        if (psi_bench_count_ok(&b->sets, op, fig->count) == 0)
            return 0;
        psi_app_error("bench: %s on psi.js: wrong result: %zu matches for %zu true ones",
                      psi_bench_op_name(op), fig->count, b->sets.n_true);
        return 1;
    }
    if (op == PSI_BENCH_CMD_SETUP_GCS || fig->count == b->c.msg_len[op])
        return 0;
    psi_app_error("bench: %s on psi.js: %zu bytes, but %zu bytes here",
                  psi_bench_op_name(op), fig->count, b->c.msg_len[op]);
    return 1;
}

/* One round of op: S, the columns in their order, S again. */
static int bench_round(bench_run *b, int op, size_t round)
{
    psi_bench_round *rd = &b->r.rounds[op][round];
    int rc;

    if (bench_s(b, op, round, &rd->s_before) != 0)
        return -1;
    for (int col = 0; col < PSI_BENCH_CMD_COLS; col++) {
        psi_bench_figure *fig = &rd->fig[col];
        if (col != PSI_BENCH_CMD_PSIJS)
            rc = psi_bench_c_run(&b->c, op, col, fig);
        else if (b->js_on)
            rc = psi_bench_js_run(&b->js, op, b->o.values, fig);
        else
            continue;
        if (rc != 0)
            return rc;
        bench_progress(b, op, round, psi_bench_col_name(col), fig->rate, "values/s",
                       fig->seconds);
        if (col == PSI_BENCH_CMD_PSIJS && bench_js_check(b, op, fig) != 0)
            return 1;
    }
    return bench_s(b, op, round, &rd->s_after);
}

static int bench_ops_run(bench_run *b)
{
    for (int op = 0; op < PSI_BENCH_CMD_OPS; op++) {
        if (!b->o.op_on[op])
            continue;
        b->r.rounds[op] = calloc(b->o.rounds, sizeof *b->r.rounds[op]);
        if (b->r.rounds[op] == NULL) {
            psi_app_error("bench: out of memory");
            return -1;
        }
        if (bench_prepare(b, op) != 0)
            return -1;
        for (size_t round = 0; round < b->o.rounds; round++)
            if (bench_round(b, op, round) != 0)
                return -1;
    }
    return 0;
}

/* Starts the psi.js child as --psijs asks.  Returns: 0 (running or
 * skipped), PSI_APP_EXIT_USAGE when on but unavailable, PSI_APP_EXIT_FAIL. */
static int bench_js(bench_run *b)
{
    int rc;

    if (b->o.js == PSI_BENCH_CMD_JS_OFF) {
        snprintf(b->r.js_note, sizeof b->r.js_note, "off (--psijs off)");
        return 0;
    }
    if (b->o.suite != PSI_SUITE_OPENMINED_P256) {
        snprintf(b->r.js_note, sizeof b->r.js_note, "psi.js has no suite %s",
                 psi_suite_name(b->o.suite));
        return 0;
    }
    fprintf(stderr, "starting psi.js: %s\n", b->o.script);
    rc = psi_bench_js_start(&b->js, &b->r, &b->sets, b->r.js_note, sizeof b->r.js_note);
    if (rc < 0)
        return PSI_APP_EXIT_FAIL;
    if (rc > 0 && b->o.js == PSI_BENCH_CMD_JS_ON) {
        psi_app_error("bench: --psijs on, but psi.js is unavailable: %s", b->r.js_note);
        return PSI_APP_EXIT_USAGE;
    }
    if (rc > 0) {
        psi_bench_js_stop(&b->js);
        fprintf(stderr, "shardpsi bench: psi.js skipped: %s\n", b->r.js_note);
        return 0;
    }
    b->js_on = b->r.js_ran = 1;
    fprintf(stderr, "psi.js %s ready in Node %s\n", b->r.psijs_version, b->r.node_version);
    return 0;
}

/* The facts about the machine the reports give. */
static void bench_machine(psi_bench_report *r)
{
    time_t now = time(NULL);
    struct tm tm;

    r->online_cpus = psi_bench_online_cpus();
    r->openssl = psi_bench_openssl_version();
    psi_bench_cpu_model(r->cpu_model, sizeof r->cpu_model);
    if (gmtime_r(&now, &tm) == NULL ||
        strftime(r->date, sizeof r->date, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(r->date, sizeof r->date, "unknown");
}

/* Machine facts, the sets, psi.js, the openssl cross-check, the parties.
 * Returns: 0 or an exit code. */
static int bench_start(bench_run *b)
{
    psi_app_demo_opts d;
    int rc;

    b->r.o = &b->o;
    bench_machine(&b->r);
    if (psi_bench_mkdirs(b->o.out_dir) != 0)
        return PSI_APP_EXIT_USAGE;
    memset(&d, 0, sizeof d);
    d.seed = b->o.seed;
    d.server_size = d.client_size = b->o.values;
    d.overlap = 0.5;
    if (psi_app_demo_sets_make(&b->sets, &d) != 0) {
        psi_app_error("bench: out of memory for the sets");
        return PSI_APP_EXIT_FAIL;
    }
    b->r.overlap = b->sets.n_true;
    fprintf(stderr, "shardpsi bench: suite %s, %zu values per side, %zu shared, %zu round%s, "
            "all cores = %zu threads\n", psi_suite_name(b->o.suite), b->o.values,
            b->sets.n_true, b->o.rounds, b->o.rounds == 1 ? "" : "s", b->o.threads);
    // psi.js first: --psijs on without it fails before anything long runs.
    // Once ready, the child waits idle on its input.
    if ((rc = bench_js(b)) != 0)
        return rc;
    // Once a run: the figure does not depend on the suite.
    if (!b->have_openssl) {
        psi_bench_openssl_speed(&b->openssl_speed, b->openssl_note,
                                    sizeof b->openssl_note);
        b->have_openssl = 1;
        if (!isnan(b->openssl_speed))
            fprintf(stderr, "openssl speed -seconds 2 ecdhp256: %.1f op/s\n",
                    b->openssl_speed);
        else
            fprintf(stderr, "openssl speed cross-check skipped: %s\n", b->openssl_note);
    }
    b->r.openssl_speed = b->openssl_speed;
    snprintf(b->r.openssl_note, sizeof b->r.openssl_note, "%s", b->openssl_note);
    if (psi_bench_c_init(&b->c, &b->sets, b->o.threads,
                             psi_bench_mem_usable(), b->o.suite) != 0)
        return PSI_APP_EXIT_FAIL;
    return 0;
}

/* The whole run for the suite b->o.suite.  Returns: an exit code. */
static int bench_suite(bench_run *b)
{
    int rc = bench_start(b);

    if (rc == 0)
        rc = bench_ops_run(b) == 0 ? PSI_APP_EXIT_OK : PSI_APP_EXIT_FAIL;
    psi_bench_js_stop(&b->js);
    if (rc == PSI_APP_EXIT_OK) {
        psi_bench_text(stdout, &b->r);
        if (psi_bench_write_files(&b->r) != 0)
            rc = PSI_APP_EXIT_FAIL;
    }
    return rc;
}

/* Frees what one suite's run holds and clears it for the next. */
static void bench_suite_free(bench_run *b)
{
    psi_bench_c_free(&b->c);
    psi_app_demo_sets_free(&b->sets);
    for (int op = 0; op < PSI_BENCH_CMD_OPS; op++)
        free(b->r.rounds[op]);
    memset(&b->r, 0, sizeof b->r);
    memset(&b->js, 0, sizeof b->js);
    b->js_on = 0;
}

/* Keeps the medians of suite number k for the table by suite. */
static void bench_keep_medians(psi_bench_suites *t, const bench_run *b, size_t k)
{
    psi_bench_medians m;

    t->suite[k] = b->o.suite;
    t->n = k + 1;
    for (int op = 0; op < PSI_BENCH_CMD_OPS; op++) {
        t->one[k][op] = t->all[k][op] = NAN;
        if (b->r.rounds[op] == NULL)
            continue;
        psi_bench_medians_of(&m, &b->r, op);
        t->one[k][op] = m.rate[PSI_BENCH_CMD_ONE];
        t->all[k][op] = m.rate[PSI_BENCH_CMD_ALL];
    }
}

/* Prints the table by suite and writes it to DIR/suites.txt.  Returns: an
 * exit code. */
static int bench_suites_table(const bench_run *b, const psi_bench_suites *t)
{
    char path[4200];
    FILE *f;

    psi_bench_suites_text(stdout, &b->o, t);
    snprintf(path, sizeof path, "%s/suites.txt", b->o.base_dir);
    if ((f = fopen(path, "w")) == NULL) {
        psi_app_error("bench: cannot write %s", path);
        return PSI_APP_EXIT_FAIL;
    }
    psi_bench_suites_text(f, &b->o, t);
    if (fclose(f) != 0) {
        psi_app_error("bench: cannot write %s", path);
        return PSI_APP_EXIT_FAIL;
    }
    fprintf(stderr, "wrote %s\n", path);
    return PSI_APP_EXIT_OK;
}

int psi_bench_cmd(int argc, char **argv)
{
    static bench_run b;  // large (the psi.js child's state), and one a process
    static psi_bench_suites t;
    char dir[4200];
    int rc;

    memset(&b, 0, sizeof b);
    memset(&t, 0, sizeof t);
    rc = psi_bench_parse(&b.o, argc, argv);
    if (rc != 0)
        return rc > 0 ? PSI_APP_EXIT_OK : PSI_APP_EXIT_USAGE;
    for (size_t k = 0; k < b.o.n_suites && rc == PSI_APP_EXIT_OK; k++) {
        b.o.suite = b.o.suites[k];
        if (b.o.n_suites > 1) {
            snprintf(dir, sizeof dir, "%s/%s", b.o.base_dir, psi_suite_name(b.o.suite));
            b.o.out_dir = dir;
            if (k > 0)
                fputc('\n', stdout);
        }
        rc = bench_suite(&b);
        if (rc == PSI_APP_EXIT_OK)
            bench_keep_medians(&t, &b, k);
        bench_suite_free(&b);
    }
    if (rc == PSI_APP_EXIT_OK && b.o.n_suites > 1)
        rc = bench_suites_table(&b, &t);
    return rc;
}
