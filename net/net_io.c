/* The byte layer under the frames: plain TCP, or TLS once c->tls is set;
 * see net_sock.h. */
#include "net_sock.h"
#include "net_tls_priv.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <openssl/err.h>

// TLS: the header and the first payload bytes go out in one record of this
// many bytes at most (TLS's largest plaintext).
#define IO_FIRST_RECORD 16384

/* After an SSL_read or SSL_write that returned r <= 0: a wait (0, and the
 * direction in c->tls_flags), the socket's failure (1, *e), or TLS's
 * (a code).  want_bit: the flag meaning "this call waits for the other
 * direction". */
static int io_tls_error(psi_net_conn *c, int r, unsigned want_bit, int reading, int *e)
{
    SSL *ssl = c->tls;
    int se = SSL_get_error(ssl, r);
    unsigned long err;

    switch (se) {
    case SSL_ERROR_WANT_READ:
        c->tls_flags = reading ? c->tls_flags & ~want_bit : c->tls_flags | want_bit;
        return 0;
    case SSL_ERROR_WANT_WRITE:
        c->tls_flags = reading ? c->tls_flags | want_bit : c->tls_flags & ~want_bit;
        return 0;
    case SSL_ERROR_ZERO_RETURN: // close_notify: the peer closed
        *e = 0;
        return 1;
    case SSL_ERROR_SYSCALL:
        c->tls_flags |= PSI_NET_TLS_FATAL;
        *e = psi_net_tls_bio_errno(ssl);
        ERR_clear_error();
        return 1;
    default:
        c->tls_flags |= PSI_NET_TLS_FATAL;
        err = ERR_peek_last_error();
        ERR_clear_error();
        if (ERR_GET_REASON(err) == SSL_R_UNEXPECTED_EOF_WHILE_READING || err == 0) {
            *e = psi_net_tls_bio_errno(ssl);
            return 1;
        }
        return psi_net_tls_fail_err(c, err);
    }
}

int psi_net_io_read(psi_net_conn *c, uint8_t *buf, size_t cap, size_t *got, int *e)
{
    ssize_t n;

    *got = 0;
    if (c->tls != NULL) {
        size_t m = 0;
        int r;

        ERR_clear_error();
        r = SSL_read_ex(c->tls, buf, cap, &m);
        if (r == 1) {
            c->tls_flags &= ~(unsigned)PSI_NET_TLS_RWANTW;
            *got = m;
            return 0;
        }
        return io_tls_error(c, r, PSI_NET_TLS_RWANTW, 1, e);
    }
    do
        n = recv(c->fd, buf, cap, 0);
    while (n < 0 && errno == EINTR);
    if (n > 0) {
        *got = (size_t)n;
        return 0;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    *e = n == 0 ? 0 : errno;
    return 1;
}

/* TLS's half of psi_net_io_write. */
static int io_tls_write(psi_net_conn *c, const uint8_t *a, size_t alen, const uint8_t *b,
                        size_t blen, size_t *put, int *e)
{
    uint8_t first[IO_FIRST_RECORD];
    const uint8_t *p = b;
    size_t n = blen, m = 0;
    int r;

    if (alen > 0) { // a short head and the start of b in one record
        size_t more = alen >= sizeof first ? 0 : sizeof first - alen;

        if (alen > sizeof first)
            alen = sizeof first;
        if (more > blen)
            more = blen;
        memcpy(first, a, alen);
        if (more > 0)
            memcpy(first + alen, b, more);
        p = first;
        n = alen + more;
    }
    ERR_clear_error();
    r = SSL_write_ex(c->tls, p, n, &m);
    if (alen > 0)
        OPENSSL_cleanse(first, n);
    if (r == 1) {
        c->tls_flags &= ~(unsigned)PSI_NET_TLS_WWANTR;
        *put = m;
        return 0;
    }
    return io_tls_error(c, r, PSI_NET_TLS_WWANTR, 0, e);
}

int psi_net_io_write(psi_net_conn *c, const uint8_t *a, size_t alen, const uint8_t *b,
                     size_t blen, size_t *put, int *e)
{
    struct iovec iov[2];
    struct msghdr m = { .msg_iov = iov };
    ssize_t n;

    *put = 0;
    if (c->tls != NULL)
        return io_tls_write(c, a, alen, b, blen, put, e);
    if (alen > 0)
        iov[m.msg_iovlen++] = (struct iovec){ (void *)a, alen };
    if (blen > 0)
        iov[m.msg_iovlen++] = (struct iovec){ (void *)b, blen };
    do
        n = sendmsg(c->fd, &m, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n >= 0) {
        *put = (size_t)n;
        return 0;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK)
        return 0;
    *e = errno;
    return 1;
}

int psi_net_io_poll(psi_net_conn *c, short events, double deadline, short *revents)
{
    short real = 0, rev = 0, out;
    int r;

    if (c->tls == NULL)
        return psi_net_poll(c->fd, events, deadline, revents);
    if ((events & POLLIN) != 0 && SSL_pending(c->tls) > 0) { // no byte to wait for
        *revents = POLLIN;
        return 1;
    }
    if ((events & POLLIN) != 0)
        real |= (c->tls_flags & PSI_NET_TLS_RWANTW) != 0 ? POLLOUT : POLLIN;
    if ((events & POLLOUT) != 0)
        real |= (c->tls_flags & PSI_NET_TLS_WWANTR) != 0 ? POLLIN : POLLOUT;
    if ((r = psi_net_poll(c->fd, real, deadline, &rev)) <= 0)
        return r;
    out = rev & (POLLERR | POLLHUP);
    if ((events & POLLIN) != 0 &&
        (rev & ((c->tls_flags & PSI_NET_TLS_RWANTW) != 0 ? POLLOUT : POLLIN)) != 0)
        out |= POLLIN;
    if ((events & POLLOUT) != 0 &&
        (rev & ((c->tls_flags & PSI_NET_TLS_WWANTR) != 0 ? POLLIN : POLLOUT)) != 0)
        out |= POLLOUT;
    *revents = out;
    return 1;
}

int psi_net_io_write_all(psi_net_conn *c, const uint8_t *buf, size_t len, double deadline)
{
    size_t sent = 0;

    while (sent < len) {
        size_t put;
        short rev;
        int e = 0, r = psi_net_io_write(c, NULL, 0, buf + sent, len - sent, &put, &e);

        if (r == 1)
            return e == 0 ? EPIPE : e;
        if (r < 0)
            return r;
        sent += put;
        if (put > 0)
            continue;
        if ((r = psi_net_io_poll(c, POLLOUT, deadline, &rev)) <= 0)
            return r == 0 ? ETIMEDOUT : errno;
    }
    return 0;
}

void psi_net_io_tls_end(psi_net_conn *c)
{
    if (c->tls == NULL)
        return;
    if ((c->tls_flags & PSI_NET_TLS_FATAL) == 0) {
        ERR_clear_error();
        (void)SSL_shutdown(c->tls); // one try: it does not wait for the socket
    }
    SSL_free(c->tls);
    ERR_clear_error();
    c->tls = NULL;
    c->tls_flags = 0;
}
