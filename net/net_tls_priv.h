/*
 * What the files of the TLS layer share (net_io.c, net_tls.c, net_tls_hs.c,
 * net_tls_cert.c, net_tls_bio.c); only they include this header.
 */
#ifndef PSI_NET_TLS_PRIV_H
#define PSI_NET_TLS_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "net.h"
#include "net_tls.h"

/* Bits of psi_net_conn.tls_flags. */
enum {
    PSI_NET_TLS_RWANTW = 1, // the last SSL_read waits for the socket to take bytes
    PSI_NET_TLS_WWANTR = 2, // the last SSL_write waits for bytes to arrive
    PSI_NET_TLS_FATAL = 4   // a fatal TLS error: no close_notify any more
};

struct psi_net_tls {
    SSL_CTX *ctx;
    int is_server;
    int pinned;                        // pinned form (else the CA form)
    char pin[PSI_NET_TLS_FP_HEX + 1];  // pinned form: the peer's fingerprint
    char *name;                        // CA form: the client's --tls-name, the
                                       // server's --tls-peer-name, or NULL
};

/** A BIO over socket fd that sends with MSG_NOSIGNAL (a closed peer is an
 *  error, never SIGPIPE) and keeps the first bytes it reads.  Returns: the
 *  BIO or NULL. */
BIO *psi_net_tls_bio(int fd);

/** The first bytes read through ssl's BIO (at most cap).  Returns: their
 *  count. */
size_t psi_net_tls_bio_first(SSL *ssl, uint8_t *buf, size_t cap);

/** The errno of the last failed call of ssl's BIO (0: none, or EOF). */
int psi_net_tls_bio_errno(SSL *ssl);

/** For an OpenSSL reason code that reports a received alert: the alert's
 *  name ("unknown ca") in buf.  Returns: buf, or NULL for another reason. */
const char *psi_net_tls_alert_name(int reason, char *buf, size_t cap);

/** Whether a received alert (its reason code) says our certificate or key
 *  was refused. */
int psi_net_tls_alert_refuses_us(int reason);

/** Fails c on OpenSSL error err (of ERR_get_error): a record that failed
 *  the integrity check (or the peer's alert saying so) gives
 *  PSI_NET_EINTEGRITY, anything else PSI_NET_ETLS.  Returns: the code. */
int psi_net_tls_fail_err(psi_net_conn *c, unsigned long err);

/** The fingerprint of x's key: SHA-256 of its DER SubjectPublicKeyInfo, as
 *  PSI_NET_TLS_FP_HEX lowercase hex digits.  Returns: 0 or -1. */
int psi_net_tls_fp_x509(char fp[PSI_NET_TLS_FP_HEX + 1], X509 *x);

#endif /* PSI_NET_TLS_PRIV_H */
