/* Fuzzes the handshake of PROTOCOL.md §15.2 (net/net_session.c) through
 * net_session.h alone, so it follows that format as it changes.  Input:
 * byte 0 cuts the rest into two records A and B (A's length is byte 0
 * modulo the rest's length plus one); byte 1 (part of A's record as well)
 * picks max_peer.  Contracts: a record that decodes is
 * PSI_NET_HANDSHAKE_BYTES long and re-encodes to exactly its bytes; a
 * refusal has a message; a HELLO A that passes psi_net_session_check_hello
 * against B has n <= max_peer, setup_clients 0 and B's suite; an ACCEPT B
 * that passes psi_net_session_check_accept for the HELLO A has n <=
 * max_peer, a concrete structure, A's suite and a setup_clients of at
 * least A's n and at most max(max_peer, A's n); when
 * psi_net_session_check_prebuilt accepts, the ACCEPT it makes announces the
 * file's n and, for gcs and Bloom, its client count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_session.h"

static void ses_fail(const char *what)
{
    fprintf(stderr, "fuzz_session: %s\n", what);
    abort();
}

/* Decodes a record and checks the round trip.  Returns: whether it
 * decoded. */
static int decode(psi_net_handshake *h, const uint8_t *p, size_t len)
{
    char err[512];
    uint8_t again[PSI_NET_HANDSHAKE_BYTES];
    err[0] = '\0';
    memset(h, 0, sizeof *h);
    if (psi_net_handshake_decode(h, p, len, "the peer", err, sizeof err) != 0) {
        if (err[0] == '\0')
            ses_fail("decode refused without a message");
        return 0;
    }
    if (len != PSI_NET_HANDSHAKE_BYTES ||
        psi_net_handshake_encode(again, h) != PSI_NET_HANDSHAKE_BYTES ||
        memcmp(again, p, len) != 0)
        ses_fail("a decoded handshake does not re-encode to its bytes");
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint64_t peers[] = {0, 1, 100, PSI_NET_DEFAULT_MAX_PEER, UINT64_MAX};
    if (size < 2)
        return 0;
    const uint8_t *rest = data + 1;
    size_t rest_len = size - 1, a_len = data[0] % (rest_len + 1);
    uint64_t max_peer = peers[data[1] % (sizeof peers / sizeof peers[0])];
    psi_net_handshake a, b;
    int have_a = decode(&a, rest, a_len), have_b = decode(&b, rest + a_len, rest_len - a_len);
    char err[512];
    if (!have_a || !have_b)
        return 0;
    err[0] = '\0';
    if (psi_net_session_check_hello(&a, &b, max_peer, err, sizeof err) == 0) {
        if (a.n > max_peer)
            ses_fail("check_hello passed a HELLO of more than max_peer values");
        if (a.suite != b.suite)
            ses_fail("check_hello passed a HELLO of another suite");
        if (a.setup_clients != 0)
            ses_fail("check_hello passed a HELLO with setup_clients");
    } else if (err[0] == '\0') {
        ses_fail("check_hello refused without a message");
    }
    err[0] = '\0';
    if (psi_net_session_check_accept(&b, &a, max_peer, err, sizeof err) == 0) {
        if (b.n > max_peer)
            ses_fail("check_accept passed an ACCEPT of more than max_peer values");
        if (b.structure == PSI_NET_STRUCTURE_ANY)
            ses_fail("check_accept passed an ACCEPT without a structure");
        if (a.suite != b.suite)
            ses_fail("check_accept passed an ACCEPT of another suite");
        if (b.setup_clients < a.n || b.setup_clients > (max_peer > a.n ? max_peer : a.n))
            ses_fail("check_accept passed a setup for another client count");
        psi_setup_params p;
        psi_net_session_params(&p, &b);
        if (p.num_client_inputs < 1)
            ses_fail("session params with num_client_inputs < 1");
    } else if (err[0] == '\0') {
        ses_fail("check_accept refused without a message");
    }
    /* B as the server's own settings with a prebuilt file of (byte 1 * 7)
     * bytes announcing B's n, for at most byte 1 client values */
    if (b.structure == PSI_NET_STRUCTURE_ANY)
        return 0;
    psi_net_prebuilt pb = {b.structure, (size_t)data[1] * 7 + 2, data[1], b.n};
    psi_net_handshake self = b;
    err[0] = '\0';
    if (psi_net_session_check_prebuilt(&a, &self, &pb, max_peer, err, sizeof err) == 0) {
        if (a.n > max_peer || (b.structure != PSI_STRUCTURE_RAW && a.n > pb.num_client))
            ses_fail("check_prebuilt passed a client beyond its limits");
        if (self.n != pb.n ||
            self.setup_clients != (b.structure == PSI_STRUCTURE_RAW ? a.n : pb.num_client))
            ses_fail("check_prebuilt announced another n or client count than the file's");
    } else if (err[0] == '\0') {
        ses_fail("check_prebuilt refused without a message");
    }
    return 0;
}
