/*
 * `shardpsi client`: connects to a `shardpsi server` with its input, runs one round
 * (PROTOCOL.md §15) and writes the result: its intersecting rows (with
 * the server's payload columns, --payloads, §22.2), their indices, the
 * count, or the association table; with --share-result it then tells the
 * server which setup rows matched (§22.3).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "cli_commands.h"
#include "app_input.h"
#include "app_keyfile.h"
#include "app_payload.h"
#include "net.h"
#include "app_output.h"
#include "app_progress.h"
#include "app_party.h"
#include "cli_round.h"
#include "cli_round_spill.h"
#include "cli_offline.h"
#include "app_spill.h"
#include "net_progress.h"
#include "app_clock.h"
#include "app_util.h"
#include "psi_shard.h"

typedef enum client_mode {
    CLIENT_ROWS,        // the intersecting rows of the input (default)
    CLIENT_INDICES,     // their 0-based indices
    CLIENT_COUNT,       // the intersection's size only (reveal off)
    CLIENT_ASSOCIATION  // pairs: client index, server index
} client_mode;

typedef struct client_opts {
    psi_cli_round_opts net;
    const char *output;
    client_mode mode;
    int payloads;       // --payloads: the server's payload columns on each row
    int raw_cells;      // --raw-cells: those columns' cells as the server sent them
    int share_result;   // --share-result: the server gets its matched rows
} client_opts;

/* One round's state. */
typedef struct client_ctx {
    const client_opts *o;
    psi_app_input in;
    psi_app_output out;
    psi_net_conn conn;
    psi_app_progress prog;
    psi_engine *key;       // from --key-file; NULL: a fresh key
    psi_net_tls *tls;      // NULL: --no-tls
    psi_shards *g;
    psi_net_handshake hello, accept;
    uint8_t *setup, *response, *perm, *table, *pay_head;
    size_t setup_len, response_len, perm_len, table_len, pay_head_len, pad_len;
    int payloads;          // the payload table arrived: tab (in table, or in tab_fd)
    psi_app_paytab tab;
    int tab_fd;            // a table past a quarter of the budget: a nameless file
    psi_cli_round_spill *spill; // past the budget: the round's steps and files
    uint8_t *shared;       // --share-result: the matched setup positions (8-byte
    size_t shared_k;       // big-endian each), kept from the match to send
    char err[PSI_NET_MSG_MAX + 200];
} client_ctx;

void psi_cli_client_usage(FILE *out)
{
    fprintf(out,
        "Usage: shardpsi client --connect HOST:PORT --input FILE --output FILE TRANSPORT\n"
        "                       [options]\n"
        "TRANSPORT: --tls-cert CERT --tls-key KEY (--tls-ca CA | --tls-peer-key FP),\n"
        "or --no-tls on loopback (see below)\n"
        "\n"
        "Runs one private set intersection with the `shardpsi server` at HOST:PORT on the\n"
        "values of FILE, and writes the result to FILE ('-': stdout) only when the\n"
        "round succeeded (under a temporary name until then).  The server learns\n"
        "this side's set size and nothing else.\n"
        "\n"
        "Input:\n"
        "  --input FILE         one value per line (bytes as they are; CRLF handled),\n"
        "                       or '-' for stdin; a FILE that looks like CSV (a ','\n"
        "                       in its first line, or a name ending in .csv) is\n"
        "                       refused unless --column or --lines says how to read it\n"
        "  --column NAME        read FILE as CSV (RFC 4180, header row) and take the\n"
        "                       values of column NAME\n"
        "  --lines              read every line as a value (the header too), even if\n"
        "                       FILE looks like CSV\n"
        "Output (one of):\n"
        "  (default)            the intersecting rows of FILE, in input order (for\n"
        "                       CSV: the header, then the whole rows as written)\n"
        "  --indices            their 0-based row indices, one per line\n"
        "  --count-only         only the size of the intersection; the server need\n"
        "                       not reveal more, and does not\n"
        "  --association        pairs 'CLIENT_INDEX<TAB>SERVER_INDEX' of matching rows,\n"
        "                       by client index; needs a server started with\n"
        "                       --association (raw setup)\n"
        "  --payloads           with the rows: each matched row followed by the\n"
        "                       server's payload columns (CSV: ',' and its fields,\n"
        "                       and their names in the header; lines: a tab before\n"
        "                       each field); needs a server with --payload-columns\n"
        "                       (PROTOCOL.md §22); a payload that is not the head's\n"
        "                       number of fields, or holds a control byte, a bare\n"
        "                       quote or a line break outside quotes, fails the round\n"
        "                       naming its row, with no output\n"
        "  --raw-cells          with --payloads: write the server's cells as they are;\n"
        "                       by default one that begins with '=', '+', '-', '@', a\n"
        "                       tab or CR gets a ' before it, so that a spreadsheet\n"
        "                       does not run it as a formula (OWASP's rule)\n"
        "  --share-result       also send the server which of its setup rows matched,\n"
        "                       so that it writes its matched rows; needs a server\n"
        "                       started with --share-result (raw setup); the server\n"
        "                       then learns the rows in the intersection\n"
        "Protocol:\n"
        "  --suite NAME         the group and hash of the run: openmined-p256 (default,\n"
        "                       OpenMined PSI's), p256-sswu or ristretto255; must be\n"
        "                       the server's\n"
        "Setup (checked against the server's; by default the server's):\n"
        "  --structure S        raw, gcs or bloom\n"
        "  --fpr F              the false-positive rate of gcs or bloom (openmined-p256's\n"
        "                       bloom gives more at small rates: README, Ciphersuites)\n"
        "  --max-peer-values N  refuse servers announcing more than N values\n"
        "                       (default %u)\n"
        "Keys and resources:\n"
        "  --key-file FILE      reuse the key in FILE (64 hex digits and the suite,\n"
        "                       mode 0600), or create FILE with a new key of the\n"
        "                       suite; default: a fresh key\n"
        "  --threads N          worker threads (default: every online CPU)\n"
        "  --memory BYTES       memory budget (K, M, G: 256M; default a quarter of the\n"
        "                       machine's memory): an input file larger than a quarter\n"
        "                       of it is streamed through sorted runs on disk, with the\n"
        "                       same result; a raw setup is matched from a file, a\n"
        "                       GCS or Bloom setup must fit a quarter (PROTOCOL.md §20)\n"
        "  --temp-dir DIR       where the runs and messages go (default $TMPDIR, else\n"
        "                       the output's directory); they have no name\n"
        "  --timeout S          give up when the server sends nothing for S seconds\n"
        "                       (default %d); both sides send keepalives while working\n"
        "  --progress           progress lines on stderr even when it is not a\n"
        "                       terminal (--no-progress: never)\n",
        PSI_NET_DEFAULT_MAX_PEER, PSI_NET_DEFAULT_TIMEOUT_S);
    psi_cli_round_transport_usage(out, 0);
    fprintf(out,
        "\n"
        "Exit status: 0 success, 1 when the round failed (the message says why; no\n"
        "output file is written), 2 for a usage error or an unreadable input,\n"
        "certificate or TLS key file.\n");
}

