/*
 * The handshake of the network protocol (PROTOCOL.md §15).
 *
 * Protocol version 2.  The client's HELLO and the server's ACCEPT are
 * 37-byte records: "SHARDPSI", version (u16), flags (u8: 1 reveal, 2
 * association, 4 share the result with the server, 8 payloads), setup structure (u8: 0 raw, 1 GCS, 2 Bloom; 255 in a HELLO:
 * the server's choice), fpr (u64, the IEEE 754 bits of a double; 0 in a
 * HELLO: the server's choice), the sender's set size (u64), the suite (u8,
 * psi_suite), and setup_clients (u64: 0 in a HELLO; in an ACCEPT the
 * num_client_inputs the server's setup is made for); integers big-endian.
 * Version 1 (28 or 29 bytes, the setup sent before the request) is
 * recognised only to be refused with a message naming both versions.
 */
#ifndef PSI_NET_SESSION_H
#define PSI_NET_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "net.h"
#include "psi.h"

/** The version of the network protocol this build speaks. */
#define PSI_NET_PROTOCOL_VERSION 2
/** The length of a HELLO or ACCEPT. */
#define PSI_NET_HANDSHAKE_BYTES 37
/** HELLO structure value: the client takes the server's. */
#define PSI_NET_STRUCTURE_ANY 255

/* Defaults of the options. */
#define PSI_NET_DEFAULT_TIMEOUT_S 120
#define PSI_NET_DEFAULT_MAX_PEER 100000000u
/** From the connection to an accepted HELLO (TLS included); keepalives
 *  do not extend it. */
#define PSI_NET_DEFAULT_HANDSHAKE_TIMEOUT_S 10

/** A HELLO or ACCEPT. */
typedef struct psi_net_handshake {
    unsigned version;
    int reveal;          // the intersection (rows, indices) is revealed
    int association;     // the association table is sent (needs reveal, raw)
    int share_result;    // the client sends the server its matched setup
                         // positions (both sides must ask; needs reveal, raw)
    int payloads;        // the server sends its payload table (needs reveal)
    int structure;       // psi_structure, or PSI_NET_STRUCTURE_ANY in a HELLO
    double fpr;          // 0 in a HELLO: any
    uint64_t n;          // the sender's number of values
    int suite;           // psi_suite
    uint64_t setup_clients; // ACCEPT: the setup's num_client_inputs (the
                         // client's n, or a prebuilt setup's N); HELLO: 0
} psi_net_handshake;

/** Encodes h into out.  Returns: PSI_NET_HANDSHAKE_BYTES. */
size_t psi_net_handshake_encode(uint8_t out[PSI_NET_HANDSHAKE_BYTES],
                                const psi_net_handshake *h);

/** Decodes a handshake payload; `from` names the peer in messages ("the
 *  client").  A version other than ours is decoded (h->version set) and
 *  refused with a message naming both versions, whatever the length; a
 *  suite this build does not know is refused with its number.  Returns: 0, or -1 with a message in
 *  err. */
int psi_net_handshake_decode(psi_net_handshake *h, const uint8_t *p, size_t len,
                             const char *from, char *err, size_t err_len);

/** The server's check of a client's HELLO against its own settings (`self`,
 *  with the server's structure, fpr, n and setup_clients, which for a setup
 *  made per round must be hello->n, and its flags: payloads when it has
 *  payload columns, share_result when it was started with it, which the
 *  client's must then equal) and limits.  Returns: 0, or -1
 *  with a message in err saying what disagreed and how to fix it. */
int psi_net_session_check_hello(const psi_net_handshake *hello,
                                const psi_net_handshake *self, uint64_t max_peer,
                                char *err, size_t err_len);

/** A setup built before the round (`shardpsi server --setup`, PROTOCOL.md
 *  §15.5): the server sends these bytes instead of masking its input. */
typedef struct psi_net_prebuilt {
    int structure;          // the file's (psi_setup_structure)
    size_t len;             // the file's length
    uint64_t num_client;    // gcs, bloom: --num-client-inputs, the most client
                            // values the setup was made for (psi setup's)
    uint64_t n;             // the set size the ACCEPT announces: raw, the
                            // element count; gcs, bloom: that of
                            // psi_net_session_prebuilt_size
} psi_net_prebuilt;

/** For a prebuilt gcs or Bloom setup (bytes, len) made with self's
 *  structure, fpr and suite for num_client client values: the smallest set
 *  size n for which psi_setup_check accepts it, the n a client checks it
 *  against (PROTOCOL.md §15.5).  Returns: 0, or -1 when no size up to the
 *  largest a handshake can carry is accepted (the file is not a setup of
 *  these parameters).  Out: *n. */
int psi_net_session_prebuilt_size(uint64_t *n, const psi_net_handshake *self,
                                  uint64_t num_client, const uint8_t *bytes, size_t len);

/** The server's check of a HELLO when it serves a prebuilt setup: a gcs or
 *  Bloom setup refuses clients of more than pb->num_client values (before
 *  the other checks, when the suites agree); self->n becomes pb->n and
 *  self->setup_clients pb->num_client (raw: hello->n); then
 *  psi_net_session_check_hello.  Returns: 0, or -1 with a message in err.
 *  In-Out: self->n, self->setup_clients. */
int psi_net_session_check_prebuilt(const psi_net_handshake *hello, psi_net_handshake *self,
                                   const psi_net_prebuilt *pb, uint64_t max_peer,
                                   char *err, size_t err_len);

/** The client's check of the server's ACCEPT against its HELLO: the flags,
 *  suite, structure and fpr asked for; n at most max_peer; setup_clients at
 *  least hello->n (exactly, for raw) and at most the larger of max_peer and
 *  hello->n, as it sizes the setup the client accepts.  Returns: 0 or -1
 *  with a message. */
int psi_net_session_check_accept(const psi_net_handshake *accept,
                                 const psi_net_handshake *hello, uint64_t max_peer,
                                 char *err, size_t err_len);

/** The setup parameters of an agreed handshake: its structure and fpr, and
 *  num_client_inputs accept->setup_clients (at least 1). */
void psi_net_session_params(psi_setup_params *p, const psi_net_handshake *accept);

/** Writes the message of a failed transfer on connection c (code rc): an
 *  ERROR frame's text as "the <peer> (HOST:PORT) ended the round: <text>",
 *  anything else as the connection's own message. */
void psi_net_session_error(char *out, size_t cap, const psi_net_conn *c, int rc,
                               const char *peer);

#endif /* PSI_NET_SESSION_H */
