/* The common options of the network commands; see cli_round.h. */
#include "cli_round.h"

#include <stdio.h>
#include <string.h>

#include "app_spill.h"
#include "app_util.h"
#include "net.h"
#include "psi_shard.h"

/* Fills the defaults of the common options. */
static void session_opts_default(psi_cli_round_opts *o)
{
    memset(o, 0, sizeof *o);
    o->timeout_ms = PSI_NET_DEFAULT_TIMEOUT_S * 1000;
    o->progress = -1;
    o->max_peer = PSI_NET_DEFAULT_MAX_PEER;
    o->structure = PSI_NET_STRUCTURE_ANY;
    o->handshake_timeout_ms = PSI_NET_DEFAULT_HANDSHAKE_TIMEOUT_S * 1000;
}

/* Parses a --structure value. */
static int session_structure(int *out, const char *v, const char *what)
{
    if (strcmp(v, "raw") == 0)
        *out = PSI_STRUCTURE_RAW;
    else if (strcmp(v, "gcs") == 0)
        *out = PSI_STRUCTURE_GCS;
    else if (strcmp(v, "bloom") == 0 || strcmp(v, "bloom_filter") == 0)
        *out = PSI_STRUCTURE_BLOOM_FILTER;
    else {
        psi_app_error("%s: '%s' is not raw, gcs or bloom", what, v);
        return -1;
    }
    return 0;
}

/* Parses argv[*i] if it is one of the common options.  Returns: 1 if it
 * was, 0 if not, -1 after a usage message naming `cmd`. */
static int session_common_opt(psi_cli_round_opts *o, int argc, char **argv, int *i,
                              const char *cmd)
{
    char what[64];
    const char *v = NULL;
    size_t n;
    uint64_t u;

    if (strcmp(argv[*i], "--progress") == 0 || strcmp(argv[*i], "--no-progress") == 0) {
        o->progress = argv[*i][2] == 'p';
        return 1;
    }
    if (strcmp(argv[*i], "--lines") == 0)
        return o->lines = 1, 1;
    int rc = psi_cli_round_transport_opt(o, argc, argv, i, cmd);
    if (rc != 0)
        return rc;
#define SESSION_OPT(name) (snprintf(what, sizeof what, "%s: %s", cmd, name), \
                           psi_app_opt_value(argc, argv, i, name, &v))
    if (SESSION_OPT("--input"))
        return v ? (o->input = v, 1) : -1;
    if (SESSION_OPT("--column"))
        return v ? (o->column = v, 1) : -1;
    if (SESSION_OPT("--temp-dir"))
        return v ? (o->temp_dir = v, 1) : -1;
    if (SESSION_OPT("--memory")) {
        char err[160];
        if (v == NULL)
            return -1;
        if (psi_app_memory_parse(&o->memory, v, err, sizeof err) != 0)
            return psi_app_error("%s: %s", cmd, err), -1;
        return 1;
    }
    if (SESSION_OPT("--key-file"))
        return v ? (o->key_file = v, 1) : -1;
    if (SESSION_OPT("--threads"))
        return v && psi_app_parse_count(&o->threads, v, PSI_SHARD_MAX_THREADS, what) == 0
                   ? 1 : -1;
    if (SESSION_OPT("--timeout")) {
        if (!v || psi_app_parse_count(&n, v, 86400, what) != 0)
            return -1;
        o->timeout_ms = (int)n * 1000;
        return 1;
    }
    if (SESSION_OPT("--max-peer-values")) {
        if (!v || psi_app_parse_u64(&u, v, what) != 0)
            return -1;
        o->max_peer = u;
        return 1;
    }
    if (SESSION_OPT("--structure"))
        return v && session_structure(&o->structure, v, what) == 0 ? 1 : -1;
    if (SESSION_OPT("--suite"))
        return v && psi_app_parse_suite(&o->suite, v, what) == 0 ? 1 : -1;
    if (SESSION_OPT("--fpr"))
        return v && psi_app_parse_double(&o->fpr, v, 0, 1, 1, 1, what) == 0 ? 1 : -1;
#undef SESSION_OPT
    return 0;
}

int psi_cli_round_parse(psi_cli_round_opts *o, int argc, char **argv, const char *cmd,
                      const char *addr_opt, void (*usage)(FILE *out),
                      psi_cli_own_opt_fn own, void *own_arg)
{
    char host[256], port[16], err[512];

    session_opts_default(o);
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int rc = session_common_opt(o, argc, argv, &i, cmd);

        if (rc == 0 && psi_app_is_help(argv[i])) {
            usage(stdout);
            return 1;
        }
        if (rc == 0 && psi_app_opt_value(argc, argv, &i, addr_opt, &v))
            rc = v != NULL ? (o->addr = v, 1) : -1;
        if (rc == 0)
            rc = own(own_arg, argc, argv, &i);
        if (rc == 0)
            psi_app_error("%s: unknown argument '%s' (see 'shardpsi %s --help')", cmd, argv[i],
                          cmd);
        if (rc <= 0)
            return -1;
    }
    if (o->addr == NULL || (o->input == NULL && !o->input_replaced)) {
        psi_app_error("%s: %s%s is required (see 'shardpsi %s --help')", cmd,
                      o->addr == NULL ? addr_opt : "--input",
                      o->addr == NULL ? " HOST:PORT" : " FILE", cmd);
        return -1;
    }
    if (psi_app_check_input_mode(cmd, o->column, o->lines) != 0)
        return -1;
    if (psi_net_parse_addr(host, sizeof host, port, sizeof port, o->addr, err,
                               sizeof err) != 0) {
        psi_app_error("%s: %s", cmd, err);
        return -1;
    }
    return 0;
}