/* The client's own options (psi_cli_own_opt_fn): --output and one output
 * mode. */
static int client_own_opt(void *arg, int argc, char **argv, int *i)
{
    static const char *const modes[] = {NULL, "--indices", "--count-only", "--association"};
    client_opts *o = arg;
    const char *v = NULL;

    if (psi_app_opt_value(argc, argv, i, "--output", &v))
        return v != NULL ? (o->output = v, 1) : -1;
    if (strcmp(argv[*i], "--payloads") == 0)
        return o->payloads = 1, 1;
    if (strcmp(argv[*i], "--raw-cells") == 0)
        return o->raw_cells = 1, 1;
    if (strcmp(argv[*i], "--share-result") == 0)
        return o->share_result = 1, 1;
    for (int m = CLIENT_INDICES; m <= CLIENT_ASSOCIATION; m++) {
        if (strcmp(argv[*i], modes[m]) != 0)
            continue;
        if (o->mode != CLIENT_ROWS && o->mode != (client_mode)m) {
            psi_app_error("client: give only one of --indices, --count-only and "
                          "--association");
            return -1;
        }
        o->mode = (client_mode)m;
        return 1;
    }
    return 0;
}

/* Parses the command line.  Returns: 0, 1 after --help, -1 after a message. */
static int client_parse(client_opts *o, int argc, char **argv)
{
    int rc;

    memset(o, 0, sizeof *o);
    rc = psi_cli_round_parse(&o->net, argc, argv, "client", "--connect", psi_cli_client_usage,
                           client_own_opt, o);
    if (rc != 0)
        return rc;
    if (o->output == NULL) {
        psi_app_error("client: --output FILE is required (see 'shardpsi client --help')");
        return -1;
    }
    if (o->mode == CLIENT_ASSOCIATION && o->net.structure != PSI_NET_STRUCTURE_ANY &&
        o->net.structure != PSI_STRUCTURE_RAW) {
        psi_app_error("client: --association needs the raw setup");
        return -1;
    }
    if (o->raw_cells && !o->payloads) {
        psi_app_error("client: --raw-cells is for the server's cells of --payloads");
        return -1;
    }
    if (o->payloads && o->mode != CLIENT_ROWS) {
        psi_app_error("client: --payloads writes the matched rows: not with --indices, "
                      "--count-only or --association");
        return -1;
    }
    if (o->share_result && (o->mode == CLIENT_COUNT ||
                            (o->net.structure != PSI_NET_STRUCTURE_ANY &&
                             o->net.structure != PSI_STRUCTURE_RAW))) {
        psi_app_error("client: --share-result needs the intersection (not --count-only) "
                      "and the raw setup");
        return -1;
    }
    return 0;
}

/* Reports a failure: to the server (an ERROR frame, unless the connection
 * itself failed) and on stderr.  Returns: -1. */
static int client_fail(client_ctx *s, int tell_peer, const char *msg)
{
    if (tell_peer && s->conn.fd >= 0)
        psi_net_send_error(&s->conn, msg);
    psi_app_progress_note(&s->prog, "error: %s", msg);
    return -1;
}

/* As client_fail for a library error of `what`. */
static int client_fail_psi(client_ctx *s, const char *what, int rc)
{
    char msg[sizeof s->err], detail[PSI_ERROR_MESSAGE_BYTES];

    // Names the field and element at fault, when the library recorded one.
    psi_error_message(detail, sizeof detail, rc);
    snprintf(msg, sizeof msg, "%s: %s (%s)", what, detail,
             psi_error_name(rc) ? psi_error_name(rc) : "?");
    return client_fail(s, 1, msg);
}

/* As client_fail for the connection's own error. */
static int client_fail_net(client_ctx *s, int rc)
{
    char msg[sizeof s->err];

    psi_net_session_error(msg, sizeof msg, &s->conn, rc, "server");
    return client_fail(s, 0, msg);
}

/* Loads or creates the key file, when one is given.  Returns: 0 or -1
 * (reported: an unusable key file, exit status 2). */
static int client_key(client_ctx *s)
{
    int created = 0;

    if (s->o->net.key_file == NULL)
        return 0;
    if (psi_app_keyfile_engine_suite(&s->key, &created, s->o->net.key_file,
                                     s->o->net.suite, s->err, sizeof s->err) != 0) {
        psi_app_error("client: %s", s->err);
        return -1;
    }
    psi_app_progress_note(&s->prog, "%s key file %s", created ? "created" : "using the key of",
                          s->o->net.key_file);
    return 0;
}

