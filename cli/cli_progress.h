/*
 * Progress lines of the network commands on stderr, and the keepalives that
 * tell the peer this side is still working.  One step at a time (masking the
 * setup, sending it, ...): while it runs, a line "<who>: <step>: done / total
 * <unit> (p%), rate/s, T left", rewritten in place on a terminal and printed
 * every few seconds otherwise; when it ends, one summary line.  Lines appear
 * when `enabled` is set (by default when stderr is a terminal; --progress
 * forces them); keepalives are sent whether or not lines are shown.
 */
#ifndef PSI_CLI_PROGRESS_H
#define PSI_CLI_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "cli_net.h"

typedef struct psi_cli_progress {
    int enabled;            // print lines
    int tty;                // stderr is a terminal: rewrite one line
    const char *who;        // "shardpsi server", "shardpsi client"
    psi_cli_conn *conn;     // keepalives go here during computations; may be NULL
    int keepalive_ms;       // interval of keepalives
    // the current step
    const char *step;       // "masking the setup"
    int transfer;           // 0: a computation over values (keepalives are
                            // due), 1: a transfer of bytes
    double start_ms, last_ms;
    double first_ms;        // a transfer's first byte (0: none yet)
    uint64_t total;
    int shown;              // a line of this step is on screen (tty)
} psi_cli_progress;

/** Sets up *p; enabled: 1, 0, or -1 for "if stderr is a terminal". */
void psi_cli_progress_init(psi_cli_progress *p, const char *who, int enabled,
                           psi_cli_conn *conn, int timeout_ms);

/** Starts a computation over `total` values, during which keepalives are
 *  due (transfers are steps of psi_cli_progress_send and _recv). */
void psi_cli_progress_begin(psi_cli_progress *p, const char *step, uint64_t total);

/** The callback for psi_shard_settings.progress and the transfers of
 *  cli_net.h: arg is a psi_cli_progress.  Not reentrant; the shards never
 *  call it twice at once. */
void psi_cli_progress_update(void *arg, uint64_t done, uint64_t total);

/** Ends the step with its summary line (when enabled). */
void psi_cli_progress_end(psi_cli_progress *p);

/** psi_cli_net_send of one frame as a step named `step`, with progress.
 *  Returns: psi_cli_net_send's code. */
int psi_cli_progress_send(psi_cli_progress *p, psi_cli_conn *c, int type,
                          const uint8_t *payload, size_t len, const char *step);

/** psi_cli_net_recv of one frame as a step named `step`, with progress (its
 *  rate counted from the first data, its wait for the peer said apart).
 *  Returns: psi_cli_net_recv's code. */
int psi_cli_progress_recv(psi_cli_progress *p, psi_cli_conn *c, int type, size_t max_len,
                          uint8_t **payload, size_t *len, const char *step);

/** Prints "<who>: <message>" on stderr, moving past a progress line first;
 *  for messages that always appear (listening, results). */
void psi_cli_progress_note(psi_cli_progress *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif /* PSI_CLI_PROGRESS_H */
