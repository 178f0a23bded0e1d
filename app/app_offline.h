/*
 * The offline commands of `shardpsi` (PROTOCOL.md §17): keygen, setup, request,
 * response, match and payloads (§22.1), each one step of the protocol with its messages in
 * files.  A message file holds exactly the wire bytes of §10/§16.1 (what
 * `shardpsi server` and `shardpsi client` put in a frame's payload), nothing else.
 * This is the state they share with `shardpsi-mpi` (mpi/): options and
 * help, the key file, the input, message files, shards and messages; the
 * commands themselves are cli/cli_offline.c and mpi/.
 */
#ifndef PSI_APP_OFFLINE_H
#define PSI_APP_OFFLINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "app_input.h"
#include "app_output.h"
#include "app_party.h"
#include "app_progress.h"
#include "psi.h"
#include "psi_shard.h"

/* What the client writes: the matching rows, their indices, the count, or
 * the association table. */
typedef enum psi_app_offline_mode {
    PSI_APP_OFFLINE_ROWS = 0,
    PSI_APP_OFFLINE_INDICES = 1,
    PSI_APP_OFFLINE_COUNT = 2,
    PSI_APP_OFFLINE_ASSOCIATION = 3
} psi_app_offline_mode;

/* The options of every offline command; each takes only its own. */
typedef struct psi_app_offline_opts {
    const char *cmd;            // "setup", ...
    const char *key_file;       // --key-file
    const char *input;          // --input ("-": stdin)
    const char *column;         // --column (CSV)
    int lines;                  // --lines: line mode even if it looks like CSV
    const char *output;         // --output
    const char *setup;          // match: --setup
    const char *request;        // response: --request
    const char *response;       // match: --response
    const char *permutation;    // setup: --permutation (written); match: (read)
    int perm_payload;           // match: permutation is the PERM frame's payload
                                // (a round's), not the text file
    int suite;                  // --suite
    psi_app_shard_opts shard;   // --shards, --threads (always sharded)
    int progress;               // --progress 1, --no-progress 0, default -1
    int structure;              // setup: --structure (-1: not given)
    double fpr;                 // setup: --fpr (0: not given)
    size_t num_client;          // setup: --num-client-inputs (0: not given)
    int reveal;                 // response: --reveal
    psi_app_offline_mode mode;          // request: --count-only; match: the four
    uint64_t memory;            // --memory (0: not given; psi_app_memory_default)
    const char *temp_dir;       // --temp-dir (NULL: $TMPDIR, else the output's directory)
    const char *payload_columns;// payloads: --payload-columns LIST (CSV header names)
    size_t pad_len;             // payloads: --pad-to BYTES (0: the longest payload)
    const char *salt;           // payloads: --salt HEX (NULL: a fresh salt)
    const char *payloads;       // match: --payloads FILE (the server's payload file)
    int raw_cells;              // match: --raw-cells (the payloads' cells as they are)
} psi_app_offline_opts;

/* The state of one offline command's run. */
#define PSI_APP_OFFLINE_FILES 6

typedef struct psi_app_offline {
    psi_app_offline_opts o;
    psi_app_progress prog;
    psi_engine *key;            // from the key file
    psi_shards *g;              // the party's shards
    psi_app_input in;           // --input
    psi_app_output out;         // --output
    char who[64];               // "shardpsi setup", "shardpsi-mpi setup"
    char err[1024];             // the last failure's message
    int capture;                // failures only fill err (shardpsi-mpi gathers them)
    size_t count;               // match: the intersection's size, once written
    uint64_t values;            // setup, request: the values read, once written
    // A round's messages in nameless files (cli/cli_round_spill.c), up to
    // PSI_APP_OFFLINE_FILES: an output opened at file_path[i] (the same
    // pointer) is written to file[i] instead, and its commit only flushes
    // it; in messages, file_path[i] reads file_label[i].
    const char *file_path[PSI_APP_OFFLINE_FILES];
    const char *file_label[PSI_APP_OFFLINE_FILES];
    FILE *file[PSI_APP_OFFLINE_FILES];
} psi_app_offline;

/** Loads the key file (which must exist, be the command's suite and be
 *  readable by its owner alone); with s->key already set (a round's key,
 *  given by its caller), does nothing.  Returns: 0 or -1 (reported). */
int psi_app_offline_key(psi_app_offline *s);

