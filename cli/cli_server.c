/*
 * `shardpsi server`: listens with its input, answers one client (or more with
 * --keep-serving): handshake, setup, request, response (PROTOCOL.md §15).
 * With --setup it serves a setup built beforehand by `shardpsi setup` (or
 * shardpsi-mpi) with the key of --key-file, instead of masking its input in
 * each round (§15.5; cli_server_setup.c reads and checks that setup).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_commands.h"
#include "app_input.h"
#include "app_keyfile.h"
#include "net.h"
#include "app_progress.h"
#include "cli_server_setup.h"
#include "app_party.h"
#include "cli_round.h"
#include "net_progress.h"
#include "app_clock.h"
#include "app_util.h"
#include "psi_shard.h"

typedef struct server_opts {
    psi_cli_round_opts net;
    int reveal;        // --reveal: clients may learn the intersection
    int association;   // --association: clients may get the association table
    int keep_serving;  // --keep-serving
    psi_cli_server_setup_opts pre;  // --setup and its companions
} server_opts;

/* The server's state across rounds. */
typedef struct server_ctx {
    const server_opts *o;
    psi_app_input in;
    psi_engine *key;       // from --key-file; NULL: a fresh key each round
    int prebuilt;          // --setup: pre holds the setup served
    psi_cli_server_setup pre;
    char in_what[64];      // "305 values"
    const char *what;      // in_what, or pre.what
    psi_app_progress prog;
    char err[PSI_NET_MSG_MAX];
} server_ctx;

void psi_cli_server_usage(FILE *out)
{
    fprintf(out,
        "Usage: shardpsi server --listen HOST:PORT --input FILE [options]\n"
        "       shardpsi server --listen HOST:PORT --key-file KEY --setup SETUP [options]\n"
        "\n"
        "Waits for one `shardpsi client` on HOST:PORT, runs one private set intersection\n"
        "with it on the values of FILE and exits 0 after a successful round.  The\n"
        "client learns the intersection (with --reveal) or only its size; this side\n"
        "learns the client's set size and nothing else.  With --setup the server\n"
        "sends a setup built beforehand by `shardpsi setup` (or shardpsi-mpi setup) instead of\n"
        "masking an input in each round.\n"
        "\n"
        "Input (--input or --setup):\n"
        "  --input FILE         one value per line (bytes as they are; CRLF handled),\n"
        "                       or '-' for stdin; a FILE that looks like CSV (a ','\n"
        "                       in its first line, or a name ending in .csv) is\n"
        "                       refused unless --column or --lines says how to read it\n"
        "  --column NAME        read FILE as CSV (RFC 4180, header row) and take the\n"
        "                       values of column NAME\n"
        "  --lines              read every line as a value (the header too), even if\n"
        "                       FILE looks like CSV\n"
        "  --setup SETUP        serve the setup file `shardpsi setup --key-file KEY` wrote\n"
        "                       (its structure is the file's); needs --key-file KEY\n"
        "                       with the key it was made with.  Another key gives\n"
        "                       wrong answers, and nothing can detect it\n"
        "  --num-client-inputs N  with a gcs or bloom SETUP (required then): shardpsi\n"
        "                       setup's --num-client-inputs; clients with more\n"
        "                       values are refused.  --fpr must be shardpsi setup's too\n"
        "                       (the default is the same); the file records neither\n"
        "  --permutation PERM   with --setup and --association: the file shardpsi setup\n"
        "                       --permutation wrote with SETUP\n"
        "Protocol:\n"
        "  --suite NAME         the group and hash of the run: openmined-p256 (default,\n"
        "                       OpenMined PSI's), p256-sswu or ristretto255; the\n"
        "                       client must use the same\n"
        "  --structure S        setup: raw (exact, default), gcs or bloom (smaller,\n"
        "                       with false positives at rate --fpr)\n"
        "  --fpr F              false-positive rate of gcs and bloom for the whole\n"
        "                       client set, in (0, 1) (default %g)\n"
        "  --reveal             let clients learn which of their rows intersect;\n"
        "                       without it they may only count (--count-only)\n"
        "  --association        also send the association table (server row <-> client\n"
        "                       row) to clients asking for it; needs --reveal and raw\n"
        "                       (and --permutation with --setup)\n"
        "  --keep-serving       answer clients one after another until killed\n"
        "  --max-peer-values N  refuse clients announcing more than N values\n"
        "                       (default %u)\n"
        "Keys and resources:\n"
        "  --key-file FILE      reuse the key in FILE (64 hex digits and the suite,\n"
        "                       mode 0600), or create FILE with a new key of the\n"
        "                       suite; default: a fresh key for every round.  Reusing\n"
        "                       a key lets clients link rounds.  With --setup: the\n"
        "                       existing key file the setup was made with\n"
        "  --threads N          worker threads (default: every online CPU)\n"
        "  --timeout S          give up when the client sends nothing for S seconds\n"
        "                       (default %d); both sides send keepalives while working\n"
        "  --progress           progress lines on stderr even when it is not a\n"
        "                       terminal (--no-progress: never)\n"
        "\n"
        "Exit status: 0 after a successful round, 1 when a round failed (the message\n"
        "says why; nothing is written), 2 for a usage error or an unreadable or\n"
        "invalid input, key, setup or permutation file.\n",
        PSI_APP_DEFAULT_FPR, PSI_NET_DEFAULT_MAX_PEER, PSI_NET_DEFAULT_TIMEOUT_S);
}

