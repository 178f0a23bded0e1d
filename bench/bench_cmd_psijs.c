/*
 * `shardpsi bench`: the psi.js column.  A Node child runs bench/psijs-bench.mjs,
 * which loads @openmined/psi.js, reads both sets from files written here
 * and answers "run OP" lines with one JSON line each; see bench_cmd.h and
 * the script's header for the exchange.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench_cmd.h"
#include "app_util.h"

// Seconds the child may take to load psi.js and read the values, and to
// answer a command: a base plus 10 ms a value, 10 times what psi.js needs.
#define BJS_READY_SECONDS 120.0
#define BJS_RUN_SECONDS 600.0

// What SIGPIPE did before the child started: a write to a child that died
// must fail with EPIPE, not end this process.
static void (*bjs_old_sigpipe)(int) = SIG_DFL;
static int bjs_sigpipe_saved;

static int bjs_write_values(const char *path, const psi_value *v, size_t n)
{
    FILE *f = fopen(path, "w");
    int bad = 0;

    if (f == NULL)
        return -1;
    // The generated values hold no newline, so one value a line is exact.
    for (size_t i = 0; i < n && !bad; i++)
        bad = fwrite(v[i].data, 1, v[i].len, f) != v[i].len || fputc('\n', f) == EOF;
    return fclose(f) == 0 && !bad ? 0 : -1;
}

static void bjs_file(char *out, size_t cap, const char *dir, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

/* The value files in a new temporary directory.  Returns: 0, or -1 after
 * a message. */
static int bjs_files(psi_bench_js *js, const psi_app_demo_sets *s)
{
    const char *tmp = getenv("TMPDIR");
    char path[320];

    if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 200)
        tmp = "/tmp";
    snprintf(js->dir, sizeof js->dir, "%s/psi-bench-XXXXXX", tmp);
    if (mkdtemp(js->dir) == NULL) {
        psi_app_error("bench: cannot make a directory in %s: %s", tmp, strerror(errno));
        js->dir[0] = '\0';
        return -1;
    }
    bjs_file(path, sizeof path, js->dir, "server.txt");
    if (bjs_write_values(path, s->server, s->n_server) == 0) {
        bjs_file(path, sizeof path, js->dir, "client.txt");
        if (bjs_write_values(path, s->client, s->n_client) == 0)
            return 0;
    }
    psi_app_error("bench: cannot write %s: %s", path, strerror(errno));
    return -1;
}

/* Reads one line from the child within `seconds` and parses it as a JSON
 * object.  Returns: the object, or NULL with the reason in err; after a
 * timeout js->hung is set, after the end of its output js->ended. */
static cJSON *bjs_reply(psi_bench_js *js, double seconds, char *err, size_t err_len)
{
    struct pollfd p = {fileno(js->child.from), POLLIN, 0};
    double ms = seconds * 1000;
    char *line = NULL;
    size_t cap = 0;
    cJSON *j = NULL;
    int ready;

    // The child writes one line per command, so nothing waits in the
    // FILE buffer here and poll sees whether the next line has come.
    do
        ready = poll(&p, 1, ms > INT_MAX ? INT_MAX : (int)ms);
    while (ready < 0 && errno == EINTR);
    if (ready == 0) {
        snprintf(err, err_len, "node gave no answer within %.0f s", seconds);
        js->hung = 1;
    } else if (getline(&line, &cap, js->child.from) <= 0) {
        snprintf(err, err_len, "node ended without an answer");
        js->ended = 1;
    } else {
        line[strcspn(line, "\r\n")] = '\0';
        j = cJSON_Parse(line);
        if (!cJSON_IsObject(j)) {
            snprintf(err, err_len, "node answered something else than a JSON object: "
                     "%.80s", line);
            cJSON_Delete(j);
            j = NULL;
        }
    }
    free(line);
    return j;
}

/* Copies the string field `name` of j into out ("?" if absent). */
static void bjs_string(char *out, size_t cap, const cJSON *j, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);

    snprintf(out, cap, "%s", cJSON_IsString(v) ? v->valuestring : "?");
}

/* Waits for the child's first line: {"ready":true,...} or {"error":...}.
 * Returns: 0, or 1 with the reason in why. */
static int bjs_ready(psi_bench_js *js, psi_bench_report *r, char *why, size_t cap)
{
    char err[200];
    cJSON *j = bjs_reply(js, BJS_READY_SECONDS, err, sizeof err);
    int rc = 1, status;

    if (j == NULL && js->ended) {
        // How it ended says more than the end of its output.
        status = psi_bench_child_end(&js->child, js->hung);
        if (status >= 0)
            snprintf(why, cap, "%s (exit status %d)", err, status);
        else
            snprintf(why, cap, "%s (killed by a signal)", err);
    } else if (j == NULL) {
        snprintf(why, cap, "%s", err);
    } else if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "error"))) {
        bjs_string(why, cap, j, "error");
    } else if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "ready"))) {
        snprintf(why, cap, "the script did not say it was ready");
    } else {
        bjs_string(r->node_version, sizeof r->node_version, j, "node");
        bjs_string(r->psijs_version, sizeof r->psijs_version, j, "psijs");
        js->ready = 1;
        rc = 0;
    }
    cJSON_Delete(j);
    return rc;
}

