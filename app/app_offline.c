/*
 * What the offline steps share, in `shardpsi` and `shardpsi-mpi`: options,
 * help, key file, message files, shards and messages.  See app_offline.h.
 */
#include "app_offline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app_keyfile.h"
#include "app_spill.h"
#include "app_util.h"

/* Which options a command takes. */
enum {
    OPT_KEY = 1 << 0,       // --key-file, --suite, --shards, --threads, --progress
    OPT_INPUT = 1 << 1,     // --input, --column, --lines
    OPT_OUTPUT = 1 << 2,    // --output
    OPT_SETUP = 1 << 3,     // --structure, --fpr, --num-client-inputs, --permutation
    OPT_COUNT = 1 << 4,     // --count-only
    OPT_REQUEST = 1 << 5,   // --request, --reveal
    OPT_MATCH = 1 << 6,     // --setup, --response, --indices, --association, --permutation
    OPT_SUITE = 1 << 7,     // --suite (keygen)
    OPT_PAYLOAD = 1 << 8    // --payload-columns, --pad-to (payloads)
};

typedef struct offline_cmd {
    const char *name;
    unsigned opts;
    const char *usage;
} offline_cmd;

#define OFFLINE_COMMON_HELP \
    "  --key-file KEY       this party's key (from shardpsi keygen; mode 0600)\n" \
    "  --suite NAME         openmined-p256 (default), p256-sswu or ristretto255;\n" \
    "                       the key file's suite must be the same\n" \
    "  --threads N          worker threads (default: every online CPU)\n" \
    "  --shards N           engines the values are split over (default: the\n" \
    "                       library's for the threads); the bytes written are the\n" \
    "                       same for every --threads and --shards\n" \
    "  --progress           progress lines on stderr even when it is not a\n" \
    "                       terminal (--no-progress: never)\n" \
    "  --memory BYTES       memory budget for the values and messages (K, M, G:\n" \
    "                       256M; default a quarter of the machine's memory): a\n" \
    "                       larger set is spilled to sorted runs on disk and\n" \
    "                       merged back, with the same bytes (PROTOCOL.md §20)\n" \
    "  --temp-dir DIR       where the runs go (default $TMPDIR, else the output's\n" \
    "                       directory); they have no name and vanish with the\n" \
    "                       process, however it ends\n"
#define OFFLINE_INPUT_HELP \
    "  --input FILE         one value per line (CRLF handled), or '-' for stdin;\n" \
    "                       a FILE that looks like CSV (a ',' in its first line,\n" \
    "                       or a name ending in .csv) is refused unless --column\n" \
    "                       or --lines says how to read it\n" \
    "  --column NAME        read FILE as CSV (header row), values of column NAME\n" \
    "  --lines              read every line as a value (the header too), even if\n" \
    "                       FILE looks like CSV\n"
#define OFFLINE_EXIT_HELP \
    "\n" \
    "Exit status: 0 success, 1 when a message is refused or the step fails at\n" \
    "run time, 2 for a usage error or a file that cannot be used (missing,\n" \
    "unreadable, a key file others can read).  No output file is left behind\n" \
    "on failure: outputs are written under a temporary name and renamed.\n"

