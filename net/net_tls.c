/* TLS contexts: the files, their checks and the settings; see net_tls.h. */
#include "net_tls_priv.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>

// The largest certificate, key or CA file read.
#define TLS_FILE_MAX ((size_t)1 << 20)

static int tls_err(char *err, size_t err_len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int tls_err(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
    ERR_clear_error();
    return -1;
}

/* Reads a whole file of at most TLS_FILE_MAX bytes.  checked: apply the
 * checks of net_tls.h (secret: those of a key).  what: "certificate file"...
 * Returns: 0 or -1 with a message.  Out: *buf (malloc'd), *len. */
static int tls_read_file(uint8_t **buf, size_t *len, const char *path, const char *what,
                         int checked, int secret, char *err, size_t err_len)
{
    struct stat st;
    uint8_t *p = NULL;
    size_t got = 0;
    int fd;

    *buf = NULL;
    *len = 0;
    // Without blocking: a FIFO or device at the path is refused below at
    // once instead of waiting for a writer.
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (checked ? O_NOFOLLOW : 0));
    if (fd < 0 && errno == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        return tls_err(err, err_len, "%s %s is a symbolic link: give the file itself", what,
                       path);
    if (fd < 0)
        return tls_err(err, err_len, "%s %s: cannot open: %s", what, path, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return tls_err(err, err_len, "%s %s: not a regular file", what, path);
    }
    if (checked && st.st_uid != geteuid() && st.st_uid != 0) {
        close(fd);
        return tls_err(err, err_len, "%s %s belongs to user %u, neither us (%u) nor root",
                       what, path, (unsigned)st.st_uid, (unsigned)geteuid());
    }
    if (checked && secret && (st.st_mode & 077) != 0) {
        close(fd);
        return tls_err(err, err_len, "%s %s is accessible to others (mode %04o): run "
                       "'chmod 600 %s' if the key has not leaked, else make a new one", what,
                       path, (unsigned)(st.st_mode & 07777), path);
    }
    if (checked && (st.st_mode & 022) != 0) {
        close(fd);
        return tls_err(err, err_len, "%s %s is writable by others (mode %04o): run "
                       "'chmod go-w %s'", what, path, (unsigned)(st.st_mode & 07777), path);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if ((uint64_t)st.st_size > TLS_FILE_MAX) {
        close(fd);
        return tls_err(err, err_len, "%s %s: larger than %zu bytes", what, path, TLS_FILE_MAX);
    }
    if ((p = OPENSSL_malloc((size_t)st.st_size + 1)) == NULL) { // freed by OpenSSL
        close(fd);
        return tls_err(err, err_len, "%s %s: out of memory", what, path);
    }
    for (;;) { // the whole file, even if it grew
        ssize_t r = read(fd, p + got, (size_t)st.st_size + 1 - got);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || (got += (size_t)r) > (size_t)st.st_size)
            break;
    }
    close(fd);
    if (got > (size_t)st.st_size) {
        OPENSSL_clear_free(p, (size_t)st.st_size + 1);
        return tls_err(err, err_len, "%s %s: changed while it was read", what, path);
    }
    *buf = p;
    *len = got;
    return 0;
}

/* Parses a key fingerprint (see psi_net_tls_opts.peer_key) into out, 64
 * lowercase hex digits.  Returns: 0 or -1. */
static int tls_parse_fp(char out[PSI_NET_TLS_FP_HEX + 1], const char *s)
{
    size_t n = 0;

    if (strncasecmp(s, "sha256:", 7) == 0)
        s += 7;
    for (size_t i = 0; s[i] != '\0'; i++) {
        if (s[i] == ':' && n % 2 == 0 && n > 0 && s[i + 1] != '\0' && s[i + 1] != ':')
            continue;
        if (!isxdigit((unsigned char)s[i]) || n == PSI_NET_TLS_FP_HEX)
            return -1;
        out[n++] = (char)tolower((unsigned char)s[i]);
    }
    out[n] = '\0';
    return n == PSI_NET_TLS_FP_HEX ? 0 : -1;
}

/* Loads this side's certificate chain and key into ctx, and checks they
 * match.  Returns: 0 or -1 with a message. */
static int tls_load_identity(SSL_CTX *ctx, const psi_net_tls_opts *o, char *err,
                             size_t err_len)
{
    uint8_t *text = NULL;
    size_t len = 0;
    EVP_PKEY *key = NULL;
    X509 *x = NULL;
    BIO *b;
    int rc = -1;

    if (tls_read_file(&text, &len, o->cert, "certificate file", 1, 0, err, err_len) != 0)
        return -1;
    b = BIO_new_mem_buf(text, (int)len);
    x = b != NULL ? PEM_read_bio_X509_AUX(b, NULL, NULL, NULL) : NULL;
    if (x == NULL || SSL_CTX_use_certificate(ctx, x) != 1) {
        tls_err(err, err_len, "certificate file %s: no PEM certificate in it", o->cert);
        goto done;
    }
    for (X509 *more; (more = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL;)
        if (SSL_CTX_add0_chain_cert(ctx, more) != 1) {
            X509_free(more);
            tls_err(err, err_len, "certificate file %s: a chain certificate is refused",
                    o->cert);
            goto done;
        }
    BIO_free(b);
    OPENSSL_free(text);
    b = NULL;
    text = NULL;
    ERR_clear_error(); // the end of the file
    if (tls_read_file(&text, &len, o->key, "key file", 1, 1, err, err_len) != 0)
        goto done;
    b = BIO_new_mem_buf(text, (int)len);
    key = b != NULL ? PEM_read_bio_PrivateKey(b, NULL, NULL, (void *)"") : NULL;
    if (key == NULL) {
        tls_err(err, err_len, "key file %s: no PEM private key in it (or one with a "
                "passphrase, which is not supported)", o->key);
        goto done;
    }
    if (SSL_CTX_use_PrivateKey(ctx, key) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        tls_err(err, err_len, "key file %s does not hold the key of the certificate in %s",
                o->key, o->cert);
        goto done;
    }
    rc = 0;
done:
    BIO_free(b);
    if (text != NULL)
        OPENSSL_clear_free(text, len);
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
}

/* Loads the CA certificates of the CA form.  Returns: 0 or -1. */
static int tls_load_ca(SSL_CTX *ctx, const char *path, char *err, size_t err_len)
{
    X509_STORE *st = SSL_CTX_get_cert_store(ctx);
    uint8_t *text;
    size_t len, n = 0;
    BIO *b;
    X509 *x;

    if (tls_read_file(&text, &len, path, "CA file", 1, 0, err, err_len) != 0)
        return -1;
    b = BIO_new_mem_buf(text, (int)len);
    while (b != NULL && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
        int ok = X509_STORE_add_cert(st, x);

        X509_free(x);
        if (ok != 1)
            break;
        n++;
    }
    BIO_free(b);
    OPENSSL_free(text);
    if (n == 0)
        return tls_err(err, err_len, "CA file %s: no PEM certificate in it", path);
    ERR_clear_error();
    return 0;
}

int psi_net_tls_new(psi_net_tls **t, const psi_net_tls_opts *o, int is_server, char *err,
                    size_t err_len)
{
    psi_net_tls *n;

    *t = NULL;
    if (o->cert == NULL || o->key == NULL)
        return tls_err(err, err_len, "TLS needs both --tls-cert and --tls-key");
    if ((o->ca == NULL) == (o->peer_key == NULL))
        return tls_err(err, err_len, "TLS needs exactly one of --tls-ca (a CA) and "
                       "--tls-peer-key (the peer's pinned key)");
    if ((n = calloc(1, sizeof *n)) == NULL)
        return tls_err(err, err_len, "out of memory");
    n->is_server = is_server;
    n->pinned = o->peer_key != NULL;
    if (o->name != NULL && (n->name = strdup(o->name)) == NULL) {
        free(n);
        return tls_err(err, err_len, "out of memory");
    }
    if (n->pinned && tls_parse_fp(n->pin, o->peer_key) != 0) {
        psi_net_tls_free(n);
        return tls_err(err, err_len, "--tls-peer-key: not a key fingerprint (expected %d hex "
                       "digits, as tls-keygen prints them: a \"sha256:\" prefix and ':' "
                       "between byte pairs are allowed)", PSI_NET_TLS_FP_HEX);
    }
    n->ctx = SSL_CTX_new(is_server ? TLS_server_method() : TLS_client_method());
    if (n->ctx == NULL || SSL_CTX_set_min_proto_version(n->ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(n->ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_num_tickets(n->ctx, 0) != 1) {
        psi_net_tls_free(n);
        return tls_err(err, err_len, "TLS: cannot make a TLS 1.3 context");
    }
    SSL_CTX_set_options(n->ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION |
                                    SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
    SSL_CTX_set_session_cache_mode(n->ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_mode(n->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // the peer's certificate is always required; the pinned form's check is
    // the callback of net_tls_hs.c, set on each connection
    SSL_CTX_set_verify(n->ctx, SSL_VERIFY_PEER | (is_server ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                                                            : 0), NULL);
    if (tls_load_identity(n->ctx, o, err, err_len) != 0 ||
        (!n->pinned && tls_load_ca(n->ctx, o->ca, err, err_len) != 0)) {
        psi_net_tls_free(n);
        return -1;
    }
    *t = n;
    return 0;
}

void psi_net_tls_free(psi_net_tls *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx); // frees the key (OpenSSL clears private key memory)
    free(t->name);
    OPENSSL_cleanse(t, sizeof *t);
    free(t);
}
