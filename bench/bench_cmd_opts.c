/* `shardpsi bench`: its help, the names of its ops and columns, and its
 * options; see bench_cmd.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_cmd.h"
#include "bench_command.h"
#include "app_util.h"

/* The Node side of the psi.js column, when neither --psijs-script nor
 * SHARDPSI_PSIJS_SCRIPT names it: the script of a source tree, found from
 * its root.  It needs the tree (vectors/ and its node_modules), so an
 * installed shardpsi carries no path to it. */
#define BENCH_PSIJS_SCRIPT "bench/psijs-bench.mjs"

#define BENCH_MAX_VALUES ((size_t)10000000)

static const char *const bench_ops[PSI_BENCH_CMD_OPS] = {
    "setup_raw", "setup_gcs", "request", "response", "intersection", "association",
};
static const char *const bench_cols[PSI_BENCH_CMD_COLS] = {
    "1 thread", "psi.js", "shards 4, 1 thread", "all cores",
};

static const char bench_usage[] =
    "Usage: shardpsi bench [--values N] [--rounds R] [--threads T] [--ops LIST]\n"
    "                 [--psijs auto|on|off] [--node PATH] [--psijs-script PATH]\n"
    "                 [--out-dir DIR] [--seed S] [--s-seconds X]\n"
    "                 [--suite NAME[,NAME...]|all]\n"
    "\n"
    "Measures each operation in values per second, N values per side (server\n"
    "and client N values each, half of the client's also in the server set,\n"
    "generated as 'shardpsi demo' does), in these columns:\n"
    "  S                   the hardware limit: P-256 ECDH derivations per second\n"
    "                      on one core, measured in this process as 'openssl\n"
    "                      speed ecdhp256' does (EVP_PKEY_derive, fixed peer)\n"
    "  1 thread            one engine (psi.h)\n"
    "  shards 4, 1 thread  the sharding layer, 4 shards in turn on the calling\n"
    "                      thread: its overhead, to be close to 1 thread\n"
    "  all cores           the sharding layer on T threads with 4T shards\n"
    "  psi.js              @openmined/psi.js 2.0.6 in Node, on the same values\n"
    "                      (openmined-p256 only: psi.js has no other suite)\n"
    "\n"
    "Operations, in this order; each one's output feeds the later ones:\n"
    "  setup_raw     psi_server_create_setup, raw\n"
    "  setup_gcs     psi_server_create_setup, GCS, fpr 1e-6 for N client values\n"
    "  request       psi_client_create_request, reveal on\n"
    "  response      psi_server_process_request\n"
    "  intersection  psi_client_get_intersection against the GCS setup\n"
    "  association   psi_client_get_association against the raw setup (psi.js\n"
    "                has no association table: its getIntersection against\n"
    "                the raw setup)\n"
    "\n"
    "Each round of an op runs S, 1 thread, psi.js, shards 4, all cores and S\n"
    "again; the op's S is the mean of the two around it.  With R rounds every\n"
    "figure, ratios included, is the median over the rounds.  Every result is\n"
    "checked (intersection: the true matches, and at most a few GCS false\n"
    "positives; association: exact), and the C columns must give the single\n"
    "engine's bytes.  Peak memory (Linux): the call's peak RSS minus the RSS\n"
    "before it, \"n/a\" where /proc/self/clear_refs cannot be written.\n"
    "\n"
    "Prints the table on stdout and writes it to DIR/bench.txt, with\n"
    "DIR/bench.json (machine, every round's figures, the medians) and\n"
    "DIR/bench.svg (a bar chart).  Progress goes to stderr.  If the openssl\n"
    "program is on PATH, 'openssl speed -seconds 2 ecdhp256' runs once first\n"
    "as a cross-check of S.\n"
    "\n"
    "With several suites (--suite all, or a list) the whole run is made for\n"
    "each suite in turn, its files go to DIR/<suite>/, and a last table gives\n"
    "the values/s of each op by suite (1 thread / all cores), also written to\n"
    "DIR/suites.txt.\n"
    "\n"
    "Options:\n"
    "  --suite LIST         ciphersuites to measure: openmined-p256 (default),\n"
    "                       p256-sswu, ristretto255, a comma-separated list of\n"
    "                       them, or all (S stays P-256 ECDH in every suite)\n"
    "  --values N           values per side, 1 to 10000000 (default 100000)\n"
    "  --rounds R           rounds of each op, 1 to 1000 (default 1)\n"
    "  --threads T          threads of 'all cores', 1 to "
    PSI_APP_STR(PSI_SHARD_MAX_THREADS) " (default: the online\n"
    "                       CPUs)\n"
    "  --ops LIST           comma-separated ops to time and report (default:\n"
    "                       all); an input that comes from an op not listed\n"
    "                       is made first by that op, untimed\n"
    "  --psijs MODE         auto (default): the psi.js column if node, the\n"
    "                       script and psi.js are found, else a line says why\n"
    "                       not; on: their absence is an error; off: none\n"
    "  --node PATH          the node program (default: node on PATH)\n"
    "  --psijs-script PATH  the Node side (default: $SHARDPSI_PSIJS_SCRIPT, else\n"
    "                       " BENCH_PSIJS_SCRIPT " of the current directory,\n"
    "                       a source tree's root)\n"
    "  --out-dir DIR        where the files go, created if missing (default:\n"
    "                       bench-results)\n"
    "  --seed S             seed of the generated sets (default 1)\n"
    "  --s-seconds X        length of each S measurement, in (0, 10] seconds\n"
    "                       (default 1)\n"
    "  -h, --help           show this help\n"
    "\n"
    "Exit status: 0 success; 1 a wrong result or an error at run time; 2 a\n"
    "usage error, an --out-dir that cannot be made, or --psijs on without a\n"
    "usable psi.js.\n";

