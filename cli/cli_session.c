/* Options and handshake of the network commands; see cli_session.h. */
#include "cli_session.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "psi_shard.h"

static const char session_magic[8] = {'S', 'H', 'A', 'R', 'D', 'P', 'S', 'I'};

size_t psi_cli_handshake_encode(uint8_t out[PSI_CLI_HANDSHAKE_MAX_BYTES],
                                const psi_cli_handshake *h)
{
    uint64_t fpr_bits;

    memcpy(&fpr_bits, &h->fpr, sizeof fpr_bits);
    memcpy(out, session_magic, 8);
    psi_cli_store_be(out + 8, h->version, 2);
    out[10] = (uint8_t)((h->reveal ? 1 : 0) | (h->association ? 2 : 0));
    out[11] = (uint8_t)h->structure;
    psi_cli_store_be(out + 12, fpr_bits, 8);
    psi_cli_store_be(out + 20, h->n, 8);
    if (h->suite == PSI_SUITE_OPENMINED_P256)
        return PSI_CLI_HANDSHAKE_BYTES;
    out[PSI_CLI_HANDSHAKE_BYTES] = (uint8_t)h->suite;
    return PSI_CLI_HANDSHAKE_MAX_BYTES;
}

const char *psi_cli_suite_label(int suite)
{
    static char buf[32];
    const char *name = psi_suite_name(suite);

    if (name != NULL)
        return name;
    snprintf(buf, sizeof buf, "suite %d", suite);
    return buf;
}

int psi_cli_handshake_decode(psi_cli_handshake *h, const uint8_t *p, size_t len,
                             const char *from, char *err, size_t err_len)
{
    uint64_t fpr_bits;

    memset(h, 0, sizeof *h);
    if (len < 10 || memcmp(p, session_magic, 8) != 0) {
        snprintf(err, err_len, "%s does not speak the shardpsi network protocol "
                 "(bad handshake)", from);
        return -1;
    }
    h->version = (unsigned)psi_cli_load_be(p + 8, 2);
    if (h->version != PSI_CLI_PROTOCOL_VERSION) {
        snprintf(err, err_len, "protocol version: %s speaks version %u, this side %u",
                 from, h->version, PSI_CLI_PROTOCOL_VERSION);
        return -1;
    }
    if ((len != PSI_CLI_HANDSHAKE_BYTES && len != PSI_CLI_HANDSHAKE_MAX_BYTES) ||
        (p[10] & ~3u) != 0) {
        snprintf(err, err_len, "%s sent a malformed handshake (%zu bytes, flags %u)",
                 from, len, len > 10 ? p[10] : 0u);
        return -1;
    }
    h->reveal = p[10] & 1;
    h->association = (p[10] >> 1) & 1;
    h->structure = p[11];
    fpr_bits = psi_cli_load_be(p + 12, 8);
    memcpy(&h->fpr, &fpr_bits, sizeof h->fpr);
    h->n = psi_cli_load_be(p + 20, 8);
    h->suite = len > PSI_CLI_HANDSHAKE_BYTES ? p[PSI_CLI_HANDSHAKE_BYTES]
                                             : PSI_SUITE_OPENMINED_P256;
    if (psi_suite_name(h->suite) == NULL) {
        snprintf(err, err_len, "suite: %s uses suite number %d, unknown to this side "
                 "(which knows " PSI_CLI_SUITE_NAMES ")", from, h->suite);
        return -1;
    }
    if (h->structure > PSI_STRUCTURE_BLOOM_FILTER && h->structure != PSI_CLI_STRUCTURE_ANY) {
        snprintf(err, err_len, "%s sent an unknown setup type %d", from, h->structure);
        return -1;
    }
    if (!isfinite(h->fpr) || h->fpr < 0 || h->fpr >= 1) {
        snprintf(err, err_len, "%s sent an fpr outside [0, 1)", from);
        return -1;
    }
    return 0;
}

const char *psi_cli_structure_name(int structure)
{
    switch (structure) {
    case PSI_STRUCTURE_RAW: return "raw";
    case PSI_STRUCTURE_GCS: return "gcs";
    case PSI_STRUCTURE_BLOOM_FILTER: return "bloom";
    default: return "any";
    }
}

/* Fills the defaults of the common options. */
static void session_opts_default(psi_cli_net_opts *o)
{
    memset(o, 0, sizeof *o);
    o->timeout_ms = PSI_CLI_DEFAULT_TIMEOUT_S * 1000;
    o->progress = -1;
    o->max_peer = PSI_CLI_DEFAULT_MAX_PEER;
    o->structure = PSI_CLI_STRUCTURE_ANY;
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
        psi_cli_error("%s: '%s' is not raw, gcs or bloom", what, v);
        return -1;
    }
    return 0;
}

