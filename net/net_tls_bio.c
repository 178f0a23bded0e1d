/* The socket BIO of TLS connections, and what OpenSSL's errors mean to the
 * frames; see net_tls_priv.h. */
#include "net_tls_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <openssl/crypto.h>
#include <openssl/err.h>

#include "net_sock.h"

typedef struct tls_bio {
    int fd;
    int err;          // errno of the last failed call
    uint8_t first[8]; // the first bytes read
    size_t nfirst;
} tls_bio;

static BIO_METHOD *tls_bio_method;
static CRYPTO_ONCE tls_bio_once = CRYPTO_ONCE_STATIC_INIT;

static int tls_bio_write(BIO *b, const char *buf, int len)
{
    tls_bio *d = BIO_get_data(b);
    ssize_t n;

    BIO_clear_retry_flags(b);
    do
        n = send(d->fd, buf, (size_t)len, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        d->err = errno;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            BIO_set_retry_write(b);
    }
    return (int)n;
}

static int tls_bio_read(BIO *b, char *buf, int len)
{
    tls_bio *d = BIO_get_data(b);
    ssize_t n;

    BIO_clear_retry_flags(b);
    do
        n = recv(d->fd, buf, (size_t)len, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        d->err = errno;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            BIO_set_retry_read(b);
    } else if (n == 0) {
        d->err = 0;
    }
    for (ssize_t i = 0; i < n && d->nfirst < sizeof d->first; i++)
        d->first[d->nfirst++] = (uint8_t)buf[i];
    return (int)n;
}

static long tls_bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b, (void)num, (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int tls_bio_destroy(BIO *b)
{
    free(BIO_get_data(b));
    BIO_set_data(b, NULL);
    return 1;
}

static void tls_bio_init_method(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                                 "shardpsi socket");

    if (m != NULL && (BIO_meth_set_write(m, tls_bio_write) != 1 ||
                      BIO_meth_set_read(m, tls_bio_read) != 1 ||
                      BIO_meth_set_ctrl(m, tls_bio_ctrl) != 1 ||
                      BIO_meth_set_destroy(m, tls_bio_destroy) != 1)) {
        BIO_meth_free(m);
        m = NULL;
    }
    tls_bio_method = m;
}

BIO *psi_net_tls_bio(int fd)
{
    tls_bio *d;
    BIO *b;

    if (!CRYPTO_THREAD_run_once(&tls_bio_once, tls_bio_init_method) || tls_bio_method == NULL)
        return NULL;
    if ((d = calloc(1, sizeof *d)) == NULL)
        return NULL;
    if ((b = BIO_new(tls_bio_method)) == NULL) {
        free(d);
        return NULL;
    }
    d->fd = fd;
    BIO_set_data(b, d);
    BIO_set_init(b, 1);
    return b;
}

size_t psi_net_tls_bio_first(SSL *ssl, uint8_t *buf, size_t cap)
{
    tls_bio *d = BIO_get_data(SSL_get_rbio(ssl));
    size_t n = d->nfirst < cap ? d->nfirst : cap;

    memcpy(buf, d->first, n);
    return n;
}

int psi_net_tls_bio_errno(SSL *ssl)
{
    tls_bio *d = BIO_get_data(SSL_get_rbio(ssl));

    return d->err;
}

const char *psi_net_tls_alert_name(int reason, char *buf, size_t cap)
{
    const char *s, *a;

    if (reason < SSL_AD_REASON_OFFSET || reason >= SSL_AD_REASON_OFFSET + 256)
        return NULL;
    s = ERR_reason_error_string(ERR_PACK(ERR_LIB_SSL, 0, reason));
    // "tlsv1 alert unknown ca" -> "unknown ca"
    if (s != NULL && (a = strstr(s, "alert ")) != NULL)
        s = a + 6;
    if (s != NULL)
        snprintf(buf, cap, "%s", s);
    else
        snprintf(buf, cap, "alert %d", reason - SSL_AD_REASON_OFFSET);
    return buf;
}

int psi_net_tls_alert_refuses_us(int reason)
{
    int a = reason - SSL_AD_REASON_OFFSET;

    return a == SSL_AD_HANDSHAKE_FAILURE || (a >= SSL_AD_BAD_CERTIFICATE &&
                                             a <= SSL_AD_UNKNOWN_CA) ||
           a == SSL_AD_ACCESS_DENIED || a == SSL_AD_DECRYPT_ERROR ||
           a == SSL_AD_CERTIFICATE_REQUIRED;
}

int psi_net_tls_fail_err(psi_net_conn *c, unsigned long err)
{
    int reason = ERR_GET_REASON(err);
    const char *why = ERR_reason_error_string(err);
    char alert[64];

    if (why == NULL)
        why = "unknown error";
    if (reason == SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC || reason == SSL_R_DECRYPTION_FAILED)
        return psi_net_fail(c, PSI_NET_EINTEGRITY, "TLS: a record from the peer (%s) failed "
                            "its integrity check: bytes were changed on the way (%s)",
                            c->peer, why);
    if (psi_net_tls_alert_name(reason, alert, sizeof alert) == NULL)
        return psi_net_fail(c, PSI_NET_ETLS, "TLS: the connection with the peer (%s) failed: "
                            "%s", c->peer, why);
    if (reason == SSL_R_SSLV3_ALERT_BAD_RECORD_MAC ||
        reason == SSL_R_TLSV1_ALERT_DECRYPTION_FAILED)
        return psi_net_fail(c, PSI_NET_EINTEGRITY, "TLS: a record we sent failed the peer's "
                            "(%s) integrity check: bytes were changed on the way (alert: %s)",
                            c->peer, alert);
    if (psi_net_tls_alert_refuses_us(reason))
        return psi_net_fail(c, PSI_NET_ETLS, "TLS: the peer (%s) refused our certificate "
                            "(alert: %s)", c->peer, alert);
    return psi_net_fail(c, PSI_NET_ETLS, "TLS: the peer (%s) ended the connection (alert: %s)",
                        c->peer, alert);
}