/* Makes the client's shards: the key file's key or a fresh one. */
static int client_shards(client_ctx *s)
{
    psi_app_party_spec spec = {
        .key = s->key, .suite = s->o->net.suite, .role = PSI_ROLE_CLIENT,
        .reveal = s->o->mode != CLIENT_COUNT,
        .shard = {.sharded = 1, .threads = s->o->net.threads},
        .progress = psi_app_progress_update, .progress_arg = &s->prog};
    psi_app_party p;
    const char *what = NULL;
    int rc = psi_app_party_build(&p, &spec, &what);

    s->g = p.shards;
    return rc != PSI_OK ? client_fail_psi(s, what, rc) : 0;
}

/* Connects and authenticates the server (TLS, unless --no-tls). */
static int client_connect(client_ctx *s)
{
    char host[256], port[16];
    int rc;

    if ((rc = psi_net_connect(&s->conn, s->o->net.addr, s->o->net.timeout_ms)) != 0)
        return client_fail_net(s, rc);
    // Until the ACCEPT: one deadline, and no keepalives.
    s->conn.deadline_ms = psi_app_now_ms() + s->o->net.handshake_timeout_ms;
    s->conn.no_keepalive = 1;
    if (s->tls == NULL)
        return 0;
    if (psi_net_parse_addr(host, sizeof host, port, sizeof port, s->o->net.addr, s->err,
                           sizeof s->err) != 0)
        return client_fail(s, 0, s->err);
    if ((rc = psi_net_tls_handshake(&s->conn, s->tls, host, s->conn.deadline_ms)) != 0)
        return client_fail_net(s, rc);
    psi_app_progress_note(&s->prog, "connected to %s over TLS 1.3: %s", s->conn.peer,
                          s->conn.peer_id);
    return 0;
}

/* Connects, sends the HELLO, receives and checks the ACCEPT. */
static int client_handshake(client_ctx *s)
{
    uint8_t hello[PSI_NET_HANDSHAKE_BYTES], *buf = NULL;
    size_t len = 0;
    int rc;

    if (client_connect(s) != 0)
        return -1;
    s->hello.version = PSI_NET_PROTOCOL_VERSION;
    s->hello.reveal = s->o->mode != CLIENT_COUNT;
    s->hello.association = s->o->mode == CLIENT_ASSOCIATION;
    s->hello.payloads = s->o->payloads;
    s->hello.share_result = s->o->share_result;
    s->hello.structure = s->o->net.structure;
    s->hello.fpr = s->o->net.fpr;
    s->hello.n = s->in.n;
    s->hello.suite = s->o->net.suite;
    psi_net_handshake_encode(hello, &s->hello);
    rc = psi_net_send(&s->conn, PSI_NET_FRAME_HELLO, hello, sizeof hello, NULL, NULL);
    if (rc == 0)
        rc = psi_net_recv(&s->conn, PSI_NET_FRAME_ACCEPT, PSI_NET_MSG_MAX, &buf,
                              &len, NULL, NULL);
    if (rc != 0)
        return client_fail_net(s, rc);
    rc = psi_net_handshake_decode(&s->accept, buf, len, "the server", s->err, sizeof s->err);
    free(buf);
    if (rc == 0)
        rc = psi_net_session_check_accept(&s->accept, &s->hello, s->o->net.max_peer,
                                          s->err, sizeof s->err);
    if (rc != 0)
        return client_fail(s, 1, s->err);
    s->conn.deadline_ms = 0;
    s->conn.no_keepalive = 0;
    psi_net_progress_attach(&s->prog, &s->conn);
    return 0;
}

/* Receives a frame of `type` with at most max bytes, showing progress. */
static int client_recv(client_ctx *s, int type, size_t max, const char *step,
                       uint8_t **buf, size_t *len)
{
    int rc = psi_net_progress_recv(&s->prog, &s->conn, type, max, buf, len, step);

    return rc != 0 ? client_fail_net(s, rc) : 0;
}

/* Receives the payload head (L and the columns) and the payload table of
 * the server's n values, whose size it bounds before it is received: held
 * whole within a quarter of the budget, else written to a nameless file in
 * the temporary directory as it arrives and indexed there (PROTOCOL.md
 * §22.4).  Returns: 0 or -1 (reported). */
/* Receives the payload head: L (at most PSI_PAYLOAD_MAX) and the columns'
 * header line (no line break).  Returns: 0 or -1 (reported).  Out:
 * *bound, the bytes of the server's table. */
static int client_recv_payload_head(client_ctx *s, size_t *bound)
{
    if (client_recv(s, PSI_NET_FRAME_PAYLOAD_HEAD, 4 + PSI_APP_PAYLOAD_HEAD_MAX,
                    "receiving the payload head", &s->pay_head, &s->pay_head_len) != 0)
        return -1;
    s->pad_len = s->pay_head_len >= 4 ? (size_t)psi_app_load_be(s->pay_head, 4) : SIZE_MAX;
    if (s->pad_len > PSI_PAYLOAD_MAX ||
        memchr(s->pay_head + 4, '\n', s->pay_head_len - 4) != NULL) {
        snprintf(s->err, sizeof s->err, "the server's payload head is malformed (%zu bytes)",
                 s->pay_head_len);
        return client_fail(s, 1, s->err);
    }
    *bound = psi_payload_table_bytes((size_t)s->accept.n, s->pad_len);
    if (*bound == 0) {
        snprintf(s->err, sizeof s->err, "the server's payload table of %llu values padded to "
                 "%zu bytes is too large to address", (unsigned long long)s->accept.n,
                 s->pad_len);
        return client_fail(s, 1, s->err);
    }
    return 0;
}