/** Reads --input into s->in.  Returns: 0 or -1 (reported). */
int psi_app_offline_input(psi_app_offline *s);

/** Reads the message file `path` (a regular file, read whole; `what` names
 *  it in messages: "the request").  Returns: 0 or -1 (reported).
 *  Out: *buf (malloc'd, at least 1 byte), *len. */
int psi_app_offline_read_msg(psi_app_offline *s, const char *path, const char *what,
                             uint8_t **buf, size_t *len);

/** A message file read in pieces (psi_read_fn): a ServerSetup the library
 *  reads in windows instead of whole (psi_setup_parse_read, PROTOCOL.md
 *  §20).  The first failed read leaves its message in err. */
typedef struct psi_app_msg_file {
    int fd;
    uint64_t len;
    char path[4096];
    char err[4200];
} psi_app_msg_file;

/** Opens the regular file `path` for psi_app_msg_read.  Returns: 0, or -1
 *  with "WHAT PATH: cannot open: ..." (or "not a regular file") in err. */
int psi_app_msg_open(psi_app_msg_file *f, const char *path, const char *what, char *err,
                     size_t err_len);

/** psi_app_msg_open, reported as psi_app_offline_read_msg reports it.
 *  Returns: 0 or -1. */
int psi_app_offline_open_msg(psi_app_offline *s, const char *path, const char *what,
                             psi_app_msg_file *f);

/** The psi_read_fn of a psi_app_msg_file (arg): pread, all or nothing. */
int psi_app_msg_read(void *arg, uint64_t offset, uint8_t *buf, size_t len);

/** Reads all of f into a new buffer.  Returns: 0, or -1 with "WHAT PATH:
 *  out of memory for N bytes" or "WHAT <the read's message>" in err.
 *  Out: *buf (to free; NULL on failure), *len. */
int psi_app_msg_read_whole(psi_app_msg_file *f, const char *what, uint8_t **buf, size_t *len,
                           char *err, size_t err_len);

/** Whether rc and d, from psi_setup_parse_read or psi_setup_check_read,
 *  say a GCS or Bloom setup was refused before it was read, as longer than
 *  max_held (its matcher holds it whole, §20).  Returns: "gcs" or "bloom",
 *  else NULL. */
const char *psi_app_setup_held_refused(int rc, const psi_error_detail *d);

/** The library's detail of a failed call `rc` on a chunk whose first
 *  element is element `base` of the whole: its index moved by base, so
 *  that the message names the place the whole call would name.  A detail
 *  of another failure is returned as it is. */
psi_error_detail psi_app_detail_in_whole(int rc, uint64_t base);

/** Closes f (fd -1 is a no-op). */
void psi_app_msg_close(psi_app_msg_file *f);

/** Builds s->g from the key with `role` and `reveal`, on --shards and
 *  --threads, with progress (freeing the shards of an earlier step).
 *  Returns: 0 or -1 (reported). */
int psi_app_offline_shards(psi_app_offline *s, psi_role role, int reveal);

/** Opens `path` as an output (temporary name, renamed on commit), or, when
 *  it is one of s->file_path, hands out that file.  Returns: 0 or -1
 *  (reported). */
int psi_app_offline_open(psi_app_offline *s, psi_app_output *out, const char *path);

/** Reports the library's error rc of `what` (naming a message of another
 *  suite as such, with the file `file`).  Returns: -1. */
int psi_app_offline_fail_psi(psi_app_offline *s, const char *what, const char *file,
                             int rc);

/** Prints "shardpsi <cmd>: error: <message>" (with s->capture set: only keeps
 *  the message in s->err).  Returns: -1. */
int psi_app_offline_fail(psi_app_offline *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Frees everything of s but s->o; aborts an uncommitted output. */
void psi_app_offline_free(psi_app_offline *s);

/** Prints the help of offline command `cmd` (keygen, setup, request,
 *  response, match) to `out`.  Returns: 0, or -1 when `cmd` is not one (out
 *  NULL: only the test). */
int psi_app_offline_usage(FILE *out, const char *cmd);

/** Parses `shardpsi <cmd> ...` into s->o; argv[0] is the command, which
 *  must be one psi_app_offline_usage knows.  Returns: 0, 1 after --help,
 *  -1 after a usage message. */
int psi_app_offline_parse(psi_app_offline *s, int argc, char **argv);

#endif /* PSI_APP_OFFLINE_H */
