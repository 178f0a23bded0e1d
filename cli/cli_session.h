/*
 * What `shardpsi server` and `shardpsi client` share: their common options, and the
 * handshake of the network protocol (PROTOCOL.md §15).
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
#ifndef PSI_CLI_SESSION_H
#define PSI_CLI_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli_net.h"
#include "psi.h"
#include "psi_shard.h"

/** The version of the network protocol this build speaks. */
#define PSI_CLI_PROTOCOL_VERSION 1
/** A handshake of the openmined-p256 suite; another suite adds one byte. */
#define PSI_CLI_HANDSHAKE_BYTES 28
#define PSI_CLI_HANDSHAKE_MAX_BYTES 29
/** HELLO structure value: the client takes the server's. */
#define PSI_CLI_STRUCTURE_ANY 255

/* Defaults of the options. */
#define PSI_CLI_DEFAULT_TIMEOUT_S 120
#define PSI_CLI_DEFAULT_FPR 1e-9
#define PSI_CLI_DEFAULT_MAX_PEER 100000000u

/** A HELLO or ACCEPT. */
typedef struct psi_cli_handshake {
    unsigned version;
    int reveal;          // the intersection (rows, indices) is revealed
    int association;     // the association table is sent (needs reveal, raw)
    int structure;       // psi_structure, or PSI_CLI_STRUCTURE_ANY in a HELLO
    double fpr;          // 0 in a HELLO: any
    uint64_t n;          // the sender's number of values
    int suite;           // psi_suite; 0 (openmined-p256) in a 28-byte record
} psi_cli_handshake;

/** Encodes h into out: PSI_CLI_HANDSHAKE_BYTES for the openmined-p256
 *  suite, one byte more (the suite) for another.  Returns: the length. */
size_t psi_cli_handshake_encode(uint8_t out[PSI_CLI_HANDSHAKE_MAX_BYTES],
                                const psi_cli_handshake *h);

/** Decodes a handshake payload; `from` names the peer in messages ("the
 *  client").  A version other than ours is decoded (h->version set) and
 *  refused with a message naming both versions; a suite this build does not
 *  know is refused with its number.  Returns: 0, or -1 with a message in
 *  err. */
int psi_cli_handshake_decode(psi_cli_handshake *h, const uint8_t *p, size_t len,
                             const char *from, char *err, size_t err_len);

/** Returns: the suite's name, or "suite N" (in a static buffer) for an
 *  unknown number. */
const char *psi_cli_suite_label(int suite);

/** Returns: "raw", "gcs", "bloom" or "any". */
const char *psi_cli_structure_name(int structure);

/** Options of both commands. */
typedef struct psi_cli_net_opts {
    const char *addr;         // --listen / --connect
    const char *input;        // --input (required; "-" = stdin)
    const char *column;       // --column: CSV mode
    int lines;                // --lines: line mode even if it looks like CSV
    const char *key_file;     // --key-file
    size_t threads;           // --threads; 0 = online CPUs
    int timeout_ms;           // --timeout (seconds on the command line)
    int progress;             // --progress 1, --no-progress 0, default -1 (a tty)
    uint64_t max_peer;        // --max-peer-values
    int structure;            // --structure; client: PSI_CLI_STRUCTURE_ANY default
    double fpr;               // --fpr; client: 0 default
    int suite;                // --suite (psi_suite), default openmined-p256
    int input_replaced;       // set by a command's own option that stands in
                              // for --input (`shardpsi server --setup`)
} psi_cli_net_opts;

/** A command's own options: parses argv[*i] if it is one.  Returns: 1 if it
 *  was, 0 if not, -1 after a usage message. */
typedef int (*psi_cli_own_opt_fn)(void *arg, int argc, char **argv, int *i);

/** Parses a network command's line into *o, which it first fills with the
 *  defaults (the client's: any structure and fpr; the server picks its own
 *  after): the common options (--input, --column, --lines, --key-file, --threads,
 *  --timeout, --progress, --no-progress, --max-peer-values, --structure,
 *  --fpr, --suite), -h/--help (prints `usage`), `addr_opt` ("--listen" or "--connect") and the command's own
 *  options through `own`; then requires the address (checked to be
 *  HOST:PORT) and --input, unless `own` set o->input_replaced, and refuses
 *  --lines with --column.  Returns: 0,
 *  1 after --help, -1 after a usage message naming `cmd`. */