void psi_bench_usage(FILE *out)
{
    fputs(bench_usage, out);
}

const char *psi_bench_op_name(int op)
{
    return op >= 0 && op < PSI_BENCH_CMD_OPS ? bench_ops[op] : "?";
}

const char *psi_bench_col_name(int col)
{
    return col >= 0 && col < PSI_BENCH_CMD_COLS ? bench_cols[col] : "?";
}

/* --ops: a comma-separated list of op names. */
static int bench_parse_ops(psi_bench_opts *o, const char *text)
{
    memset(o->op_on, 0, sizeof o->op_on);
    for (const char *p = text;; p++) {
        size_t n = strcspn(p, ","), k;
        for (k = 0; k < PSI_BENCH_CMD_OPS; k++)
            if (strlen(bench_ops[k]) == n && strncmp(p, bench_ops[k], n) == 0)
                break;
        if (n == 0) {
            psi_app_error("bench: --ops: empty op name in '%s'", text);
            return -1;
        }
        if (k == PSI_BENCH_CMD_OPS) {
            psi_app_error("bench: --ops: unknown op '%.*s' (setup_raw, setup_gcs, "
                          "request, response, intersection, association)", (int)n, p);
            return -1;
        }
        o->op_on[k] = 1;
        p += n;
        if (*p == '\0')
            return 0;
    }
}

