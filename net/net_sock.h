/*
 * What net_frame.c (frames) and net_addr.c (addresses and sockets) share;
 * only they include this header.
 */
#ifndef PSI_NET_SOCK_H
#define PSI_NET_SOCK_H

#include "app_clock.h"
#include "net.h"

#include <stddef.h>
#include <stdint.h>

/** Waits until fd reports one of `events` or psi_app_now_ms() reaches
 *  deadline (EINTR retried).  Returns: 1 (ready, *revents set), 0
 *  (deadline), -1 (poll failed, errno set). */
int psi_net_poll(int fd, short events, double deadline, short *revents);

/** Writes the message into c->err.  Returns: code. */
int psi_net_fail(psi_net_conn *c, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The byte layer under the frames (net_io.c): plain TCP on c->fd, or TLS
 * through c->tls when it is set.  Every byte net_frame.c moves goes here. */

/** One non-blocking read of at most cap bytes into buf.  Returns: 0 (*got
 *  bytes, 0 when nothing could be read yet), 1 (the socket failed: *e is
 *  the errno, 0 when the peer closed), or a PSI_NET_E* code (TLS failed;
 *  the message is in c->err). */
int psi_net_io_read(psi_net_conn *c, uint8_t *buf, size_t cap, size_t *got, int *e);

/** One non-blocking write of a[0, alen) then b[0, blen): what does not go
 *  out now must be offered again, the same bytes from where *put says.
 *  Returns: as psi_net_io_read.  Out: *put, bytes written. */
int psi_net_io_write(psi_net_conn *c, const uint8_t *a, size_t alen, const uint8_t *b,
                     size_t blen, size_t *put, int *e);

/** psi_net_poll for the frame layer: POLLIN asks whether a read can make
 *  progress, POLLOUT a write.  With TLS, each waits for the direction TLS
 *  last asked for, and POLLIN is ready at once when TLS holds decrypted
 *  bytes.  Returns: as psi_net_poll. */
int psi_net_io_poll(psi_net_conn *c, short events, double deadline, short *revents);

/** Writes all of buf, waiting for room until deadline, never reading frames.
 *  Returns: 0, an errno value (ETIMEDOUT: the deadline passed; EPIPE: the
 *  peer closed), or a PSI_NET_E* code of TLS (message in c->err). */
int psi_net_io_write_all(psi_net_conn *c, const uint8_t *buf, size_t len, double deadline);

/** Ends TLS on c, if any: a close_notify, best effort (not after a fatal
 *  TLS error), then SSL_free; c->tls is NULL afterwards. */
void psi_net_io_tls_end(psi_net_conn *c);

#endif /* PSI_NET_SOCK_H */