static const offline_cmd offline_cmds[] = {
    {"keygen", OPT_OUTPUT | OPT_SUITE,
     "Usage: shardpsi keygen --output KEY [--suite NAME]\n"
     "\n"
     "Writes a fresh random key to the new file KEY (mode 0600; an existing file\n"
     "is never overwritten): 64 hex digits and, for a suite other than\n"
     "openmined-p256, the suite's name.  Each party makes its own and keeps it\n"
     "for all the steps of a round; the key never leaves the file otherwise.\n"
     "\n"
     "  --output KEY         the key file to create\n"
     "  --suite NAME         openmined-p256 (default), p256-sswu or ristretto255\n"
     OFFLINE_EXIT_HELP},
    {"setup", OPT_KEY | OPT_INPUT | OPT_OUTPUT | OPT_SETUP,
     "Usage: shardpsi setup --key-file KEY --input FILE --structure S --output SETUP\n"
     "                 [options]\n"
     "\n"
     "Server step 1: masks the values of FILE and writes the ServerSetup message\n"
     "to SETUP, for the client's `shardpsi match`.\n"
     "\n"
     OFFLINE_INPUT_HELP
     "  --structure S        raw (exact), gcs or bloom_filter (also bloom): smaller,\n"
     "                       with false positives at rate --fpr (more for an\n"
     "                       openmined-p256 Bloom filter: psi.js's probes, README)\n"
     "  --fpr F              gcs and bloom: false-positive rate for the whole\n"
     "                       client set, in (0, 1) (default 1e-09)\n"
     "  --num-client-inputs N  gcs and bloom: the client's number of values\n"
     "                       (required for them: the rate is split over them)\n"
     "  --output SETUP       the setup message file\n"
     "  --permutation PERM   raw only: also write the setup's sorting permutation,\n"
     "                       one 0-based input row index per line (line j: the\n"
     "                       row of the setup's element j; PROTOCOL.md §17)\n"
     OFFLINE_COMMON_HELP OFFLINE_EXIT_HELP},
    {"request", OPT_KEY | OPT_INPUT | OPT_OUTPUT | OPT_COUNT,
     "Usage: shardpsi request --key-file KEY --input FILE [--count-only] --output REQUEST\n"
     "                   [options]\n"
     "\n"
     "Client step 1: masks the values of FILE and writes the Request message to\n"
     "REQUEST, for the server's `shardpsi response`.\n"
     "\n"
     OFFLINE_INPUT_HELP
     "  --count-only         a request that lets the client learn only the size of\n"
     "                       the intersection (reveal off); `shardpsi match` must then\n"
     "                       be run with --count-only, and `shardpsi response` without\n"
     "                       --reveal\n"
     "  --output REQUEST     the request message file\n"
     OFFLINE_COMMON_HELP OFFLINE_EXIT_HELP},
    {"response", OPT_KEY | OPT_OUTPUT | OPT_REQUEST,
     "Usage: shardpsi response --key-file KEY --request REQUEST [--reveal] --output RESPONSE\n"
     "                    [options]\n"
     "\n"
     "Server step 2: re-masks the client's request with the server's key (the\n"
     "key of its `shardpsi setup`) and writes the Response message to RESPONSE.\n"
     "\n"
     "  --request REQUEST    the client's request message file\n"
     "  --reveal             answer a request that reveals the intersection (made\n"
     "                       without --count-only); without it only count-only\n"
     "                       requests are answered, and the other kind refused\n"
     "  --output RESPONSE    the response message file\n"
     OFFLINE_COMMON_HELP OFFLINE_EXIT_HELP},
    {"match", OPT_KEY | OPT_INPUT | OPT_OUTPUT | OPT_COUNT | OPT_MATCH,
     "Usage: shardpsi match --key-file KEY --input FILE --setup SETUP --response RESPONSE\n"
     "                 --output OUT [--indices | --count-only |\n"
     "                 --association --permutation PERM] [options]\n"
     "\n"
     "Client step 2: computes the intersection of FILE (the input of its `shardpsi\n"
     "request`) with the server's set and writes it as `shardpsi client` does.\n"
     "\n"
     OFFLINE_INPUT_HELP
     "  --setup SETUP        the server's setup message file\n"
     "  --response RESPONSE  the server's response to this input's request\n"
     "  --output OUT         the result ('-': stdout): by default the rows of FILE\n"
     "                       that are in the intersection, in input order (with\n"
     "                       the CSV header); --indices: their 0-based indices;\n"
     "                       --count-only: the size of the intersection (for a\n"
     "                       request made with --count-only); --association:\n"
     "                       lines 'CLIENT_INDEX<TAB>SERVER_INDEX' of the matching\n"
     "                       rows, by client index (raw setup)\n"
     "  --permutation PERM   with --association: the file shardpsi setup\n"
     "                       --permutation wrote with SETUP (it names the\n"
     "                       server's rows)\n"
     "  --payloads FILE      the server's payload file (shardpsi payloads): each\n"
     "                       matched row is written with the server's columns\n"
     "                       appended (CSV: after a ',', with their header; lines:\n"
     "                       tab-separated); rows without a payload are an error\n"
     "                       against a raw setup, a false positive (dropped) against\n"
     "                       GCS or Bloom (PROTOCOL.md §22); a payload that is not\n"
     "                       the header's number of fields, or holds a control\n"
     "                       byte, a bare quote or a line break outside quotes,\n"
     "                       fails the command naming its row, with no output\n"
     "  --raw-cells          write the server's cells as they are: by default one\n"
     "                       that begins with '=', '+', '-', '@', a tab or CR gets a\n"
     "                       ' before it, so that a spreadsheet does not run it as a\n"
     "                       formula (OWASP's CSV injection rule)\n"
     OFFLINE_COMMON_HELP OFFLINE_EXIT_HELP},
    {"payloads", OPT_KEY | OPT_INPUT | OPT_OUTPUT | OPT_PAYLOAD,
     "Usage: shardpsi payloads --key-file KEY --input FILE --column NAME\n"
     "                    --payload-columns LIST --output PAYLOADS [options]\n"
     "\n"
     "Server step beside the setup: the payload table of FILE's rows (PROTOCOL.md\n"
     "§22), for the client's `shardpsi match --payloads`.  Each row's payload is\n"
     "its fields of the columns in LIST, encrypted so that only a client holding\n"
     "the row's value opens it.\n"
     "\n"
     OFFLINE_INPUT_HELP
     "  --payload-columns LIST  the CSV columns to send, comma-separated header\n"
     "                       names (the --column value column may be one of them)\n"
     "  --pad-to BYTES       every payload padded to this length (default: the\n"
     "                       longest payload's), so that no size says which row\n"
     "                       it is; a longer payload is refused\n"
     "  --output PAYLOADS    the payload file: the columns' header line, then the\n"
     "                       table\n"
     "  --salt HEX           the table's 32-byte salt (default: a fresh random one);\n"
     "                       for reproducing a table only: two tables of one key\n"
     "                       with one salt share their tags, which links them\n"
     OFFLINE_COMMON_HELP OFFLINE_EXIT_HELP},
};

