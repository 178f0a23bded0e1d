/*
 * One round of `shardpsi server` on one connection (PROTOCOL.md §15.3): TLS
 * and the handshake within the handshake deadline, then REQUEST, its size
 * checked against the HELLO before any work or allocation for the client
 * (a raw setup is masked after it, or once at start with a fixed key), SETUP,
 * RESPONSE, PERM, the payload table (PROTOCOL.md §22.2), the client's shared
 * result (§22.3), DONE.  A client gone while the server computes ends the
 * round at the next chunk.  The client hears the detail of a failure that
 * is its own; of the server's own, only that it failed (round_fail_server).
 * Every outcome is one line on stderr naming the peer, its identity, the
 * sizes, the suite, the outcome and the time; never a value or a key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app_clock.h"
#include "app_output.h"
#include "app_party.h"
#include "app_payload.h"
#include "app_spill.h"
#include "app_util.h"
#include "cli_offline.h"
#include "cli_round_spill.h"
#include "cli_server.h"
#include "cli_server_pool.h"
#include "net_progress.h"
#include "net_session.h"
#include "psi_shard.h"

/* One round's state. */
typedef struct server_round {
    psi_cli_server *s;
    psi_net_conn *c;
    psi_net_handshake hello, self;
    int agreed;            // a HELLO of this protocol version was decoded: a
                           // shardpsi client, whose refusal fails the round
    psi_shards *g;
    psi_cli_round_spill *sp; // past the budget: the round's steps and files
    size_t *perm;          // the setup's order (association, shared result)
    uint8_t *setup, *resp, *table;
    size_t setup_len, resp_len, table_len, pad_len;
    psi_app_payfile pf;    // past the budget: the round's payload file
    int has_pf;
    psi_app_output out;    // --share-result: this side's matched rows
    size_t shared;         // their number
    double t0;             // when the connection came (psi_app_now_ms)
    double waited_ms;      // how long it waited for its slot
    int no_slot;           // it never got one (PSI_CLI_ROUND_NO_SLOT)
    char who[sizeof ((psi_net_conn *)0)->peer + sizeof ((psi_net_conn *)0)->peer_id + 8];
                           // "HOST:PORT (CN=..., key sha256:...)"
    char err[PSI_NET_MSG_MAX + 256];
} server_round;

/* What the client hears of a failure of the server's own; the detail is in
 * the server's log line. */
#define ROUND_SERVER_FAILED "the server failed this round (see its log)"

/* Records a failure of the round: to the client as an ERROR frame when
 * tell_peer (the failure is not the connection's own), msg itself, so only
 * for a fault of the client's own input (its request is invalid, a count
 * mismatch, a refused parameter).  Returns: -1. */
static int round_fail(server_round *r, int tell_peer, const char *msg)
{
    if (tell_peer)
        psi_net_send_error(r->c, msg);
    if (msg != r->err)
        snprintf(r->err, sizeof r->err, "%.*s", (int)sizeof r->err - 1, msg);
    return -1;
}

/* Records a failure of the server's own (memory, disk, temporary files, its
 * input changed, an internal step): the client is told ROUND_SERVER_FAILED
 * and never the detail (paths, bytes, disk state), which goes to the log.
 * Returns: -1. */
static int round_fail_server(server_round *r, const char *detail)
{
    psi_net_send_error(r->c, ROUND_SERVER_FAILED);
    return round_fail(r, 0, detail);
}

/* As round_fail for the connection's own error (code rc). */
static int round_fail_net(server_round *r, int rc)
{
    char msg[sizeof r->err];

    psi_net_session_error(msg, sizeof msg, r->c, rc, "client");
    return round_fail(r, 0, msg);
}

/* Whether library error rc, from a call on the client's message, is the
 * server's own (memory, threads, the crypto library, a misuse) rather than
 * the message's. */
static int round_psi_own(int rc)
{
    return rc == PSI_E_INVALID_ARG || rc == PSI_E_NOMEM || rc == PSI_E_CRYPTO ||
           rc == PSI_E_WRONG_ROLE || rc == PSI_E_THREAD || rc == PSI_E_IO ||
           rc == PSI_E_KEY_OUT_OF_RANGE || rc == PSI_E_BUFFER_TOO_SMALL;
}

/* As round_fail for a library error of `what`: told to the client when it
 * is the fault of the client's message (peer set and not round_psi_own),
 * else as round_fail_server.  Returns: -1. */
static int round_fail_psi(server_round *r, const char *what, int rc, int peer)
{
    char detail[PSI_ERROR_MESSAGE_BYTES], msg[sizeof r->err];

    // Names the field and element at fault, when the library recorded one.
    psi_error_message(detail, sizeof detail, rc);
    snprintf(msg, sizeof msg, "%s: %s (%s)", what, detail,
             psi_error_name(rc) ? psi_error_name(rc) : "?");
    return peer && !round_psi_own(rc) ? round_fail(r, 1, msg) : round_fail_server(r, msg);
}

