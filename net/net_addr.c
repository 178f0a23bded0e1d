/* Addresses, listening, accepting and connecting of net.h. */
#include "net.h"
#include "net_sock.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

/* Formats a socket address as numeric "HOST:PORT" ("[v6]:PORT"). */
static void net_addr_str(char *out, size_t cap, const struct sockaddr *sa, socklen_t len)
{
    char host[256], port[32];

    if (getnameinfo(sa, len, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        snprintf(out, cap, "?");
    else
        snprintf(out, cap, strchr(host, ':') != NULL ? "[%s]:%s" : "%s:%s", host, port);
}

/* Returns: whether p is a decimal port 0-65535 (at most 5 digits). */
static int net_port_ok(const char *p)
{
    size_t n = strlen(p);
    long v = 0;

    if (n == 0 || n > 5)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        v = v * 10 + (p[i] - '0');
    }
    return v <= 65535;
}

int psi_net_parse_addr(char *host, size_t host_cap, char *port, size_t port_cap,
                           const char *hostport, char *err, size_t err_len)
{
    const char *h = hostport, *colon = NULL, *why = NULL, *rb;
    size_t hl = 0;

    if (host_cap > 0)
        host[0] = '\0';
    if (port_cap > 0)
        port[0] = '\0';
    if (hostport[0] == '[') {
        h = hostport + 1;
        if ((rb = strchr(h, ']')) == NULL)
            why = "missing the ']' after the IPv6 address";
        else if (rb[1] != ':')
            why = rb[1] == '\0' ? "missing the port" : "expected ':' after ']'";
        else
            hl = (size_t)(rb - h), colon = rb + 1;
    } else if ((colon = strrchr(hostport, ':')) == NULL) {
        why = "missing the port";
    } else if (memchr(hostport, ':', (size_t)(colon - hostport)) != NULL) {
        why = "write an IPv6 address in brackets: [ADDRESS]:PORT";
    } else {
        hl = (size_t)(colon - hostport);
    }
    if (why == NULL && hl == 0)
        why = "missing the host";
    if (why == NULL && !net_port_ok(colon + 1))
        why = "the port must be a number from 0 to 65535";
    if (why == NULL && (hl >= host_cap || strlen(colon + 1) >= port_cap))
        why = "too long";
    if (why != NULL) {
        snprintf(err, err_len, "'%s' is not HOST:PORT (%s)", hostport, why);
        return PSI_NET_EADDR;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    memcpy(port, colon + 1, strlen(colon + 1) + 1);
    return 0;
}

/* Parses hostport and resolves it.  Out: *res (freeaddrinfo). */
static int net_resolve(struct addrinfo **res, const char *hostport, int passive, char *err,
                       size_t err_len)
{
    char host[256], port[8];
    struct addrinfo hints;
    int g;

    *res = NULL;
    if (psi_net_parse_addr(host, sizeof host, port, sizeof port, hostport, err,
                               err_len) != 0)
        return PSI_NET_EADDR;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    if ((g = getaddrinfo(host, port, &hints, res)) != 0) {
        snprintf(err, err_len, "%s: cannot resolve '%s': %s", hostport, host,
                 g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
        *res = NULL;
        return PSI_NET_EADDR;
    }
    return 0;
}

/* Makes one listening socket for ai.  Returns: 0 or PSI_NET_ELISTEN. */
static int net_listen_one(int *out, const struct addrinfo *ai, const char *hostport,
                          char *err, size_t err_len)
{
    const char *what = "create a socket";
    int one = 1, e, fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);

    if (fd >= 0) {
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        what = "bind";
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            what = "listen";
            if (listen(fd, 16) == 0) {
                *out = fd;
                return 0;
            }
        }
    }
    e = errno;
    if (fd >= 0)
        close(fd);
    snprintf(err, err_len, "%s: cannot %s: %s", hostport, what, strerror(e));
    return PSI_NET_ELISTEN;
}

int psi_net_listen(int *fd, char *bound, size_t bound_cap, const char *hostport,
                       char *err, size_t err_len)
{
    struct addrinfo *res, *ai;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int rc;

    *fd = -1;
    if (bound_cap > 0)
        bound[0] = '\0';
    if ((rc = net_resolve(&res, hostport, 1, err, err_len)) != 0)
        return rc;
    rc = PSI_NET_ELISTEN;
    for (ai = res; ai != NULL && rc != 0; ai = ai->ai_next)
        rc = net_listen_one(fd, ai, hostport, err, err_len);
    freeaddrinfo(res);
    if (rc == 0 && getsockname(*fd, (struct sockaddr *)&ss, &sl) == 0)
        net_addr_str(bound, bound_cap, (struct sockaddr *)&ss, sl);
    return rc;
}

/* Clears *c: closed, no buffer, no error. */
static void net_conn_init(psi_net_conn *c, int timeout_ms)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->timeout_ms = timeout_ms;
}

