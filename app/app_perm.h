/*
 * The association permutation file (PROTOCOL.md §15.5, §17): what `shardpsi
 * setup --permutation` writes and `shardpsi server --setup --permutation`
 * reads back, one 0-based input row a line, line j for the setup's element
 * j.  Decoded here, apart from the command, so the fuzz harness reaches it.
 */
#ifndef PSI_APP_PERM_H
#define PSI_APP_PERM_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

/** Why a permutation file was refused. */
typedef enum psi_app_perm_status {
    PSI_APP_PERM_OK = 0,
    PSI_APP_PERM_SYNTAX = 1,  /* a line that is not a decimal row (empty, a
                                 sign, another byte, past 2^64 - 1) */
    PSI_APP_PERM_EXTRA = 2,   /* more lines than n */
    PSI_APP_PERM_RANGE = 3,   /* a row >= n */
    PSI_APP_PERM_TWICE = 4,   /* a row given twice */
    PSI_APP_PERM_SHORT = 5,   /* fewer lines than n */
    PSI_APP_PERM_NOMEM = 6
} psi_app_perm_status;

/** Decodes len bytes as a permutation of n rows: n lines, each a decimal
 *  row below n ended by '\n' (the last may end the file instead), each row
 *  once.  Out: perm (n entries, filled on success, partly on failure);
 *  *line (the 0-based failing line, or for PSI_APP_PERM_SHORT the rows
 *  read).  buf may be NULL when len is 0.  Returns: a psi_app_perm_status. */
int psi_app_perm_decode(size_t *perm, size_t *line, const uint8_t *buf, size_t len, size_t n);

/** A permutation file (or any list of indices) written in pieces: the
 *  psi_perm_sink_fn psi_app_perm_write (arg: this) writes one decimal index
 *  a line and remembers a failed write, so that the caller can name the
 *  file that failed rather than the message's output. */
typedef struct psi_app_perm_writer {
    FILE *f;
    int failed;
} psi_app_perm_writer;

/** Returns: 0, or 1 once a write has failed. */
int psi_app_perm_write(void *arg, const size_t *index, size_t n);

#endif /* PSI_APP_PERM_H */