/* Receives and checks the HELLO and sends the ACCEPT. */
static int round_handshake(server_round *r)
{
    psi_cli_server *s = r->s;
    uint8_t *buf = NULL, out[PSI_NET_HANDSHAKE_BYTES];
    size_t len = 0;
    int rc = psi_net_recv(r->c, PSI_NET_FRAME_HELLO, PSI_NET_MSG_MAX, &buf, &len, NULL, NULL);

    if (rc != 0)
        return round_fail_net(r, rc);
    rc = psi_net_handshake_decode(&r->hello, buf, len, "the client", r->err, sizeof r->err);
    free(buf);
    if (rc != 0)
        return round_fail(r, 1, r->err);
    r->agreed = 1;
    memset(&r->self, 0, sizeof r->self);
    r->self.version = PSI_NET_PROTOCOL_VERSION;
    r->self.reveal = s->o->reveal;
    r->self.association = s->o->association;
    r->self.structure = s->prebuilt ? s->pre.pb.structure : s->o->net.structure;
    r->self.fpr = s->o->net.fpr;
    r->self.n = s->prebuilt ? s->pre.pb.n : s->in.n;
    r->self.suite = s->o->net.suite;
    // A setup made in the round is made for the client's announced count,
    // once its request has shown that many values.
    r->self.setup_clients = r->hello.n;
    r->self.payloads = s->o->payload_columns != NULL || s->has_pay_file;
    r->self.share_result = s->o->share_result;
    rc = s->prebuilt ? psi_net_session_check_prebuilt(&r->hello, &r->self, &s->pre.pb,
                                                      s->o->net.max_peer, r->err,
                                                      sizeof r->err)
                     : psi_net_session_check_hello(&r->hello, &r->self, s->o->net.max_peer,
                                                   r->err, sizeof r->err);
    if (rc != 0) {
        char msg[sizeof r->err + 64];
        snprintf(msg, sizeof msg, "the server refused the client: %s", r->err);
        return round_fail(r, 1, msg);
    }
    // The round runs with the client's choices, which the checks allowed.
    r->self.reveal = r->hello.reveal;
    r->self.association = r->hello.association;
    r->self.payloads = r->hello.payloads;
    psi_net_handshake_encode(out, &r->self);
    rc = psi_net_send(r->c, PSI_NET_FRAME_ACCEPT, out, sizeof out, NULL, NULL);
    return rc != 0 ? round_fail_net(r, rc) : 0;
}

/* Makes this round's shards: the key file's key or a fresh one. */
static int round_shards(server_round *r)
{
    psi_cli_server *s = r->s;
    psi_app_party_spec spec = {
        .key = s->key, .suite = s->o->net.suite, .role = PSI_ROLE_SERVER,
        .reveal = r->self.reveal,
        .shard = {.sharded = 1, .threads = s->o->net.threads},
        .progress = psi_app_progress_update, .progress_arg = &s->prog};
    psi_app_party p;
    const char *what = NULL;
    int rc = psi_app_party_build(&p, &spec, &what);

    r->g = p.shards;
    return rc != PSI_OK ? round_fail_psi(r, what, rc, 0) : 0;
}

/* Masks the setup of the agreed parameters (keeping the permutation for
 * the association table); with --setup, the file is the setup; a raw setup
 * masked at start (psi_cli_server_premask) is borrowed as it is. */
static int round_setup(server_round *r)
{
    psi_cli_server *s = r->s;
    psi_setup_params p;
    size_t cap = 0;
    int rc;

    if (s->prebuilt)
        return 0;
    if (s->raw_setup != NULL && r->self.structure == PSI_STRUCTURE_RAW) {
        r->setup = s->raw_setup;
        r->setup_len = s->raw_setup_len;
        r->perm = s->raw_perm;
        return 0;
    }
    psi_net_session_params(&p, &r->self);
    if ((rc = psi_setup_bound(&cap, s->o->net.suite, &p, s->in.n)) != PSI_OK)
        return round_fail_psi(r, "setup parameters", rc, 0);
    r->setup = psi_app_alloc(cap, 1);
    // The order is kept for the association table, a shared result and the
    // payload table, which a raw setup's elements feed.
    int keep = r->self.association || r->self.share_result ||
               (r->self.payloads && r->self.structure == PSI_STRUCTURE_RAW);
    if (keep)
        r->perm = psi_app_alloc(s->in.n, sizeof *r->perm);
    if (r->setup == NULL || (keep && r->perm == NULL))
        return round_fail_server(r, "out of memory for the setup");
    r->setup_len = cap;
    psi_app_progress_begin(&s->prog, "masking the setup", s->in.n);
    rc = psi_shards_server_create_setup(r->g, r->setup, &r->setup_len, keep ? r->perm : NULL,
                                        &p, s->in.values, s->in.n);
    psi_app_progress_end(&s->prog);
    return rc != PSI_OK ? round_fail_psi(r, "cannot build the setup", rc, 0) : 0;
}

