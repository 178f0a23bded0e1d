/* The handshake of the network protocol and its checks; see net_session.h. */
#include "net_session.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "app_util.h"
#include "psi_shard.h"

static const char session_magic[8] = {'S', 'H', 'A', 'R', 'D', 'P', 'S', 'I'};

size_t psi_net_handshake_encode(uint8_t out[PSI_NET_HANDSHAKE_BYTES],
                                const psi_net_handshake *h)
{
    uint64_t fpr_bits;

    memcpy(&fpr_bits, &h->fpr, sizeof fpr_bits);
    memcpy(out, session_magic, 8);
    psi_app_store_be(out + 8, h->version, 2);
    out[10] = (uint8_t)((h->reveal ? 1 : 0) | (h->association ? 2 : 0) |
                        (h->share_result ? 4 : 0) | (h->payloads ? 8 : 0));
    out[11] = (uint8_t)h->structure;
    psi_app_store_be(out + 12, fpr_bits, 8);
    psi_app_store_be(out + 20, h->n, 8);
    out[28] = (uint8_t)h->suite;
    psi_app_store_be(out + 29, h->setup_clients, 8);
    return PSI_NET_HANDSHAKE_BYTES;
}

int psi_net_handshake_decode(psi_net_handshake *h, const uint8_t *p, size_t len,
                             const char *from, char *err, size_t err_len)
{
    uint64_t fpr_bits;

    memset(h, 0, sizeof *h);
    if (len < 10 || memcmp(p, session_magic, 8) != 0) {
        snprintf(err, err_len, "%s does not speak the shardpsi network protocol "
                 "(bad handshake)", from);
        return -1;
    }
    h->version = (unsigned)psi_app_load_be(p + 8, 2);
    if (h->version != PSI_NET_PROTOCOL_VERSION) {
        snprintf(err, err_len, "protocol version: %s speaks version %u, this side version "
                 "%u (%s)", from, h->version, PSI_NET_PROTOCOL_VERSION,
                 h->version < PSI_NET_PROTOCOL_VERSION
                     ? "upgrade the other side: this side sends the setup only after "
                       "the client's request"
                     : "upgrade this side");
        return -1;
    }
    if (len != PSI_NET_HANDSHAKE_BYTES || (p[10] & ~15u) != 0) {
        snprintf(err, err_len, "%s sent a malformed handshake (%zu bytes, flags %u)",
                 from, len, len > 10 ? p[10] : 0u);
        return -1;
    }
    h->reveal = p[10] & 1;
    h->association = (p[10] >> 1) & 1;
    h->share_result = (p[10] >> 2) & 1;
    h->payloads = (p[10] >> 3) & 1;
    h->structure = p[11];
    fpr_bits = psi_app_load_be(p + 12, 8);
    memcpy(&h->fpr, &fpr_bits, sizeof h->fpr);
    h->n = psi_app_load_be(p + 20, 8);
    h->suite = p[28];
    h->setup_clients = psi_app_load_be(p + 29, 8);
    if (psi_suite_name(h->suite) == NULL) {
        snprintf(err, err_len, "suite: %s uses suite number %d, unknown to this side "
                 "(which knows " PSI_APP_SUITE_NAMES ")", from, h->suite);
        return -1;
    }
    if (h->structure > PSI_STRUCTURE_BLOOM_FILTER && h->structure != PSI_NET_STRUCTURE_ANY) {
        snprintf(err, err_len, "%s sent an unknown setup type %d", from, h->structure);
        return -1;
    }
    if (!isfinite(h->fpr) || h->fpr < 0 || h->fpr >= 1) {
        snprintf(err, err_len, "%s sent an fpr outside [0, 1)", from);
        return -1;
    }
    return 0;
}

void psi_net_session_params(psi_setup_params *p, const psi_net_handshake *accept)
{
    uint64_t m = accept->setup_clients;

    memset(p, 0, sizeof *p);
    p->structure = (psi_structure)accept->structure;
    p->fpr = accept->fpr;
    p->num_client_inputs = m > 0 ? (int64_t)(m > INT64_MAX ? INT64_MAX : m) : 1;
}