int psi_cli_net_parse(psi_cli_net_opts *o, int argc, char **argv, const char *cmd,
                      const char *addr_opt, void (*usage)(FILE *out),
                      psi_cli_own_opt_fn own, void *own_arg);

/** The server's check of a client's HELLO against its own settings (`self`,
 *  with the server's structure, fpr and n) and limits.  Returns: 0, or -1
 *  with a message in err saying what disagreed and how to fix it. */
int psi_cli_session_check_hello(const psi_cli_handshake *hello,
                                const psi_cli_handshake *self, uint64_t max_peer,
                                char *err, size_t err_len);

/** A setup built before the round (`shardpsi server --setup`, PROTOCOL.md
 *  §15.5): the server sends these bytes instead of masking its input. */
typedef struct psi_cli_prebuilt {
    int structure;          // the file's (psi_setup_structure)
    size_t len;             // the file's length
    uint64_t num_client;    // gcs, bloom: --num-client-inputs, the most client
                            // values the setup was made for (psi setup's)
} psi_cli_prebuilt;

/** For a prebuilt gcs or Bloom setup of `len` bytes whose fpr is self->fpr:
 *  the smallest set size n for which the setup bound (§15.1) of a client of
 *  client_n values, with self's structure, fpr and suite, is at least len
 *  (the bound the client puts on the SETUP frame).  Returns: 0, or -1 when
 *  no size up to the largest a handshake can carry covers it.  Out: *n. */
int psi_cli_session_prebuilt_size(uint64_t *n, const psi_cli_handshake *self,
                                  uint64_t client_n, size_t len);

/** The server's check of a HELLO when it serves a prebuilt setup: a gcs or
 *  Bloom setup refuses clients of more than pb->num_client values (before
 *  the other checks, when the suites agree) and announces in self->n the
 *  size of psi_cli_session_prebuilt_size for this client (a raw setup: the
 *  caller's self->n, its element count); then psi_cli_session_check_hello,
 *  and a last check that the client's bound admits the file.  Returns: 0,
 *  or -1 with a message in err.  In-Out: self->n. */
int psi_cli_session_check_prebuilt(const psi_cli_handshake *hello, psi_cli_handshake *self,
                                   const psi_cli_prebuilt *pb, uint64_t max_peer,
                                   char *err, size_t err_len);

/** The client's check of the server's ACCEPT against its HELLO.  Returns: 0
 *  or -1 with a message. */
int psi_cli_session_check_accept(const psi_cli_handshake *accept,
                                 const psi_cli_handshake *hello, uint64_t max_peer,
                                 char *err, size_t err_len);

/** The setup parameters of an agreed handshake (num_client_inputs: the
 *  client's count, at least 1). */
void psi_cli_session_params(psi_setup_params *p, const psi_cli_handshake *accept,
                            uint64_t client_n);

/** Builds a round's shards: engines of `suite` with the key of `key`
 *  (cloned with `role` and `reveal`; its suite must be `suite`), or with a
 *  fresh random key when key is NULL, on
 *  `threads` worker threads (0: every online CPU), reporting progress to
 *  progress(progress_arg).  Returns: PSI_OK or the library's error, with
 *  *what naming the step that failed ("cannot create the engine", "cannot
 *  start the shards").  Out: *g, freed with psi_shards_free. */
int psi_cli_session_shards(psi_shards **g, const char **what, const psi_engine *key,
                           int suite, psi_role role, int reveal, size_t threads,
                           psi_progress_fn progress, void *progress_arg);

/** Writes the message of a failed transfer on connection c (code rc): an
 *  ERROR frame's text as "the <peer> (HOST:PORT) ended the round: <text>",
 *  anything else as the connection's own message. */
void psi_cli_session_net_error(char *out, size_t cap, const psi_cli_conn *c, int rc,
                               const char *peer);

#endif /* PSI_CLI_SESSION_H */