int psi_cli_server_premask(psi_cli_server *s)
{
    psi_app_party_spec spec = {
        .key = s->key, .suite = s->o->net.suite, .role = PSI_ROLE_SERVER,
        .reveal = s->o->reveal,
        .shard = {.sharded = 1, .threads = s->o->net.threads},
        .progress = psi_app_progress_update, .progress_arg = &s->prog};
    psi_setup_params p = {.structure = PSI_STRUCTURE_RAW, .fpr = s->o->net.fpr,
                          .num_client_inputs = 1};
    psi_app_party party;
    const char *what = NULL;
    size_t cap = 0;
    double t0 = psi_app_now_ms();
    int rc;

    if (s->key == NULL || s->prebuilt || s->spilled || s->o->net.structure != PSI_STRUCTURE_RAW)
        return 0;
    if ((rc = psi_setup_bound(&cap, s->o->net.suite, &p, s->in.n)) != PSI_OK) {
        what = "setup parameters";
    } else if ((s->raw_setup = psi_app_alloc(cap, 1)) == NULL ||
               (s->raw_perm = psi_app_alloc(s->in.n, sizeof *s->raw_perm)) == NULL) {
        psi_app_error("server: out of memory for the setup of %zu values", s->in.n);
        return -1;
    } else if ((rc = psi_app_party_build(&party, &spec, &what)) == PSI_OK) {
        s->raw_setup_len = cap;
        psi_app_progress_begin(&s->prog, "masking the setup", s->in.n);
        rc = psi_shards_server_create_setup(party.shards, s->raw_setup, &s->raw_setup_len,
                                            s->raw_perm, &p, s->in.values, s->in.n);
        psi_app_progress_end(&s->prog);
        psi_app_party_free(&party);
        what = "cannot build the setup";
    } else {
        psi_app_party_free(&party);
    }
    if (rc != PSI_OK) {
        char detail[PSI_ERROR_MESSAGE_BYTES];
        psi_error_message(detail, sizeof detail, rc);
        psi_app_error("server: %s: %s (%s)", what, detail,
                      psi_error_name(rc) ? psi_error_name(rc) : "?");
        return -1;
    }
    psi_app_progress_note(&s->prog, "masked the raw setup of %zu values once, in %.1f s: "
                          "every round sends it (the key is fixed)", s->in.n,
                          (psi_app_now_ms() - t0) / 1000.0);
    return 0;
}

/* Builds the payload table of the round's key (PROTOCOL.md §22.2), when
 * the client asked for it.  Returns: 0 or -1 (told). */
static int round_payloads(server_round *r)
{
    psi_cli_server *s = r->s;
    psi_error_detail d;
    int rc;

    if (!r->self.payloads || s->has_pay_file)
        return 0; // --payloads: the file is sent as it is
    if (r->setup != NULL && r->perm != NULL && r->self.structure == PSI_STRUCTURE_RAW) {
        // A raw setup holds the masked elements: nothing is masked again.
        psi_app_progress_begin(&s->prog, "sealing the payload table", s->in.n);
        rc = psi_app_payload_table_raw(s->o->net.suite, r->setup, r->setup_len, r->perm,
                                       s->pays, s->in.n, s->o->pad_len, &r->table,
                                       &r->table_len);
        psi_app_progress_end(&s->prog);
    } else {
        rc = psi_shards_payload_table_build(r->g, NULL, &r->table_len, s->in.values, s->pays,
                                            s->in.n, s->o->pad_len, NULL);
    }
    if (rc == PSI_E_BUFFER_TOO_SMALL) {
        if ((r->table = psi_app_alloc(r->table_len + 1, 1)) == NULL)
            return round_fail_server(r, "out of memory for the payload table");
        psi_app_progress_begin(&s->prog, "masking the payload table", s->in.n);
        rc = psi_shards_payload_table_build(r->g, r->table, &r->table_len, s->in.values,
                                            s->pays, s->in.n, s->o->pad_len, NULL);
        psi_app_progress_end(&s->prog);
    }
    if (rc == PSI_E_PAYLOAD_DUPLICATE) {
        // The client is told only that the server cannot build it.
        psi_error_detail_get(&d);
        psi_net_send_error(r->c, "the server cannot build its payload table");
        snprintf(r->err, sizeof r->err, "%s: the value of row %lld is there twice: a payload "
                 "table holds one payload a value (join the rows first)", s->o->net.input,
                 (long long)d.index + 1);
        return -1;
    }
    if (rc != PSI_OK)
        return round_fail_psi(r, "cannot build the payload table", rc, 0);
    size_t count = 0;
    rc = psi_payload_table_check(s->o->net.suite, r->table, r->table_len, &count, &r->pad_len);
    return rc != PSI_OK ? round_fail_psi(r, "the payload table built is invalid", rc, 0) : 0;
}

/* Sends the payload head (L, big-endian u32, then the columns' header
 * fields) and the payload table.  Returns: 0 or -1 (told). */
static int round_send_payloads(server_round *r)
{
    psi_cli_server *s = r->s;
    // --payloads, or a round past the budget: the file's header line and
    // table; else the round's table in memory.
    const psi_app_payfile *pf = s->has_pay_file ? &s->pay_file : r->has_pf ? &r->pf : NULL;
    size_t head_len = pf != NULL ? pf->head_len : strlen(s->pay_head);
    uint8_t *head = psi_app_alloc(head_len + 4, 1);
    int rc;

    if (head == NULL)
        return round_fail_server(r, "out of memory for the payload head");
    psi_app_store_be(head, pf != NULL ? pf->t.pad_len : r->pad_len, 4);
    memcpy(head + 4, pf != NULL ? pf->head : s->pay_head, head_len);
    rc = psi_net_send(r->c, PSI_NET_FRAME_PAYLOAD_HEAD, head, head_len + 4, NULL, NULL);
    free(head);
    if (rc == 0 && pf != NULL)
        rc = psi_net_progress_send_fd(&s->prog, r->c, PSI_NET_FRAME_PAYLOADS, pf->f.fd,
                                      pf->table_at, pf->table_len,
                                      "sending the payload table");
    else if (rc == 0)
        rc = psi_net_progress_send(&s->prog, r->c, PSI_NET_FRAME_PAYLOADS, r->table,
                                   r->table_len, "sending the payload table");
    free(r->table);
    r->table = NULL;
    return rc != 0 ? round_fail_net(r, rc) : 0;
}

