/*
 * The offline commands of `shardpsi` (PROTOCOL.md §17): keygen, setup, request,
 * response and match, each one step of the protocol with its messages in
 * files.  A message file holds exactly the wire bytes of §10/§16.1 (what
 * `shardpsi server` and `shardpsi client` put in a frame's payload), nothing else.
 * cli_offline.c holds the options, key files and files they share, and
 * `shardpsi keygen`; cli_offline_steps.c the four protocol steps.
 */
#ifndef PSI_CLI_OFFLINE_H
#define PSI_CLI_OFFLINE_H

#include <stddef.h>
#include <stdint.h>

#include "cli_input.h"
#include "cli_output.h"
#include "cli_party.h"
#include "cli_progress.h"
#include "psi.h"
#include "psi_shard.h"

/* What the client writes: the matching rows, their indices, or the count. */
typedef enum offline_mode {
    OFFLINE_ROWS = 0,
    OFFLINE_INDICES = 1,
    OFFLINE_COUNT = 2
} offline_mode;

/* The options of every offline command; each takes only its own. */
typedef struct psi_cli_offline_opts {
    const char *cmd;            // "setup", ...
    const char *key_file;       // --key-file
    const char *input;          // --input ("-": stdin)
    const char *column;         // --column (CSV)
    int lines;                  // --lines: line mode even if it looks like CSV
    const char *output;         // --output
    const char *setup;          // match: --setup
    const char *request;        // response: --request
    const char *response;       // match: --response
    const char *permutation;    // setup: --permutation
    int suite;                  // --suite
    psi_cli_shard_opts shard;   // --shards, --threads (always sharded)
    int progress;               // --progress 1, --no-progress 0, default -1
    int structure;              // setup: --structure (-1: not given)
    double fpr;                 // setup: --fpr (0: not given)
    size_t num_client;          // setup: --num-client-inputs (0: not given)
    int reveal;                 // response: --reveal
    offline_mode mode;          // request: --count-only; match: the three
} psi_cli_offline_opts;

/* The state of one offline command's run. */
typedef struct psi_cli_offline {
    psi_cli_offline_opts o;
    psi_cli_progress prog;
    psi_engine *key;            // from the key file
    psi_shards *g;              // the party's shards
    psi_cli_input in;           // --input
    psi_cli_output out;         // --output
    char who[64];               // "shardpsi setup", "shardpsi-mpi setup"
    char err[1024];             // the last failure's message
    int capture;                // failures only fill err (shardpsi-mpi gathers them)
} psi_cli_offline;

/** Parses `psi <cmd> ...` into s->o (argv[0] is the command).  Returns: 0,
 *  1 after --help, -1 after a usage message. */
int psi_cli_offline_parse(psi_cli_offline *s, int argc, char **argv);

/** Loads the key file (which must exist, be the command's suite and be
 *  readable by its owner alone).  Returns: 0 or -1 (reported). */
int psi_cli_offline_key(psi_cli_offline *s);

/** Reads --input into s->in.  Returns: 0 or -1 (reported). */
int psi_cli_offline_input(psi_cli_offline *s);

/** Reads the message file `path` (a regular file, read whole; `what` names
 *  it in messages: "the request").  Returns: 0 or -1 (reported).
 *  Out: *buf (malloc'd, at least 1 byte), *len. */
int psi_cli_offline_read_msg(psi_cli_offline *s, const char *path, const char *what,
                             uint8_t **buf, size_t *len);

/** Builds s->g from the key with `role` and `reveal`, on --shards and
 *  --threads, with progress.  Returns: 0 or -1 (reported). */
int psi_cli_offline_shards(psi_cli_offline *s, psi_role role, int reveal);

/** Opens `path` as an output (temporary name, renamed on commit).
 *  Returns: 0 or -1 (reported). */
int psi_cli_offline_open(psi_cli_offline *s, psi_cli_output *out, const char *path);

/** Reports the library's error rc of `what` (naming a message of another
 *  suite as such, with the file `file`).  Returns: -1. */
int psi_cli_offline_fail_psi(psi_cli_offline *s, const char *what, const char *file,
                             int rc);

/** Prints "shardpsi <cmd>: error: <message>" (with s->capture set: only keeps
 *  the message in s->err).  Returns: -1. */
int psi_cli_offline_fail(psi_cli_offline *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Frees everything of s but s->o; aborts an uncommitted output. */
void psi_cli_offline_free(psi_cli_offline *s);

/* The steps (cli_offline_steps.c): each runs after parsing and returns the
 * exit code. */
int psi_cli_offline_setup(psi_cli_offline *s);
int psi_cli_offline_request(psi_cli_offline *s);
int psi_cli_offline_response(psi_cli_offline *s);
int psi_cli_offline_match(psi_cli_offline *s);

#endif /* PSI_CLI_OFFLINE_H */
