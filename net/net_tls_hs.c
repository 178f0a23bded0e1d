/* The TLS handshake of a connection and the peer's identity; see
 * psi_net_tls_handshake in net_tls.h. */
#include "net_tls_priv.h"
#include "net_sock.h"
#include "app_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

/* What one handshake's verify callback sees (the SSL's app data). */
typedef struct hs_state {
    const psi_net_tls *t;
    char msg[300]; // why we refused the peer's certificate, or ""
} hs_state;

/* The name of the peer's side ("server" for a client). */
static const char *hs_peer_role(const psi_net_tls *t)
{
    return t->is_server ? "client" : "server";
}

/* The pinned form's check of the leaf x: its key is the pinned one and it
 * is within its dates.  Returns: 0, or an X509_V_ERR_* code with the
 * reason in h->msg. */
static int hs_check_pinned(hs_state *h, X509 *x)
{
    char fp[PSI_NET_TLS_FP_HEX + 1];
    const char *role = hs_peer_role(h->t);

    if (psi_net_tls_fp_x509(fp, x) != 0) {
        snprintf(h->msg, sizeof h->msg, "the %s's certificate was refused: its key cannot be "
                 "read", role);
        return X509_V_ERR_APPLICATION_VERIFICATION;
    }
    if (strcmp(fp, h->t->pin) != 0) {
        snprintf(h->msg, sizeof h->msg, "the %s's key sha256:%s is not the pinned key "
                 "(--tls-peer-key sha256:%s)", role, fp, h->t->pin);
        return X509_V_ERR_APPLICATION_VERIFICATION;
    }
    if (X509_cmp_current_time(X509_get0_notBefore(x)) >= 0) {
        snprintf(h->msg, sizeof h->msg, "the %s's certificate was refused: certificate is not "
                 "yet valid", role);
        return X509_V_ERR_CERT_NOT_YET_VALID;
    }
    if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0) {
        snprintf(h->msg, sizeof h->msg, "the %s's certificate was refused: certificate has "
                 "expired", role);
        return X509_V_ERR_CERT_HAS_EXPIRED;
    }
    return 0;
}

/* The verify callback of the pinned form: no CA, so chain errors are
 * ignored; the leaf is checked by hs_check_pinned. */
static int hs_verify_pinned(int ok, X509_STORE_CTX *xs)
{
    SSL *ssl = X509_STORE_CTX_get_ex_data(xs, SSL_get_ex_data_X509_STORE_CTX_idx());
    hs_state *h = ssl != NULL ? SSL_get_app_data(ssl) : NULL;
    X509 *leaf = X509_STORE_CTX_get0_cert(xs);
    int e;

    (void)ok;
    if (h == NULL || leaf == NULL)
        return 0;
    if ((e = hs_check_pinned(h, leaf)) != 0) {
        X509_STORE_CTX_set_error(xs, e);
        return 0;
    }
    return 1;
}

/* Returns: whether name is an IP address literal. */
static int hs_is_ip(const char *name)
{
    unsigned char a[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, name, a) == 1 || inet_pton(AF_INET6, name, a) == 1;
}

/* Returns: whether b (the first byte from the peer) can begin a TLS record. */
static int hs_tls_byte(uint8_t b)
{
    return b >= 0x14 && b <= 0x17;
}

/* A server whose TLS handshake met a plain-TCP shardpsi client (its first
 * byte is a HELLO frame's) tells it so in a plain ERROR frame, so that the
 * client says why instead of "closed the connection".  The message is
 * fixed: it tells the peer nothing a probe could not see.  Best effort,
 * without waiting. */
static void hs_tell_plain_client(psi_net_conn *c)
{
    static const char msg[] = "this server speaks TLS 1.3: give the client --tls-cert, "
                              "--tls-key and --tls-ca or --tls-peer-key (--no-tls only "
                              "against a server started with --no-tls)";
    uint8_t frame[9 + sizeof msg - 1];

    frame[0] = PSI_NET_FRAME_ERROR;
    psi_app_store_be(frame + 1, sizeof msg - 1, 8);
    memcpy(frame + 9, msg, sizeof msg - 1);
    ssize_t w = send(c->fd, frame, sizeof frame, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)w;
}