/* The client's request for the server's setup parameters. */
static int session_check_params(const psi_net_handshake *hello,
                                const psi_net_handshake *self, char *err, size_t err_len)
{
    psi_setup_params p;
    size_t bound;
    int rc;

    if (hello->structure != PSI_NET_STRUCTURE_ANY && hello->structure != self->structure) {
        snprintf(err, err_len, "setup type: the client asks for %s, the server uses %s",
                 psi_app_structure_name(hello->structure),
                 psi_app_structure_name(self->structure));
        return -1;
    }
    if (self->structure != PSI_STRUCTURE_RAW && hello->fpr != 0 && hello->fpr != self->fpr) {
        snprintf(err, err_len, "fpr: the client asks for %g, the server uses %g",
                 hello->fpr, self->fpr);
        return -1;
    }
    psi_net_session_params(&p, self);
    rc = psi_setup_bound(&bound, self->suite, &p, (size_t)self->n);
    if (rc == PSI_E_PARAM_OVERFLOW || rc == PSI_E_FPR) {
        snprintf(err, err_len, "fpr %g is too small for a %s setup of %llu values "
                 "queried with %llu: %s (raise --fpr on the server, or use "
                 "--structure raw)", self->fpr, psi_app_structure_name(self->structure),
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

int psi_net_session_check_hello(const psi_net_handshake *hello,
                                const psi_net_handshake *self, uint64_t max_peer,
                                char *err, size_t err_len)
{
    if (hello->suite != self->suite) {
        snprintf(err, err_len, "suite: the client uses %s, the server uses %s (run both "
                 "with the same --suite)", psi_app_suite_label(hello->suite),
                 psi_app_suite_label(self->suite));
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
    if (hello->payloads && !self->payloads) {
        snprintf(err, err_len, "the client asks for the server's payload columns, and this "
                 "server has none: start the server with --payload-columns");
        return -1;
    }
    if ((hello->payloads || hello->share_result) && !hello->reveal) {
        snprintf(err, err_len, "the client asks for %s without the intersection",
                 hello->payloads ? "payloads" : "a shared result");
        return -1;
    }
    if (hello->share_result != self->share_result) {
        snprintf(err, err_len, hello->share_result
                 ? "the client asks to share the result with the server, and this server "
                   "does not take it: both sides must give --share-result"
                 : "this server runs only with clients that share the result "
                   "(--share-result): both sides must give it");
        return -1;
    }
    if (hello->share_result && self->structure != PSI_STRUCTURE_RAW) {
        snprintf(err, err_len, "a shared result needs the raw setup, and this server uses %s",
                 psi_app_structure_name(self->structure));
        return -1;
    }
    if (hello->n > max_peer || hello->n > SIZE_MAX / PSI_ELEMENT_WIRE_BYTES) {
        snprintf(err, err_len, "the client announces %llu values, more than this "
                 "server accepts (--max-peer-values %llu)",
                 (unsigned long long)hello->n, (unsigned long long)max_peer);
        return -1;
    }
    if (hello->setup_clients != 0) {
        snprintf(err, err_len, "the client sent a HELLO with setup_clients %llu (must be 0)",
                 (unsigned long long)hello->setup_clients);
        return -1;
    }
    return session_check_params(hello, self, err, err_len);
}

/* Whether psi_setup_check accepts the prebuilt setup for n server values. */
static int session_accepts(const psi_net_handshake *self, const psi_setup_params *p,
                           uint64_t n, const uint8_t *bytes, size_t len)
{
    return psi_setup_check(self->suite, p, n, bytes, len) == PSI_OK;
}

int psi_net_session_prebuilt_size(uint64_t *n, const psi_net_handshake *self,
                                  uint64_t num_client, const uint8_t *bytes, size_t len)
{
    // Sizes a handshake can carry and the peer's frame bounds can take.
    const uint64_t limit = SIZE_MAX / PSI_ELEMENT_WIRE_BYTES;
    psi_net_handshake h = *self;
    psi_setup_params p;
    uint64_t lo = 0, hi = 1;

    h.setup_clients = num_client;
    psi_net_session_params(&p, &h);
    *n = 0;
    if (session_accepts(self, &p, 0, bytes, len))
        return 0;
    // lo is refused, hi accepted: doubling, then halving the gap (the check
    // is monotonic in n for gcs and Bloom: "at most n values").
    while (!session_accepts(self, &p, hi, bytes, len)) {
        if (hi > limit / 2)
            return -1;
        lo = hi;
        hi *= 2;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (session_accepts(self, &p, mid, bytes, len))
            hi = mid;
        else
            lo = mid;
    }
    *n = hi;
    return 0;
}

int psi_net_session_check_prebuilt(const psi_net_handshake *hello, psi_net_handshake *self,
                                   const psi_net_prebuilt *pb, uint64_t max_peer,
                                   char *err, size_t err_len)
{
    const char *st = psi_app_structure_name(pb->structure);

    self->n = pb->n;
    self->setup_clients = hello->n;
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
        self->setup_clients = pb->num_client;
    }
    return psi_net_session_check_hello(hello, self, max_peer, err, err_len);
}

int psi_net_session_check_accept(const psi_net_handshake *accept,
                                 const psi_net_handshake *hello, uint64_t max_peer,
                                 char *err, size_t err_len)
{
    if (accept->suite != hello->suite) {
        snprintf(err, err_len, "suite: the client uses %s, the server answered %s (run "
                 "both with the same --suite)", psi_app_suite_label(hello->suite),
                 psi_app_suite_label(accept->suite));
        return -1;
    }
    if (accept->reveal != hello->reveal || accept->association != hello->association ||
        accept->share_result != hello->share_result || accept->payloads != hello->payloads) {
        snprintf(err, err_len, "the server answered with reveal %d, association %d, shared "
                 "result %d and payloads %d, the client asked for %d, %d, %d and %d",
                 accept->reveal, accept->association, accept->share_result,
                 accept->payloads, hello->reveal, hello->association, hello->share_result,
                 hello->payloads);
        return -1;
    }
    if (accept->structure == PSI_NET_STRUCTURE_ANY ||
        (hello->structure != PSI_NET_STRUCTURE_ANY && accept->structure != hello->structure)) {
        snprintf(err, err_len, "setup type: the client asked for %s, the server answered %s",
                 psi_app_structure_name(hello->structure),
                 psi_app_structure_name(accept->structure));
        return -1;
    }
    if (accept->structure != PSI_STRUCTURE_RAW &&
        (accept->fpr <= 0 || (hello->fpr != 0 && accept->fpr != hello->fpr))) {
        snprintf(err, err_len, "fpr: the client asked for %g, the server answered %g",
                 hello->fpr, accept->fpr);
        return -1;
    }
    if ((accept->association || accept->share_result) &&
        accept->structure != PSI_STRUCTURE_RAW) {
        snprintf(err, err_len, "the server offers %s with a %s setup",
                 accept->association ? "an association table" : "a shared result",
                 psi_app_structure_name(accept->structure));
        return -1;
    }
    if (accept->n > max_peer || accept->n > SIZE_MAX / PSI_ELEMENT_WIRE_BYTES) {
        snprintf(err, err_len, "the server announces %llu values, more than this client "
                 "accepts (--max-peer-values %llu)", (unsigned long long)accept->n,
                 (unsigned long long)max_peer);
        return -1;
    }
    if (accept->setup_clients < hello->n ||
        (accept->structure == PSI_STRUCTURE_RAW && accept->setup_clients != hello->n) ||
        accept->setup_clients > (max_peer > hello->n ? max_peer : hello->n)) {
        snprintf(err, err_len, "the server's setup is made for %llu client values, and this "
                 "client has %llu (and accepts at most %llu)",
                 (unsigned long long)accept->setup_clients, (unsigned long long)hello->n,
                 (unsigned long long)(max_peer > hello->n ? max_peer : hello->n));
        return -1;
    }
    return 0;
}

void psi_net_session_error(char *out, size_t cap, const psi_net_conn *c, int rc,
                               const char *peer)
{
    static const char prefix[] = "the peer reported: ";
    const char *text = c->err;

    if (rc != PSI_NET_EPEER) {
        snprintf(out, cap, "%s", text);
        return;
    }
    if (strncmp(text, prefix, sizeof prefix - 1) == 0)
        text += sizeof prefix - 1;
    snprintf(out, cap, "the %s (%s) ended the round: %s", peer, c->peer, text);
}