/* The server's own options (psi_cli_own_opt_fn). */
static int server_own_opt(void *arg, int argc, char **argv, int *i)
{
    server_opts *o = arg;

    if (strcmp(argv[*i], "--reveal") == 0)
        o->reveal = 1;
    else if (strcmp(argv[*i], "--association") == 0)
        o->association = 1;
    else if (strcmp(argv[*i], "--keep-serving") == 0)
        o->keep_serving = 1;
    else
        return psi_cli_server_setup_opt(&o->pre, &o->net, argc, argv, i);
    return 1;
}

/* Parses the command line.  Returns: 0, 1 after --help, -1 after a message. */
static int server_parse(server_opts *o, int argc, char **argv)
{
    int rc;

    memset(o, 0, sizeof *o);
    rc = psi_cli_round_parse(&o->net, argc, argv, "server", "--listen", psi_cli_server_usage,
                           server_own_opt, o);
    if (rc != 0)
        return rc;
    if (psi_cli_server_setup_check_opts(&o->pre, &o->net, o->association) != 0)
        return -1;
    // With --setup the structure is the file's (psi_cli_server_setup_load
    // checks a given --structure against it).
    if (o->pre.setup == NULL && o->net.structure == PSI_NET_STRUCTURE_ANY)
        o->net.structure = PSI_STRUCTURE_RAW;
    if (o->net.fpr == 0)
        o->net.fpr = PSI_APP_DEFAULT_FPR;
    if (o->association && (!o->reveal || (o->pre.setup == NULL &&
                                          o->net.structure != PSI_STRUCTURE_RAW))) {
        psi_app_error("server: --association needs --reveal and the raw setup");
        return -1;
    }
    return 0;
}

/* Reports a failed round: to the client (an ERROR frame, when the failure is
 * not the connection's) and on stderr.  Returns: -1. */
static int server_fail(server_ctx *s, psi_net_conn *c, int tell_peer, const char *msg)
{
    if (tell_peer && c != NULL)
        psi_net_send_error(c, msg);
    psi_app_progress_note(&s->prog, "error: %s", msg);
    return -1;
}

/* As server_fail for the connection's own error (code rc). */
static int server_fail_net(server_ctx *s, psi_net_conn *c, int rc)
{
    psi_net_session_error(s->err, sizeof s->err, c, rc, "client");
    return server_fail(s, c, 0, s->err);
}

/* As server_fail for a library error of `what`. */
static int server_fail_psi(server_ctx *s, psi_net_conn *c, const char *what, int rc)
{
    char detail[PSI_ERROR_MESSAGE_BYTES];

    // Names the field and element at fault, when the library recorded one.
    psi_error_message(detail, sizeof detail, rc);
    snprintf(s->err, sizeof s->err, "%s: %s (%s)", what, detail,
             psi_error_name(rc) ? psi_error_name(rc) : "?");
    return server_fail(s, c, 1, s->err);
}