static int client_recv_payloads(client_ctx *s)
{
    uint64_t budget = s->o->net.memory != 0 ? s->o->net.memory : psi_app_memory_default();
    uint64_t got = 0;
    size_t bound;
    char dir[4096], why[4400];
    int rc;

    if (client_recv_payload_head(s, &bound) != 0)
        return -1;
    if (bound <= budget / 4) {
        if (client_recv(s, PSI_NET_FRAME_PAYLOADS, bound, "receiving the payload table",
                        &s->table, &s->table_len) != 0)
            return -1;
        rc = psi_app_paytab_mem(&s->tab, s->o->net.suite, s->table, s->table_len);
    } else {
        psi_app_output_dir(dir, sizeof dir, s->o->output);
        if (psi_app_spill_tmpfile(&s->tab_fd, psi_app_temp_dir(s->o->net.temp_dir, dir), why,
                                  sizeof why) != 0)
            return client_fail(s, 1, why);
        rc = psi_net_progress_recv_fd(&s->prog, &s->conn, PSI_NET_FRAME_PAYLOADS, bound,
                                      s->tab_fd, &got, "receiving the payload table");
        if (rc != 0)
            return client_fail_net(s, rc);
        rc = psi_app_paytab_file(&s->tab, s->o->net.suite, s->tab_fd, 0, got, budget, NULL,
                                 NULL, why, sizeof why);
        if (rc == PSI_E_IO || (rc == PSI_E_MSG_TOO_LARGE && why[0] != '\0'))
            return client_fail(s, 1, why);
        if (rc == PSI_OK)
            psi_app_progress_note(&s->prog, "the payload table (%" PRIu64 " bytes, past a "
                                  "quarter of --memory) is kept in a file and looked up "
                                  "through an index of %" PRIu64 " tags", got, s->tab.n_index);
    }
    if (rc == PSI_OK && (s->tab.n != s->accept.n || s->tab.pad_len != s->pad_len))
        rc = PSI_E_PAYLOAD_TRUNCATED;
    if (rc != PSI_OK)
        return client_fail_psi(s, "the server's payload table is invalid", rc);
    s->payloads = 1;
    return 0;
}

/* Masks and sends the request (the client commits to its size first:
 * PROTOCOL.md §15.3), then receives and checks the setup and receives the
 * response (and the permutation of the association table). */
static int client_exchange(client_ctx *s)
{
    psi_setup_params p;
    int suite = s->o->net.suite;
    size_t cap = psi_request_bound(suite, s->in.n), len = cap, setup_cap = 0;
    uint8_t *req = psi_app_alloc(cap, 1);
    int rc;

    if (req == NULL)
        return client_fail(s, 1, "out of memory for the request");
    psi_app_progress_begin(&s->prog, "masking the request", s->in.n);
    rc = psi_shards_client_create_request(s->g, req, &len, s->in.values, s->in.n);
    psi_app_progress_end(&s->prog);
    if (rc != PSI_OK) {
        free(req);
        return client_fail_psi(s, "cannot build the request", rc);
    }
    rc = psi_net_progress_send(&s->prog, &s->conn, PSI_NET_FRAME_REQUEST, req, len,
                               "sending the request");
    free(req);
    if (rc != 0)
        return client_fail_net(s, rc);
    psi_net_session_params(&p, &s->accept);
    if ((rc = psi_setup_bound(&setup_cap, suite, &p, (size_t)s->accept.n)) != PSI_OK)
        return client_fail_psi(s, "the server's setup parameters", rc);
    if (client_recv(s, PSI_NET_FRAME_SETUP, setup_cap, "receiving the setup", &s->setup,
                    &s->setup_len) != 0)
        return -1;
    // Only a setup an honest server of the announced size sends: a hostile
    // one cannot make matching cost more than the agreed parameters do.
    rc = psi_setup_check(suite, &p, s->accept.n, s->setup, s->setup_len);
    if (rc != PSI_OK)
        return client_fail_psi(s, "the server's setup is not one of the agreed parameters",
                               rc);
    if (client_recv(s, PSI_NET_FRAME_RESPONSE, psi_response_bound(suite, s->in.n),
                    "receiving the response", &s->response, &s->response_len) != 0)
        return -1;
    if (s->accept.association &&
        client_recv(s, PSI_NET_FRAME_PERM, (size_t)s->accept.n * 8,
                    "receiving the association table", &s->perm, &s->perm_len) != 0)
        return -1;
    if (s->accept.association && s->perm_len != (size_t)s->accept.n * 8) {
        snprintf(s->err, sizeof s->err, "the server's association table holds %zu bytes, "
                 "not 8 for each of its %llu values", s->perm_len,
                 (unsigned long long)s->accept.n);
        return client_fail(s, 1, s->err);
    }
    return s->accept.payloads ? client_recv_payloads(s) : 0;
}

/* Orders pairs for the output. */
static int client_cmp_pair(const void *a, const void *b)
{
    const psi_pair *x = a, *y = b;

    if (x->client_index != y->client_index)
        return (x->client_index > y->client_index) - (x->client_index < y->client_index);
    return (x->server_index > y->server_index) - (x->server_index < y->server_index);
}

/* Writes the matched rows idx (ascending) with the payloads they open.  A
 * row without a record is a false positive of a GCS or Bloom setup
 * (dropped, not counted); against a raw setup, a table that does not cover
 * the setup (refused).  Returns: 0 or -1 (reported).  Out: *count. */
static int client_write_payloads(client_ctx *s, const size_t *idx, size_t k, size_t *count)
{
    psi_app_join j = {s->out.f, s->g, &s->tab, (const char *)s->pay_head + 4,
                      s->pay_head_len - 4, s->accept.structure == PSI_STRUCTURE_RAW,
                      "the server's payload table", s->o->raw_cells};
    uint8_t *picked = NULL;
    int code = PSI_OK, rc;

    rc = psi_app_payload_pick(s->o->net.suite, s->response, s->response_len, idx, k, &picked);
    if (rc != PSI_OK)
        return client_fail_psi(s, "cannot open the server's payloads", rc);
    rc = psi_app_payload_join(&j, &s->in, 1, picked, idx, k, 0, count, &code, s->err,
                              sizeof s->err);
    free(picked);
    return rc == 0 ? 0 : client_fail(s, 1, s->err);
}

