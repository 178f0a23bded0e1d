/*
 * What net_frame.c (frames) and net_addr.c (addresses and sockets) share;
 * only they include this header.
 */
#ifndef PSI_NET_SOCK_H
#define PSI_NET_SOCK_H

#include "app_clock.h"
#include "net.h"

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

#endif /* PSI_NET_SOCK_H */