#define OFFLINE_NCMDS (sizeof offline_cmds / sizeof offline_cmds[0])

static const offline_cmd *offline_find(const char *name)
{
    for (size_t i = 0; i < OFFLINE_NCMDS; i++)
        if (strcmp(offline_cmds[i].name, name) == 0)
            return &offline_cmds[i];
    return NULL;
}

int psi_app_offline_usage(FILE *out, const char *cmd)
{
    const offline_cmd *c = offline_find(cmd);

    if (c == NULL)
        return -1;
    if (out != NULL)
        fputs(c->usage, out);
    return 0;
}

/* Parses one value option of the table below. */
static int offline_value_opt(psi_app_offline_opts *o, unsigned opts, int argc, char **argv,
                             int *i)
{
    static const struct {
        const char *name;
        unsigned opt;
        size_t field;
    } vals[] = {
        {"--key-file", OPT_KEY, offsetof(psi_app_offline_opts, key_file)},
        {"--input", OPT_INPUT, offsetof(psi_app_offline_opts, input)},
        {"--column", OPT_INPUT, offsetof(psi_app_offline_opts, column)},
        {"--output", OPT_OUTPUT, offsetof(psi_app_offline_opts, output)},
        {"--permutation", OPT_SETUP, offsetof(psi_app_offline_opts, permutation)},
        {"--permutation", OPT_MATCH, offsetof(psi_app_offline_opts, permutation)},
        {"--request", OPT_REQUEST, offsetof(psi_app_offline_opts, request)},
        {"--setup", OPT_MATCH, offsetof(psi_app_offline_opts, setup)},
        {"--response", OPT_MATCH, offsetof(psi_app_offline_opts, response)},
        {"--payloads", OPT_MATCH, offsetof(psi_app_offline_opts, payloads)},
        {"--payload-columns", OPT_PAYLOAD, offsetof(psi_app_offline_opts, payload_columns)},
        {"--salt", OPT_PAYLOAD, offsetof(psi_app_offline_opts, salt)},
    };
    const char *v = NULL;

    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
        if (!(opts & vals[k].opt) || !psi_app_opt_value(argc, argv, i, vals[k].name, &v))
            continue;
        if (v == NULL)
            return -1;
        *(const char **)((char *)o + vals[k].field) = v;
        return 1;
    }
    return 0;
}

