/*
 * `shardpsi server --setup` (PROTOCOL.md §15.5): its options, and the setup file
 * (with its permutation file) that it serves, read and checked before the
 * server listens.  Only cli_server.c includes this header; cli_server_setup.c
 * knows nothing of the server's rounds.
 */
#ifndef PSI_CLI_SERVER_SETUP_H
#define PSI_CLI_SERVER_SETUP_H

#include <stddef.h>
#include <stdint.h>

#include "cli_round.h"
#include "app_offline.h"

/** The options of --setup. */
typedef struct psi_cli_server_setup_opts {
    const char *setup;        // --setup: a prebuilt setup instead of --input
    const char *permutation;  // --permutation: its permutation (--association)
    size_t num_client;        // --num-client-inputs: what SETUP was built for
} psi_cli_server_setup_opts;

/** A loaded setup file. */
typedef struct psi_cli_server_setup {
    psi_app_msg_file file; // the setup file, open: a raw setup is sent from it
    uint8_t *bytes;        // gcs, bloom: the file's bytes (pb.len of them); raw: NULL
    psi_net_prebuilt pb;   // its structure, length and client count
    size_t n;              // raw: its elements (the server's values)
    int perm_fd;           // --permutation as the PERM frame's payload (n
                           // 8-byte big-endian entries), in a nameless file
    int perm_open;         // perm_fd is this setup's
    uint64_t perm_len;     // its bytes
    char what[256];        // "the setup file F ..."
    char sized[128];       // gcs, bloom: " of fpr F for at most N client values"
} psi_cli_server_setup;

/** Parses argv[*i] if it is --setup (which sets net->input_replaced),
 *  --permutation or --num-client-inputs (psi_cli_own_opt_fn).  Returns: 1
 *  if it was, 0 if not, -1 after a usage message. */
int psi_cli_server_setup_opt(psi_cli_server_setup_opts *so, psi_cli_round_opts *net,
                             int argc, char **argv, int *i);

/** The combinations of --setup and its companions (--input, --column, --lines,
 *  --key-file, --association) that the command line alone refuses.
 *  Returns: 0, or -1 after a usage message. */
int psi_cli_server_setup_check_opts(const psi_cli_server_setup_opts *so,
                                    const psi_cli_round_opts *net, int association);

/** Reads so->setup as a ServerSetup of net->suite and checks it against
 *  --structure, --fpr and --num-client-inputs; with `association`, reads
 *  so->permutation too.  Returns: 0, or -1 with a message in err (ss may
 *  hold part of the files: free it).  Out: *ss. */
int psi_cli_server_setup_load(psi_cli_server_setup *ss, const psi_cli_server_setup_opts *so,
                              const psi_cli_round_opts *net, int association, char *err,
                              size_t err_len);

/** Frees what psi_cli_server_setup_load read. */
void psi_cli_server_setup_free(psi_cli_server_setup *ss);

#endif /* PSI_CLI_SERVER_SETUP_H */
