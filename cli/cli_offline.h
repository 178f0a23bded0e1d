/*
 * The offline commands of `shardpsi` (PROTOCOL.md §17): keygen
 * (cli_offline.c) and the four protocol steps (cli_offline_steps.c, cli_offline_match.c), on the
 * shared state of app/app_offline.h.
 */
#ifndef PSI_CLI_OFFLINE_H
#define PSI_CLI_OFFLINE_H

#include <stdint.h>

#include "app_index_runs.h"
#include "app_offline.h"
#include "app_payload.h"
#include "app_perm.h"

/* The steps (cli_offline_steps.c, cli_offline_match.c): each runs after parsing and returns the
 * exit code. */
int psi_cli_offline_setup(psi_app_offline *s);
int psi_cli_offline_request(psi_app_offline *s);
int psi_cli_offline_response(psi_app_offline *s);
int psi_cli_offline_match(psi_app_offline *s);

/** Reads --input through once in chunks of the budget, for its errors and
 *  its count (a progress step "reading the input").  Returns: 0 or -1
 *  (reported).  Out: *n. */
int psi_cli_offline_count(psi_app_offline *s, uint64_t *n);

/* match --association (cli_offline_assoc.c): the pairs mapped through the
 * server's permutation, read in order, into runs by client index. */
typedef struct psi_cli_assoc {
    psi_app_perm_reader perm;   // the PERM payload, in setup order
    psi_app_index_runs runs;    // (client index, server row) pairs
    uint64_t n_server;
    char err[512];              // why the pair sink refused
} psi_cli_assoc;

/** Checks that the parsed setup is raw.  Returns: 0 (*n_server its
 *  elements) or -1 (reported). */
int psi_cli_assoc_setup(psi_app_offline *s, const psi_setup *parsed, uint64_t *n_server);

/** Opens --permutation as the PERM payload of n_server entries: a round's
 *  payload (o.perm_payload) checked for its length, or the text file
 *  checked and rewritten into a nameless file in dir (runs in `memory`).
 *  Returns: 0 (*fd to close) or -1 (reported). */
int psi_cli_assoc_perm_open(psi_app_offline *s, uint64_t n_server, const char *dir,
                            uint64_t memory, int *fd);

/** Sets up m: its pair runs in dir with `memory` bytes. */
void psi_cli_assoc_init(psi_cli_assoc *m, const char *dir, uint64_t memory);

/** Starts reading the payload fd (the caller's) of n_server entries.
 *  Returns: 0 or -1 (m->err). */
int psi_cli_assoc_begin(psi_cli_assoc *m, int fd, uint64_t n_server);

/** The psi_pair_sink_fn (arg: m): maps each pair's setup position to the
 *  server's row (refusing a row past n_server, as the network client does)
 *  and adds it to the runs.  Returns: 0, or 1 with m->err set. */
int psi_cli_assoc_take(void *arg, const psi_pair *pairs, size_t n);

/** Writes the pairs by client index to s->out.  Returns: 0 or -1
 *  (reported).  Out: *count. */
int psi_cli_assoc_write(psi_app_offline *s, psi_cli_assoc *m, size_t *count);

void psi_cli_assoc_free(psi_cli_assoc *m);

/* Payloads (cli_offline_payload.c, PROTOCOL.md §22). */

/** `shardpsi payloads`: the payload file of --input's rows. */
int psi_cli_offline_payloads(psi_app_offline *s);

/** match --payloads past the budget (PROTOCOL.md §22.4): the payload file
 *  opened where it lies, and the response decoded again alongside the
 *  input's chunks. */
typedef struct psi_cli_payjoin {
    psi_app_payfile pf;
    int open;
    int raw;                   // the setup is raw
    char source[4200];
    psi_app_msg_file resp;
    psi_reader *reader;
    uint8_t *buf;              // a block of the response file
    size_t pos, len;
    uint64_t at;               // the file's next byte to read
} psi_cli_payjoin;

/** Opens --payloads and --response.  Returns: 0 or -1 (reported); close p
 *  either way. */
int psi_cli_payjoin_open(psi_app_offline *s, psi_cli_payjoin *p, int raw);

/** Writes the matched rows idx (k, ascending, whole-input indices) of the
 *  input chunk `chunk` (its first row is `base`) with their payloads; the
 *  response's next chunk->n elements are decoded for it (every chunk is
 *  passed, in order, matched or not).  Returns: 0 or -1 (reported).
 *  Out: *written grows by the rows written. */
int psi_cli_payjoin_chunk(psi_app_offline *s, psi_cli_payjoin *p, const psi_app_input *chunk,
                          uint64_t base, const size_t *idx, size_t k, int header,
                          size_t *written);

void psi_cli_payjoin_close(psi_cli_payjoin *p);

#endif /* PSI_CLI_OFFLINE_H */