/* Parses the options with a parsed value (numbers, names) and the flags. */
static int offline_other_opt(psi_app_offline_opts *o, unsigned opts, int argc, char **argv,
                             int *i)
{
    char what[64];
    const char *a = argv[*i], *v = NULL;
    int rc;

    snprintf(what, sizeof what, "%s: %s", o->cmd, a);
    if ((opts & (OPT_KEY | OPT_SUITE)) && psi_app_opt_value(argc, argv, i, "--suite", &v))
        return v && psi_app_parse_suite(&o->suite, v, what) == 0 ? 1 : -1;
    if ((opts & OPT_KEY) && (rc = psi_app_shard_opt(&o->shard, argc, argv, i, o->cmd)) != 0)
        return rc;
    if ((opts & OPT_KEY) && psi_app_opt_value(argc, argv, i, "--memory", &v)) {
        char err[160];
        if (v == NULL)
            return -1;
        if (psi_app_memory_parse(&o->memory, v, err, sizeof err) != 0)
            return psi_app_error("%s: %s", o->cmd, err), -1;
        return 1;
    }
    if ((opts & OPT_KEY) && psi_app_opt_value(argc, argv, i, "--temp-dir", &v))
        return v != NULL ? (o->temp_dir = v, 1) : -1;
    if ((opts & OPT_KEY) && (strcmp(a, "--progress") == 0 || strcmp(a, "--no-progress") == 0))
        return o->progress = a[2] == 'p', 1;
    if ((opts & OPT_SETUP) && psi_app_opt_value(argc, argv, i, "--structure", &v)) {
        if (v == NULL)
            return -1;
        if (strcmp(v, "raw") == 0)
            o->structure = PSI_STRUCTURE_RAW;
        else if (strcmp(v, "gcs") == 0)
            o->structure = PSI_STRUCTURE_GCS;
        else if (strcmp(v, "bloom_filter") == 0 || strcmp(v, "bloom") == 0)
            o->structure = PSI_STRUCTURE_BLOOM_FILTER;
        else
            return psi_app_error("%s: --structure: '%s' is not raw, gcs or bloom_filter",
                                 o->cmd, v), -1;
        return 1;
    }
    if ((opts & OPT_SETUP) && psi_app_opt_value(argc, argv, i, "--fpr", &v))
        return v && psi_app_parse_double(&o->fpr, v, 0, 1, 1, 1, what) == 0 ? 1 : -1;
    if ((opts & OPT_SETUP) && psi_app_opt_value(argc, argv, i, "--num-client-inputs", &v))
        return v && psi_app_parse_count(&o->num_client, v, (size_t)INT64_MAX, what) == 0
                   ? 1 : -1;
    if ((opts & OPT_PAYLOAD) && psi_app_opt_value(argc, argv, i, "--pad-to", &v))
        return v && psi_app_parse_count(&o->pad_len, v, PSI_PAYLOAD_MAX, what) == 0 ? 1 : -1;
    if ((opts & OPT_INPUT) && strcmp(a, "--lines") == 0)
        return o->lines = 1, 1;
    if ((opts & OPT_MATCH) && strcmp(a, "--raw-cells") == 0)
        return o->raw_cells = 1, 1;
    if ((opts & OPT_REQUEST) && strcmp(a, "--reveal") == 0)
        return o->reveal = 1, 1;
    if (((opts & OPT_COUNT) && strcmp(a, "--count-only") == 0) ||
        ((opts & OPT_MATCH) && strcmp(a, "--indices") == 0) ||
        ((opts & OPT_MATCH) && strcmp(a, "--association") == 0)) {
        psi_app_offline_mode m = a[2] == 'c' ? PSI_APP_OFFLINE_COUNT
                                 : a[2] == 'i' ? PSI_APP_OFFLINE_INDICES
                                               : PSI_APP_OFFLINE_ASSOCIATION;
        if (o->mode != PSI_APP_OFFLINE_ROWS && o->mode != m)
            return psi_app_error("%s: give only one of --indices, --count-only%s", o->cmd,
                                 (opts & OPT_MATCH) ? " and --association" : ""), -1;
        o->mode = m;
        return 1;
    }
    return 0;
}