/* Receives and checks the client's HELLO.  Out: *hello, *self (the ACCEPT). */
static int server_handshake(server_ctx *s, psi_net_conn *c, psi_net_handshake *hello,
                            psi_net_handshake *self)
{
    uint8_t *buf = NULL, out[PSI_NET_HANDSHAKE_MAX_BYTES];
    size_t len = 0, out_len;
    int rc = psi_net_recv(c, PSI_NET_FRAME_HELLO, PSI_NET_MSG_MAX, &buf, &len,
                              NULL, NULL);

    if (rc != 0)
        return server_fail_net(s, c, rc);
    rc = psi_net_handshake_decode(hello, buf, len, "the client", s->err, sizeof s->err);
    free(buf);
    if (rc != 0)
        return server_fail(s, c, 1, s->err);
    memset(self, 0, sizeof *self);
    self->version = PSI_NET_PROTOCOL_VERSION;
    self->reveal = s->o->reveal;
    self->association = s->o->association;
    self->structure = s->prebuilt ? s->pre.pb.structure : s->o->net.structure;
    self->fpr = s->o->net.fpr;
    self->n = s->prebuilt ? s->pre.n : s->in.n;
    self->suite = s->o->net.suite;
    rc = s->prebuilt
             ? psi_net_session_check_prebuilt(hello, self, &s->pre.pb, s->o->net.max_peer,
                                              s->err, sizeof s->err)
             : psi_net_session_check_hello(hello, self, s->o->net.max_peer, s->err,
                                           sizeof s->err);
    if (rc != 0) {
        char msg[sizeof s->err + 64];
        snprintf(msg, sizeof msg, "the server refused the client: %s", s->err);
        return server_fail(s, c, 1, msg);
    }
    // The round runs with the client's choices, which the checks allowed.
    self->reveal = hello->reveal;
    self->association = hello->association;
    out_len = psi_net_handshake_encode(out, self);
    rc = psi_net_send(c, PSI_NET_FRAME_ACCEPT, out, out_len, NULL, NULL);
    return rc != 0 ? server_fail_net(s, c, rc) : 0;
}

/* Makes this round's shards: the key file's key or a fresh one, with the
 * client's reveal flag. */
static int server_shards(server_ctx *s, psi_net_conn *c, psi_shards **g, int reveal)
{
    psi_app_party_spec spec = {
        .key = s->key, .suite = s->o->net.suite, .role = PSI_ROLE_SERVER, .reveal = reveal,
        .shard = {.sharded = 1, .threads = s->o->net.threads},
        .progress = psi_app_progress_update, .progress_arg = &s->prog};
    psi_app_party p;
    const char *what = NULL;
    int rc = psi_app_party_build(&p, &spec, &what);

    *g = p.shards;
    return rc != PSI_OK ? server_fail_psi(s, c, what, rc) : 0;
}

/* Builds and sends the setup; keeps the permutation for the association
 * table when asked (*perm, n entries).  With --setup, sends the file. */
static int server_setup(server_ctx *s, psi_net_conn *c, psi_shards *g,
                        const psi_net_handshake *self, uint64_t client_n, size_t **perm)
{
    psi_setup_params p;
    size_t cap = 0, len;
    uint8_t *setup = NULL;
    int rc;

    if (s->prebuilt) {
        rc = psi_net_progress_send(&s->prog, c, PSI_NET_FRAME_SETUP, s->pre.bytes,
                                   s->pre.pb.len, "sending the setup");
        return rc != 0 ? server_fail_net(s, c, rc) : 0;
    }
    psi_net_session_params(&p, self, client_n);
    rc = psi_setup_bound(&cap, s->o->net.suite, &p, s->in.n);
    if (rc != PSI_OK)
        return server_fail_psi(s, c, "setup parameters", rc);
    setup = psi_app_alloc(cap, 1);
    if (self->association)
        *perm = psi_app_alloc(s->in.n, sizeof **perm);
    if (setup == NULL || (self->association && *perm == NULL)) {
        free(setup);
        return server_fail(s, c, 1, "out of memory for the setup");
    }
    len = cap;
    psi_app_progress_begin(&s->prog, "masking the setup", s->in.n);
    rc = psi_shards_server_create_setup(g, setup, &len, self->association ? *perm : NULL,
                                        &p, s->in.values, s->in.n);
    psi_app_progress_end(&s->prog);
    if (rc != PSI_OK) {
        free(setup);
        return server_fail_psi(s, c, "cannot build the setup", rc);
    }
    rc = psi_net_progress_send(&s->prog, c, PSI_NET_FRAME_SETUP, setup, len,
                               "sending the setup");
    free(setup);
    return rc != 0 ? server_fail_net(s, c, rc) : 0;
}

