/* Transfers with progress, and keepalives while computing; see
 * net_progress.h. */
#define _GNU_SOURCE // POLLRDHUP
#include "net_progress.h"

#include <poll.h>

int psi_net_peer_gone(const psi_net_conn *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN | POLLRDHUP};

    if (c->fd < 0)
        return 0;
    if (c->broken && c->broken_code == PSI_NET_ECLOSED)
        return 1;
    // POLLRDHUP: the peer's FIN (after a TLS close_notify, too); bytes
    // still unread (a keepalive) do not hide it.
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

/* The keepalive of a computation's update: a quarter of the peer's (equal,
 * by default) timeout, at most 5 s; first, a peer gone ends the work
 * through c->gone. */
static void net_progress_tick(void *arg)
{
    psi_net_conn *c = arg;
    int interval = c->timeout_ms / 4;

    if (c->gone != NULL && psi_net_peer_gone(c))
        c->gone(c->gone_arg);

    psi_net_keepalive(c, interval < 5000 ? (interval > 50 ? interval : 50) : 5000);
}

void psi_net_progress_attach(psi_app_progress *p, psi_net_conn *c)
{
    p->tick = net_progress_tick;
    p->tick_arg = c;
}

void psi_net_progress_detach(psi_app_progress *p)
{
    p->tick = NULL;
    p->tick_arg = NULL;
}

int psi_net_progress_send(psi_app_progress *p, psi_net_conn *c, int type,
                          const uint8_t *payload, size_t len, const char *step)
{
    int rc;

    psi_app_progress_begin_transfer(p, step, len);
    rc = psi_net_send(c, type, payload, len, psi_app_progress_update, p);
    psi_app_progress_end(p);
    return rc;
}

int psi_net_progress_recv(psi_app_progress *p, psi_net_conn *c, int type, size_t max_len,
                          uint8_t **payload, size_t *len, const char *step)
{
    int rc;

    psi_app_progress_begin_transfer(p, step, 0);
    rc = psi_net_recv(c, type, max_len, payload, len, psi_app_progress_update, p);
    p->total = *len;
    psi_app_progress_end(p);
    return rc;
}

int psi_net_progress_send_fd(psi_app_progress *p, psi_net_conn *c, int type, int fd,
                             uint64_t at, uint64_t len, const char *step)
{
    int rc;

    psi_app_progress_begin_transfer(p, step, len);
    rc = psi_net_send_fd_at(c, type, fd, at, len, psi_app_progress_update, p);
    psi_app_progress_end(p);
    return rc;
}

int psi_net_progress_recv_fd(psi_app_progress *p, psi_net_conn *c, int type,
                             uint64_t max_len, int fd, uint64_t *len, const char *step)
{
    int rc;

    psi_app_progress_begin_transfer(p, step, 0);
    rc = psi_net_recv_fd(c, type, max_len, fd, len, psi_app_progress_update, p);
    p->total = *len;
    psi_app_progress_end(p);
    return rc;
}