/* The options a command requires, and the combinations it refuses. */
static int offline_check(const psi_app_offline_opts *o, unsigned opts)
{
    const char *missing = NULL;

    if ((opts & OPT_KEY) && o->key_file == NULL)
        missing = "--key-file KEY";
    else if ((opts & OPT_INPUT) && o->input == NULL)
        missing = "--input FILE";
    else if ((opts & OPT_SETUP) && o->structure < 0)
        missing = "--structure raw|gcs|bloom_filter";
    else if ((opts & OPT_REQUEST) && o->request == NULL)
        missing = "--request REQUEST";
    else if ((opts & OPT_MATCH) && o->setup == NULL)
        missing = "--setup SETUP";
    else if ((opts & OPT_MATCH) && o->response == NULL)
        missing = "--response RESPONSE";
    else if ((opts & OPT_PAYLOAD) && o->payload_columns == NULL)
        missing = "--payload-columns LIST";
    else if ((opts & OPT_PAYLOAD) && o->column == NULL)
        missing = "--column NAME (the payloads are other columns of a CSV input)";
    else if ((opts & OPT_OUTPUT) && o->output == NULL)
        missing = "--output FILE";
    if (missing != NULL) {
        psi_app_error("%s: %s is required (see 'shardpsi %s --help')", o->cmd, missing, o->cmd);
        return -1;
    }
    if (psi_app_check_input_mode(o->cmd, o->column, o->lines) != 0)
        return -1;
    if ((opts & OPT_MATCH) && (o->mode == PSI_APP_OFFLINE_ASSOCIATION) != (o->permutation != NULL)) {
        psi_app_error(o->permutation == NULL
                          ? "match: --association needs --permutation PERM, the file shardpsi "
                            "setup --permutation wrote with the setup"
                          : "match: --permutation is only used with --association");
        return -1;
    }
    if ((opts & OPT_MATCH) && o->payloads != NULL && o->mode != PSI_APP_OFFLINE_ROWS) {
        psi_app_error("match: --payloads appends the server's columns to the matched rows: "
                      "it cannot be given with --indices, --count-only or --association");
        return -1;
    }
    if ((opts & OPT_MATCH) && o->raw_cells && o->payloads == NULL) {
        psi_app_error("match: --raw-cells is for the server's cells of --payloads");
        return -1;
    }
    if (!(opts & OPT_SETUP))
        return 0;
    if (o->structure == PSI_STRUCTURE_RAW && (o->fpr != 0 || o->num_client != 0)) {
        psi_app_error("setup: --fpr and --num-client-inputs are for gcs and bloom_filter");
        return -1;
    }
    if (o->structure != PSI_STRUCTURE_RAW && o->num_client == 0) {
        psi_app_error("setup: --num-client-inputs N is required for %s (the client's "
                      "number of values)", psi_app_structure_name(o->structure));
        return -1;
    }
    if (o->structure != PSI_STRUCTURE_RAW && o->permutation != NULL) {
        psi_app_error("setup: --permutation is for the raw setup only");
        return -1;
    }
    return 0;
}

int psi_app_offline_parse(psi_app_offline *s, int argc, char **argv)
{
    psi_app_offline_opts *o = &s->o;
    const offline_cmd *c = offline_find(argv[0]);

    memset(o, 0, sizeof *o);
    o->cmd = c->name;
    o->progress = -1;
    o->structure = -1;
    o->shard.sharded = 1;
    for (int i = 1; i < argc; i++) {
        int rc = offline_value_opt(o, c->opts, argc, argv, &i);

        if (rc == 0)
            rc = offline_other_opt(o, c->opts, argc, argv, &i);
        if (rc == 0 && psi_app_is_help(argv[i])) {
            fputs(c->usage, stdout);
            return 1;
        }
        if (rc == 0)
            psi_app_error("%s: unknown argument '%s' (see 'shardpsi %s --help')", o->cmd,
                          argv[i], o->cmd);
        if (rc <= 0)
            return -1;
    }
    return offline_check(o, c->opts);
}

