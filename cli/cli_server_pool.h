/*
 * `shardpsi server`'s round slots (issue 54): which connections may hold a
 * process, and which of them may run a round.
 *
 * A connection accepted is *pending* while its process runs TLS and the
 * HELLO (bounded by --handshake-timeout): pending connections are counted
 * apart from rounds, at most --max-pending of them and --max-pending-per-
 * address from one address, so silent or slow connections never take a
 * round's slot.  A pending process whose peer authenticated and sent an
 * acceptable HELLO asks the listener for a slot with the peer's identity
 * (its certificate key) and *waits*, sending keepalives, until it is
 * granted one: at most --max-clients rounds run at once, at most
 * --max-per-identity of them for one identity (and as many may wait).  The
 * listener owns the table (psi_cli_pool_*); the round's process only asks
 * (psi_cli_pool_wait).  Each process talks to the listener over its own
 * SOCK_SEQPACKET pair: the child sends 'W' and the identity, the listener
 * answers 'G' (go) or 'R' (refused); the listener closing its end tells a
 * waiting child that the server is ending.
 */
#ifndef PSI_CLI_SERVER_POOL_H
#define PSI_CLI_SERVER_POOL_H

#include <poll.h>
#include <stddef.h>
#include <sys/types.h>

#include "net.h"

#define PSI_CLI_POOL_DEFAULT_PENDING 64
#define PSI_CLI_POOL_DEFAULT_PER_ADDRESS 16
#define PSI_CLI_POOL_ID_MAX 200

/** The limits (from the command line). */
typedef struct psi_cli_pool_limits {
    size_t max_clients;      // rounds at once
    size_t max_pending;      // connections before their slot (pending and waiting)
    size_t max_per_address;  // pending connections from one address
    size_t max_per_identity; // rounds of one identity at once (and as many waiting)
} psi_cli_pool_limits;

enum { PSI_CLI_POOL_PENDING, PSI_CLI_POOL_WAITING, PSI_CLI_POOL_ACTIVE };

/** One process the listener started. */
typedef struct psi_cli_pool_child {
    pid_t pid;
    int fd;            // the listener's end of the pair (-1 once closed)
    int state;         // PSI_CLI_POOL_
    unsigned long seq; // order of arrival among the waiting
    char addr[64];     // the peer's host (no port)
    char id[PSI_CLI_POOL_ID_MAX + 1]; // the identity, once waiting
} psi_cli_pool_child;

/** The listener's table. */
typedef struct psi_cli_pool {
    psi_cli_pool_limits lim;
    psi_cli_pool_child *ch;
    size_t n, cap;
    size_t active, pending; // pending: pending and waiting
    unsigned long seq;
} psi_cli_pool;

/** Makes an empty table for the limits.  Returns: 0 or -1 (out of memory). */
int psi_cli_pool_init(psi_cli_pool *p, const psi_cli_pool_limits *lim);

/** Frees the table (closing the listener's ends). */
void psi_cli_pool_free(psi_cli_pool *p);

/** Whether a connection just accepted from peer ("HOST:PORT") may have a
 *  process.  Returns: 0, or -1 with why (for the log) in why. */
int psi_cli_pool_may_join(const psi_cli_pool *p, const char *peer, char *why, size_t cap);

/** Records a pending process with the listener's end fd of its pair. */
void psi_cli_pool_add(psi_cli_pool *p, pid_t pid, int fd, const char *peer);

/** Fills pfd (at most cap) with the pairs to watch.  Returns: how many. */
size_t psi_cli_pool_pollfds(const psi_cli_pool *p, struct pollfd *pfd, size_t cap);

/** Handles what the pairs of pfd[0..n) (from psi_cli_pool_pollfds) said, and
 *  grants every slot it can. */
void psi_cli_pool_events(psi_cli_pool *p, const struct pollfd *pfd, size_t n);

/** Forgets a process that ended, granting the slot it held.  Returns: 1 if
 *  it was one of the table's, else 0. */
int psi_cli_pool_reaped(psi_cli_pool *p, pid_t pid);

/** The server is ending: the pending and waiting processes are stopped
 *  (they hold nothing the server keeps), and the running rounds end on
 *  their own. */
void psi_cli_pool_stop(psi_cli_pool *p);

/** In a round's process, after the HELLO was accepted: asks the listener
 *  (over fd) for a slot for identity, keeping c alive with keepalives
 *  while it waits, until deadline_ms (absolute).  Returns: 0 (granted),
 *  1 (not granted: the listener refused or is ending; why says so), or -1
 *  (the peer left or the deadline passed; why says so). */
int psi_cli_pool_wait(int fd, psi_net_conn *c, const char *identity, double deadline_ms,
                      char *why, size_t cap);

#endif /* PSI_CLI_SERVER_POOL_H */