/* Receives the request and sends the response. */
static int server_respond(server_ctx *s, psi_net_conn *c, psi_shards *g, uint64_t client_n)
{
    int suite = s->o->net.suite;
    size_t req_len = 0, cap = psi_response_bound(suite, (size_t)client_n), len;
    uint8_t *req = NULL, *resp = NULL;
    int rc;

    rc = psi_net_progress_recv(&s->prog, c, PSI_NET_FRAME_REQUEST,
                               psi_request_bound(suite, (size_t)client_n), &req,
                               &req_len,
                               "receiving the request");
    if (rc != 0)
        return server_fail_net(s, c, rc);
    resp = psi_app_alloc(cap, 1);
    if (resp == NULL) {
        free(req);
        return server_fail(s, c, 1, "out of memory for the response");
    }
    len = cap;
    psi_app_progress_begin(&s->prog, "masking the response", client_n);
    rc = psi_shards_server_process_request(g, resp, &len, req, req_len);
    psi_app_progress_end(&s->prog);
    free(req);
    if (rc == PSI_OK && len != cap)
        rc = PSI_E_BUFFER_TOO_SMALL;
    if (rc == PSI_E_BUFFER_TOO_SMALL) {
        free(resp);
        snprintf(s->err, sizeof s->err, "the client's request does not hold the %llu "
                 "values its handshake announced", (unsigned long long)client_n);
        return server_fail(s, c, 1, s->err);
    }
    if (rc != PSI_OK) {
        free(resp);
        return server_fail_psi(s, c, "the client's request is invalid", rc);
    }
    rc = psi_net_progress_send(&s->prog, c, PSI_NET_FRAME_RESPONSE, resp, len,
                               "sending the response");
    free(resp);
    return rc != 0 ? server_fail_net(s, c, rc) : 0;
}

/* Sends the permutation of the association table: n big-endian u64. */
static int server_send_perm(server_ctx *s, psi_net_conn *c, const size_t *perm)
{
    size_t n = s->prebuilt ? s->pre.n : s->in.n;
    uint8_t *buf = n <= SIZE_MAX / 8 ? psi_app_alloc(n, 8) : NULL;
    int rc;

    if (buf == NULL)
        return server_fail(s, c, 1, "out of memory for the association table");
    for (size_t i = 0; i < n; i++)
        psi_app_store_be(buf + 8 * i, perm[i], 8);
    rc = psi_net_send(c, PSI_NET_FRAME_PERM, buf, 8 * n, NULL, NULL);
    free(buf);
    return rc != 0 ? server_fail_net(s, c, rc) : 0;
}

/* One round with a connected client.  Returns: 0 or -1 (reported). */
static int server_round(server_ctx *s, psi_net_conn *c)
{
    psi_net_handshake hello, self;
    psi_shards *g = NULL;
    size_t *perm = NULL;
    uint8_t *done = NULL;
    size_t done_len = 0;
    double t0 = psi_app_now_ms();
    int rc = -1;

    psi_app_progress_note(&s->prog, "client %s connected", c->peer);
    if (server_handshake(s, c, &hello, &self) != 0 ||
        server_shards(s, c, &g, self.reveal) != 0 ||
        server_setup(s, c, g, &self, hello.n, &perm) != 0 ||
        server_respond(s, c, g, hello.n) != 0 ||
        (self.association && server_send_perm(s, c, s->prebuilt ? s->pre.perm : perm) != 0))
        goto done;
    rc = psi_net_recv(c, PSI_NET_FRAME_DONE, 0, &done, &done_len, NULL, NULL);
    if (rc != 0) {
        server_fail_net(s, c, rc);
        rc = -1;
        goto done;
    }
    psi_app_progress_note(&s->prog, "answered %s: %llu client values against %s, %s "
                          "setup, suite %s, %s, in %.1f s; peak memory %.1f MiB", c->peer,
                          (unsigned long long)hello.n, s->what,
                          psi_app_structure_name(self.structure),
                          psi_app_suite_label(self.suite),
                          self.association ? "intersection and association table revealed"
                          : self.reveal ? "intersection revealed" : "size only",
                          (psi_app_now_ms() - t0) / 1000.0, psi_app_peak_mib());
    rc = 0;
done:
    free(done);
    free(perm);
    psi_shards_free(g);
    return rc;
}

