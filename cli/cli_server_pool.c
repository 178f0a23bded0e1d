/* `shardpsi server`'s round slots; see cli_server_pool.h. */
#define _GNU_SOURCE /* POLLRDHUP */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "app_clock.h"
#include "cli_server_pool.h"

int psi_cli_pool_init(psi_cli_pool *p, const psi_cli_pool_limits *lim)
{
    memset(p, 0, sizeof *p);
    p->lim = *lim;
    p->cap = lim->max_pending + lim->max_clients;
    p->ch = calloc(p->cap, sizeof *p->ch);
    return p->ch != NULL ? 0 : -1;
}

void psi_cli_pool_free(psi_cli_pool *p)
{
    for (size_t i = 0; i < p->n; i++) {
        if (p->ch[i].fd >= 0)
            close(p->ch[i].fd);
    }
    free(p->ch);
    memset(p, 0, sizeof *p);
}

/* The host of "HOST:PORT" or "[HOST]:PORT" into out. */
static void pool_host(char *out, size_t cap, const char *peer)
{
    const char *colon = strrchr(peer, ':');
    size_t n = colon != NULL ? (size_t)(colon - peer) : strlen(peer);

    if (n >= 2 && peer[0] == '[' && peer[n - 1] == ']') {
        peer++;
        n -= 2;
    }
    snprintf(out, cap, "%.*s", (int)n, peer);
}

/* Counts the processes from host in state (any state when state < 0). */
static size_t pool_count_addr(const psi_cli_pool *p, const char *host, int state)
{
    size_t k = 0;

    for (size_t i = 0; i < p->n; i++)
        k += (state < 0 || p->ch[i].state == state) && strcmp(p->ch[i].addr, host) == 0;
    return k;
}

/* Counts the processes of identity id in state. */
static size_t pool_count_id(const psi_cli_pool *p, const char *id, int state)
{
    size_t k = 0;

    for (size_t i = 0; i < p->n; i++)
        k += p->ch[i].state == state && strcmp(p->ch[i].id, id) == 0;
    return k;
}

int psi_cli_pool_may_join(const psi_cli_pool *p, const char *peer, char *why, size_t cap)
{
    char host[64];

    pool_host(host, sizeof host, peer);
    if (p->pending >= p->lim.max_pending || p->n >= p->cap) {
        snprintf(why, cap, "closed the connection from %s at once: %zu connections are "
                 "already waiting for a handshake or a slot (--max-pending)", peer,
                 p->pending);
        return -1;
    }
    if (pool_count_addr(p, host, PSI_CLI_POOL_PENDING) >= p->lim.max_per_address) {
        snprintf(why, cap, "closed the connection from %s at once: %zu connections from "
                 "%s are already in their handshake (--max-pending-per-address)", peer,
                 p->lim.max_per_address, host);
        return -1;
    }
    return 0;
}

void psi_cli_pool_add(psi_cli_pool *p, pid_t pid, int fd, const char *peer)
{
    psi_cli_pool_child *c = &p->ch[p->n++];

    memset(c, 0, sizeof *c);
    c->pid = pid;
    c->fd = fd;
    c->state = PSI_CLI_POOL_PENDING;
    pool_host(c->addr, sizeof c->addr, peer);
    p->pending++;
}

size_t psi_cli_pool_pollfds(const psi_cli_pool *p, struct pollfd *pfd, size_t cap)
{
    size_t k = 0;

    for (size_t i = 0; i < p->n && k < cap; i++) {
        if (p->ch[i].fd >= 0) {
            pfd[k].fd = p->ch[i].fd;
            pfd[k].events = POLLIN;
            pfd[k].revents = 0;
            k++;
        }
    }
    return k;
}

