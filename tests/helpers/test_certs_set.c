/* The certificates of the TLS tests; see test_certs_set.h. */
#include "test_certs_set.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

typedef struct tc_item {
    EVP_PKEY *key;
    X509 *cert;
} tc_item;

/* Writes what fn puts in a memory BIO to dir/name (mode). */
static int tc_write(const char *dir, const char *name, int mode, const tc_item *it, int is_key)
{
    char path[4096], *p;
    BIO *b = BIO_new(BIO_s_mem());
    long n;
    int fd, ok;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    ok = b != NULL && (is_key ? PEM_write_bio_PrivateKey(b, it->key, NULL, NULL, 0, NULL, NULL)
                              : PEM_write_bio_X509(b, it->cert)) == 1;
    n = ok ? BIO_get_mem_data(b, &p) : -1;
    unlink(path);
    fd = n > 0 ? open(path, O_WRONLY | O_CREAT | O_EXCL, mode) : -1;
    ok = fd >= 0 && fchmod(fd, (mode_t)mode) == 0 && write(fd, p, (size_t)n) == (ssize_t)n;
    if (fd >= 0)
        ok = close(fd) == 0 && ok;
    BIO_free(b);
    if (!ok)
        fprintf(stderr, "test_certs: cannot write %s\n", path);
    return ok ? 0 : -1;
}

static int tc_ext(X509 *x, X509 *issuer, const char *name, const char *value)
{
    X509V3_CTX v3;
    X509_EXTENSION *e;
    int ok;

    X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
    e = X509V3_EXT_conf(NULL, &v3, name, value);
    ok = e != NULL && X509_add_ext(x, e, -1) == 1;
    X509_EXTENSION_free(e);
    return ok;
}

/* Makes it: a new key and a certificate for cn signed by ca (NULL:
 * self-signed CA), valid from days_from to days_to (relative to now), with
 * subjectAltName san (NULL: none). */
static int tc_make(tc_item *it, const tc_item *ca, const char *cn, const char *san,
                   long days_from, long days_to, long serial)
{
    X509_NAME *subj = X509_NAME_new();
    X509 *x = X509_new();
    int ok;

    it->key = EVP_EC_gen("P-256");
    it->cert = x;
    ok = it->key != NULL && x != NULL && subj != NULL && X509_set_version(x, 2) == 1 &&
         ASN1_INTEGER_set(X509_get_serialNumber(x), serial) == 1 &&
         X509_NAME_add_entry_by_NID(subj, NID_commonName, MBSTRING_UTF8,
                                    (const unsigned char *)cn, -1, -1, 0) == 1 &&
         X509_set_subject_name(x, subj) == 1 &&
         X509_set_issuer_name(x, ca != NULL ? X509_get_subject_name(ca->cert) : subj) == 1 &&
         X509_time_adj_ex(X509_getm_notBefore(x), (int)days_from, 0, NULL) != NULL &&
         X509_time_adj_ex(X509_getm_notAfter(x), (int)days_to, 0, NULL) != NULL &&
         X509_set_pubkey(x, it->key) == 1;
    if (ok && ca == NULL)
        ok = tc_ext(x, x, "basicConstraints", "critical,CA:TRUE") &&
             tc_ext(x, x, "keyUsage", "critical,keyCertSign,cRLSign") &&
             tc_ext(x, x, "subjectKeyIdentifier", "hash");
    else if (ok)
        ok = tc_ext(x, ca->cert, "basicConstraints", "critical,CA:FALSE") &&
             tc_ext(x, ca->cert, "keyUsage", "critical,digitalSignature") &&
             tc_ext(x, ca->cert, "authorityKeyIdentifier", "keyid") &&
             (san == NULL || tc_ext(x, ca->cert, "subjectAltName", san));
    ok = ok && X509_sign(x, ca != NULL ? ca->key : it->key, EVP_sha256()) > 0;
    X509_NAME_free(subj);
    return ok ? 0 : -1;
}

int test_certs_write(const char *dir)
{
    static const struct {
        const char *name, *cn, *san;
        int signer; // index of the CA in the table, -1: self-signed CA
        long from, to;
    } set[] = {
        { "ca", "test CA", NULL, -1, -1, 3650 },
        { "other-ca", "other CA", NULL, -1, -1, 3650 },
        { "server", "server", "DNS:localhost,IP:127.0.0.1", 0, -1, 365 },
        { "client", "client-1", "DNS:client-1", 0, -1, 365 },
        { "rogue-server", "server", "DNS:localhost,IP:127.0.0.1", 1, -1, 365 },
        { "rogue-client", "client-1", "DNS:client-1", 1, -1, 365 },
        { "expired-server", "server", "DNS:localhost,IP:127.0.0.1", 0, -30, -1 },
        { "expired-client", "client-1", "DNS:client-1", 0, -30, -1 },
        { "wrongname-server", "server", "DNS:elsewhere.example", 0, -1, 365 },
        { "client2", "client-2", "DNS:client-2", 0, -1, 365 },
    };
    enum { N = sizeof set / sizeof set[0] };
    tc_item it[N];
    int rc = 0;

    memset(it, 0, sizeof it);
    for (size_t i = 0; i < N && rc == 0; i++) {
        char name[256];

        rc = tc_make(&it[i], set[i].signer >= 0 ? &it[set[i].signer] : NULL, set[i].cn,
                     set[i].san, set[i].from, set[i].to, (long)i + 1);
        snprintf(name, sizeof name, "%s.pem", set[i].name);
        rc = rc != 0 ? rc : tc_write(dir, name, 0644, &it[i], 0);
        snprintf(name, sizeof name, "%s.key", set[i].name);
        rc = rc != 0 ? rc : tc_write(dir, name, 0600, &it[i], 1);
        if (rc != 0)
            fprintf(stderr, "test_certs: cannot make %s\n", set[i].name);
    }
    for (size_t i = 0; i < N; i++) {
        EVP_PKEY_free(it[i].key);
        X509_free(it[i].cert);
    }
    return rc;
}
