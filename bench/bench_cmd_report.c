/* `shardpsi bench`: the medians, the text table and bench.json; see
 * bench_cmd.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench_cmd.h"
#include "app_util.h"

/* The JSON keys of the columns. */
static const char *const brep_keys[PSI_BENCH_CMD_COLS] = {
    "one_thread", "psijs", "shards4_t1", "all_cores",
};
static const char *const brep_calls[PSI_BENCH_CMD_OPS] = {
    "psi_server_create_setup (raw)",
    "psi_server_create_setup (GCS, fpr 1e-6, num_client_inputs = values)",
    "psi_client_create_request (reveal on)",
    "psi_server_process_request",
    "psi_client_get_intersection (GCS setup)",
    "psi_client_get_association (raw setup)",
};
static const char *const brep_js_calls[PSI_BENCH_CMD_OPS] = {
    "createSetupMessage (Raw)",
    "createSetupMessage (GCS, fpr 1e-6, numClientInputs = values)",
    "createRequest",
    "processRequest",
    "getIntersection (GCS setup)",
    "getIntersection (raw setup; psi.js has no association table)",
};

/* The figures of a round, by index: the columns' rates, their peaks, S,
 * then the five ratios.  NAN where a column did not run. */
enum { BREP_RATE = 0, BREP_PEAK = PSI_BENCH_CMD_COLS, BREP_S = 2 * PSI_BENCH_CMD_COLS,
       BREP_ONE_S, BREP_ALL_ONE, BREP_SH_ONE, BREP_ONE_JS, BREP_ALL_JS };

static double brep_figure(const psi_bench_round *rd, int what)
{
    const psi_bench_figure *f = rd->fig;
    double one = f[PSI_BENCH_CMD_ONE].done ? f[PSI_BENCH_CMD_ONE].rate : NAN;
    double js = f[PSI_BENCH_CMD_PSIJS].done ? f[PSI_BENCH_CMD_PSIJS].rate : NAN;

    if (what < BREP_PEAK)
        return f[what].done ? f[what].rate : NAN;
    if (what < BREP_S)
        return f[what - BREP_PEAK].done ? f[what - BREP_PEAK].peak_mib : NAN;
    switch (what) {
    case BREP_S:
        return (rd->s_before + rd->s_after) / 2;
    case BREP_ONE_S:
        return one / brep_figure(rd, BREP_S);
    case BREP_ALL_ONE:
        return brep_figure(rd, PSI_BENCH_CMD_ALL) / one;
    case BREP_SH_ONE:
        return brep_figure(rd, PSI_BENCH_CMD_SHARDS4) / one;
    case BREP_ONE_JS:
        return one / js;
    default:
        return brep_figure(rd, PSI_BENCH_CMD_ALL) / js;
    }
}