/* Parses argv[*i] if it is one of the common options.  Returns: 1 if it
 * was, 0 if not, -1 after a usage message naming `cmd`. */
static int session_common_opt(psi_cli_net_opts *o, int argc, char **argv, int *i,
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
#define SESSION_OPT(name) (snprintf(what, sizeof what, "%s: %s", cmd, name), \
                           psi_cli_opt_value(argc, argv, i, name, &v))
    if (SESSION_OPT("--input"))
        return v ? (o->input = v, 1) : -1;
    if (SESSION_OPT("--column"))
        return v ? (o->column = v, 1) : -1;
    if (SESSION_OPT("--key-file"))
        return v ? (o->key_file = v, 1) : -1;
    if (SESSION_OPT("--threads"))
        return v && psi_cli_parse_count(&o->threads, v, PSI_SHARD_MAX_THREADS, what) == 0
                   ? 1 : -1;
    if (SESSION_OPT("--timeout")) {
        if (!v || psi_cli_parse_count(&n, v, 86400, what) != 0)
            return -1;
        o->timeout_ms = (int)n * 1000;
        return 1;
    }
    if (SESSION_OPT("--max-peer-values")) {
        if (!v || psi_cli_parse_u64(&u, v, what) != 0)
            return -1;
        o->max_peer = u;
        return 1;
    }
    if (SESSION_OPT("--structure"))
        return v && session_structure(&o->structure, v, what) == 0 ? 1 : -1;
    if (SESSION_OPT("--suite"))
        return v && psi_cli_parse_suite(&o->suite, v, what) == 0 ? 1 : -1;
    if (SESSION_OPT("--fpr"))
        return v && psi_cli_parse_double(&o->fpr, v, 0, 1, 1, 1, what) == 0 ? 1 : -1;
#undef SESSION_OPT
    return 0;
}

int psi_cli_net_parse(psi_cli_net_opts *o, int argc, char **argv, const char *cmd,
                      const char *addr_opt, void (*usage)(FILE *out),
                      psi_cli_own_opt_fn own, void *own_arg)
{
    char host[256], port[16], err[512];

    session_opts_default(o);
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int rc = session_common_opt(o, argc, argv, &i, cmd);

        if (rc == 0 && psi_cli_is_help(argv[i])) {
            usage(stdout);
            return 1;
        }
        if (rc == 0 && psi_cli_opt_value(argc, argv, &i, addr_opt, &v))
            rc = v != NULL ? (o->addr = v, 1) : -1;
        if (rc == 0)
            rc = own(own_arg, argc, argv, &i);
        if (rc == 0)
            psi_cli_error("%s: unknown argument '%s' (see 'shardpsi %s --help')", cmd, argv[i],
                          cmd);
        if (rc <= 0)
            return -1;
    }
    if (o->addr == NULL || (o->input == NULL && !o->input_replaced)) {
        psi_cli_error("%s: %s%s is required (see 'shardpsi %s --help')", cmd,
                      o->addr == NULL ? addr_opt : "--input",
                      o->addr == NULL ? " HOST:PORT" : " FILE", cmd);
        return -1;
    }
    if (psi_cli_check_input_mode(cmd, o->column, o->lines) != 0)
        return -1;
    if (psi_cli_net_parse_addr(host, sizeof host, port, sizeof port, o->addr, err,
                               sizeof err) != 0) {
        psi_cli_error("%s: %s", cmd, err);
        return -1;
    }
    return 0;
}

void psi_cli_session_params(psi_setup_params *p, const psi_cli_handshake *accept,
                            uint64_t client_n)
{
    memset(p, 0, sizeof *p);
    p->structure = (psi_structure)accept->structure;
    p->fpr = accept->fpr;
    p->num_client_inputs = client_n > 0 ? (int64_t)(client_n > INT64_MAX ? INT64_MAX
                                                                          : client_n) : 1;
}

