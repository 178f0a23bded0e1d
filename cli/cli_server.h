/*
 * `shardpsi server`'s state, shared by the listener (cli_server.c: options,
 * loading, accepting, a process per connection) and the round it runs on
 * each connection (cli_server_round.c).  Only these two files include it.
 */
#ifndef PSI_CLI_SERVER_H
#define PSI_CLI_SERVER_H

#include <stddef.h>

#include "app_input.h"
#include "app_payload.h"
#include "app_progress.h"
#include "cli_round.h"
#include "cli_server_setup.h"
#include "net.h"
#include "net_tls.h"
#include "psi.h"

/** The server's options. */
typedef struct psi_cli_server_opts {
    psi_cli_round_opts net;
    int reveal;          // --reveal: clients may learn the intersection
    int association;     // --association: clients may get the association table
    int keep_serving;    // --keep-serving
    size_t max_clients;  // --max-clients: rounds served at once
    size_t max_pending;  // --max-pending: connections before their round's slot
    size_t max_per_address; // --max-pending-per-address: of those, from one address
    size_t max_per_identity; // --max-per-identity: rounds of one identity at once
    double round_timeout_ms; // --round-timeout: the most a whole round takes
                         // (0: 600 s and 1 ms a value of both sets)
    psi_cli_server_setup_opts pre;  // --setup and its companions
    const char *payload_columns; // --payload-columns LIST: a payload table sent to
                         // clients asking for it (PROTOCOL.md §22.2)
    size_t pad_len;      // --pad-to BYTES (0: the longest payload)
    const char *payload_file; // --payloads FILE: with --setup, the payload file
                         // `shardpsi payloads` made with its key and input
    int share_result;    // --share-result: clients send their matched rows back
    const char *output;  // --output FILE: this side's matched rows (shared result)
} psi_cli_server_opts;

/** The server's state across rounds (each round runs in a child process
 *  with its own copy). */
typedef struct psi_cli_server {
    const psi_cli_server_opts *o;
    psi_app_input in;
    psi_engine *key;       // from --key-file; NULL: a fresh key each round
    psi_net_tls *tls;      // NULL: --no-tls
    int prebuilt;          // --setup: pre holds the setup served
    int spilled;           // the input is past --memory: each round reads it
                           // through (cli_round_spill.h); in.n is its count
    psi_cli_server_setup pre;
    psi_value *pays;       // --payload-columns: each row's payload (into pay_buf)
    uint8_t *pay_buf;
    char *pay_head;        // the chosen columns' header fields, joined by ","
    psi_app_payfile pay_file; // --payloads: the payload file, checked where it lies
    int has_pay_file;
    // --key-file with a raw setup of an input in memory: the setup masked
    // once at start, with its order; every round (a fork of this process)
    // sends it, so that no round masks anything before its request
    uint8_t *raw_setup;
    size_t raw_setup_len;
    size_t *raw_perm;
    char in_what[64];      // "305 values"
    const char *what;      // in_what, or pre.what
    psi_app_progress prog;
    int ctl_fd;            // in a round's process: its pair to the listener
                           // (cli_server_pool.h); -1 in the listener
    char err[PSI_NET_MSG_MAX + 256];
} psi_cli_server;

/* How a round on one connection ended (a child's exit status). */
#define PSI_CLI_ROUND_OK 0          // the client got its result
#define PSI_CLI_ROUND_FAILED 1      // it failed after a well-formed HELLO (a
                                    // refused one included)
#define PSI_CLI_ROUND_NO_CLIENT 3   // it ended before one: a probe, a scanner,
                                    // another protocol or version, a peer TLS
                                    // refused, the handshake deadline
#define PSI_CLI_ROUND_NO_SLOT 4     // an agreed round refused a slot (too many
                                    // of its identity, the server ending):
                                    // nothing was done

/** With --key-file and a raw setup of an input held in memory: masks the
 *  setup once (keeping its order) into s->raw_setup and s->raw_perm, which
 *  the rounds then send and use as their own.  Otherwise does nothing.
 *  Returns: 0, or -1 after a message on stderr. */
int psi_cli_server_premask(psi_cli_server *s);

/** Runs one round on c, just accepted: TLS, the handshake by the
 *  handshake deadline, then the round of PROTOCOL.md §15.3; logs one line
 *  of how it ended on stderr and closes c.  Returns: a PSI_CLI_ROUND_ code. */
int psi_cli_server_round(psi_cli_server *s, psi_net_conn *c);

#endif /* PSI_CLI_SERVER_H */
