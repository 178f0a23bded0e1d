/* Key fingerprints and `shardpsi tls-keygen`; see net_tls.h. */
#include "net_tls_priv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

// The largest file psi_net_tls_fingerprint_file reads.
#define CERT_FILE_MAX ((size_t)1 << 20)

int psi_net_tls_fp_x509(char fp[PSI_NET_TLS_FP_HEX + 1], X509 *x)
{
    unsigned char *der = NULL, md[32];
    unsigned int mdlen = 0;
    int n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &der);
    int ok = n > 0 && EVP_Digest(der, (size_t)n, md, &mdlen, EVP_sha256(), NULL) == 1 &&
             mdlen == sizeof md;

    OPENSSL_free(der);
    if (!ok)
        return -1;
    for (size_t i = 0; i < sizeof md; i++)
        snprintf(fp + 2 * i, 3, "%02x", md[i]);
    return 0;
}

int psi_net_tls_fingerprint_file(char fp[PSI_NET_TLS_FP_HEX + 1], const char *cert_path,
                                 char *err, size_t err_len)
{
    FILE *f = fopen(cert_path, "rb");
    char *text = NULL;
    size_t len = 0, cap = 0;
    X509 *x = NULL;
    BIO *b;
    int rc = -1;

    fp[0] = '\0';
    if (f == NULL) {
        snprintf(err, err_len, "%s: cannot open: %s", cert_path, strerror(errno));
        return -1;
    }
    for (;;) { // the whole file, up to CERT_FILE_MAX
        size_t r;

        if (len == cap) {
            char *p = cap > CERT_FILE_MAX ? NULL : realloc(text, cap = cap ? 2 * cap : 8192);

            if (p == NULL) {
                snprintf(err, err_len, "%s: %s", cert_path, cap > CERT_FILE_MAX
                         ? "larger than 1 MiB: not a certificate file" : "out of memory");
                goto done;
            }
            text = p;
        }
        if ((r = fread(text + len, 1, cap - len, f)) == 0)
            break;
        len += r;
    }
    if (ferror(f)) {
        snprintf(err, err_len, "%s: cannot read: %s", cert_path, strerror(errno));
        goto done;
    }
    b = BIO_new_mem_buf(text, (int)len);
    x = b != NULL ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    if (x == NULL || psi_net_tls_fp_x509(fp, x) != 0) {
        snprintf(err, err_len, "%s: no PEM certificate in it", cert_path);
        goto done;
    }
    rc = 0;
done:
    ERR_clear_error();
    X509_free(x);
    free(text);
    fclose(f);
    return rc;
}

/* Makes the self-signed certificate of key for name, valid for days.
 * Returns: it, or NULL. */
static X509 *cert_make(EVP_PKEY *key, const char *name, int days)
{
    unsigned char serial[16], a[sizeof(struct in6_addr)];
    int ip = inet_pton(AF_INET, name, a) == 1 || inet_pton(AF_INET6, name, a) == 1;
    char san[300];
    X509 *x = X509_new();
    X509_NAME *subj = X509_NAME_new();
    BIGNUM *bn = NULL;
    X509V3_CTX v3;
    int ok = x != NULL && subj != NULL && RAND_bytes(serial, sizeof serial) == 1;

    serial[0] &= 0x7f; // a positive serial
    snprintf(san, sizeof san, "%s:%s", ip ? "IP" : "DNS", name);
    ok = ok && (bn = BN_bin2bn(serial, sizeof serial, NULL)) != NULL &&
         BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL &&
         X509_set_version(x, 2) == 1 &&
         X509_NAME_add_entry_by_NID(subj, NID_commonName, MBSTRING_UTF8,
                                    (const unsigned char *)name, -1, -1, 0) == 1 &&
         X509_set_subject_name(x, subj) == 1 && X509_set_issuer_name(x, subj) == 1 &&
         X509_gmtime_adj(X509_getm_notBefore(x), 0) != NULL &&
         X509_time_adj_ex(X509_getm_notAfter(x), days, 0, NULL) != NULL &&
         X509_set_pubkey(x, key) == 1;
    if (ok) {
        static const char *const ext[][2] = {
            { "basicConstraints", "critical,CA:FALSE" },
            { "keyUsage", "critical,digitalSignature" },
            { "extendedKeyUsage", "serverAuth,clientAuth" },
        };

        X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
        for (size_t i = 0; ok && i < sizeof ext / sizeof ext[0] + 1; i++) {
            X509_EXTENSION *e = X509V3_EXT_conf(NULL, &v3, i < 3 ? ext[i][0] : "subjectAltName",
                                                i < 3 ? ext[i][1] : san);

            ok = e != NULL && X509_add_ext(x, e, -1) == 1;
            X509_EXTENSION_free(e);
        }
    }
    ok = ok && X509_sign(x, key, EVP_sha256()) > 0;
    BN_free(bn);
    X509_NAME_free(subj);
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

/* Writes PEM text from b to a new file (O_EXCL, mode).  Returns: 0 or -1
 * with a message (the file is removed). */
static int cert_write(const char *path, BIO *b, int mode, const char *what, char *err,
                      size_t err_len)
{
    char *p;
    long n = BIO_get_mem_data(b, &p);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);

    if (fd < 0) {
        snprintf(err, err_len, "%s %s: cannot create: %s", what, path, strerror(errno));
        return -1;
    }
    if (fchmod(fd, (mode_t)mode) != 0 || n < 0 || write(fd, p, (size_t)n) != (ssize_t)n ||
        fsync(fd) != 0) {
        snprintf(err, err_len, "%s %s: cannot write: %s", what, path, strerror(errno));
        close(fd);
        unlink(path);
        return -1;
    }
    if (close(fd) != 0) {
        snprintf(err, err_len, "%s %s: cannot write: %s", what, path, strerror(errno));
        unlink(path);
        return -1;
    }
    return 0;
}

int psi_net_tls_keygen(const char *cert_path, const char *key_path, const char *name,
                       int days, char fp[PSI_NET_TLS_FP_HEX + 1], char *err, size_t err_len)
{
    EVP_PKEY *key = NULL;
    X509 *x = NULL;
    BIO *kb = BIO_new(BIO_s_secmem()), *cb = BIO_new(BIO_s_mem());
    int rc = -1;

    fp[0] = '\0';
    if (name == NULL || name[0] == '\0' || strlen(name) > 253 || days <= 0) {
        snprintf(err, err_len, "tls-keygen: a name (1 to 253 characters) and a positive "
                 "number of days are needed");
        goto done;
    }
    if (kb == NULL || cb == NULL || (key = EVP_EC_gen("P-256")) == NULL ||
        (x = cert_make(key, name, days)) == NULL ||
        PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL) != 1 ||
        PEM_write_bio_X509(cb, x) != 1 || psi_net_tls_fp_x509(fp, x) != 0) {
        snprintf(err, err_len, "tls-keygen: cannot make the key and certificate: %s",
                 ERR_reason_error_string(ERR_peek_last_error()) != NULL
                     ? ERR_reason_error_string(ERR_peek_last_error()) : "unknown error");
        goto done;
    }
    if (cert_write(key_path, kb, 0600, "key file", err, err_len) != 0)
        goto done;
    if (cert_write(cert_path, cb, 0644, "certificate file", err, err_len) != 0) {
        unlink(key_path);
        goto done;
    }
    rc = 0;
done:
    if (rc != 0)
        fp[0] = '\0';
    ERR_clear_error();
    BIO_free(kb);
    BIO_free(cb);
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
}