/* Replaces every s->file_path[i] in msg with its label. */
static void offline_relabel(const psi_app_offline *s, char *msg, size_t cap)
{
    for (size_t i = 0; i < PSI_APP_OFFLINE_FILES; i++) {
        const char *path = s->file_path[i], *label = s->file_label[i];
        char *at;

        if (path == NULL || label == NULL || path[0] == '\0')
            continue;
        while ((at = strstr(msg, path)) != NULL) {
            size_t pl = strlen(path), ll = strlen(label), rest = strlen(at + pl);

            if ((size_t)(at - msg) + ll + rest + 1 > cap)
                break;
            memmove(at + ll, at + pl, rest + 1);
            memcpy(at, label, ll);
        }
    }
}

int psi_app_offline_fail(psi_app_offline *s, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    offline_relabel(s, msg, sizeof msg);
    if (s->capture)
        snprintf(s->err, sizeof s->err, "%s", msg);
    else
        psi_app_progress_note(&s->prog, "error: %s", msg);
    return -1;
}

int psi_app_offline_fail_psi(psi_app_offline *s, const char *what, const char *file, int rc)
{
    char detail[PSI_ERROR_MESSAGE_BYTES];

    psi_error_message(detail, sizeof detail, rc);
    if (rc == PSI_E_SUITE_MISMATCH && file != NULL)
        return psi_app_offline_fail(s, "%s (%s): not a message of suite %s (%s): run every "
                                    "step with the --suite its key and messages were made "
                                    "with", what, file, psi_app_suite_label(s->o.suite),
                                    detail);
    if (file != NULL)
        return psi_app_offline_fail(s, "%s (%s): %s (%s)", what, file, detail,
                                    psi_error_name(rc) ? psi_error_name(rc) : "?");
    return psi_app_offline_fail(s, "%s: %s (%s)", what, detail,
                                psi_error_name(rc) ? psi_error_name(rc) : "?");
}

int psi_app_offline_key(psi_app_offline *s)
{
    struct stat st;
    int created = 0;

    if (s->key != NULL)
        return 0;
    if (lstat(s->o.key_file, &st) != 0 && errno == ENOENT)
        return psi_app_offline_fail(s, "key file %s does not exist (make one with 'shardpsi "
                                    "keygen --output %s')", s->o.key_file, s->o.key_file);
    if (psi_app_keyfile_engine_suite(&s->key, &created, s->o.key_file, s->o.suite, s->err,
                                     sizeof s->err) != 0)
        return psi_app_offline_fail(s, "%s", s->err);
    if (created) {
        // It vanished after the check: a key made now would match nothing.
        unlink(s->o.key_file);
        return psi_app_offline_fail(s, "key file %s disappeared", s->o.key_file);
    }
    return 0;
}

int psi_app_offline_input(psi_app_offline *s)
{
    if (psi_app_input_read(&s->in, s->o.input, s->o.column, s->o.lines, s->err,
                           sizeof s->err) != PSI_APP_INPUT_OK)
        return psi_app_offline_fail(s, "%s", s->err);
    return 0;
}

int psi_app_msg_open(psi_app_msg_file *f, const char *path, const char *what, char *err,
                     size_t err_len)
{
    struct stat st;

    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
        snprintf(err, err_len, "%s %s: cannot open: %s", what, path, strerror(errno));
        return -1;
    }
    if (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        psi_app_msg_close(f);
        snprintf(err, err_len, "%s %s: not a regular file", what, path);
        return -1;
    }
    f->len = (uint64_t)st.st_size;
    return 0;
}

int psi_app_offline_open_msg(psi_app_offline *s, const char *path, const char *what,
                             psi_app_msg_file *f)
{
    char err[sizeof s->err];

    if (psi_app_msg_open(f, path, what, err, sizeof err) == 0)
        return 0;
    return psi_app_offline_fail(s, "%s", err);
}

