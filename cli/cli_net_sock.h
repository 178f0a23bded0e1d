/*
 * What cli_net.c (frames) and cli_net_addr.c (addresses and sockets) share;
 * only they include this header.
 */
#ifndef PSI_CLI_NET_SOCK_H
#define PSI_CLI_NET_SOCK_H

#include "cli_net.h"

/** Returns: milliseconds of the monotonic clock. */
double psi_cli_net_now_ms(void);

/** Waits until fd reports one of `events` or psi_cli_net_now_ms() reaches
 *  deadline (EINTR retried).  Returns: 1 (ready, *revents set), 0
 *  (deadline), -1 (poll failed, errno set). */
int psi_cli_net_poll(int fd, short events, double deadline, short *revents);

/** Writes the message into c->err.  Returns: code. */
int psi_cli_net_fail(psi_cli_conn *c, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif /* PSI_CLI_NET_SOCK_H */