/* Says why the handshake failed (SSL_get_error gave se).  Returns: the code. */
static int hs_failure(psi_net_conn *c, SSL *ssl, const hs_state *h, int se, const char *name)
{
    unsigned long err = ERR_peek_last_error();
    int reason = ERR_GET_REASON(err), e;
    long vr = SSL_get_verify_result(ssl);
    uint8_t first[8];
    size_t nf = psi_net_tls_bio_first(ssl, first, sizeof first);
    char alert[64];

    if (h->msg[0] != '\0')
        return psi_net_fail(c, PSI_NET_ETLS, "TLS: %s", h->msg);
    if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED && vr != X509_V_OK)
        return psi_net_fail(c, PSI_NET_ETLS, "TLS: the %s's certificate was refused: %s%s%s%s",
                            hs_peer_role(h->t), X509_verify_cert_error_string(vr),
                            vr == X509_V_ERR_HOSTNAME_MISMATCH || vr == X509_V_ERR_IP_ADDRESS_MISMATCH
                                ? " (it does not name " : "",
                            vr == X509_V_ERR_HOSTNAME_MISMATCH || vr == X509_V_ERR_IP_ADDRESS_MISMATCH
                                ? name : "",
                            vr == X509_V_ERR_HOSTNAME_MISMATCH || vr == X509_V_ERR_IP_ADDRESS_MISMATCH
                                ? (h->t->is_server ? "; see --tls-peer-name)"
                                                   : "; see --tls-name)") : "");
    if (nf > 0 && !hs_tls_byte(first[0]) && h->t->is_server &&
        first[0] == PSI_NET_FRAME_HELLO)
        hs_tell_plain_client(c);
    if (nf > 0 && !hs_tls_byte(first[0]))
        return psi_net_fail(c, PSI_NET_ETLS, "TLS: the peer (%s) did not speak TLS 1.3 (is it a "
                            "plain-TCP peer? its first bytes are not a TLS record%s%s%s)",
                            c->peer, first[0] >= 1 && first[0] <= 9 ? ", they look like a "
                                                                      "plain " : "",
                            first[0] >= 1 && first[0] <= 9 ? psi_net_frame_name(first[0]) : "",
                            first[0] >= 1 && first[0] <= 9 ? " frame" : "");
    if (psi_net_tls_alert_name(reason, alert, sizeof alert) != NULL) {
        if (reason - SSL_AD_REASON_OFFSET == SSL_AD_PROTOCOL_VERSION)
            return psi_net_fail(c, PSI_NET_ETLS, "TLS: the peer (%s) did not speak TLS 1.3 "
                                "(alert: %s)", c->peer, alert);
        if (psi_net_tls_alert_refuses_us(reason))
            return psi_net_fail(c, PSI_NET_ETLS, "TLS: the peer (%s) refused our certificate "
                                "(alert: %s)", c->peer, alert);
        return psi_net_fail(c, PSI_NET_ETLS, "TLS: the peer (%s) ended the handshake (alert: "
                            "%s)", c->peer, alert);
    }
    if (se == SSL_ERROR_SYSCALL || reason == SSL_R_UNEXPECTED_EOF_WHILE_READING || err == 0) {
        e = psi_net_tls_bio_errno(ssl);
        if (e == 0 || e == ECONNRESET || e == EPIPE || e == ENOTCONN)
            return psi_net_fail(c, PSI_NET_ECLOSED, "TLS: the peer (%s) closed the connection "
                                "during the handshake%s", c->peer,
                                nf == 0 ? " (is it a plain-TCP peer?)" : "");
        return psi_net_fail(c, PSI_NET_EIO, "TLS: the connection to the peer (%s) failed "
                            "during the handshake: %s", c->peer, strerror(e));
    }
    if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_UNSUPPORTED_PROTOCOL ||
        reason == SSL_R_PACKET_LENGTH_TOO_LONG || reason == SSL_R_HTTP_REQUEST ||
        reason == SSL_R_RECORD_LENGTH_MISMATCH || reason == SSL_R_UNKNOWN_PROTOCOL)
        return psi_net_fail(c, PSI_NET_ETLS, "TLS: the peer (%s) did not speak TLS 1.3 (%s)",
                            c->peer, ERR_reason_error_string(err));
    return psi_net_fail(c, PSI_NET_ETLS, "TLS: the handshake with the peer (%s) failed: %s",
                        c->peer, ERR_reason_error_string(err) != NULL
                                     ? ERR_reason_error_string(err) : "unknown error");
}

/* Sets c->peer_id from the peer's certificate x.  Returns: 0 or -1. */
static int hs_peer_id(psi_net_conn *c, X509 *x)
{
    char fp[PSI_NET_TLS_FP_HEX + 1], cn[120] = "-";
    X509_NAME *subj = X509_get_subject_name(x);
    int i = subj != NULL ? X509_NAME_get_index_by_NID(subj, NID_commonName, -1) : -1;

    if (psi_net_tls_fp_x509(fp, x) != 0)
        return -1;
    if (i >= 0) {
        unsigned char *u = NULL;
        int n = ASN1_STRING_to_UTF8(&u, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, i)));

        if (n >= 0)
            psi_net_escape(cn, sizeof cn, u, (size_t)n);
        OPENSSL_free(u);
    }
    snprintf(c->peer_id, sizeof c->peer_id, "CN=%s, key sha256:%.16s", cn, fp);
    return 0;
}

/* Sets what the client checks of the server's name, and SNI.  Returns: 0
 * or -1. */