/* --share-result: keeps the setup positions of the k pairs (ascending, each
 * once: the association's server side before the server's permutation maps
 * it), which client_share sends once the output is committed.  Returns: 0
 * or -1 (reported). */
static int client_keep_shared(client_ctx *s, const psi_pair *pairs, size_t k)
{
    if ((s->shared = psi_app_alloc(k + 1, 8)) == NULL)
        return client_fail(s, 0, "out of memory for the shared result");
    for (size_t i = 0; i < k; i++)
        psi_app_store_be(s->shared + 8 * i, pairs[i].server_index, 8);
    s->shared_k = k;
    return 0;
}

/* Writes the rows or indices of the intersection. */
static int client_write_matches(client_ctx *s, size_t *count)
{
    size_t cap = s->in.n, k = cap;
    size_t *idx = psi_app_alloc(cap, sizeof *idx);
    FILE *f = s->out.f;
    int rc;

    if (idx == NULL)
        return client_fail(s, 0, "out of memory for the intersection");
    if (s->accept.share_result) {
        // One match gives both: against a raw setup the intersection is the
        // association's client side, each setup element matched at most once.
        psi_pair *pairs = psi_app_alloc(cap, sizeof *pairs);
        rc = pairs == NULL ? PSI_E_NOMEM
                           : psi_shards_client_get_association(s->g, pairs, &k, s->setup,
                                                               s->setup_len, s->response,
                                                               s->response_len);
        if (rc == PSI_OK && client_keep_shared(s, pairs, k) != 0) {
            free(pairs);
            free(idx);
            return -1;
        }
        for (size_t i = 0; rc == PSI_OK && i < k; i++)
            idx[i] = pairs[i].client_index;
        free(pairs);
    } else {
        rc = psi_shards_client_get_intersection(s->g, idx, &k, s->setup, s->setup_len,
                                                s->response, s->response_len);
    }
    if (rc != PSI_OK) {
        free(idx);
        return client_fail_psi(s, "cannot compute the intersection", rc);
    }
    psi_app_sort_indices(idx, k);
    if (s->payloads) {
        rc = client_write_payloads(s, idx, k, count);
        free(idx);
        return rc;
    }
    if (s->o->mode == CLIENT_ROWS)
        psi_app_input_write_header(f, &s->in);
    for (size_t i = 0; i < k; i++) {
        if (s->o->mode == CLIENT_ROWS)
            psi_app_input_write_row(f, &s->in, idx[i]);
        else
            fprintf(f, "%zu\n", idx[i]);
    }
    free(idx);
    *count = k;
    return 0;
}

/* Decodes the server's permutation (n_server big-endian u64), refusing an
 * entry that names no server row.  Returns: 0 or -1 (reported). */
static int client_decode_perm(client_ctx *s, size_t *perm, size_t n_server)
{
    for (size_t i = 0; i < n_server; i++) {
        uint64_t v = psi_app_load_be(s->perm + 8 * i, 8);
        if (v >= n_server) {
            snprintf(s->err, sizeof s->err, "the server's association table: entry %zu "
                     "names row %llu of %zu", i, (unsigned long long)v, n_server);
            return client_fail(s, 1, s->err);
        }
        perm[i] = (size_t)v;
    }
    return 0;
}

/* Writes the association table, by client index. */
static int client_write_association(client_ctx *s, size_t *count)
{
    size_t n_server = (size_t)s->accept.n, k = s->in.n;
    psi_pair *pairs = psi_app_alloc(s->in.n, sizeof *pairs);
    size_t *perm = psi_app_alloc(n_server, sizeof *perm);
    int rc = PSI_E_NOMEM;

    if (pairs != NULL && perm != NULL && client_decode_perm(s, perm, n_server) != 0) {
        free(pairs);
        free(perm);
        return -1;
    }
    if (pairs != NULL && perm != NULL) {
        rc = psi_shards_client_get_association(s->g, pairs, &k, s->setup, s->setup_len,
                                               s->response, s->response_len);
        if (rc == PSI_OK && s->accept.share_result && client_keep_shared(s, pairs, k) != 0) {
            free(pairs);
            free(perm);
            return -1;
        }
        if (rc == PSI_OK)
            rc = psi_association_map(pairs, k, perm, n_server);
    }
    if (rc == PSI_OK) {
        qsort(pairs, k, sizeof *pairs, client_cmp_pair);
        for (size_t i = 0; i < k; i++)
            fprintf(s->out.f, "%zu\t%zu\n", pairs[i].client_index, pairs[i].server_index);
        *count = k;
    }
    free(pairs);
    free(perm);
    return rc != PSI_OK ? client_fail_psi(s, "cannot compute the association table", rc) : 0;
}

/* Computes the result and writes it to the output. */
static int client_result(client_ctx *s, size_t *count)
{
    int rc;

    psi_app_progress_begin(&s->prog, "matching", s->in.n);
    if (s->o->mode == CLIENT_COUNT) {
        rc = psi_shards_client_get_intersection_size(s->g, count, s->setup, s->setup_len,
                                                     s->response, s->response_len);
        if (rc == PSI_OK)
            fprintf(s->out.f, "%zu\n", *count);
        else
            rc = client_fail_psi(s, "cannot count the intersection", rc);
    } else if (s->o->mode == CLIENT_ASSOCIATION) {
        rc = client_write_association(s, count);
    } else {
        rc = client_write_matches(s, count);
    }
    psi_app_progress_end(&s->prog);
    return rc;
}