static int brep_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The median of one figure over the rounds, NAN ones left out. */
static double brep_median(const psi_bench_report *r, int op, int what)
{
    double v[PSI_BENCH_CMD_MAX_ROUNDS];
    size_t m = 0;

    for (size_t k = 0; k < r->o->rounds && k < PSI_BENCH_CMD_MAX_ROUNDS; k++) {
        double x = brep_figure(&r->rounds[op][k], what);
        if (!isnan(x))
            v[m++] = x;
    }
    if (m == 0)
        return NAN;
    qsort(v, m, sizeof *v, brep_cmp);
    return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

void psi_bench_medians_of(psi_bench_medians *m,
                              const psi_bench_report *r, int op)
{
    for (int col = 0; col < PSI_BENCH_CMD_COLS; col++) {
        m->rate[col] = brep_median(r, op, BREP_RATE + col);
        m->peak[col] = brep_median(r, op, BREP_PEAK + col);
    }
    m->s = brep_median(r, op, BREP_S);
    m->one_per_s = brep_median(r, op, BREP_ONE_S);
    m->all_per_one = brep_median(r, op, BREP_ALL_ONE);
    m->shards4_per_one = brep_median(r, op, BREP_SH_ONE);
    m->one_per_js = brep_median(r, op, BREP_ONE_JS);
    m->all_per_js = brep_median(r, op, BREP_ALL_JS);
}

void psi_bench_fmt_rate(char *out, size_t cap, double v)
{
    char digits[32];
    size_t n, k = 0;

    if (isnan(v) || v < 0 || v >= 1e18) {
        snprintf(out, cap, "-");
        return;
    }
    n = (size_t)snprintf(digits, sizeof digits, "%.0f", v);
    for (size_t i = 0; i < n && k + 2 < cap; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            out[k++] = ',';
        out[k++] = digits[i];
    }
    out[k] = '\0';
}

/* ---------------------------------------------------------------- text */

static void brep_ratio(char *out, size_t cap, double v)
{
    if (isnan(v) || isinf(v))
        snprintf(out, cap, "-");
    else
        snprintf(out, cap, "%.2f", v);
}

static void brep_mib(char *out, size_t cap, double v)
{
    if (isnan(v))
        snprintf(out, cap, "n/a");
    else
        snprintf(out, cap, "%.1f", v);
}

static void brep_header(FILE *f, const psi_bench_report *r)
{
    const psi_bench_opts *o = r->o;
    char n[32], k[32], s[32];

    psi_bench_fmt_rate(n, sizeof n, (double)o->values);
    psi_bench_fmt_rate(k, sizeof k, (double)r->overlap);
    fprintf(f, "shardpsi bench: shardpsi %s, %s values per side (%s shared), %zu round%s%s\n",
            psi_version(), n, k, o->rounds, o->rounds == 1 ? "" : "s",
            o->rounds == 1 ? "" : " (medians)");
    fprintf(f, "suite: %s\n", psi_suite_name(o->suite));
    fprintf(f, "machine: %s, %zu online CPUs; %s; %s\n", r->cpu_model, r->online_cpus,
            r->openssl, r->date);
    if (!isnan(r->openssl_speed)) {
        psi_bench_fmt_rate(s, sizeof s, r->openssl_speed);
        fprintf(f, "cross-check: openssl speed -seconds 2 ecdhp256: %s ECDH/s\n", s);
    } else {
        fprintf(f, "cross-check: openssl speed not run: %s\n", r->openssl_note);
    }
    if (r->js_ran)
        fprintf(f, "psi.js: @openmined/psi.js %s in Node %s\n", r->psijs_version,
                r->node_version);
    else
        fprintf(f, "psi.js: skipped: %s\n", r->js_note);
}

// One table row: op, S, 1 thread and /S, shards4t1 and /1t, all cores and
// /1t, psi.js, 1t/js, all/js, the three peaks.
#define BREP_ROW "%-13s %8s %9s %5s %10s %5s %10s %5s %8s %6s %6s %7s %8s %7s\n"

static void brep_row(FILE *f, const psi_bench_report *r, int op)
{
    psi_bench_medians m;
    char s[24], one[24], sh[24], all[24], js[24];
    char q[5][16], mib[3][16];

    psi_bench_medians_of(&m, r, op);
    psi_bench_fmt_rate(s, sizeof s, m.s);
    psi_bench_fmt_rate(one, sizeof one, m.rate[PSI_BENCH_CMD_ONE]);
    psi_bench_fmt_rate(sh, sizeof sh, m.rate[PSI_BENCH_CMD_SHARDS4]);
    psi_bench_fmt_rate(all, sizeof all, m.rate[PSI_BENCH_CMD_ALL]);
    psi_bench_fmt_rate(js, sizeof js, m.rate[PSI_BENCH_CMD_PSIJS]);
    brep_ratio(q[0], sizeof q[0], m.one_per_s);
    brep_ratio(q[1], sizeof q[1], m.shards4_per_one);
    brep_ratio(q[2], sizeof q[2], m.all_per_one);
    brep_ratio(q[3], sizeof q[3], m.one_per_js);
    brep_ratio(q[4], sizeof q[4], m.all_per_js);
    brep_mib(mib[0], sizeof mib[0], m.peak[PSI_BENCH_CMD_ONE]);
    brep_mib(mib[1], sizeof mib[1], m.peak[PSI_BENCH_CMD_ALL]);
    if (r->js_ran)
        brep_mib(mib[2], sizeof mib[2], m.peak[PSI_BENCH_CMD_PSIJS]);
    else
        snprintf(mib[2], sizeof mib[2], "-");
    fprintf(f, BREP_ROW, psi_bench_op_name(op), s, one, q[0], sh, q[1], all, q[2], js,
            q[3], q[4], mib[0], mib[1], mib[2]);
}

void psi_bench_text(FILE *f, const psi_bench_report *r)
{
    brep_header(f, r);
    fprintf(f, "\nvalues/s of each operation; S: P-256 ECDH derivations/s on one core;\n"
            "shards4t1: 4 shards in turn on 1 thread; all cores: %zu threads, %zu "
            "shards;\nMiB: peak RSS during the call above the RSS before it\n\n",
            r->o->threads, 4 * r->o->threads);
    fprintf(f, BREP_ROW, "op", "S", "1 thread", "1t/S", "shards4t1", "/1t", "all cores",
            "/1t", "psi.js", "1t/js", "all/js", "MiB 1t", "MiB all", "MiB js");
    for (int op = 0; op < PSI_BENCH_CMD_OPS; op++)
        if (r->rounds[op] != NULL)
            brep_row(f, r, op);
    if (r->rounds[PSI_BENCH_CMD_ASSOCIATION] != NULL && r->js_ran)
        fprintf(f, "\npsi.js has no association table: its association figure is "
                "getIntersection against the raw setup.\n");
}

/* ---------------------------------------------------------------- JSON */

/* Adds item to obj as name; on any failure (item or obj NULL, no memory)
 * frees item and clears *ok.  Returns: item or NULL. */
static cJSON *brep_add(cJSON *obj, const char *name, cJSON *item, int *ok)
{
    if (item == NULL || obj == NULL || !cJSON_AddItemToObject(obj, name, item)) {
        cJSON_Delete(item);
        *ok = 0;
        return NULL;
    }
    return item;
}

static cJSON *brep_num(double v)
{
    return isnan(v) || isinf(v) ? cJSON_CreateNull() : cJSON_CreateNumber(v);
}

static cJSON *brep_str(const char *s)
{
    return s != NULL && s[0] != '\0' ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static cJSON *brep_json_figure(const psi_bench_figure *fig, int *ok)
{
    cJSON *j;

    if (!fig->done)
        return cJSON_CreateNull();
    j = cJSON_CreateObject();
    brep_add(j, "seconds", brep_num(fig->seconds), ok);
    brep_add(j, "values_per_s", brep_num(fig->rate), ok);
    brep_add(j, "peak_mib", brep_num(fig->peak_mib), ok);
    brep_add(j, "count", cJSON_CreateNumber((double)fig->count), ok);
    return j;
}

static void brep_json_rounds(cJSON *arr, const psi_bench_report *r, int op, int *ok)
{
    for (size_t k = 0; k < r->o->rounds && arr != NULL; k++) {
        const psi_bench_round *rd = &r->rounds[op][k];
        cJSON *j = cJSON_CreateObject();
        if (j == NULL || !cJSON_AddItemToArray(arr, j)) {
            cJSON_Delete(j);
            *ok = 0;
            return;
        }
        brep_add(j, "S_before", brep_num(rd->s_before), ok);
        brep_add(j, "S_after", brep_num(rd->s_after), ok);
        brep_add(j, "S", brep_num(brep_figure(rd, BREP_S)), ok);
        for (int col = 0; col < PSI_BENCH_CMD_COLS; col++)
            brep_add(j, brep_keys[col], brep_json_figure(&rd->fig[col], ok), ok);
    }
}

static void brep_json_medians(cJSON *j, const psi_bench_report *r, int op, int *ok)
{
    psi_bench_medians m;
    cJSON *peak;

    psi_bench_medians_of(&m, r, op);
    brep_add(j, "S", brep_num(m.s), ok);
    for (int col = 0; col < PSI_BENCH_CMD_COLS; col++)
        brep_add(j, brep_keys[col], brep_num(m.rate[col]), ok);
    brep_add(j, "one_thread_per_S", brep_num(m.one_per_s), ok);
    brep_add(j, "all_cores_per_one_thread", brep_num(m.all_per_one), ok);
    brep_add(j, "shards4_t1_per_one_thread", brep_num(m.shards4_per_one), ok);
    brep_add(j, "one_thread_per_psijs", brep_num(m.one_per_js), ok);
    brep_add(j, "all_cores_per_psijs", brep_num(m.all_per_js), ok);
    peak = brep_add(j, "peak_mib", cJSON_CreateObject(), ok);
    for (int col = 0; col < PSI_BENCH_CMD_COLS; col++)
        brep_add(peak, brep_keys[col], brep_num(m.peak[col]), ok);
}

static void brep_json_ops(cJSON *arr, const psi_bench_report *r, int *ok)
{
    for (int op = 0; op < PSI_BENCH_CMD_OPS && arr != NULL; op++) {
        cJSON *j;
        if (r->rounds[op] == NULL)
            continue;
        if ((j = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(arr, j)) {
            cJSON_Delete(j);
            *ok = 0;
            return;
        }
        brep_add(j, "op", cJSON_CreateString(psi_bench_op_name(op)), ok);
        brep_add(j, "call", cJSON_CreateString(brep_calls[op]), ok);
        brep_add(j, "psijs_call", cJSON_CreateString(brep_js_calls[op]), ok);
        brep_json_rounds(brep_add(j, "rounds", cJSON_CreateArray(), ok), r, op, ok);
        brep_json_medians(brep_add(j, "median", cJSON_CreateObject(), ok), r, op, ok);
    }
}

static void brep_json_machine(cJSON *j, const psi_bench_report *r, int *ok)
{
    brep_add(j, "cpu_model", cJSON_CreateString(r->cpu_model), ok);
    brep_add(j, "online_cpus", cJSON_CreateNumber((double)r->online_cpus), ok);
    brep_add(j, "openssl", brep_str(r->openssl), ok);
    brep_add(j, "openssl_speed_ecdhp256", brep_num(r->openssl_speed), ok);
    brep_add(j, "openssl_speed_note", brep_str(r->openssl_note), ok);
    brep_add(j, "node", brep_str(r->js_ran ? r->node_version : NULL), ok);
    brep_add(j, "psijs", brep_str(r->js_ran ? r->psijs_version : NULL), ok);
    brep_add(j, "psijs_note", brep_str(r->js_note), ok);
}

/* Returns: the JSON text (cJSON_free it), or NULL when out of memory. */
static char *brep_json(const psi_bench_report *r)
{
    const psi_bench_opts *o = r->o;
    cJSON *root = cJSON_CreateObject(), *units;
    char *text = NULL;
    int ok = root != NULL;

    brep_add(root, "format", cJSON_CreateString("shardpsi-bench/1"), &ok);
    brep_add(root, "version", cJSON_CreateString(psi_version()), &ok);
    brep_add(root, "date", cJSON_CreateString(r->date), &ok);
    brep_json_machine(brep_add(root, "machine", cJSON_CreateObject(), &ok), r, &ok);
    brep_add(root, "suite", cJSON_CreateString(psi_suite_name(o->suite)), &ok);
    brep_add(root, "values", cJSON_CreateNumber((double)o->values), &ok);
    brep_add(root, "shared", cJSON_CreateNumber((double)r->overlap), &ok);
    brep_add(root, "rounds", cJSON_CreateNumber((double)o->rounds), &ok);
    brep_add(root, "threads", cJSON_CreateNumber((double)o->threads), &ok);
    brep_add(root, "all_cores_shards", cJSON_CreateNumber(4.0 * (double)o->threads), &ok);
    brep_add(root, "seed", cJSON_CreateNumber((double)o->seed), &ok);
    brep_add(root, "gcs_fpr", cJSON_CreateNumber(PSI_BENCH_CMD_FPR), &ok);
    units = brep_add(root, "units", cJSON_CreateObject(), &ok);
    brep_add(units, "S", cJSON_CreateString("P-256 ECDH derivations per second, one "
                                            "core"), &ok);
    brep_add(units, "rates", cJSON_CreateString("values per second, values = N"), &ok);
    brep_add(units, "peak_mib", cJSON_CreateString("MiB of peak RSS (VmHWM) above the RSS "
                                                   "before the call"), &ok);
    brep_json_ops(brep_add(root, "ops", cJSON_CreateArray(), &ok), r, &ok);
    if (ok)
        text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

/* ---------------------------------------------------------------- files */

/* Opens DIR/name for writing.  Returns: the file, or NULL after a message. */
static FILE *brep_open(char *path, size_t cap, const psi_bench_report *r,
                       const char *name)
{
    FILE *f;

    snprintf(path, cap, "%s/%s", r->o->out_dir, name);
    if ((f = fopen(path, "w")) == NULL)
        psi_app_error("bench: cannot write %s", path);
    return f;
}

static int brep_close(FILE *f, const char *path, int bad)
{
    if (fclose(f) != 0 || bad) {
        psi_app_error("bench: cannot write %s", path);
        return -1;
    }
    return 0;
}

int psi_bench_write_files(const psi_bench_report *r)
{
    char path[4200];
    char *json = brep_json(r);
    FILE *f;
    int rc = 0;

    if (json == NULL) {
        psi_app_error("bench: out of memory for bench.json");
        return -1;
    }
    if ((f = brep_open(path, sizeof path, r, "bench.json")) == NULL)
        rc = -1;
    else
        rc |= brep_close(f, path, fputs(json, f) < 0 || fputc('\n', f) == EOF);
    cJSON_free(json);
    if ((f = brep_open(path, sizeof path, r, "bench.txt")) == NULL) {
        rc = -1;
    } else {
        psi_bench_text(f, r);
        rc |= brep_close(f, path, ferror(f));
    }
    if ((f = brep_open(path, sizeof path, r, "bench.svg")) == NULL)
        rc = -1;
    else
        rc |= brep_close(f, path, psi_bench_svg(f, r) != 0);
    if (rc == 0)
        fprintf(stderr, "wrote %s/bench.txt, bench.json and bench.svg\n", r->o->out_dir);
    return rc;
}

/* ------------------------------------------------------------- suites */

void psi_bench_suites_text(FILE *f, const psi_bench_opts *o,
                               const psi_bench_suites *t)
{
    char n[32], one[24], all[24], cell[64];

    psi_bench_fmt_rate(n, sizeof n, (double)o->values);
    fprintf(f, "\nvalues/s by suite, %s values per side: 1 thread / all cores (%zu "
            "threads, %zu shards)\n\n%-15s", n, o->threads, 4 * o->threads, "suite");
    for (int op = 0; op < PSI_BENCH_CMD_OPS; op++)
        if (o->op_on[op])
            fprintf(f, " %21s", psi_bench_op_name(op));
    fputc('\n', f);
    for (size_t k = 0; k < t->n; k++) {
        fprintf(f, "%-15s", psi_suite_name(t->suite[k]));
        for (int op = 0; op < PSI_BENCH_CMD_OPS; op++) {
            if (!o->op_on[op])
                continue;
            psi_bench_fmt_rate(one, sizeof one, t->one[k][op]);
            psi_bench_fmt_rate(all, sizeof all, t->all[k][op]);
            snprintf(cell, sizeof cell, "%s / %s", one, all);
            fprintf(f, " %21s", cell);
        }
        fputc('\n', f);
    }
}