/* Closes the listener's end of child c. */
static void pool_close(psi_cli_pool_child *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* Answers child c with a refusal that says why. */
static void pool_refuse(psi_cli_pool_child *c, const char *why)
{
    char msg[256];
    int n = snprintf(msg, sizeof msg, "R%s", why);

    if (send(c->fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        pool_close(c);
}

/* Grants every slot it can, to the waiting processes in order of arrival:
 * a slot is free while fewer than --max-clients rounds run, and fewer than
 * --max-per-identity of the identity's (a connection without TLS has no
 * identity, and only --max-clients applies). */
static void pool_grant(psi_cli_pool *p)
{
    while (p->active < p->lim.max_clients) {
        psi_cli_pool_child *best = NULL;

        for (size_t i = 0; i < p->n; i++) {
            psi_cli_pool_child *c = &p->ch[i];
            if (c->state != PSI_CLI_POOL_WAITING || (best != NULL && c->seq > best->seq))
                continue;
            if (c->id[0] != '\0' &&
                pool_count_id(p, c->id, PSI_CLI_POOL_ACTIVE) >= p->lim.max_per_identity)
                continue;
            best = c;
        }
        if (best == NULL)
            return;
        best->state = PSI_CLI_POOL_ACTIVE;
        p->active++;
        p->pending--;
        if (send(best->fd, "G", 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
            pool_close(best); // it has gone: its reaping frees the slot
    }
}

/* A message from child c. */
static void pool_message(psi_cli_pool *p, psi_cli_pool_child *c)
{
    char msg[PSI_CLI_POOL_ID_MAX + 2];
    ssize_t n = recv(c->fd, msg, sizeof msg, MSG_DONTWAIT);

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0 || c->state != PSI_CLI_POOL_PENDING || msg[0] != 'W' ||
        memchr(msg, '\0', (size_t)n) != NULL || n > PSI_CLI_POOL_ID_MAX + 1) {
        // The child ended, or said what it has no business saying.
        pool_close(c);
        return;
    }
    memcpy(c->id, msg + 1, (size_t)n - 1);
    c->id[n - 1] = '\0';
    if (c->id[0] != '\0' &&
        pool_count_id(p, c->id, PSI_CLI_POOL_WAITING) >= p->lim.max_per_identity) {
        char why[200];
        snprintf(why, sizeof why, "the server already runs and queues as many rounds of "
                 "this client's identity as it allows (--max-per-identity %zu): try again "
                 "later", p->lim.max_per_identity);
        pool_refuse(c, why);
        return;
    }
    c->state = PSI_CLI_POOL_WAITING;
    c->seq = ++p->seq;
}

void psi_cli_pool_events(psi_cli_pool *p, const struct pollfd *pfd, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (pfd[k].revents == 0)
            continue;
        for (size_t i = 0; i < p->n; i++) {
            if (p->ch[i].fd == pfd[k].fd) {
                pool_message(p, &p->ch[i]);
                break;
            }
        }
    }
    pool_grant(p);
}

int psi_cli_pool_reaped(psi_cli_pool *p, pid_t pid)
{
    for (size_t i = 0; i < p->n; i++) {
        if (p->ch[i].pid != pid)
            continue;
        if (p->ch[i].state == PSI_CLI_POOL_ACTIVE)
            p->active--;
        else
            p->pending--;
        pool_close(&p->ch[i]);
        p->ch[i] = p->ch[--p->n];
        pool_grant(p);
        return 1;
    }
    return 0;
}

void psi_cli_pool_stop(psi_cli_pool *p)
{
    p->lim.max_clients = 0; // nothing more is granted
    for (size_t i = 0; i < p->n; i++) {
        if (p->ch[i].state != PSI_CLI_POOL_ACTIVE) {
            kill(p->ch[i].pid, SIGKILL);
            pool_close(&p->ch[i]);
        }
    }
}

/* The keepalive interval for c: a quarter of its timeout, 50 ms to 5 s. */
static int pool_keepalive_ms(const psi_net_conn *c)
{
    int q = c->timeout_ms / 4;

    return q < 50 ? 50 : q > 5000 ? 5000 : q;
}

int psi_cli_pool_wait(int fd, psi_net_conn *c, const char *identity, double deadline_ms,
                      char *why, size_t cap)
{
    char msg[256];
    int n = snprintf(msg, sizeof msg, "W%.*s", PSI_CLI_POOL_ID_MAX, identity);

    if (send(fd, msg, (size_t)n, MSG_NOSIGNAL) != n) {
        snprintf(why, cap, "the server is ending");
        return 1;
    }
    for (;;) {
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                              {.fd = c->fd, .events = POLLRDHUP}};
        double now = psi_app_now_ms(), left = deadline_ms - now;
        int ka = pool_keepalive_ms(c), r;

        if (deadline_ms > 0 && left <= 0) {
            snprintf(why, cap, "no round slot came free before the round's deadline "
                     "(--round-timeout)");
            return -1;
        }
        r = poll(p, 2, deadline_ms > 0 && left < ka ? (int)left + 1 : ka);
        if (r < 0 && errno != EINTR) {
            snprintf(why, cap, "waiting for a round slot: %s", strerror(errno));
            return -1;
        }
        if (r > 0 && p[0].revents != 0) {
            ssize_t got = recv(fd, msg, sizeof msg - 1, 0);
            if (got == 1 && msg[0] == 'G')
                return 0;
            if (got > 1 && msg[0] == 'R') {
                snprintf(why, cap, "%.*s", (int)got - 1, msg + 1);
                return 1;
            }
            snprintf(why, cap, "the server is ending");
            return 1;
        }
        if (r > 0 && p[1].revents != 0) {
            snprintf(why, cap, "the client (%s) closed the connection while its round "
                     "waited for a slot", c->peer);
            return -1;
        }
        psi_net_keepalive(c, ka);
        if (c->broken) {
            snprintf(why, cap, "%s", c->err);
            return -1;
        }
    }
}