/* Past the budget (the input's n values counted, before any connection):
 * the round's steps set up.  Returns: 0, or -1 after a message. */
static int client_spill_start(client_ctx *s, uint64_t n)
{
    psi_cli_round_spill *r = calloc(1, sizeof *r);
    char dir[1024];

    if (r == NULL) {
        snprintf(s->err, sizeof s->err, "out of memory");
        return -1;
    }
    s->spill = r;
    // The files go where the output goes, unless --temp-dir or $TMPDIR say.
    psi_app_output_dir(dir, sizeof dir, s->o->output);
    if (psi_cli_round_spill_init(r, &s->o->net, s->key, "shardpsi client", dir) != 0) {
        snprintf(s->err, sizeof s->err, "%s", r->off.err);
        return -1;
    }
    r->off.o.mode = s->o->mode == CLIENT_COUNT ? PSI_APP_OFFLINE_COUNT
                    : s->o->mode == CLIENT_INDICES ? PSI_APP_OFFLINE_INDICES
                    : s->o->mode == CLIENT_ASSOCIATION ? PSI_APP_OFFLINE_ASSOCIATION
                                                        : PSI_APP_OFFLINE_ROWS;
    s->in.n = (size_t)n;
    return 0;
}

/* Runs offline step `step` of the spilled round.  Returns: 0, or -1 after
 * reporting its failure to the server and on stderr. */
static int client_spill_step(client_ctx *s, int (*step)(psi_app_offline *))
{
    psi_cli_round_spill *r = s->spill;
    int rc;

    psi_net_progress_attach(&r->off.prog, &s->conn);
    rc = step(&r->off);
    psi_net_progress_detach(&r->off.prog);
    return rc == PSI_APP_EXIT_OK ? 0 : client_fail(s, 1, r->off.err);
}

/* The round's budget, the agreed setup parameters and the setup's most
 * bytes (from the ACCEPT).  Returns: a psi code (psi_setup_bound's). */
static int client_setup_cap(const client_ctx *s, psi_app_budget *b, psi_setup_params *p,
                            size_t *cap)
{
    psi_app_budget_init(b, s->o->net.memory != 0 ? s->o->net.memory
                                                  : psi_app_memory_default());
    psi_net_session_params(p, &s->accept);
    *cap = 0;
    return psi_setup_bound(cap, s->o->net.suite, p, (size_t)s->accept.n);
}

/* Past the budget: the payload head and table received into a file as a
 * payload file (the columns' line, then the table as it arrives), which
 * the match step reads where it lies (PROTOCOL.md §22.4); its count and L
 * checked against the handshake and the head.  Returns: 0 or -1
 * (reported). */
static int client_spill_payloads(client_ctx *s)
{
    psi_cli_round_spill *r = s->spill;
    psi_app_offline *o = &r->off;
    uint64_t got = 0;
    size_t bound;
    int fd, rc;

    if (client_recv_payload_head(s, &bound) != 0)
        return -1;
    if (psi_cli_round_spill_file(r, PSI_CLI_MSG_PAYLOADS, "the server's payload table") != 0)
        return client_fail(s, 1, o->err);
    // The header line through the file's stream (its descriptor shares the
    // offset), then the table after it as it arrives.
    FILE *f = o->file[PSI_CLI_MSG_PAYLOADS];
    fd = r->fd[PSI_CLI_MSG_PAYLOADS];
    if (fwrite(s->pay_head + 4, 1, s->pay_head_len - 4, f) != s->pay_head_len - 4 ||
        fputc('\n', f) == EOF || fflush(f) != 0) {
        snprintf(s->err, sizeof s->err, "the server's payload table: cannot write its file: %s",
                 strerror(errno));
        return client_fail(s, 1, s->err);
    }
    rc = psi_net_progress_recv_fd(&s->prog, &s->conn, PSI_NET_FRAME_PAYLOADS, bound, fd, &got,
                                  "receiving the payload table");
    if (rc != 0)
        return client_fail_net(s, rc);
    // Its n and L against the handshake's and the head's, from its header:
    // match --payloads' step opens the file and checks the whole table.
    uint8_t head[PSI_PAYLOAD_HEAD_BYTES];
    uint64_t n = 0;
    size_t pad_len = 0;
    ssize_t hn = pread(fd, head, sizeof head, (off_t)s->pay_head_len - 4 + 1);
    if (hn < 0) {
        snprintf(s->err, sizeof s->err, "the server's payload table: cannot read its file: %s",
                 strerror(errno));
        return client_fail(s, 1, s->err);
    }
    rc = psi_payload_head_check(s->o->net.suite, head, (size_t)hn, &n, &pad_len);
    if (rc == PSI_OK && (n != s->accept.n || pad_len != s->pad_len))
        rc = PSI_E_PAYLOAD_TRUNCATED;
    if (rc != PSI_OK)
        return client_fail_psi(s, "the server's payload table is invalid", rc);
    o->o.payloads = r->path[PSI_CLI_MSG_PAYLOADS];
    o->o.raw_cells = s->o->raw_cells;
    return 0;
}

/* client_exchange and client_result past the budget: the request made by
 * `shardpsi request`'s step into a file and sent from it, the setup and
 * the response received into files, and the result made by `shardpsi
 * match`'s step from them, into the output. */
