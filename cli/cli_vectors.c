/* `shardpsi vectors check FILE...`: replays wire vector files and shardpsi's
 * extra vector files. */
#include <stdio.h>
#include <string.h>

#include "cli_commands.h"
#include "app_util.h"
#include "cli_vectors.h"

#define VCHECK_FORMAT "psi-wire-vectors/1"
#define VCHECK_EXTRA "shardpsi-extra-vectors/1"
#define VCHECK_PAYLOAD "shardpsi-payload-vectors/1"

static const char vectors_usage[] =
    "Usage: shardpsi vectors check [--quiet | --verbose] [--shards N] [--threads T]\n"
    "                          FILE...\n"
    "\n"
    "Checks vector files against this library; each file's \"format\" says\n"
    "what it holds.\n"
    "\n"
    "\"" VCHECK_FORMAT "\": for every case it rebuilds the server setup, the\n"
    "request and the response (from the stored request) from the case's keys\n"
    "and inputs, and the intersection (when revealed) and its size from the\n"
    "stored setup and response, and compares each with the stored value byte\n"
    "for byte.\n"
    "\n"
    "\"" VCHECK_EXTRA "\": each association case is checked like a wire\n"
    "case with a raw setup, plus the setup's permutation, and the association\n"
    "table computed from the stored setup, response and permutation; each\n"
    "rejection case runs its operation on bad input, which must fail with\n"
    "exactly the named PSI_E_* error.\n"
    "\n"
    "\"shardpsi-payload-vectors/1\" (PROTOCOL.md §22): each case's payload\n"
    "table is rebuilt from its server key, values, payloads, padded length\n"
    "and salt and compared byte for byte, and its payloads are opened after a\n"
    "round of masks with the case's keys; each damaged table must be refused\n"
    "with exactly the named PSI_E_* error.  Its cases name their own suite.\n"
    "\n"
    "A file's top-level \"suite\" names the ciphersuite its cases are checked\n"
    "in: openmined-p256 (also when absent), p256-sswu or ristretto255.\n"
    "\n"
    "Prints \"FAIL <file>: <case>: <what differed>\" for each failing case and\n"
    "a last line \"N passed, M failed\" counting the cases of all files.\n"
    "\n"
    "With --shards or --threads, every engine operation of every case runs\n"
    "through the sharding layer (psi_shard.h) instead of the single engine:\n"
    "each party's engine, made from the case's key, is split into N engines\n"
    "on a pool of T threads, and every case must pass exactly as it does on\n"
    "one engine (same bytes, indices, tables and errors).  A line \"sharded:\n"
    "N shards, T threads\" comes first.\n"
    "\n"
    "Options:\n"
    "  --verbose    also print \"ok <file>: <case>\" for each passing case\n"
    "  --quiet      print nothing for passing cases (the default)\n"
    "  --shards N   run each party on N shards, 1 to "
    PSI_APP_STR(PSI_SHARD_MAX_SHARDS) " (default: 4 a\n"
    "               worker thread, 1 without)\n"
    "  --threads T  on T worker threads, 1 to " PSI_APP_STR(PSI_SHARD_MAX_THREADS)
    " (default with --shards: the\n"
    "               online CPUs, at most N); 1 runs the shards in turn on\n"
    "               the calling thread\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit status: 0 if every case passed; 1 if a case failed; 2 on a usage\n"
    "error or a file that cannot be read, is not valid JSON, has another\n"
    "format or holds a malformed case (which counts as failed).\n";

typedef struct vcheck_stats {
    size_t passed, failed;
    int file_errors;  // unreadable files and malformed cases
    int verbose;
    psi_app_shard_opts shard;  // how each case's parties run
    int suite;                 // the current file's suite (psi_suite)
} vcheck_stats;

/* What a case array holds. */
typedef enum vcheck_kind { VCHECK_WIRE, VCHECK_ASSOC, VCHECK_REJECT } vcheck_kind;

/* Where a case is, for messages. */
typedef struct vcheck_where {
    const char *path;
    const char *array;
    size_t index;
} vcheck_where;

void psi_cli_vectors_usage(FILE *out)
{
    fputs(vectors_usage, out);
}

/* Counts and reports one case whose read and run gave rc and msg. */
static void vcheck_report(vcheck_stats *st, const vcheck_where *w, const char *name,
                          int rc, const char *msg)
{
    if (rc < 0) {
        psi_app_error("%s: %s[%zu]%s%s%s: malformed: %s", w->path, w->array, w->index,
                      name ? " (" : "", name ? name : "", name ? ")" : "", msg);
        st->file_errors++;
        st->failed++;
    } else if (rc > 0) {
        printf("FAIL %s: %s: %s\n", w->path, name, msg);
        st->failed++;
    } else {
        if (st->verbose)
            printf("ok %s: %s\n", w->path, name);
        st->passed++;
    }
}