int psi_bench_js_start(psi_bench_js *js, psi_bench_report *r,
                           const psi_app_demo_sets *s, char *why, size_t why_len)
{
    const psi_bench_opts *o = r->o;
    char node[1024], server[320], client[320], err[200];
    char *argv[] = {node, "--expose-gc", (char *)o->script, server, client, NULL};

    memset(js, 0, sizeof *js);
    if (psi_bench_find_program(node, sizeof node, o->node ? o->node : "node") != 0) {
        if (o->node != NULL)
            snprintf(why, why_len, "--node %s is not an executable file", o->node);
        else
            snprintf(why, why_len, "no node program on PATH (or give --node PATH)");
        return 1;
    }
    if (access(o->script, R_OK) != 0) {
        snprintf(why, why_len, "cannot read the script %s: %s", o->script,
                 strerror(errno));
        return 1;
    }
    if (bjs_files(js, s) != 0)
        return -1;
    bjs_file(server, sizeof server, js->dir, "server.txt");
    bjs_file(client, sizeof client, js->dir, "client.txt");
    bjs_old_sigpipe = signal(SIGPIPE, SIG_IGN);
    bjs_sigpipe_saved = 1;
    if (psi_bench_child_start(&js->child, argv, 0, err, sizeof err) != 0) {
        snprintf(why, why_len, "%s", err);
        return 1;
    }
    return bjs_ready(js, r, why, why_len);
}

/* Reads the answer to "run OP" into fig.  Returns: 0, or -1 with the
 * reason in err. */
static int bjs_figure(const cJSON *j, int op, size_t values, psi_bench_figure *fig,
                      char *err, size_t cap)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "op");
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(j, "seconds");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(j, "values");
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(j, "count");
    const cJSON *peak = cJSON_GetObjectItemCaseSensitive(j, "peak_mib");

    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "error"))) {
        bjs_string(err, cap, j, "error");
        return -1;
    }
    if (!cJSON_IsString(name) || strcmp(name->valuestring, psi_bench_op_name(op)) != 0 ||
        !cJSON_IsNumber(sec) || !(sec->valuedouble > 0) || !cJSON_IsNumber(n) ||
        n->valuedouble != (double)values || !cJSON_IsNumber(count) ||
        !(count->valuedouble >= 0) || (!cJSON_IsNumber(peak) && !cJSON_IsNull(peak))) {
        snprintf(err, cap, "the answer lacks a field or has a wrong one");
        return -1;
    }
    fig->done = 1;
    fig->seconds = sec->valuedouble;
    fig->rate = (double)values / fig->seconds;
    fig->peak_mib = cJSON_IsNumber(peak) ? peak->valuedouble : NAN;
    fig->count = (size_t)count->valuedouble;
    return 0;
}

int psi_bench_js_run(psi_bench_js *js, int op, size_t values,
                         psi_bench_figure *fig)
{
    char err[256];
    cJSON *j = NULL;
    int rc = -1;

    memset(fig, 0, sizeof *fig);
    if (fprintf(js->child.to, "run %s\n", psi_bench_op_name(op)) < 0 ||
        fflush(js->child.to) != 0)
        snprintf(err, sizeof err, "cannot write to node: %s", strerror(errno));
    else if ((j = bjs_reply(js, BJS_RUN_SECONDS + (double)values * 0.01, err,
                            sizeof err)) != NULL)
        rc = bjs_figure(j, op, values, fig, err, sizeof err);
    cJSON_Delete(j);
    if (rc != 0)
        psi_app_error("bench: %s on psi.js: %s", psi_bench_op_name(op), err);
    else
        js->have[op] = 1;
    return rc;
}

void psi_bench_js_stop(psi_bench_js *js)
{
    char path[320];
    int status;

    if (js->child.pid > 0) {
        if (js->child.to != NULL) {
            fputs("quit\n", js->child.to);
            fflush(js->child.to);
        }
        status = psi_bench_child_end(&js->child, js->hung);
        // Before it was ready, its failure is the reason psi.js was skipped.
        if (status != 0 && js->ready)
            psi_app_error("bench: note: the psi.js child exited with status %d", status);
    }
    if (js->dir[0] != '\0') {
        bjs_file(path, sizeof path, js->dir, "server.txt");
        unlink(path);
        bjs_file(path, sizeof path, js->dir, "client.txt");
        unlink(path);
        if (rmdir(js->dir) != 0)
            psi_app_error("bench: cannot remove %s: %s", js->dir, strerror(errno));
        js->dir[0] = '\0';
    }
    if (bjs_sigpipe_saved)
        signal(SIGPIPE, bjs_old_sigpipe);
    bjs_sigpipe_saved = 0;
}