static int client_spill_exchange(client_ctx *s, size_t *count)
{
    psi_cli_round_spill *r = s->spill;
    psi_app_offline *o = &r->off;
    psi_app_budget b;
    psi_setup_params p;
    uint64_t len = 0;
    size_t setup_cap = 0;
    int suite = s->o->net.suite, rc;

    if ((rc = client_setup_cap(s, &b, &p, &setup_cap)) != PSI_OK)
        return client_fail_psi(s, "the server's setup parameters", rc);
    if (psi_cli_round_spill_file(r, PSI_CLI_MSG_REQUEST, "the request's temporary file") != 0 ||
        psi_cli_round_spill_file(r, PSI_CLI_MSG_SETUP, "the server's setup") != 0 ||
        psi_cli_round_spill_file(r, PSI_CLI_MSG_RESPONSE, "the server's response") != 0 ||
        (s->accept.association &&
         psi_cli_round_spill_file(r, PSI_CLI_MSG_PERM, "the server's association table") != 0))
        return client_fail(s, 1, o->err);
    o->o.output = r->path[PSI_CLI_MSG_REQUEST];
    if (client_spill_step(s, psi_cli_offline_request) != 0)
        return -1;
    rc = psi_net_progress_send_fd(&s->prog, &s->conn, PSI_NET_FRAME_REQUEST,
                                  r->fd[PSI_CLI_MSG_REQUEST], 0,
                                  psi_cli_round_spill_size(r, PSI_CLI_MSG_REQUEST),
                                  "sending the request");
    if (rc != 0)
        return client_fail_net(s, rc);
    rc = psi_net_progress_recv_fd(&s->prog, &s->conn, PSI_NET_FRAME_SETUP, setup_cap,
                                  r->fd[PSI_CLI_MSG_SETUP], &len, "receiving the setup");
    if (rc != 0)
        return client_fail_net(s, rc);
    // Checked from its file: a raw setup in windows, never whole; a GCS or
    // Bloom setup, which matching holds, in a quarter of the budget (§20).
    psi_app_msg_file f;
    psi_error_detail d;
    if (psi_app_offline_open_msg(o, r->path[PSI_CLI_MSG_SETUP], "the setup", &f) != 0)
        return client_fail(s, 1, o->err);
    rc = psi_setup_check_read(suite, &p, s->accept.n, psi_app_msg_read, &f, len, b.bytes / 4);
    psi_error_detail_get(&d);
    psi_app_msg_close(&f);
    if (psi_app_setup_held_refused(rc, &d) != NULL) {
        snprintf(s->err, sizeof s->err, "the server's %s setup of %" PRIu64 " bytes does not "
                 "fit --memory %" PRIu64 ": matching holds it whole, in at most a quarter of "
                 "the budget: raise --memory to at least %" PRIu64 " (PROTOCOL.md §20)",
                 psi_app_structure_name(s->accept.structure), len, b.bytes, 4 * len);
        return client_fail(s, 1, s->err);
    }
    if (rc == PSI_E_IO)
        return client_fail(s, 1, f.err);
    if (rc != PSI_OK)
        return client_fail_psi(s, "the server's setup is not one of the agreed parameters",
                               rc);
    rc = psi_net_progress_recv_fd(&s->prog, &s->conn, PSI_NET_FRAME_RESPONSE,
                                  psi_response_bound(suite, s->in.n),
                                  r->fd[PSI_CLI_MSG_RESPONSE], &len, "receiving the response");
    if (rc != 0)
        return client_fail_net(s, rc);
    // The association table's permutation, as it comes (8 bytes a server
    // value): the match step reads it in order, never whole.
    if (s->accept.association) {
        rc = psi_net_progress_recv_fd(&s->prog, &s->conn, PSI_NET_FRAME_PERM,
                                      (size_t)s->accept.n * 8, r->fd[PSI_CLI_MSG_PERM], &len,
                                      "receiving the association table");
        if (rc != 0)
            return client_fail_net(s, rc);
        if (len != s->accept.n * 8) {
            snprintf(s->err, sizeof s->err, "the server's association table holds %" PRIu64
                     " bytes, not 8 for each of its %llu values", len,
                     (unsigned long long)s->accept.n);
            return client_fail(s, 1, s->err);
        }
        o->o.permutation = r->path[PSI_CLI_MSG_PERM];
        o->o.perm_payload = 1;
    }
    if (s->accept.payloads && client_spill_payloads(s) != 0)
        return -1;
    // The result goes to the output opened at the start.
    o->o.setup = r->path[PSI_CLI_MSG_SETUP];
    o->o.response = r->path[PSI_CLI_MSG_RESPONSE];
    o->o.output = s->o->output;
    psi_cli_round_spill_output(r, o->o.output, s->out.f);
    if (client_spill_step(s, psi_cli_offline_match) != 0)
        return -1;
    *count = o->count;
    return 0;
}

/* A client whose own input fits but whose server's raw setup (its size
 * known from the handshake) is past a quarter of the budget: the round
 * goes through the steps, which read the setup in windows from its file
 * (§20), when the input is a file they can read again.  From stdin the
 * setup is held.
 * Returns: 0, or -1 after a message. */