int psi_app_msg_read(void *arg, uint64_t offset, uint8_t *buf, size_t len)
{
    psi_app_msg_file *f = arg;
    size_t got = 0;

    while (got < len) {
        ssize_t r = pread(f->fd, buf + got, len - got, (off_t)(offset + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (f->err[0] == '\0')
                snprintf(f->err, sizeof f->err, "%s: cannot read: %s", f->path,
                         r < 0 ? strerror(errno) : "it shrank");
            return 1;
        }
        got += (size_t)r;
    }
    return 0;
}

void psi_app_msg_close(psi_app_msg_file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

int psi_app_msg_read_whole(psi_app_msg_file *f, const char *what, uint8_t **buf, size_t *len,
                           char *err, size_t err_len)
{
    *buf = NULL;
    *len = 0;
    if (f->len > SIZE_MAX - 1 || (*buf = psi_app_alloc((size_t)f->len, 1)) == NULL) {
        snprintf(err, err_len, "%s %s: out of memory for %llu bytes", what, f->path,
                 (unsigned long long)f->len);
        return -1;
    }
    if (psi_app_msg_read(f, 0, *buf, (size_t)f->len) != 0) {
        snprintf(err, err_len, "%s %s", what, f->err);
        free(*buf);
        *buf = NULL;
        return -1;
    }
    *len = (size_t)f->len;
    return 0;
}

psi_error_detail psi_app_detail_in_whole(int rc, uint64_t base)
{
    psi_error_detail d;

    psi_error_detail_get(&d);
    if (d.code == rc && d.index >= 0)
        d.index += (int64_t)base;
    return d;
}

const char *psi_app_setup_held_refused(int rc, const psi_error_detail *d)
{
    // Refused before it was read: no byte offset; a raw setup is never
    // refused for its length (it is read in windows).
    if (rc != PSI_E_MSG_TOO_LARGE || d->field == NULL || d->offset >= 0)
        return NULL;
    if (strcmp(d->field, "ServerSetup.gcs") == 0)
        return "gcs";
    if (strcmp(d->field, "ServerSetup.bloom_filter") == 0)
        return "bloom";
    return NULL;
}

int psi_app_offline_read_msg(psi_app_offline *s, const char *path, const char *what,
                             uint8_t **buf, size_t *len)
{
    psi_app_msg_file f;
    int rc;

    *buf = NULL;
    *len = 0;
    if (psi_app_offline_open_msg(s, path, what, &f) != 0)
        return -1;
    rc = psi_app_msg_read_whole(&f, what, buf, len, s->err, sizeof s->err);
    psi_app_msg_close(&f);
    return rc == 0 ? 0 : psi_app_offline_fail(s, "%s", s->err);
}

int psi_app_offline_shards(psi_app_offline *s, psi_role role, int reveal)
{
    psi_app_party_spec spec = {
        .key = s->key, .suite = s->o.suite, .role = role, .reveal = reveal,
        .shard = s->o.shard, .progress = psi_app_progress_update, .progress_arg = &s->prog};
    psi_app_party p;
    const char *what = NULL;
    int rc;

    psi_shards_free(s->g);
    rc = psi_app_party_build(&p, &spec, &what);
    s->g = p.shards;
    return rc != PSI_OK ? psi_app_offline_fail_psi(s, what, NULL, rc) : 0;
}

int psi_app_offline_open(psi_app_offline *s, psi_app_output *out, const char *path)
{
    for (size_t i = 0; i < PSI_APP_OFFLINE_FILES; i++) {
        if (s->file[i] != NULL && path == s->file_path[i]) {
            // Like stdout: written, flushed on commit, never renamed.
            memset(out, 0, sizeof *out);
            out->f = s->file[i];
            return 0;
        }
    }
    if (psi_app_output_open(out, path, s->err, sizeof s->err) != 0)
        return psi_app_offline_fail(s, "%s", s->err);
    return 0;
}

void psi_app_offline_free(psi_app_offline *s)
{
    psi_app_output_abort(&s->out);
    psi_shards_free(s->g);
    psi_engine_free(s->key);
    psi_app_input_free(&s->in);
    s->g = NULL;
    s->key = NULL;
}