/* Orders row indices. */
static int round_cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;

    return (x > y) - (x < y);
}

/* --share-result: receives the client's matched setup positions (ascending
 * u64 big-endian, each below the server's count), maps them through the
 * setup's order to this side's rows and writes them, in input order, to
 * the output, committed after DONE.  Returns: 0 or -1 (told). */
static int round_shared(server_round *r)
{
    psi_cli_server *s = r->s;
    size_t n = s->in.n, most = (size_t)(r->hello.n < n ? r->hello.n : n), len = 0, k;
    uint8_t *buf = NULL;
    size_t *rows = NULL;
    int rc = psi_net_progress_recv(&s->prog, r->c, PSI_NET_FRAME_RESULT, most * 8, &buf, &len,
                                   "receiving the shared result");

    if (rc != 0)
        return round_fail_net(r, rc);
    k = len / 8;
    if (len % 8 != 0) {
        free(buf);
        return round_fail(r, 1, "the client's shared result is not a list of 8-byte positions");
    }
    if ((rows = psi_app_alloc(k + 1, sizeof *rows)) == NULL) {
        free(buf);
        return round_fail_server(r, "out of memory for the shared result");
    }
    for (size_t i = 0; i < k; i++) {
        uint64_t v = psi_app_load_be(buf + 8 * i, 8);
        if (v >= n || (i > 0 && v <= psi_app_load_be(buf + 8 * (i - 1), 8))) {
            snprintf(r->err, sizeof r->err, "the client's shared result: entry %zu (%llu) is "
                     "%s", i, (unsigned long long)v, v >= n ? "not a position of the setup"
                     : "not above the one before it");
            free(buf);
            free(rows);
            return round_fail(r, 1, r->err);
        }
        rows[i] = r->perm[v];
    }
    free(buf);
    qsort(rows, k, sizeof *rows, round_cmp_size);
    if (psi_app_output_open(&r->out, s->o->output, r->err, sizeof r->err) != 0) {
        free(rows);
        // The client hears that much; the log keeps the reason (r->err).
        psi_net_send_error(r->c, "the server cannot write its shared result");
        return -1;
    }
    psi_app_input_write_header(r->out.f, &s->in);
    for (size_t i = 0; i < k; i++)
        psi_app_input_write_row(r->out.f, &s->in, rows[i]);
    free(rows);
    r->shared = k;
    return 0;
}

/* Checks that a request of len bytes is the size of the hello.n values of
 * the HELLO (with the reveal flag's two bytes when it is on): nothing sized
 * by the announced count is made before this.  Returns: 0, or -1 (told). */
static int round_check_request(server_round *r, uint64_t len)
{
    uint64_t n = r->hello.n;
    size_t want = psi_request_bound(r->s->o->net.suite, (size_t)n);

    if (want != 0 && !r->self.reveal)
        want -= 2;
    if (want != 0 && len == want)
        return 0;
    snprintf(r->err, sizeof r->err, "the client's request is %llu bytes, not the %zu of the "
             "%llu values its handshake announced", (unsigned long long)len, want,
             (unsigned long long)n);
    return round_fail(r, 1, r->err);
}

/* Receives the request (at most the size of the HELLO's count, allocated
 * as it arrives) into *req and checks its size.  Returns: 0, or -1 (told;
 * *req freed). */
static int round_request(server_round *r, uint8_t **req, size_t *req_len)
{
    psi_cli_server *s = r->s;
    int rc = psi_net_progress_recv(&s->prog, r->c, PSI_NET_FRAME_REQUEST,
                                   psi_request_bound(s->o->net.suite, (size_t)r->hello.n),
                                   req, req_len, "receiving the request");

    if (rc != 0)
        return round_fail_net(r, rc);
    if (round_check_request(r, *req_len) != 0) {
        free(*req);
        *req = NULL;
        return -1;
    }
    return 0;
}

/* Masks the response to the request received (its size checked: it holds
 * the HELLO's n_client values).  Returns: 0, or -1 (told). */
static int round_response(server_round *r, const uint8_t *req, size_t req_len)
{
    psi_cli_server *s = r->s;
    uint64_t n = r->hello.n;
    size_t cap = psi_response_bound(s->o->net.suite, (size_t)n);
    int rc;

    if ((r->resp = psi_app_alloc(cap, 1)) == NULL)
        return round_fail_server(r, "out of memory for the response");
    r->resp_len = cap;
    psi_app_progress_begin(&s->prog, "masking the response", n);
    rc = psi_shards_server_process_request(r->g, r->resp, &r->resp_len, req, req_len);
    psi_app_progress_end(&s->prog);
    if (rc == PSI_OK && r->resp_len != cap)
        rc = PSI_E_BUFFER_TOO_SMALL;
    if (rc == PSI_E_BUFFER_TOO_SMALL) {
        snprintf(r->err, sizeof r->err, "the client's request does not hold the %llu "
                 "values its handshake announced", (unsigned long long)n);
        return round_fail(r, 1, r->err);
    }
    return rc != PSI_OK ? round_fail_psi(r, "the client's request is invalid", rc, 1) : 0;
}

/* Sends the setup: a prebuilt raw setup from its file, never held whole
 * (§20), a spilled round's from its file, else from memory. */
