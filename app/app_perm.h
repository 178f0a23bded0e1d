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

/** Called for each row of a permutation file as it is read: line (0-based,
 *  below n) names the setup element, row (below n) the input row.
 *  Returns: PSI_APP_PERM_OK to go on, or a status that stops the parse
 *  (PSI_APP_PERM_TWICE, PSI_APP_PERM_NOMEM, ...). */
typedef int (*psi_app_perm_row_fn)(void *arg, uint64_t line, uint64_t row);

/** A permutation file decoded as it is read, in pieces of any size (the
 *  grammar of psi_app_perm_decode, which is built on it); it holds nothing
 *  that grows with n.  Whether each row comes once is the row function's
 *  business. */
typedef struct psi_app_perm_parse {
    uint64_t n;       // rows the setup has
    uint64_t line;    // rows done: on failure, the failing 0-based line
    uint64_t v;       // the row being read
    int digits;       // whether it has a digit yet
    int st;           // the first failure, or PSI_APP_PERM_OK
} psi_app_perm_parse;

void psi_app_perm_parse_init(psi_app_perm_parse *p, uint64_t n);

/** Feeds the next len bytes.  Returns: PSI_APP_PERM_OK, or the first
 *  failure (it stays: later calls do nothing). */
int psi_app_perm_parse_feed(psi_app_perm_parse *p, const uint8_t *buf, size_t len,
                            psi_app_perm_row_fn row, void *arg);

/** Ends the file: a last row without its line end, then fewer rows than n
 *  (PSI_APP_PERM_SHORT, p->line rows read).  Returns: the status. */
int psi_app_perm_parse_end(psi_app_perm_parse *p, psi_app_perm_row_fn row, void *arg);

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