static void vcheck_case(vcheck_stats *st, const vcheck_where *w, vcheck_kind kind,
                        const psi_app_json *j, const cJSON *obj)
{
    char msg[1024];
    int rc;

    if (kind == VCHECK_REJECT) {
        psi_cli_reject r;
        rc = psi_cli_reject_read(&r, j, obj, msg, sizeof msg);
        r.suite = st->suite;
        if (rc == 0)
            rc = psi_cli_reject_run(&r, &st->shard, msg, sizeof msg);
        vcheck_report(st, w, r.name, rc, msg);
        psi_cli_reject_free(&r);
    } else {
        psi_cli_case c;
        rc = kind == VCHECK_WIRE ? psi_cli_case_read(&c, j, obj, msg, sizeof msg)
                                 : psi_cli_assoc_read(&c, j, obj, msg, sizeof msg);
        c.suite = st->suite;
        if (rc == 0)
            rc = psi_cli_case_run(&c, &st->shard, msg, sizeof msg);
        vcheck_report(st, w, c.name, rc, msg);
        psi_cli_case_free(&c);
    }
}

/* Returns: the array `name` of the file's top level, or NULL with a message. */
static const cJSON *vcheck_array(const char *path, const psi_app_json *j,
                                 const char *name)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j->root, name);

    if (!cJSON_IsArray(a)) {
        psi_app_error("%s: \"%s\" is %s", path, name, a ? "not an array" : "missing");
        return NULL;
    }
    return a;
}

/* Returns: 1 for a wire file, 2 for an extra file, or 0 with a message. */
static int vcheck_format(const char *path, const psi_app_json *j)
{
    const cJSON *format;
    const char *text;
    size_t len;

    if (!cJSON_IsObject(j->root)) {
        psi_app_error("%s: the top level is not a JSON object", path);
        return 0;
    }
    format = cJSON_GetObjectItemCaseSensitive(j->root, "format");
    if (!cJSON_IsString(format)) {
        psi_app_error("%s: \"format\" is %s, expected \"%s\", \"%s\" or \"%s\"", path,
                      format ? "not a string" : "missing", VCHECK_FORMAT, VCHECK_EXTRA,
                      VCHECK_PAYLOAD);
        return 0;
    }
    psi_app_json_bytes(j, format, &text, &len);
    if (len == strlen(VCHECK_FORMAT) && memcmp(text, VCHECK_FORMAT, len) == 0)
        return 1;
    if (len == strlen(VCHECK_EXTRA) && memcmp(text, VCHECK_EXTRA, len) == 0)
        return 2;
    if (len == strlen(VCHECK_PAYLOAD) && memcmp(text, VCHECK_PAYLOAD, len) == 0)
        return 3;
    psi_app_error("%s: unknown format \"%.60s\", expected \"%s\", \"%s\" or \"%s\"", path,
                  format->valuestring, VCHECK_FORMAT, VCHECK_EXTRA, VCHECK_PAYLOAD);
    return 0;
}

/* Out: *suite, the file's top-level "suite" (absent: openmined-p256).
 * Returns: 0, or -1 with a message. */
static int vcheck_suite(int *suite, const char *path, const psi_app_json *j)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(j->root, "suite");
    const char *text;
    size_t len;
    psi_suite s;

    *suite = PSI_SUITE_OPENMINED_P256;
    if (f == NULL)
        return 0;
    if (!cJSON_IsString(f)) {
        psi_app_error("%s: \"suite\" is not a string", path);
        return -1;
    }
    psi_app_json_bytes(j, f, &text, &len);
    if (len != strlen(f->valuestring) || psi_suite_from_name(&s, f->valuestring) != PSI_OK) {
        psi_app_error("%s: unknown suite \"%.60s\" (" PSI_APP_SUITE_NAMES ")", path,
                      f->valuestring);
        return -1;
    }
    *suite = (int)s;
    return 0;
}

static void vcheck_cases(vcheck_stats *st, const char *path, const psi_app_json *j,
                         const cJSON *cases, const char *array, vcheck_kind kind)
{
    vcheck_where w = {path, array, 0};
    const cJSON *obj;

    cJSON_ArrayForEach(obj, cases) {
        vcheck_case(st, &w, kind, j, obj);
        w.index++;
    }
}

/* The report of a payload file's case (psi_cli_vreport_fn). */
typedef struct vcheck_payload_arg {
    vcheck_stats *st;
    const char *path;
} vcheck_payload_arg;

static void vcheck_payload_report(void *arg, const char *array, size_t index,
                                  const char *name, int rc, const char *msg)
{
    vcheck_payload_arg *a = arg;
    vcheck_where w = {a->path, array, index};

    vcheck_report(a->st, &w, name, rc, msg);
}