static int round_send_setup(server_round *r)
{
    psi_cli_server *s = r->s;
    const uint8_t *setup = s->prebuilt ? s->pre.bytes : r->setup;
    size_t setup_len = s->prebuilt ? s->pre.pb.len : r->setup_len;
    int fd = s->prebuilt ? s->pre.file.fd : r->sp != NULL ? r->sp->fd[PSI_CLI_MSG_SETUP] : -1;

    if (!s->prebuilt && r->sp != NULL)
        setup_len = (size_t)psi_cli_round_spill_size(r->sp, PSI_CLI_MSG_SETUP);
    if (setup == NULL && fd >= 0)
        return psi_net_progress_send_fd(&s->prog, r->c, PSI_NET_FRAME_SETUP, fd, 0, setup_len,
                                        "sending the setup");
    return psi_net_progress_send(&s->prog, r->c, PSI_NET_FRAME_SETUP, setup, setup_len,
                                 "sending the setup");
}

/* Sends the association table's permutation, n entries held in memory, as
 * 8-byte big-endian entries.  Returns: 0 or -1 (told). */
static int round_send_perm(server_round *r, const size_t *perm)
{
    size_t n = (size_t)r->self.n;
    uint8_t *buf = n <= SIZE_MAX / 8 ? psi_app_alloc(n, 8) : NULL;
    int rc;

    if (buf == NULL)
        return round_fail_server(r, "out of memory for the association table");
    for (size_t i = 0; i < n; i++)
        psi_app_store_be(buf + 8 * i, perm[i], 8);
    rc = psi_net_send(r->c, PSI_NET_FRAME_PERM, buf, 8 * n, NULL, NULL);
    free(buf);
    return rc != 0 ? round_fail_net(r, rc) : 0;
}

/* Sends --setup's permutation from the file it was rewritten to at start.
 * Returns: 0 or -1 (told). */
static int round_send_prebuilt_perm(server_round *r)
{
    psi_cli_server *s = r->s;
    int rc = psi_net_progress_send_fd(&s->prog, r->c, PSI_NET_FRAME_PERM, s->pre.perm_fd, 0,
                                      s->pre.perm_len, "sending the permutation");

    return rc != 0 ? round_fail_net(r, rc) : 0;
}

/* Sends the setup, the response and the association table's permutation. */
static int round_send(server_round *r)
{
    psi_cli_server *s = r->s;
    int rc = round_send_setup(r);

    if (rc == 0)
        rc = psi_net_progress_send(&s->prog, r->c, PSI_NET_FRAME_RESPONSE, r->resp,
                                   r->resp_len, "sending the response");
    if (rc != 0)
        return round_fail_net(r, rc);
    if (r->self.association &&
        (s->prebuilt ? round_send_prebuilt_perm(r) : round_send_perm(r, r->perm)) != 0)
        return -1;
    return r->self.payloads ? round_send_payloads(r) : 0;
}

/* Runs offline step `step` of a spilled round.  Its failure is the
 * server's own (the disk, the temporary files, its input: the client hears
 * ROUND_SERVER_FAILED), but, with `peer`, the step's refusal of the
 * client's request ("the request is invalid (FILE): why", or its reveal
 * flag), told to the client without the file's name.  Returns: 0 or -1
 * (failed, told to the client). */
static int round_spill_step(server_round *r, int (*step)(psi_app_offline *), int peer)
{
    psi_app_offline *o = &r->sp->off;
    char msg[sizeof r->err];
    const char *at, *why;
    int rc;

    psi_net_progress_attach(&o->prog, r->c);
    rc = step(o);
    psi_net_progress_detach(&o->prog);
    if (rc == PSI_APP_EXIT_OK)
        return 0;
    at = peer ? strstr(o->err, "the request is invalid") : NULL;
    if (at != NULL) {
        why = strstr(at, "): ");
        snprintf(msg, sizeof msg, "the client's request is invalid: %s", why ? why + 3 : at);
    } else if (peer && strncmp(o->err, "request ", 8) == 0 && strstr(o->err, "intersection")) {
        snprintf(msg, sizeof msg, "the client's request does not carry the reveal flag of its "
                 "handshake");
    } else {
        return round_fail_server(r, o->err);
    }
    psi_net_send_error(r->c, msg);
    return round_fail(r, 0, o->err);
}

/* round_setup past the budget: `shardpsi setup`'s step on the input, into
 * the setup's file (and the permutation's, for the association table). */
static int round_spill_setup(server_round *r)
{
    psi_cli_round_spill *sp = r->sp;
    psi_app_offline *o = &sp->off;

    if (psi_cli_round_spill_file(sp, PSI_CLI_MSG_SETUP, "the setup's temporary file") != 0 ||
        (r->self.association &&
         psi_cli_round_spill_file(sp, PSI_CLI_MSG_PERM, "the permutation's temporary file") != 0))
        return round_fail_server(r, o->err);
    o->o.output = sp->path[PSI_CLI_MSG_SETUP];
    o->o.permutation = r->self.association ? sp->path[PSI_CLI_MSG_PERM] : NULL;
    o->o.structure = r->self.structure;
    o->o.fpr = r->self.fpr;
    o->o.num_client = (size_t)(r->self.setup_clients > 0 ? r->self.setup_clients : 1);
    if (round_spill_step(r, psi_cli_offline_setup, 0) != 0)
        return -1;
    if (o->values != r->self.n) {
        snprintf(r->err, sizeof r->err, "the input %s holds %llu values now, not the %llu it "
                 "held when the server started: restart the server after changing it",
                 r->s->o->net.input, (unsigned long long)o->values,
                 (unsigned long long)r->self.n);
        return round_fail_server(r, r->err);
    }
    return 0;
}