/* The client's request for the server's setup parameters. */
static int session_check_params(const psi_cli_handshake *hello,
                                const psi_cli_handshake *self, char *err, size_t err_len)
{
    psi_setup_params p;
    size_t bound;
    int rc;

    if (hello->structure != PSI_CLI_STRUCTURE_ANY && hello->structure != self->structure) {
        snprintf(err, err_len, "setup type: the client asks for %s, the server uses %s",
                 psi_cli_structure_name(hello->structure),
                 psi_cli_structure_name(self->structure));
        return -1;
    }
    if (self->structure != PSI_STRUCTURE_RAW && hello->fpr != 0 && hello->fpr != self->fpr) {
        snprintf(err, err_len, "fpr: the client asks for %g, the server uses %g",
                 hello->fpr, self->fpr);
        return -1;
    }
    psi_cli_session_params(&p, self, hello->n);
    rc = psi_setup_bound_suite(&bound, self->suite, &p, (size_t)self->n);
    if (rc == PSI_E_PARAM_OVERFLOW || rc == PSI_E_FPR) {
        snprintf(err, err_len, "fpr %g is too small for a %s setup of %llu values "
                 "queried with %llu: %s (raise --fpr on the server, or use "
                 "--structure raw)", self->fpr, psi_cli_structure_name(self->structure),
                 (unsigned long long)self->n, (unsigned long long)hello->n,
                 psi_strerror(rc));
        return -1;
    }
    if (rc != PSI_OK) {
        snprintf(err, err_len, "setup parameters: %s", psi_strerror(rc));
        return -1;
    }
    return 0;
}

int psi_cli_session_check_hello(const psi_cli_handshake *hello,
                                const psi_cli_handshake *self, uint64_t max_peer,
                                char *err, size_t err_len)
{
    if (hello->suite != self->suite) {
        snprintf(err, err_len, "suite: the client uses %s, the server uses %s (run both "
                 "with the same --suite)", psi_cli_suite_label(hello->suite),
                 psi_cli_suite_label(self->suite));
        return -1;
    }
    if (hello->reveal && !self->reveal) {
        snprintf(err, err_len, "the client asks for the intersection itself, and this "
                 "server reveals only its size: start the server with --reveal, or run "
                 "the client with --count-only");
        return -1;
    }
    if (hello->association && !self->association) {
        snprintf(err, err_len, "the client asks for the association table, and this "
                 "server does not send it: start the server with --association");
        return -1;
    }
    if (hello->association && !hello->reveal) {
        snprintf(err, err_len, "the client asks for the association table without "
                 "the intersection");
        return -1;
    }
    if (hello->n > max_peer || hello->n > SIZE_MAX / PSI_ELEMENT_WIRE_BYTES) {
        snprintf(err, err_len, "the client announces %llu values, more than this "
                 "server accepts (--max-peer-values %llu)",
                 (unsigned long long)hello->n, (unsigned long long)max_peer);
        return -1;
    }
    return session_check_params(hello, self, err, err_len);
}

/* Whether a setup of n values with self's parameters, for a client of
 * client_n, may be len bytes long. */
static int session_covers(const psi_cli_handshake *self, uint64_t client_n, uint64_t n,
                          size_t len)
{
    psi_setup_params p;
    size_t bound = 0;

    psi_cli_session_params(&p, self, client_n);
    return psi_setup_bound_suite(&bound, self->suite, &p, (size_t)n) == PSI_OK &&
           bound >= len;
}

int psi_cli_session_prebuilt_size(uint64_t *n, const psi_cli_handshake *self,
                                  uint64_t client_n, size_t len)
{
    // Sizes a handshake can carry and the peer's frame bounds can take.
    const uint64_t limit = SIZE_MAX / PSI_ELEMENT_WIRE_BYTES;
    uint64_t lo = 0, hi = 1;

    *n = 0;
    if (session_covers(self, client_n, 0, len))
        return 0;
    // lo does not cover, hi does: doubling, then halving the gap.  The
    // result covers even if the bound were not monotonic in n.
    while (!session_covers(self, client_n, hi, len)) {
        if (hi > limit / 2)
            return -1;
        lo = hi;
        hi *= 2;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (session_covers(self, client_n, mid, len))
            hi = mid;
        else
            lo = mid;
    }
    *n = hi;
    return 0;
}

