/*
 * The options that `shardpsi server` and `shardpsi client` share
 * (cli_round.c), on top of the handshake of net/net_session.h.
 */
#ifndef PSI_CLI_ROUND_H
#define PSI_CLI_ROUND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "net_session.h"
#include "net_tls.h"

/** Options of both commands. */
typedef struct psi_cli_round_opts {
    const char *addr;         // --listen / --connect
    const char *input;        // --input (required; "-" = stdin)
    const char *column;       // --column: CSV mode
    int lines;                // --lines: line mode even if it looks like CSV
    const char *key_file;     // --key-file
    size_t threads;           // --threads; 0 = online CPUs
    int timeout_ms;           // --timeout (seconds on the command line)
    int progress;             // --progress 1, --no-progress 0, default -1 (a tty)
    uint64_t max_peer;        // --max-peer-values
    int structure;            // --structure; client: PSI_NET_STRUCTURE_ANY default
    double fpr;               // --fpr; client: 0 default
    int suite;                // --suite (psi_suite), default openmined-p256
    uint64_t memory;          // --memory (0: not given; psi_app_memory_default)
    const char *temp_dir;     // --temp-dir (NULL: $TMPDIR, else the default of
                              // cli_round_spill.h)
    int input_replaced;       // set by a command's own option that stands in
                              // for --input (`shardpsi server --setup`)
    // The transport (cli_round_transport.c)
    psi_net_tls_opts tls;     // --tls-cert, --tls-key, --tls-ca, --tls-peer-key,
                              // --tls-name (client)
    int no_tls;               // --no-tls: plain TCP
    int trusted_network;      // --trusted-network: plain TCP beyond loopback
    int handshake_timeout_ms; // --handshake-timeout (seconds on the command line)
} psi_cli_round_opts;

/** A command's own options: parses argv[*i] if it is one.  Returns: 1 if it
 *  was, 0 if not, -1 after a usage message. */
typedef int (*psi_cli_own_opt_fn)(void *arg, int argc, char **argv, int *i);

/** Parses a network command's line into *o, which it first fills with the
 *  defaults (the client's: any structure and fpr; the server picks its own
 *  after): the common options (--input, --column, --lines, --key-file, --threads,
 *  --timeout, --progress, --no-progress, --max-peer-values, --structure,
 *  --fpr, --suite, --memory, --temp-dir), -h/--help (prints `usage`), `addr_opt` ("--listen" or "--connect") and the command's own
 *  options through `own`; then requires the address (checked to be
 *  HOST:PORT) and --input, unless `own` set o->input_replaced, and refuses
 *  --lines with --column.  Returns: 0,
 *  1 after --help, -1 after a usage message naming `cmd`. */
int psi_cli_round_parse(psi_cli_round_opts *o, int argc, char **argv, const char *cmd,
                      const char *addr_opt, void (*usage)(FILE *out),
                      psi_cli_own_opt_fn own, void *own_arg);

/** Parses argv[*i] if it is a transport option of `cmd` ("server" or
 *  "client"; --tls-name is the client's).  Returns: 1 if it was, 0 if not,
 *  -1 after a usage message. */
int psi_cli_round_transport_opt(psi_cli_round_opts *o, int argc, char **argv, int *i,
                                const char *cmd);

/** The transport of a parsed command line, before any connection: with
 *  --no-tls, checks that no TLS option is given and that o->addr is on
 *  loopback unless --trusted-network (*t = NULL); otherwise makes the TLS
 *  context (psi_net_tls_new), which needs --tls-cert, --tls-key and one of
 *  --tls-ca and --tls-peer-key.  Returns: 0, or -1 after a message naming
 *  `cmd` (exit status 2).  Out: *t. */
int psi_cli_round_transport(psi_net_tls **t, const psi_cli_round_opts *o, const char *cmd,
                            int is_server);

/** A few words on the transport for the log: "TLS 1.3, CA ca.pem",
 *  "TLS 1.3, pinned peer key" or "plain TCP, no TLS". */
void psi_cli_round_transport_name(char *out, size_t cap, const psi_cli_round_opts *o);

/** Prints the transport section of a command's help. */
void psi_cli_round_transport_usage(FILE *out, int is_server);

#endif /* PSI_CLI_ROUND_H */