/* round_request past the budget: the request received into a file (which
 * holds only the bytes that arrived), its size checked against the HELLO
 * before any other file is made.  Returns: 0, or -1 (told). */
static int round_spill_request(server_round *r)
{
    psi_cli_server *s = r->s;
    psi_cli_round_spill *sp = r->sp;
    uint64_t len = 0;
    int rc;

    if (psi_cli_round_spill_file(sp, PSI_CLI_MSG_REQUEST, "the client's request") != 0)
        return round_fail_server(r, sp->off.err);
    rc = psi_net_progress_recv_fd(&s->prog, r->c, PSI_NET_FRAME_REQUEST,
                                  psi_request_bound(s->o->net.suite, (size_t)r->hello.n),
                                  sp->fd[PSI_CLI_MSG_REQUEST], &len, "receiving the request");
    if (rc != 0)
        return round_fail_net(r, rc);
    return round_check_request(r, len);
}

/* round_response past the budget: the request received (round_spill_request)
 * answered by `shardpsi response`'s step into a file. */
static int round_spill_response(server_round *r)
{
    psi_cli_server *s = r->s;
    psi_cli_round_spill *sp = r->sp;
    int suite = s->o->net.suite;
    uint64_t n = r->hello.n;

    if (psi_cli_round_spill_file(sp, PSI_CLI_MSG_RESPONSE, "the response's temporary file") != 0)
        return round_fail_server(r, sp->off.err);
    sp->off.o.request = sp->path[PSI_CLI_MSG_REQUEST];
    sp->off.o.output = sp->path[PSI_CLI_MSG_RESPONSE];
    sp->off.o.reveal = r->self.reveal;
    if (round_spill_step(r, psi_cli_offline_response, 1) != 0)
        return -1;
    if (psi_cli_round_spill_size(sp, PSI_CLI_MSG_RESPONSE) !=
        psi_response_bound(suite, (size_t)n)) {
        snprintf(r->err, sizeof r->err, "the client's request does not hold the %llu "
                 "values its handshake announced", (unsigned long long)n);
        return round_fail(r, 1, r->err);
    }
    return 0;
}

/* round_send past the budget: every frame from its file. */
static int round_spill_send(server_round *r)
{
    psi_cli_server *s = r->s;
    psi_cli_round_spill *sp = r->sp;
    int rc = round_send_setup(r);

    if (rc == 0)
        rc = psi_net_progress_send_fd(&s->prog, r->c, PSI_NET_FRAME_RESPONSE,
                                      sp->fd[PSI_CLI_MSG_RESPONSE], 0,
                                      psi_cli_round_spill_size(sp, PSI_CLI_MSG_RESPONSE),
                                      "sending the response");
    if (rc != 0)
        return round_fail_net(r, rc);
    if (!r->self.association)
        return 0;
    if (s->prebuilt) // --setup's permutation, rewritten at start
        return round_send_prebuilt_perm(r);
    // The request's file is done with: it takes the PERM frame's payload.
    if (ftruncate(sp->fd[PSI_CLI_MSG_REQUEST], 0) != 0 ||
        fseek(sp->off.file[PSI_CLI_MSG_REQUEST], 0, SEEK_SET) != 0 ||
        psi_cli_round_spill_perm(sp, PSI_CLI_MSG_REQUEST, r->self.n) != 0)
        return round_fail_server(r, sp->off.err[0] ? sp->off.err
                                                   : "cannot reuse a temporary file");
    rc = psi_net_send_fd(r->c, PSI_NET_FRAME_PERM, sp->fd[PSI_CLI_MSG_REQUEST],
                         psi_cli_round_spill_size(sp, PSI_CLI_MSG_REQUEST), NULL, NULL);
    return rc != 0 ? round_fail_net(r, rc) : 0;
}

/* The payload table past the budget (PROTOCOL.md §22.4): `shardpsi
 * payloads`' step on the input, with the round's key and a fresh salt,
 * into its file (the table ordered through runs on disk when the input is
 * past --memory), checked there and sent from it by round_send_payloads.
 * As in memory, the client is told only that the table cannot be built.
 * Returns: 0 or -1 (told). */
static int round_spill_payloads(server_round *r)
{
    psi_cli_server *s = r->s;
    psi_cli_round_spill *sp = r->sp;
    psi_app_offline *o = &sp->off;
    uint64_t budget = s->o->net.memory != 0 ? s->o->net.memory : psi_app_memory_default();
    int rc;

    if (!r->self.payloads || s->has_pay_file)
        return 0;
    if (psi_cli_round_spill_file(sp, PSI_CLI_MSG_PAYLOADS, "the payload table's file") != 0)
        return round_fail_server(r, o->err);
    o->o.output = sp->path[PSI_CLI_MSG_PAYLOADS];
    o->o.payload_columns = s->o->payload_columns;
    o->o.pad_len = s->o->pad_len;
    o->o.salt = NULL;
    psi_net_progress_attach(&o->prog, r->c);
    rc = psi_cli_offline_payloads(o);
    psi_net_progress_detach(&o->prog);
    if (rc != PSI_APP_EXIT_OK) {
        psi_net_send_error(r->c, "the server cannot build its payload table");
        snprintf(r->err, sizeof r->err, "%s", o->err);
        return -1;
    }
    if (psi_app_payfile_open(&r->pf, sp->path[PSI_CLI_MSG_PAYLOADS], s->o->net.suite, budget,
                             r->err, sizeof r->err) != 0)
        return round_fail_server(r, r->err);
    r->has_pf = 1;
    if (r->pf.t.n != r->self.n) {
        snprintf(r->err, sizeof r->err, "the input %s holds %llu values now, not the %llu it "
                 "held when the server started: restart the server after changing it",
                 s->o->net.input, (unsigned long long)r->pf.t.n,
                 (unsigned long long)r->self.n);
        return round_fail_server(r, r->err);
    }
    return 0;
}