/* Makes fd non-blocking (accepted sockets do not inherit it).  Returns: 0 or
 * -1 (errno set). */
static int net_set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Turns a connected socket into *c: peer name, TCP_NODELAY, non-blocking.
 * Returns: 0 or PSI_NET_EIO (fd closed). */
static int net_conn_ready(psi_net_conn *c, int fd, const struct sockaddr *sa, socklen_t len)
{
    int one = 1;

    net_addr_str(c->peer, sizeof c->peer, sa, len);
    // small frames (handshake, keepalives) go out at once
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (net_set_nonblock(fd) != 0) {
        int e = errno;

        close(fd);
        return psi_net_fail(c, PSI_NET_EIO, "%s: cannot make the socket non-blocking: %s",
                        c->peer, strerror(e));
    }
    c->fd = fd;
    c->last_keepalive_ms = psi_app_now_ms();
    return 0;
}

int psi_net_accept(psi_net_conn *c, int lfd, int timeout_ms)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int fd;

    net_conn_init(c, timeout_ms);
    for (;;) {
        sl = sizeof ss;
        if ((fd = accept(lfd, (struct sockaddr *)&ss, &sl)) >= 0)
            break;
        // a client that gave up before we accepted it is not our failure
        if (errno != EINTR && errno != ECONNABORTED)
            return psi_net_fail(c, PSI_NET_EIO, "cannot accept a connection: %s",
                            strerror(errno));
    }
    return net_conn_ready(c, fd, (struct sockaddr *)&ss, sl);
}

/* Tries one address of psi_net_connect.  Returns: 0 or an error. */
static int net_connect_one(psi_net_conn *c, const struct addrinfo *ai, const char *hostport)
{
    int e = 0, fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    socklen_t el = sizeof e;
    short rev;

    if (fd < 0 || net_set_nonblock(fd) != 0) {
        e = errno;
    } else if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        e = errno;
        if (e == EINPROGRESS || e == EINTR) { // EINTR: it goes on in the background
            int r = psi_net_poll(fd, POLLOUT, psi_app_now_ms() + c->timeout_ms, &rev);

            if (r == 0) {
                close(fd);
                return psi_net_fail(c, PSI_NET_ETIMEOUT, "cannot connect to %s: no answer in "
                                "%g s (--timeout)", hostport, c->timeout_ms / 1000.0);
            }
            e = r < 0 ? errno : getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0 ? errno : e;
        }
    }
    if (e != 0) {
        if (fd >= 0)
            close(fd);
        return psi_net_fail(c, PSI_NET_ECONNECT, "cannot connect to %s: %s", hostport,
                        strerror(e));
    }
    return net_conn_ready(c, fd, ai->ai_addr, ai->ai_addrlen);
}

int psi_net_connect(psi_net_conn *c, const char *hostport, int timeout_ms)
{
    struct addrinfo *res, *ai;
    int rc;

    net_conn_init(c, timeout_ms);
    if ((rc = net_resolve(&res, hostport, 0, c->err, sizeof c->err)) != 0)
        return rc;
    rc = PSI_NET_ECONNECT;
    for (ai = res; ai != NULL && rc != 0; ai = ai->ai_next)
        rc = net_connect_one(c, ai, hostport);
    freeaddrinfo(res);
    return rc;
}