/* Loads the input (or the setup file) and the key file.  Returns: 0 or an
 * exit code. */
static int server_load(server_ctx *s)
{
    int created = 0;
    struct stat st;

    s->prebuilt = s->o->pre.setup != NULL;
    s->what = s->prebuilt ? s->pre.what : s->in_what;
    if (!s->prebuilt) {
        if (psi_app_input_read(&s->in, s->o->net.input, s->o->net.column,
                               s->o->net.lines, s->err, sizeof s->err) != PSI_APP_INPUT_OK) {
            psi_app_error("server: %s", s->err);
            return PSI_APP_EXIT_USAGE;
        }
        snprintf(s->in_what, sizeof s->in_what, "%zu values", s->in.n);
    }
    if (s->o->net.key_file == NULL)
        return 0;
    // A prebuilt setup answers only with its own key: never make one.
    if (s->prebuilt && lstat(s->o->net.key_file, &st) != 0 && errno == ENOENT) {
        psi_app_error("server: key file %s does not exist: --setup needs the key file the "
                      "setup was made with", s->o->net.key_file);
        return PSI_APP_EXIT_USAGE;
    }
    if (psi_app_keyfile_engine_suite(&s->key, &created, s->o->net.key_file,
                                     s->o->net.suite, s->err, sizeof s->err) != 0) {
        psi_app_error("server: %s", s->err);
        return PSI_APP_EXIT_USAGE;
    }
    if (created && s->prebuilt) {
        // It vanished after the check: a key made now would match nothing.
        unlink(s->o->net.key_file);
        psi_app_error("server: key file %s disappeared", s->o->net.key_file);
        return PSI_APP_EXIT_USAGE;
    }
    psi_app_progress_note(&s->prog, "%s key file %s", created ? "created" : "using the key of",
                          s->o->net.key_file);
    if (s->prebuilt && psi_cli_server_setup_load(&s->pre, &s->o->pre, &s->o->net,
                                                 s->o->association, s->err,
                                                 sizeof s->err) != 0) {
        psi_app_error("server: %s", s->err);
        return PSI_APP_EXIT_USAGE;
    }
    return 0;
}

int psi_cli_cmd_server(int argc, char **argv)
{
    server_opts o;
    server_ctx s;
    char bound[160];
    int lfd = -1, rc = server_parse(&o, argc, argv);

    if (rc != 0)
        return rc > 0 ? PSI_APP_EXIT_OK : PSI_APP_EXIT_USAGE;
    memset(&s, 0, sizeof s);
    s.o = &o;
    psi_app_progress_init(&s.prog, "shardpsi server", o.net.progress);
    signal(SIGPIPE, SIG_IGN);
    rc = server_load(&s);
    if (rc == 0 && psi_net_listen(&lfd, bound, sizeof bound, o.net.addr, s.err,
                                      sizeof s.err) != 0) {
        psi_app_error("server: %s", s.err);
        rc = PSI_APP_EXIT_FAIL;
    }
    if (rc == 0) {
        psi_app_progress_note(&s.prog, "listening on %s with %s (suite %s, %s "
                              "setup%s, %s)", bound, s.what,
                              psi_app_suite_label(o.net.suite),
                              psi_app_structure_name(s.prebuilt ? s.pre.pb.structure
                                                                : o.net.structure),
                              s.pre.sized,
                              o.reveal ? "intersection revealed" : "size only");
        rc = PSI_APP_EXIT_FAIL;
    }
    while (lfd >= 0) {
        psi_net_conn c;
        int ok;

        if (psi_net_accept(&c, lfd, o.net.timeout_ms) != 0) {
            psi_app_error("server: %s", c.err);
            break;
        }
        psi_net_progress_attach(&s.prog, &c);
        ok = server_round(&s, &c) == 0;
        psi_net_progress_detach(&s.prog);
        psi_net_close(&c);
        if (!o.keep_serving) {
            rc = ok ? PSI_APP_EXIT_OK : PSI_APP_EXIT_FAIL;
            break;
        }
    }
    if (lfd >= 0)
        close(lfd);
    psi_engine_free(s.key);
    psi_app_input_free(&s.in);
    psi_cli_server_setup_free(&s.pre);
    return rc;
}