static int hs_client_name(SSL *ssl, const psi_net_tls *t, const char *name)
{
    int ip = hs_is_ip(name);

    if (!ip && SSL_set_tlsext_host_name(ssl, name) != 1)
        return -1;
    if (t->pinned)
        return 0;
    if (ip)
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1 ? 0 : -1;
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return SSL_set1_host(ssl, name) == 1 ? 0 : -1;
}

/* A server in the CA form with --tls-peer-name: the client's certificate
 * must carry one of the comma-separated names (a DNS name of its
 * subjectAltName, or its CN when it has none; no partial wildcards).
 * Returns: 0 or -1. */
static int hs_server_names(SSL *ssl, const char *names)
{
    char one[256];

    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    for (const char *p = names; *p != '\0';) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof one)
            return -1;
        memcpy(one, p, n);
        one[n] = '\0';
        if (SSL_add1_host(ssl, one) != 1)
            return -1;
        p += n + (p[n] == ',');
    }
    return 0;
}

int psi_net_tls_handshake(psi_net_conn *c, psi_net_tls *t, const char *host,
                          double deadline_ms)
{
    hs_state h = { .t = t, .msg = "" };
    const char *name = t->name != NULL ? t->name : host;
    SSL *ssl;
    BIO *bio;
    int rc;

    if (c->fd < 0 || c->tls != NULL)
        return psi_net_fail(c, PSI_NET_EIO, "TLS: the connection is closed or already TLS");
    if (!t->is_server && (name == NULL || name[0] == '\0'))
        return psi_net_fail(c, PSI_NET_ETLS, "TLS: no name to check the server's certificate "
                            "against (--tls-name)");
    if (c->deadline_ms > 0 && (deadline_ms <= 0 || c->deadline_ms < deadline_ms))
        deadline_ms = c->deadline_ms;
    ERR_clear_error();
    ssl = SSL_new(t->ctx);
    bio = psi_net_tls_bio(c->fd);
    if (ssl == NULL || bio == NULL) {
        SSL_free(ssl);
        BIO_free(bio);
        return psi_net_fail(c, PSI_NET_EIO, "TLS: out of memory for a connection");
    }
    SSL_set_bio(ssl, bio, bio);
    SSL_set_app_data(ssl, &h);
    if (t->pinned)
        SSL_set_verify(ssl, SSL_get_verify_mode(ssl), hs_verify_pinned);
    if (!t->is_server && hs_client_name(ssl, t, name) != 0) {
        rc = psi_net_fail(c, PSI_NET_ETLS, "TLS: cannot check the server's name %s", name);
        goto fail;
    }
    if (t->is_server && !t->pinned && t->name != NULL && hs_server_names(ssl, t->name) != 0) {
        rc = psi_net_fail(c, PSI_NET_ETLS, "TLS: cannot check the client's names %s", name);
        goto fail;
    }
    for (;;) {
        double until = deadline_ms > 0 ? deadline_ms : psi_app_now_ms() + c->timeout_ms;
        int r, se, pr;
        short rev;

        ERR_clear_error();
        r = t->is_server ? SSL_accept(ssl) : SSL_connect(ssl);
        if (r == 1)
            break;
        se = SSL_get_error(ssl, r);
        if (se != SSL_ERROR_WANT_READ && se != SSL_ERROR_WANT_WRITE) {
            rc = hs_failure(c, ssl, &h, se, name);
            goto fail;
        }
        pr = psi_net_poll(c->fd, se == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, until, &rev);
        if (pr == 0) {
            rc = psi_net_fail(c, PSI_NET_ETIMEOUT, "TLS: the handshake with the peer (%s) did "
                              "not finish in time%s", c->peer,
                              deadline_ms > 0 ? "" : " (--timeout)");
            goto fail;
        }
        if (pr < 0) {
            rc = psi_net_fail(c, PSI_NET_EIO, "TLS: waiting for the peer (%s) failed: %s",
                              c->peer, strerror(errno));
            goto fail;
        }
    }
    X509 *x = SSL_get0_peer_certificate(ssl);

    if (x == NULL) {
        rc = psi_net_fail(c, PSI_NET_ETLS, "TLS: the %s sent no certificate", hs_peer_role(t));
        goto fail;
    }
    if (t->pinned && hs_check_pinned(&h, x) != 0) { // the callback's check, once more
        rc = psi_net_fail(c, PSI_NET_ETLS, "TLS: %s", h.msg);
        goto fail;
    }
    if (hs_peer_id(c, x) != 0) {
        rc = psi_net_fail(c, PSI_NET_ETLS, "TLS: the %s's key cannot be read", hs_peer_role(t));
        goto fail;
    }
    SSL_set_app_data(ssl, NULL);
    c->tls = ssl;
    c->tls_flags = 0;
    return 0;
fail:
    SSL_free(ssl); // no close_notify after a failed handshake: the alert was sent
    ERR_clear_error();
    return rc;
}