/* --suite: a comma-separated list of suite names, or "all". */
static int bench_parse_suites(psi_bench_opts *o, const char *text)
{
    char name[32];

    o->n_suites = 0;
    if (strcmp(text, "all") == 0) {
        for (int k = 0; k < 3; k++)
            o->suites[o->n_suites++] = k;
        return 0;
    }
    for (const char *p = text;; p++) {
        size_t n = strcspn(p, ",");
        int suite;
        if (n == 0 || n >= sizeof name) {
            psi_app_error("bench: --suite: %s suite name in '%s'", n ? "too long a" : "empty",
                          text);
            return -1;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        if (psi_app_parse_suite(&suite, name, "bench: --suite") != 0)
            return -1;
        for (size_t k = 0; k < o->n_suites; k++)
            if (o->suites[k] == suite) {
                psi_app_error("bench: --suite: %s given twice", name);
                return -1;
            }
        o->suites[o->n_suites++] = suite;
        p += n;
        if (*p == '\0')
            return 0;
    }
}

static int bench_parse_mode(psi_bench_opts *o, const char *text)
{
    static const char *const modes[] = {"off", "auto", "on"};

    for (int k = 0; k < 3; k++)
        if (strcmp(text, modes[k]) == 0) {
            o->js = (psi_bench_js_mode)k;
            return 0;
        }
    psi_app_error("bench: --psijs: unknown mode '%s' (auto, on or off)", text);
    return -1;
}

/* Parses argv[*i] (and its value).  Returns: 0, 1 after the help, -1 on a
 * usage error. */
static int bench_parse_one(psi_bench_opts *o, int argc, char **argv, int *i)
{
    const char *v = NULL;

    if (psi_app_is_help(argv[*i])) {
        psi_bench_usage(stdout);
        return 1;
    }
    if (psi_app_opt_value(argc, argv, i, "--values", &v))
        return v ? psi_app_parse_count(&o->values, v, BENCH_MAX_VALUES,
                                     "bench: --values") : -1;
    if (psi_app_opt_value(argc, argv, i, "--rounds", &v))
        return v ? psi_app_parse_count(&o->rounds, v, PSI_BENCH_CMD_MAX_ROUNDS,
                                     "bench: --rounds") : -1;
    if (psi_app_opt_value(argc, argv, i, "--threads", &v))
        return v ? psi_app_parse_count(&o->threads, v, PSI_SHARD_MAX_THREADS,
                                     "bench: --threads") : -1;
    if (psi_app_opt_value(argc, argv, i, "--s-seconds", &v))
        return v ? psi_app_parse_double(&o->s_seconds, v, 0, 1, 10, 0,
                                        "bench: --s-seconds") : -1;
    if (psi_app_opt_value(argc, argv, i, "--seed", &v))
        return v ? psi_app_parse_u64(&o->seed, v, "bench: --seed") : -1;
    if (psi_app_opt_value(argc, argv, i, "--ops", &v))
        return v ? bench_parse_ops(o, v) : -1;
    if (psi_app_opt_value(argc, argv, i, "--suite", &v))
        return v ? bench_parse_suites(o, v) : -1;
    if (psi_app_opt_value(argc, argv, i, "--psijs", &v))
        return v ? bench_parse_mode(o, v) : -1;
    if (psi_app_opt_value(argc, argv, i, "--node", &v))
        return v ? (o->node = v, 0) : -1;
    if (psi_app_opt_value(argc, argv, i, "--psijs-script", &v))
        return v ? (o->script = v, 0) : -1;
    if (psi_app_opt_value(argc, argv, i, "--out-dir", &v))
        return v ? (o->out_dir = v, 0) : -1;
    if (argv[*i][0] == '-')
        psi_app_error("bench: unknown option '%s' (see 'shardpsi bench --help')", argv[*i]);
    else
        psi_app_error("bench: unexpected argument '%s' (see 'shardpsi bench --help')", argv[*i]);
    return -1;
}

int psi_bench_parse(psi_bench_opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->values = 100000;
    o->rounds = 1;
    // Thousands of derivations, and short enough to run twice a round.
    o->s_seconds = 1.0;
    o->seed = 1;
    o->js = PSI_BENCH_CMD_JS_AUTO;
    o->script = getenv("SHARDPSI_PSIJS_SCRIPT");
    if (o->script == NULL || o->script[0] == '\0')
        o->script = BENCH_PSIJS_SCRIPT;
    o->out_dir = "bench-results";
    for (int k = 0; k < PSI_BENCH_CMD_OPS; k++)
        o->op_on[k] = 1;
    o->suites[0] = PSI_SUITE_OPENMINED_P256;
    o->n_suites = 1;
    for (int i = 1; i < argc; i++) {
        int rc = bench_parse_one(o, argc, argv, &i);
        if (rc != 0)
            return rc;
    }
    if (o->out_dir[0] == '\0' || o->script[0] == '\0' || (o->node && o->node[0] == '\0')) {
        psi_app_error("bench: --out-dir, --node and --psijs-script need a non-empty path");
        return -1;
    }
    o->base_dir = o->out_dir;
    o->suite = o->suites[0];
    if (o->js == PSI_BENCH_CMD_JS_ON) {
        size_t k = 0;
        while (k < o->n_suites && o->suites[k] != PSI_SUITE_OPENMINED_P256)
            k++;
        if (k == o->n_suites) {
            psi_app_error("bench: --psijs on needs the suite openmined-p256, the only "
                          "one psi.js has");
            return -1;
        }
    }
    // GCS's hash range is N^2 / fpr, which passes 2^63 above about 3
    // million values at fpr 1e-6: say so now rather than after setup_raw.
    psi_setup_params gcs = {PSI_STRUCTURE_GCS, PSI_BENCH_CMD_FPR, (int64_t)o->values};
    size_t bound;
    int gcs_rc = PSI_OK;
    for (size_t k = 0; k < o->n_suites && gcs_rc == PSI_OK; k++)
        gcs_rc = psi_setup_bound(&bound, o->suites[k], &gcs, o->values);
    if ((o->op_on[PSI_BENCH_CMD_SETUP_GCS] || o->op_on[PSI_BENCH_CMD_INTERSECTION]) &&
        gcs_rc != PSI_OK) {
        psi_app_error("bench: a GCS setup for %zu client values at fpr %g overflows its "
                      "hash range (%s); use fewer values, or --ops without setup_gcs and "
                      "intersection", o->values, PSI_BENCH_CMD_FPR,
                      psi_strerror(PSI_E_PARAM_OVERFLOW));
        return -1;
    }
    if (o->threads == 0) {
        o->threads = psi_bench_online_cpus();
        if (o->threads > PSI_SHARD_MAX_THREADS)
            o->threads = PSI_SHARD_MAX_THREADS;
    }
    return 0;
}

/* As `mkdir -p`: each ancestor in turn, those that exist left alone. */
int psi_bench_mkdirs(const char *dir)
{
    char path[4096];
    struct stat st;
    size_t n = strlen(dir);

    if (n >= sizeof path) {
        psi_app_error("bench: --out-dir: path too long");
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (size_t k = 1; k <= n; k++) {
        if (path[k] != '/' && path[k] != '\0')
            continue;
        path[k] = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            psi_app_error("bench: cannot create %s: %s", path, strerror(errno));
            return -1;
        }
        path[k] = dir[k];
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        psi_app_error("bench: %s is not a directory", dir);
        return -1;
    }
    return 0;
}