/* Both arrays of an extra file must be there before any case runs. */
static int vcheck_extra(vcheck_stats *st, const char *path, const psi_app_json *j)
{
    const cJSON *assoc = vcheck_array(path, j, "association_cases");
    const cJSON *reject = assoc ? vcheck_array(path, j, "rejection_cases") : NULL;

    if (reject == NULL)
        return -1;
    vcheck_cases(st, path, j, assoc, "association_cases", VCHECK_ASSOC);
    vcheck_cases(st, path, j, reject, "rejection_cases", VCHECK_REJECT);
    return 0;
}

static void vcheck_file(vcheck_stats *st, const char *path)
{
    psi_app_json j;
    const cJSON *cases;
    char err[256];
    int format = 0;

    if (psi_app_json_load(&j, path, err, sizeof err) != 0) {
        psi_app_error("%s: %s", path, err);
        st->file_errors++;
    } else if ((format = vcheck_format(path, &j)) == 0 ||
               vcheck_suite(&st->suite, path, &j) != 0) {
        st->file_errors++;
    } else if (format == 2) {
        if (vcheck_extra(st, path, &j) != 0)
            st->file_errors++;
    } else if (format == 3) {
        vcheck_payload_arg a = {st, path};
        if (psi_cli_payload_file_run(&j, &st->shard, vcheck_payload_report, &a) != 0) {
            psi_app_error("%s: \"cases\" or \"tampered\" is missing or not an array", path);
            st->file_errors++;
        }
    } else if ((cases = vcheck_array(path, &j, "cases")) == NULL) {
        st->file_errors++;
    } else {
        vcheck_cases(st, path, &j, cases, "cases", VCHECK_WIRE);
    }
    psi_app_json_free(&j);
}

/* Says how the parties will run, as the library reports it for a party
 * built like theirs.  Returns: 0, or -1 when it cannot be built. */
static int vcheck_shard_header(const psi_app_shard_opts *so)
{
    psi_app_party_spec spec = {.role = PSI_ROLE_CLIENT, .reveal = 1, .shard = *so};
    psi_app_party p;
    const char *step = NULL;
    char what[96];
    int rc = psi_app_party_build(&p, &spec, &step);

    if (rc == PSI_OK) {
        psi_app_party_describe(&p, what, sizeof what);
        printf("sharded: %s\n", what);
    } else {
        psi_app_error("vectors check: cannot build the shards: %s", psi_strerror(rc));
    }
    psi_app_party_free(&p);
    return rc == PSI_OK ? 0 : -1;
}

static int vcheck_run(int argc, char **argv)
{
    vcheck_stats st;
    int i = 1, rc;

    memset(&st, 0, sizeof st);
    for (; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        if ((rc = psi_app_shard_opt(&st.shard, argc, argv, &i, "vectors check")) != 0) {
            if (rc < 0)
                return PSI_APP_EXIT_USAGE;
        } else if (psi_app_is_help(argv[i])) {
            psi_cli_vectors_usage(stdout);
            return PSI_APP_EXIT_OK;
        } else if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0) {
            st.verbose = 1;
        } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
            st.verbose = 0;
        } else if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else {
            psi_app_error("vectors check: unknown option '%s'", argv[i]);
            return PSI_APP_EXIT_USAGE;
        }
    }
    if (i >= argc) {
        psi_app_error("vectors check: no FILE given (see 'shardpsi vectors check --help')");
        return PSI_APP_EXIT_USAGE;
    }
    if (st.shard.sharded && vcheck_shard_header(&st.shard) != 0)
        return PSI_APP_EXIT_FAIL;
    for (; i < argc; i++)
        vcheck_file(&st, argv[i]);
    printf("%zu passed, %zu failed\n", st.passed, st.failed);
    if (st.file_errors > 0)
        return PSI_APP_EXIT_USAGE;
    return st.failed > 0 ? PSI_APP_EXIT_FAIL : PSI_APP_EXIT_OK;
}

int psi_cli_cmd_vectors(int argc, char **argv)
{
    if (argc < 2) {
        psi_app_error("vectors: missing subcommand (see 'shardpsi vectors --help')");
        return PSI_APP_EXIT_USAGE;
    }
    if (psi_app_is_help(argv[1])) {
        psi_cli_vectors_usage(stdout);
        return PSI_APP_EXIT_OK;
    }
    if (strcmp(argv[1], "check") == 0)
        return vcheck_run(argc - 1, argv + 1);
    psi_app_error("vectors: unknown subcommand '%s' (see 'shardpsi vectors --help')",
                  argv[1]);
    return PSI_APP_EXIT_USAGE;
}