static int client_spill_late(client_ctx *s)
{
    const char *in = s->o->net.input;
    psi_app_budget b;
    psi_setup_params p;
    struct stat st;
    size_t cap = 0, n = s->in.n;

    if (client_setup_cap(s, &b, &p, &cap) == PSI_OK && cap > b.bytes / 4 &&
        s->accept.share_result) {
        snprintf(s->err, sizeof s->err, "the server's setup of %zu bytes is past a quarter of "
                 "--memory %" PRIu64 ", and a shared result is not built for rounds past the "
                 "budget: raise --memory", cap, b.bytes);
        return client_fail(s, 1, s->err);
    }
    if (s->accept.structure != PSI_STRUCTURE_RAW || in == NULL || strcmp(in, "-") == 0 || stat(in, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    if (client_setup_cap(s, &b, &p, &cap) != PSI_OK || cap <= b.bytes / 4)
        return 0;
    // The steps read the input themselves: what this side holds goes.
    psi_app_input_free(&s->in);
    psi_shards_free(s->g);
    s->g = NULL;
    if (client_spill_start(s, n) != 0)
        return client_fail(s, 1, s->err);
    psi_app_progress_note(&s->prog, "the server's raw setup of %zu bytes is past a quarter of "
                          "--memory %" PRIu64 ": it is matched from a temporary file, in "
                          "windows", cap, b.bytes);
    return 0;
}

/* --share-result: sends the server the setup positions this side matched,
 * kept by the match (client_keep_shared), from which the server writes its
 * rows.  Returns: 0 or -1 (reported). */
static int client_share(client_ctx *s)
{
    if (s->shared == NULL)
        return client_fail(s, 1, "the shared result was not kept by the match");
    int rc = psi_net_progress_send(&s->prog, &s->conn, PSI_NET_FRAME_RESULT, s->shared,
                                   8 * s->shared_k, "sending the shared result");
    if (rc != 0)
        return client_fail_net(s, rc);
    psi_app_progress_note(&s->prog, "told the server which %zu of its rows matched",
                          s->shared_k);
    return 0;
}

/* The round after the input and output are open. */
static int client_round(client_ctx *s)
{
    size_t count = 0;
    double t0 = psi_app_now_ms();
    int rc;

    if (client_handshake(s) != 0 || (s->spill == NULL && client_spill_late(s) != 0))
        return -1;
    if (s->spill != NULL ? client_spill_exchange(s, &count) != 0
                         : client_exchange(s) != 0 || client_result(s, &count) != 0)
        return -1;
    if (psi_app_output_commit(&s->out, s->err, sizeof s->err) != 0)
        return client_fail(s, 1, s->err);
    if (s->accept.share_result && client_share(s) != 0)
        return -1;
    // DONE last: the server's exit status says whether the client got its
    // result, and a bad response is reported to it as an ERROR instead.
    if ((rc = psi_net_send(&s->conn, PSI_NET_FRAME_DONE, NULL, 0, NULL, NULL)) != 0)
        return client_fail_net(s, rc);
    psi_net_close(&s->conn);
    psi_net_progress_detach(&s->prog);
    psi_app_progress_note(&s->prog, "%zu of %zu values in the intersection (server: %llu "
                          "values, %s setup, suite %s); %s in %.1f s; peak memory "
                          "%.1f MiB", count, s->in.n,
                          (unsigned long long)s->accept.n,
                          psi_app_structure_name(s->accept.structure),
                          psi_app_suite_label(s->accept.suite),
                          strcmp(s->o->output, "-") == 0 ? "written to stdout" : "written",
                          (psi_app_now_ms() - t0) / 1000.0, psi_app_peak_mib());
    return 0;
}

int psi_cli_cmd_client(int argc, char **argv)
{
    client_opts o;
    client_ctx s;
    int rc = client_parse(&o, argc, argv);

    if (rc != 0)
        return rc > 0 ? PSI_APP_EXIT_OK : PSI_APP_EXIT_USAGE;
    memset(&s, 0, sizeof s);
    s.o = &o;
    s.conn.fd = -1;
    s.tab_fd = -1;
    psi_app_progress_init(&s.prog, "shardpsi client", o.net.progress);
    signal(SIGPIPE, SIG_IGN);
    uint64_t n = 0;
    int past = psi_cli_round_spill_needed(&o.net, "shardpsi client", &n, s.err, sizeof s.err);
    if (past < 0) {
        psi_app_error("client: %s", s.err);
        rc = PSI_APP_EXIT_USAGE;
    } else if (past && o.share_result) {
        psi_app_error("client: the input is past --memory, and a shared result is not built "
                      "for rounds past the budget: raise --memory");
        rc = PSI_APP_EXIT_USAGE;
    } else if (past) {
        // The round's key is the steps' own.
        if (client_key(&s) != 0) {
            rc = PSI_APP_EXIT_USAGE;
        } else if (client_spill_start(&s, n) != 0) {
            psi_app_error("client: %s", s.err);
            rc = PSI_APP_EXIT_USAGE;
        }
    } else if (psi_app_input_read(&s.in, o.net.input, o.net.column, o.net.lines, s.err,
                                  sizeof s.err) != PSI_APP_INPUT_OK) {
        psi_app_error("client: %s", s.err);
        rc = PSI_APP_EXIT_USAGE;
    }
    if (rc != 0) {
        // reported
    } else if (psi_app_output_open(&s.out, o.output, s.err, sizeof s.err) != 0) {
        psi_app_error("client: %s", s.err);
        rc = PSI_APP_EXIT_USAGE;
    } else if (psi_cli_round_transport(&s.tls, &o.net, "client", 0) != 0) {
        rc = PSI_APP_EXIT_USAGE;
        psi_app_output_abort(&s.out);
    } else if (s.spill == NULL && client_key(&s) != 0) {
        rc = PSI_APP_EXIT_USAGE;
        psi_app_output_abort(&s.out);
    } else if (s.spill == NULL && client_shards(&s) != 0) {
        rc = PSI_APP_EXIT_FAIL;
        psi_app_output_abort(&s.out);
    } else {
        psi_app_output_cleanup_on_signal();
        rc = client_round(&s) == 0 ? PSI_APP_EXIT_OK : PSI_APP_EXIT_FAIL;
        psi_app_output_abort(&s.out);
    }
    psi_net_close(&s.conn);
    psi_shards_free(s.g);
    psi_engine_free(s.key);
    psi_net_tls_free(s.tls);
    free(s.setup);
    free(s.response);
    free(s.perm);
    free(s.shared);
    psi_app_paytab_free(&s.tab);
    if (s.tab_fd >= 0)
        close(s.tab_fd);
    free(s.table);
    free(s.pay_head);
    if (s.spill != NULL)
        psi_cli_round_spill_free(s.spill);
    free(s.spill);
    psi_app_input_free(&s.in);
    return rc;
}
