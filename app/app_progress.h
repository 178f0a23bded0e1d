/*
 * Progress lines of the commands on stderr.  One step at a time (masking the
 * setup, sending it, ...): while it runs, a line "<who>: <step>: done / total
 * <unit> (p%), rate/s, T left", rewritten in place on a terminal and printed
 * every few seconds otherwise; when it ends, one summary line.  Lines appear
 * when `enabled` is set (by default when stderr is a terminal; --progress
 * forces them).  During a computation every update also calls `tick`,
 * shown or not: the network commands send their keepalives from it
 * (net_progress.h).
 */
#ifndef PSI_APP_PROGRESS_H
#define PSI_APP_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

typedef struct psi_app_progress {
    int enabled;            // print lines
    int tty;                // stderr is a terminal: rewrite one line
    const char *who;        // "shardpsi server", "shardpsi client"
    void (*tick)(void *);   // called on each update of a computation; may be NULL
    void *tick_arg;
    // the current step
    const char *step;       // "masking the setup"
    int transfer;           // 0: a computation over values (it ticks),
                            // 1: a transfer of bytes
    double start_ms, last_ms;
    double first_ms;        // a transfer's first byte (0: none yet)
    uint64_t total;
    int shown;              // a line of this step is on screen (tty)
    int chunked;            // a step run a chunk at a time: updates count
    uint64_t base;          // from base, out of total (set by the caller)
} psi_app_progress;

/** Sets up *p (no tick); enabled: 1, 0, or -1 for "if stderr is a
 *  terminal". */
void psi_app_progress_init(psi_app_progress *p, const char *who, int enabled);

/** Starts a computation over `total` values, during which updates tick. */
void psi_app_progress_begin(psi_app_progress *p, const char *step, uint64_t total);

/** Starts a transfer of `total` bytes (0: not known yet, set p->total
 *  before the end), whose updates do not tick. */
void psi_app_progress_begin_transfer(psi_app_progress *p, const char *step,
                                     uint64_t total);

/** The callback for psi_shard_settings.progress and the transfers of
 *  net.h: arg is a psi_app_progress.  Not reentrant; the shards never
 *  call it twice at once. */
void psi_app_progress_update(void *arg, uint64_t done, uint64_t total);

/** Ends the step with its summary line (when enabled). */
void psi_app_progress_end(psi_app_progress *p);

/** Prints "<who>: <message>" on stderr, moving past a progress line first;
 *  for messages that always appear (listening, results). */
void psi_app_progress_note(psi_app_progress *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif /* PSI_APP_PROGRESS_H */
