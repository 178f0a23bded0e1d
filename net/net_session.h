/*
 * The handshake of the network protocol (PROTOCOL.md §15).
 *
 * The client's HELLO and the server's ACCEPT are 28-byte records:
 * "SHARDPSI", version (u16), flags (u8: 1 reveal, 2 association), setup
 * structure (u8: 0 raw, 1 GCS, 2 Bloom; 255 in a HELLO: the server's
 * choice), fpr (u64, the IEEE 754 bits of a double; 0 in a HELLO: the
 * server's choice), the sender's set size (u64); integers big-endian.  A
 * 29th byte, the suite (psi_suite), follows when it is not
 * openmined-p256; a 28-byte record means openmined-p256, so a default run
 * speaks exactly the bytes of builds that predate the suites.
 */
#ifndef PSI_NET_SESSION_H
#define PSI_NET_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "net.h"
#include "psi.h"

/** The version of the network protocol this build speaks. */
#define PSI_NET_PROTOCOL_VERSION 1
/** A handshake of the openmined-p256 suite; another suite adds one byte. */
#define PSI_NET_HANDSHAKE_BYTES 28
#define PSI_NET_HANDSHAKE_MAX_BYTES 29
/** HELLO structure value: the client takes the server's. */
#define PSI_NET_STRUCTURE_ANY 255

/* Defaults of the options. */
#define PSI_NET_DEFAULT_TIMEOUT_S 120
#define PSI_NET_DEFAULT_MAX_PEER 100000000u

/** A HELLO or ACCEPT. */
typedef struct psi_net_handshake {
    unsigned version;
    int reveal;          // the intersection (rows, indices) is revealed
    int association;     // the association table is sent (needs reveal, raw)
    int structure;       // psi_structure, or PSI_NET_STRUCTURE_ANY in a HELLO
    double fpr;          // 0 in a HELLO: any
    uint64_t n;          // the sender's number of values
    int suite;           // psi_suite; 0 (openmined-p256) in a 28-byte record
} psi_net_handshake;

/** Encodes h into out: PSI_NET_HANDSHAKE_BYTES for the openmined-p256
 *  suite, one byte more (the suite) for another.  Returns: the length. */
size_t psi_net_handshake_encode(uint8_t out[PSI_NET_HANDSHAKE_MAX_BYTES],
                                const psi_net_handshake *h);

/** Decodes a handshake payload; `from` names the peer in messages ("the
 *  client").  A version other than ours is decoded (h->version set) and
 *  refused with a message naming both versions; a suite this build does not
 *  know is refused with its number.  Returns: 0, or -1 with a message in
 *  err. */
int psi_net_handshake_decode(psi_net_handshake *h, const uint8_t *p, size_t len,
                             const char *from, char *err, size_t err_len);

/** The server's check of a client's HELLO against its own settings (`self`,
 *  with the server's structure, fpr and n) and limits.  Returns: 0, or -1
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
} psi_net_prebuilt;

/** For a prebuilt gcs or Bloom setup of `len` bytes whose fpr is self->fpr:
 *  the smallest set size n for which the setup bound (§15.1) of a client of
 *  client_n values, with self's structure, fpr and suite, is at least len
 *  (the bound the client puts on the SETUP frame).  Returns: 0, or -1 when
 *  no size up to the largest a handshake can carry covers it.  Out: *n. */
int psi_net_session_prebuilt_size(uint64_t *n, const psi_net_handshake *self,
                                  uint64_t client_n, size_t len);

/** The server's check of a HELLO when it serves a prebuilt setup: a gcs or
 *  Bloom setup refuses clients of more than pb->num_client values (before
 *  the other checks, when the suites agree) and announces in self->n the
 *  size of psi_net_session_prebuilt_size for this client (a raw setup: the
 *  caller's self->n, its element count); then psi_net_session_check_hello,
 *  and a last check that the client's bound admits the file.  Returns: 0,
 *  or -1 with a message in err.  In-Out: self->n. */
int psi_net_session_check_prebuilt(const psi_net_handshake *hello, psi_net_handshake *self,
                                   const psi_net_prebuilt *pb, uint64_t max_peer,
                                   char *err, size_t err_len);

/** The client's check of the server's ACCEPT against its HELLO.  Returns: 0
 *  or -1 with a message. */
int psi_net_session_check_accept(const psi_net_handshake *accept,
                                 const psi_net_handshake *hello, uint64_t max_peer,
                                 char *err, size_t err_len);

/** The setup parameters of an agreed handshake (num_client_inputs: the
 *  client's count, at least 1). */
void psi_net_session_params(psi_setup_params *p, const psi_net_handshake *accept,
                            uint64_t client_n);

/** Writes the message of a failed transfer on connection c (code rc): an
 *  ERROR frame's text as "the <peer> (HOST:PORT) ended the round: <text>",
 *  anything else as the connection's own message. */
void psi_net_session_error(char *out, size_t cap, const psi_net_conn *c, int rc,
                               const char *peer);

#endif /* PSI_NET_SESSION_H */