int psi_cli_session_check_prebuilt(const psi_cli_handshake *hello, psi_cli_handshake *self,
                                   const psi_cli_prebuilt *pb, uint64_t max_peer,
                                   char *err, size_t err_len)
{
    const char *st = psi_cli_structure_name(pb->structure);

    if (pb->structure != PSI_STRUCTURE_RAW) {
        if (hello->suite == self->suite && hello->n > pb->num_client) {
            snprintf(err, err_len, "the client announces %llu values, more than the %llu "
                     "this server's %s setup was built for (shardpsi setup "
                     "--num-client-inputs %llu): its false-positive rate holds for at "
                     "most that many; query with fewer values, or build the setup for "
                     "more", (unsigned long long)hello->n,
                     (unsigned long long)pb->num_client, st,
                     (unsigned long long)pb->num_client);
            return -1;
        }
        // A client of another suite or beyond the cap: check_hello says so.
        self->n = 0;
        if (hello->suite == self->suite && hello->n <= max_peer &&
            psi_cli_session_prebuilt_size(&self->n, self, hello->n, pb->len) != 0) {
            snprintf(err, err_len, "the %s setup file (%zu bytes) is larger than any %s "
                     "setup of fpr %g can be: were --fpr and --num-client-inputs those "
                     "of shardpsi setup?", st, pb->len, st, self->fpr);
            return -1;
        }
    }
    if (psi_cli_session_check_hello(hello, self, max_peer, err, err_len) != 0)
        return -1;
    if (!session_covers(self, hello->n, self->n, pb->len)) {
        snprintf(err, err_len, "the %s setup file (%zu bytes) is larger than the setup "
                 "of %llu values the handshake announces", st, pb->len,
                 (unsigned long long)self->n);
        return -1;
    }
    return 0;
}

int psi_cli_session_check_accept(const psi_cli_handshake *accept,
                                 const psi_cli_handshake *hello, uint64_t max_peer,
                                 char *err, size_t err_len)
{
    if (accept->suite != hello->suite) {
        snprintf(err, err_len, "suite: the client uses %s, the server answered %s (run "
                 "both with the same --suite)", psi_cli_suite_label(hello->suite),
                 psi_cli_suite_label(accept->suite));
        return -1;
    }
    if (accept->reveal != hello->reveal || accept->association != hello->association) {
        snprintf(err, err_len, "the server answered with reveal %d and association %d, "
                 "the client asked for %d and %d", accept->reveal, accept->association,
                 hello->reveal, hello->association);
        return -1;
    }
    if (accept->structure == PSI_CLI_STRUCTURE_ANY ||
        (hello->structure != PSI_CLI_STRUCTURE_ANY && accept->structure != hello->structure)) {
        snprintf(err, err_len, "setup type: the client asked for %s, the server answered %s",
                 psi_cli_structure_name(hello->structure),
                 psi_cli_structure_name(accept->structure));
        return -1;
    }
    if (accept->structure != PSI_STRUCTURE_RAW &&
        (accept->fpr <= 0 || (hello->fpr != 0 && accept->fpr != hello->fpr))) {
        snprintf(err, err_len, "fpr: the client asked for %g, the server answered %g",
                 hello->fpr, accept->fpr);
        return -1;
    }
    if (accept->association && accept->structure != PSI_STRUCTURE_RAW) {
        snprintf(err, err_len, "the server offers an association table with a %s setup",
                 psi_cli_structure_name(accept->structure));
        return -1;
    }
    if (accept->n > max_peer || accept->n > SIZE_MAX / PSI_ELEMENT_WIRE_BYTES) {
        snprintf(err, err_len, "the server announces %llu values, more than this client "
                 "accepts (--max-peer-values %llu)", (unsigned long long)accept->n,
                 (unsigned long long)max_peer);
        return -1;
    }
    return 0;
}

int psi_cli_session_shards(psi_shards **g, const char **what, const psi_engine *key,
                           int suite, psi_role role, int reveal, size_t threads,
                           psi_progress_fn progress, void *progress_arg)
{
    psi_settings st;
    psi_shard_settings ss;
    psi_engine *e = NULL;
    int rc;

    *g = NULL;
    psi_settings_default(&st);
    st.role = role;
    st.reveal_intersection = reveal;
    st.suite = (psi_suite)suite;
    rc = key != NULL ? psi_engine_clone_with(&e, key, &st) : psi_engine_create(&e, &st);
    if (rc != PSI_OK) {
        *what = "cannot create the engine";
        return rc;
    }
    psi_shard_settings_default(&ss);
    ss.threads = threads;
    ss.progress = progress;
    ss.progress_arg = progress_arg;
    rc = psi_shards_create(g, e, &ss);
    psi_engine_free(e);
    *what = "cannot start the shards";
    return rc;
}

void psi_cli_session_net_error(char *out, size_t cap, const psi_cli_conn *c, int rc,
                               const char *peer)
{
    static const char prefix[] = "the peer reported: ";
    const char *text = c->err;

    if (rc != PSI_CLI_NET_EPEER) {
        snprintf(out, cap, "%s", text);
        return;
    }
    if (strncmp(text, prefix, sizeof prefix - 1) == 0)
        text += sizeof prefix - 1;
    snprintf(out, cap, "the %s (%s) ended the round: %s", peer, c->peer, text);
}
