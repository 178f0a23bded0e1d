/*
 * Progress over a connection: the transfers of a round as steps of a
 * psi_app_progress (lines on stderr), and the keepalives that tell the peer
 * this side is still working while it computes (PROTOCOL.md §15.1).
 */
#ifndef PSI_NET_PROGRESS_H
#define PSI_NET_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "app_progress.h"
#include "net.h"

/** Makes every computation step of p send keepalives on c (at a quarter of
 *  c->timeout_ms, at least 50 ms and at most 5 s), until
 *  psi_net_progress_detach; on each update, when c->gone is set and the
 *  peer has gone (psi_net_peer_gone), calls c->gone, so that the work stops
 *  at the next chunk.  c must outlive the attachment. */
void psi_net_progress_attach(psi_app_progress *p, psi_net_conn *c);

/** Whether the peer of c has closed its side or reset the connection (an
 *  EOF, POLLRDHUP, POLLHUP or POLLERR on the socket), checked without
 *  blocking and without reading.  Returns: 1 gone, 0 not (or c closed). */
int psi_net_peer_gone(const psi_net_conn *c);

/** Ends psi_net_progress_attach: p sends no more keepalives. */
void psi_net_progress_detach(psi_app_progress *p);

/** psi_net_send of one frame as a step named `step`, with progress.
 *  Returns: psi_net_send's code. */
int psi_net_progress_send(psi_app_progress *p, psi_net_conn *c, int type,
                          const uint8_t *payload, size_t len, const char *step);

/** psi_net_recv of one frame as a step named `step`, with progress (its
 *  rate counted from the first data, its wait for the peer said apart).
 *  Returns: psi_net_recv's code. */
int psi_net_progress_recv(psi_app_progress *p, psi_net_conn *c, int type, size_t max_len,
                          uint8_t **payload, size_t *len, const char *step);

/** psi_net_progress_send and _recv of a payload in a file (the len bytes
 *  of fd at offset `at`: psi_net_send_fd_at; psi_net_recv_fd).  Returns:
 *  their code. */
int psi_net_progress_send_fd(psi_app_progress *p, psi_net_conn *c, int type, int fd,
                             uint64_t at, uint64_t len, const char *step);
int psi_net_progress_recv_fd(psi_app_progress *p, psi_net_conn *c, int type,
                             uint64_t max_len, int fd, uint64_t *len, const char *step);

#endif /* PSI_NET_PROGRESS_H */