/* The steps of a spilled round, in round_run's order. */
static int round_spill_run(server_round *r)
{
    psi_cli_server *s = r->s;
    int rc;

    if ((r->sp = calloc(1, sizeof *r->sp)) == NULL)
        return round_fail_server(r, "out of memory for a round past the budget");
    if (psi_cli_round_spill_init(r->sp, &s->o->net, s->key, "shardpsi server", "/var/tmp") != 0)
        return round_fail_server(r, r->sp->off.err);
    // Nothing is masked, and no file but the request's made, before the
    // request has arrived and been checked.
    rc = round_spill_request(r);
    if (rc == 0)
        rc = round_spill_response(r);
    if (rc == 0 && !s->prebuilt)
        rc = round_spill_setup(r);
    if (rc == 0)
        rc = round_spill_payloads(r);
    if (rc == 0)
        rc = round_spill_send(r);
    if (rc == 0 && r->self.payloads)
        rc = round_send_payloads(r);
    return rc;
}

/* Whether this round runs past the budget: the server's input does, or
 * the client's announced count would not fit it in memory (its request
 * and response, 35 bytes a value each, and their elements) and the input
 * is a file the steps can read again, or the setup is prebuilt (only the
 * response is then made, by its step). */
static int round_spills(const server_round *r)
{
    const psi_cli_server *s = r->s;
    uint64_t budget = s->o->net.memory != 0 ? s->o->net.memory : psi_app_memory_default();
    struct stat st;

    if (s->spilled)
        return 1;
    if (r->hello.n <= budget / PSI_CLI_ROUND_PER_VALUE)
        return 0;
    return s->prebuilt || (strcmp(s->o->net.input, "-") != 0 &&
                           stat(s->o->net.input, &st) == 0 && S_ISREG(st.st_mode));
}

/* Waits for the listener to grant this round a slot (cli_server_pool.h),
 * keeping the client alive meanwhile; the identity is the certificate's key
 * (none without TLS).  Returns: 0 or -1 (r->err; r->no_slot). */
static int round_slot(server_round *r)
{
    const char *id = strstr(r->c->peer_id, "key sha256:");
    double t = psi_app_now_ms();
    int rc;

    if (r->s->ctl_fd < 0)
        return 0;
    rc = psi_cli_pool_wait(r->s->ctl_fd, r->c, id != NULL ? id : r->c->peer_id,
                           r->c->deadline_ms, r->err, sizeof r->err);
    r->waited_ms = psi_app_now_ms() - t;
    if (rc == 0)
        return 0;
    // Refused (or the server ending): not a round.  The peer leaving or the
    // deadline while it waited: a failed round, as after any agreed HELLO.
    r->no_slot = rc > 0;
    if (rc > 0)
        psi_net_send_error(r->c, r->err);
    return -1;
}

/* Ends the round's process when its client has gone while the server
 * computes (c->gone, called from a computation's progress at the next
 * chunk): one log line, then exit, so no more work is done for nobody.
 * The round's temporary files have no name, so none is left behind. */
static void round_gone(void *arg)
{
    server_round *r = arg;
    psi_cli_server *s = r->s;
    // A spilled round's steps keep their own progress.
    const char *step = r->sp != NULL ? r->sp->off.prog.step : s->prog.step;

    psi_app_progress_note(&s->prog, "error: round with %s (%llu client values, suite %s) "
                          "stopped after %.1f s: the client closed the connection while the "
                          "server was %s", r->who, (unsigned long long)r->hello.n,
                          psi_app_suite_label(r->self.suite),
                          (psi_app_now_ms() - r->t0) / 1000.0,
                          step != NULL ? step : "computing");
    _exit(PSI_CLI_ROUND_FAILED);
}

/* The round's work in memory, in the order that spends nothing on a client
 * before its request has arrived and been checked: the request, the
 * response, the setup (a raw one masked at start is borrowed), the payload
 * table, then the frames.  Returns: 0 or -1 (told). */
static int round_in_memory(server_round *r)
{
    uint8_t *req = NULL;
    size_t req_len = 0;
    int rc = round_request(r, &req, &req_len);

    if (rc == 0)
        rc = round_shards(r);
    if (rc == 0)
        rc = round_response(r, req, req_len);
    free(req);
    if (rc == 0)
        rc = round_setup(r);
    if (rc == 0)
        rc = round_payloads(r);
    return rc == 0 ? round_send(r) : rc;
}

