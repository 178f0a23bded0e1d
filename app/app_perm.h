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

/** Reads the permutation file `path` of n rows (the grammar of
 *  psi_app_perm_decode, each row once) into a new nameless file in dir
 *  holding the PERM frame's payload (n 8-byte big-endian entries, §15.3),
 *  through 64 KiB: nothing of it is held, and whether each row comes once
 *  is seen from sorted runs on disk in `memory` bytes (app_perm_file.c).
 *  Returns: 0 (*fd the payload's file, to close), or -1 with a message
 *  naming the file and line in err (*fd -1, nothing left on disk). */
int psi_app_perm_load(int *fd, const char *path, uint64_t n, const char *dir, uint64_t memory,
                      char *err, size_t err_len);

/** A PERM payload (n 8-byte big-endian entries in a file) read in order
 *  through 64 KiB: the association table maps each pair's setup position,
 *  ascending, to the server's row. */
typedef struct psi_app_perm_reader {
    int fd;           // the caller's
    uint64_t n;       // its entries
    uint64_t base;    // the entry at buf[0]
    size_t have;      // entries in buf
    uint8_t *buf;
    char err[256];
} psi_app_perm_reader;

/** Returns: 0, or -1 (no memory; message in r->err). */
int psi_app_perm_reader_open(psi_app_perm_reader *r, int fd, uint64_t n);

/** Out: *row, entry j (j never below an earlier call's).  Whether the row
 *  names one of the server's is the caller's to judge.  Returns: 0, or -1
 *  (j out of order or range, or a failed read: message in r->err). */
int psi_app_perm_reader_at(psi_app_perm_reader *r, uint64_t j, uint64_t *row);

void psi_app_perm_reader_close(psi_app_perm_reader *r);

#endif /* PSI_APP_PERM_H */
