/* The handshake of the network protocol and its checks; see net_session.h. */
#include "net_session.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "app_util.h"
#include "psi_shard.h"

static const char session_magic[8] = {'S', 'H', 'A', 'R', 'D', 'P', 'S', 'I'};

size_t psi_net_handshake_encode(uint8_t out[PSI_NET_HANDSHAKE_MAX_BYTES],
                                const psi_net_handshake *h)
{
    uint64_t fpr_bits;

    memcpy(&fpr_bits, &h->fpr, sizeof fpr_bits);
    memcpy(out, session_magic, 8);
    psi_app_store_be(out + 8, h->version, 2);
    out[10] = (uint8_t)((h->reveal ? 1 : 0) | (h->association ? 2 : 0));
    out[11] = (uint8_t)h->structure;
    psi_app_store_be(out + 12, fpr_bits, 8);
    psi_app_store_be(out + 20, h->n, 8);
    if (h->suite == PSI_SUITE_OPENMINED_P256)
        return PSI_NET_HANDSHAKE_BYTES;
    out[PSI_NET_HANDSHAKE_BYTES] = (uint8_t)h->suite;
    return PSI_NET_HANDSHAKE_MAX_BYTES;
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
        snprintf(err, err_len, "protocol version: %s speaks version %u, this side %u",
                 from, h->version, PSI_NET_PROTOCOL_VERSION);
        return -1;
    }
    if ((len != PSI_NET_HANDSHAKE_BYTES && len != PSI_NET_HANDSHAKE_MAX_BYTES) ||
        (p[10] & ~3u) != 0) {
        snprintf(err, err_len, "%s sent a malformed handshake (%zu bytes, flags %u)",
                 from, len, len > 10 ? p[10] : 0u);
        return -1;
    }
    h->reveal = p[10] & 1;
    h->association = (p[10] >> 1) & 1;
    h->structure = p[11];
    fpr_bits = psi_app_load_be(p + 12, 8);
    memcpy(&h->fpr, &fpr_bits, sizeof h->fpr);
    h->n = psi_app_load_be(p + 20, 8);
    h->suite = len > PSI_NET_HANDSHAKE_BYTES ? p[PSI_NET_HANDSHAKE_BYTES]
                                             : PSI_SUITE_OPENMINED_P256;
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

void psi_net_session_params(psi_setup_params *p, const psi_net_handshake *accept,
                            uint64_t client_n)
{
    memset(p, 0, sizeof *p);
    p->structure = (psi_structure)accept->structure;
    p->fpr = accept->fpr;
    p->num_client_inputs = client_n > 0 ? (int64_t)(client_n > INT64_MAX ? INT64_MAX
                                                                          : client_n) : 1;
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
    psi_net_session_params(&p, self, hello->n);
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
static int session_covers(const psi_net_handshake *self, uint64_t client_n, uint64_t n,
                          size_t len)
{
    psi_setup_params p;
    size_t bound = 0;

    psi_net_session_params(&p, self, client_n);
    return psi_setup_bound(&bound, self->suite, &p, (size_t)n) == PSI_OK &&
           bound >= len;
}

int psi_net_session_prebuilt_size(uint64_t *n, const psi_net_handshake *self,
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

int psi_net_session_check_prebuilt(const psi_net_handshake *hello, psi_net_handshake *self,
                                   const psi_net_prebuilt *pb, uint64_t max_peer,
                                   char *err, size_t err_len)
{
    const char *st = psi_app_structure_name(pb->structure);

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
            psi_net_session_prebuilt_size(&self->n, self, hello->n, pb->len) != 0) {
            snprintf(err, err_len, "the %s setup file (%zu bytes) is larger than any %s "
                     "setup of fpr %g can be: were --fpr and --num-client-inputs those "
                     "of shardpsi setup?", st, pb->len, st, self->fpr);
            return -1;
        }
    }
    if (psi_net_session_check_hello(hello, self, max_peer, err, err_len) != 0)
        return -1;
    if (!session_covers(self, hello->n, self->n, pb->len)) {
        snprintf(err, err_len, "the %s setup file (%zu bytes) is larger than the setup "
                 "of %llu values the handshake announces", st, pb->len,
                 (unsigned long long)self->n);
        return -1;
    }
    return 0;
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
    if (accept->reveal != hello->reveal || accept->association != hello->association) {
        snprintf(err, err_len, "the server answered with reveal %d and association %d, "
                 "the client asked for %d and %d", accept->reveal, accept->association,
                 hello->reveal, hello->association);
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
    if (accept->association && accept->structure != PSI_STRUCTURE_RAW) {
        snprintf(err, err_len, "the server offers an association table with a %s setup",
                 psi_app_structure_name(accept->structure));
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
