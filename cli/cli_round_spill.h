/*
 * A round of `shardpsi server` or `shardpsi client` past its memory budget
 * (PROTOCOL.md §20): the offline steps (cli_offline_steps.c,
 * cli_offline_match.c) run the protocol, exactly as `shardpsi setup`,
 * `request`, `response` and `match` do, with the round's messages in
 * nameless temporary files; the frames are sent from and received into
 * those files through 1 MiB of memory (psi_net_send_fd, psi_net_recv_fd).
 * The round composes nothing itself: it picks the step, the files and the
 * frame.  Nothing of it has a name on disk, so a failed, interrupted or
 * killed round leaves no file behind.
 */
#ifndef PSI_CLI_ROUND_SPILL_H
#define PSI_CLI_ROUND_SPILL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "app_offline.h"
#include "cli_round.h"
#include "net.h"

/* The round's messages, each in a file of its own. */
enum {
    PSI_CLI_MSG_SETUP = 0,
    PSI_CLI_MSG_REQUEST = 1,
    PSI_CLI_MSG_RESPONSE = 2,
    PSI_CLI_MSG_PERM = 3,      // the server's permutation: as `setup --permutation` writes
                               // it (server), the PERM frame's payload (client)
    PSI_CLI_MSG_PAYLOADS = 4,  // the server's payload file (§22.4)
    PSI_CLI_MSGS = 5,
    PSI_CLI_OUTPUT = 5         // the command's own output (not a file of the round)
};

typedef struct psi_cli_round_spill {
    psi_app_offline off;           // the steps' state: options, key, shards, progress
    int fd[PSI_CLI_MSGS];          // -1: not made
    char path[PSI_CLI_MSGS][32];   // "/proc/self/fd/N", how the steps open it
    char dir[1024];                // where the files are
} psi_cli_round_spill;

/* What a value costs a round held in memory (§15.4: the input, 16 bytes
 * of bookkeeping, the messages and the unmasked elements; measured at 170
 * to 215 bytes a value by bench/net-round.sh), with room to spare. */
#define PSI_CLI_ROUND_PER_VALUE 256

/** Whether a round on o's input runs past the budget (--memory, or the
 *  default): --input is a regular file whose values, at
 *  PSI_CLI_ROUND_PER_VALUE bytes each, and bytes do not fit the budget.
 *  A file small enough to fit whatever its count is not read; a larger
 *  one is read through once for its count (`who` prefixes the progress
 *  line).  stdin is always held in memory (it cannot be read twice).
 *  Returns: 1 past the budget (*n its count), 0 in memory, -1 when the
 *  input could not be read through (the message in err: a usage error,
 *  as a whole read's). */
int psi_cli_round_spill_needed(const psi_cli_round_opts *o, const char *who, uint64_t *n,
                               char *err, size_t err_len);

/** Sets up r for a party of a round: the offline options from o (input,
 *  suite, threads, memory, temp dir, progress), the key (a clone of `key`,
 *  or a fresh one when NULL), failures captured in r->off.err (the round
 *  reports them), progress lines as `who`.  The files go to --temp-dir,
 *  else $TMPDIR, else default_dir.  Returns: 0, or -1 with a message in
 *  r->off.err.  r is to be freed either way. */
int psi_cli_round_spill_init(psi_cli_round_spill *r, const psi_cli_round_opts *o,
                             const psi_engine *key, const char *who, const char *default_dir);

/** Makes message i's file (empty), labelled `label` in messages ("the
 *  server's setup").  A step writes it when its output is r->path[i] (the
 *  same pointer); the steps read it by that path.  Returns: 0, or -1 with
 *  a message in r->off.err. */
int psi_cli_round_spill_file(psi_cli_round_spill *r, int i, const char *label);

/** Makes a step that opens `path` (the same pointer) write to f instead:
 *  the command's output, opened (and committed) by the command itself. */
void psi_cli_round_spill_output(psi_cli_round_spill *r, const char *path, FILE *f);

/** Returns: the bytes in message i's file (0 if it cannot be stat'ed). */
uint64_t psi_cli_round_spill_size(const psi_cli_round_spill *r, int i);

/** Rewrites the permutation file (one decimal index a line, n of them) as
 *  the PERM frame's payload (n big-endian u64) into message `to`'s file,
 *  through 128 KiB of buffers, refusing a file that is not n indices below
 *  n.  Returns: 0, or -1 with
 *  a message in r->off.err. */
int psi_cli_round_spill_perm(psi_cli_round_spill *r, int to, uint64_t n);

/** Closes the files and frees the steps' state (never *key given to init). */
void psi_cli_round_spill_free(psi_cli_round_spill *r);

#endif /* PSI_CLI_ROUND_SPILL_H */