/* The round after TLS.  Returns: 0 or -1 (r->err). */
static int round_run(server_round *r)
{
    psi_cli_server *s = r->s;
    uint8_t *done = NULL;
    size_t done_len = 0;
    int rc;

    // Until the HELLO is accepted: one deadline, and no keepalives.
    r->c->no_keepalive = 1;
    if (round_handshake(r) != 0)
        return -1;
    // From now on the round's deadline, which keepalives do not move.
    r->c->deadline_ms = r->t0 + (s->o->round_timeout_ms > 0
                                     ? s->o->round_timeout_ms
                                     : 600000.0 + (double)r->hello.n + (double)r->self.n);
    r->c->no_keepalive = 0;
    if (round_slot(r) != 0)
        return -1;
    psi_net_progress_attach(&s->prog, r->c);
    r->c->gone = round_gone;
    r->c->gone_arg = r;
    // Nothing is masked for the client before its request: a gcs or Bloom
    // setup is sized by its count, a raw one was masked at start when the
    // key is fixed, else after the request.
    int spills = round_spills(r);
    if (spills && r->self.share_result) {
        snprintf(r->err, sizeof r->err, "the client's %llu values are past this server's "
                 "--memory, and a shared result is not built for rounds past the budget",
                 (unsigned long long)r->hello.n);
        rc = round_fail(r, 1, r->err);
    } else if (spills) {
        rc = round_spill_run(r);
    } else {
        rc = round_in_memory(r);
    }
    if (rc == 0 && r->self.share_result)
        rc = round_shared(r);
    if (rc == 0 && (rc = psi_net_recv(r->c, PSI_NET_FRAME_DONE, 0, &done, &done_len, NULL,
                                      NULL)) != 0)
        rc = round_fail_net(r, rc);
    if (rc == 0 && r->self.share_result &&
        psi_app_output_commit(&r->out, r->err, sizeof r->err) != 0)
        rc = -1;
    psi_net_progress_detach(&s->prog);
    r->c->gone = NULL;
    free(done);
    return rc;
}

int psi_cli_server_round(psi_cli_server *s, psi_net_conn *c)
{
    server_round r;
    double t0 = psi_app_now_ms();
    int rc = 0;

    memset(&r, 0, sizeof r);
    r.s = s;
    r.c = c;
    r.t0 = t0;
    c->deadline_ms = t0 + s->o->net.handshake_timeout_ms;
    snprintf(r.who, sizeof r.who, "%s (no TLS)", c->peer);
    if (s->tls != NULL) {
        // A failure here is TLS's: the log says so, never "no TLS".
        rc = psi_net_tls_handshake(c, s->tls, NULL, c->deadline_ms);
        if (rc != 0)
            snprintf(r.err, sizeof r.err, "%s", c->err);
        snprintf(r.who, sizeof r.who, "%s (%s)", c->peer,
                 rc != 0 ? "TLS handshake failed" : c->peer_id);
    }
    if (rc == 0)
        rc = round_run(&r);
    if (rc == 0) {
        psi_app_progress_note(&s->prog, "answered %s: %llu client values against %s, %s "
                              "setup, suite %s, %s%s, in %.1f s; peak memory %.1f MiB", r.who,
                              (unsigned long long)r.hello.n, s->what,
                              psi_app_structure_name(r.self.structure),
                              psi_app_suite_label(r.self.suite),
                              r.self.association ? "intersection and association table "
                                                   "revealed"
                              : r.self.reveal ? "intersection revealed" : "size only",
                              r.self.payloads ? ", payload table sent" : "",
                              (psi_app_now_ms() - t0) / 1000.0, psi_app_peak_mib());
        if (r.waited_ms >= 500)
            psi_app_progress_note(&s->prog, "the round with %s waited %.1f s for a slot",
                                  r.who, r.waited_ms / 1000.0);
        if (r.self.share_result)
            psi_app_progress_note(&s->prog, "%zu matched rows of this side, as the client "
                                  "reported them, written to %s", r.shared, s->o->output);
    } else if (r.no_slot) {
        psi_app_progress_note(&s->prog, "round with %s (%llu client values) not run, after "
                              "%.1f s: %s", r.who, (unsigned long long)r.hello.n,
                              (psi_app_now_ms() - t0) / 1000.0, r.err);
    } else if (r.agreed) {
        psi_app_progress_note(&s->prog, "error: round with %s (%llu client values, suite %s) "
                              "failed after %.1f s: %s", r.who,
                              (unsigned long long)r.hello.n,
                              psi_app_suite_label(r.self.suite),
                              (psi_app_now_ms() - t0) / 1000.0, r.err);
    } else {
        psi_app_progress_note(&s->prog, "connection from %s ended before a handshake "
                              "(%.1f s): %s", r.who, (psi_app_now_ms() - t0) / 1000.0,
                              r.err);
    }
    psi_net_close(c);
    psi_app_output_abort(&r.out);
    if (r.setup != s->raw_setup) // else borrowed from the start
        free(r.setup);
    if (r.perm != s->raw_perm)
        free(r.perm);
    free(r.resp);
    free(r.table);
    if (r.has_pf)
        psi_app_payfile_close(&r.pf);
    if (r.sp != NULL)
        psi_cli_round_spill_free(r.sp);
    free(r.sp);
    psi_shards_free(r.g);
    return rc == 0 ? PSI_CLI_ROUND_OK : r.no_slot ? PSI_CLI_ROUND_NO_SLOT
                                  : r.agreed ? PSI_CLI_ROUND_FAILED : PSI_CLI_ROUND_NO_CLIENT;
}
