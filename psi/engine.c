/* Engine lifecycle and keys (PROTOCOL.md §2).  The key exists in plain
 * memory only inside the engine's guarded psi_secret and, for the length of
 * one call, in BIGNUMs that are cleared when freed. */
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>
#include <sodium.h>

#include "engine.h"
#include "suite.h"

/* n, the order of the P-256 group, big-endian. */
static const uint8_t group_order[PSI_KEY_BYTES] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84,
    0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
};

void psi_settings_default(psi_settings *s)
{
    if (s == NULL)
        return;
    memset(s, 0, sizeof *s);
    s->role = PSI_ROLE_CLIENT;
    s->reveal_intersection = 1;
}

static int settings_valid(const psi_settings *s)
{
    static const unsigned char zero[sizeof s->reserved];
    return (s->role == PSI_ROLE_CLIENT || s->role == PSI_ROLE_SERVER) &&
           (s->reveal_intersection == 0 || s->reveal_intersection == 1) &&
           psi_suite_known((int)s->suite) &&
           memcmp(s->reserved, zero, sizeof zero) == 0;
}

/* Allocates the engine and its guarded secret, both zeroed. */
static int engine_alloc(psi_engine **out, const psi_settings *s)
{
    if (sodium_init() < 0)
        return PSI_E_CRYPTO;
    psi_engine *e = psi_calloc(1, sizeof *e);
    if (e == NULL)
        return PSI_E_NOMEM;
    e->secret = sodium_malloc(sizeof *e->secret);
    if (e->secret == NULL) {
        psi_free(e);
        return PSI_E_NOMEM;
    }
    sodium_memzero(e->secret, sizeof *e->secret);
    e->settings = *s;
    *out = e;
    return PSI_OK;
}

/* Range-checks k (any length, big-endian: §2.1), then stores be32(k) and
 * be32(k^-1 mod n) in the guarded secret. */
static int secret_set(psi_secret *sec, const uint8_t *key, size_t key_len)
{
    int rc = PSI_E_NOMEM;
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *k = BN_secure_new(), *n = BN_new(), *kinv = BN_secure_new();
    BIGNUM *n_minus_2 = BN_new();
    if (ctx == NULL || k == NULL || n == NULL || kinv == NULL || n_minus_2 == NULL)
        goto done;
    BN_set_flags(k, BN_FLG_CONSTTIME);
    rc = PSI_E_CRYPTO;
    if (key_len > INT32_MAX || BN_bin2bn(key, (int)key_len, k) == NULL ||
        BN_bin2bn(group_order, sizeof group_order, n) == NULL)
        goto done;
    rc = PSI_E_KEY_OUT_OF_RANGE;
    if (BN_is_zero(k) || BN_cmp(k, n) >= 0)
        goto done;
    rc = PSI_E_CRYPTO;
    /* n is prime: k^-1 = k^(n-2), by OpenSSL's constant-time fixed-window
     * exponentiation.  Not BN_mod_inverse: even with BN_FLG_CONSTTIME its
     * Euclid loop runs a key-dependent number of steps on key-sized
     * BIGNUMs (tests/psi/ctime_psi.c saw about 180 branch sites there). */
    if (BN_copy(n_minus_2, n) == NULL || !BN_sub_word(n_minus_2, 2) ||
        !BN_mod_exp_mont_consttime(kinv, k, n_minus_2, n, ctx, NULL) ||
        BN_bn2binpad(k, sec->k, PSI_KEY_BYTES) != PSI_KEY_BYTES ||
        BN_bn2binpad(kinv, sec->kinv, PSI_KEY_BYTES) != PSI_KEY_BYTES)
        goto done;
    rc = PSI_OK;
done:
    if (rc == PSI_E_CRYPTO)
        psi_crypto_error();
    BN_clear_free(k);
    BN_clear_free(kinv);
    BN_free(n);
    BN_free(n_minus_2);
    BN_CTX_free(ctx);
    return rc;
}

int psi_engine_create_from_key(psi_engine **out, const psi_settings *s,
                               const uint8_t *key, size_t key_len)
{
    PSI_CHECK_ARG(out != NULL);
    *out = NULL;
    PSI_CHECK_ARG(s != NULL && settings_valid(s));
    PSI_CHECK_ARG(key != NULL || key_len == 0);
    psi_detail_clear();
    if (key_len == 0)
        return psi_fail_at(PSI_E_KEY_OUT_OF_RANGE, "key", -1, -1);
    psi_engine *e = NULL;
    int rc = engine_alloc(&e, s);
    if (rc != PSI_OK)
        return rc;
    if (s->suite == PSI_SUITE_RISTRETTO255)
        rc = psi_r255_key_set(e->secret->k, e->secret->kinv, key, key_len);
    else
        rc = secret_set(e->secret, key, key_len);
    if (rc != PSI_OK) {
        psi_engine_free(e);
        return rc == PSI_E_KEY_OUT_OF_RANGE ? psi_fail_at(rc, "key", -1, -1) : rc;
    }
    sodium_mprotect_readonly(e->secret);
    *out = e;
    return PSI_OK;
}

int psi_engine_create(psi_engine **out, const psi_settings *s)
{
    PSI_CHECK_ARG(out != NULL);
    *out = NULL;
    PSI_CHECK_ARG(s != NULL && settings_valid(s));
    if (sodium_init() < 0)
        return PSI_E_CRYPTO;
    /* Rejection sampling: uniform in [1, n-1] (§2.2); a draw is rejected
     * with probability about 2^-32.  ristretto255 (§16.3): 253 random bits,
     * little-endian, rejected unless in [1, l-1] (probability about 1/2),
     * as libsodium's crypto_core_ristretto255_scalar_random does. */
    uint8_t draw[PSI_KEY_BYTES];
    int rc;
    do {
        randombytes_buf(draw, sizeof draw);
        if (s->suite == PSI_SUITE_RISTRETTO255)
            draw[PSI_KEY_BYTES - 1] &= 0x1f;
        rc = psi_engine_create_from_key(out, s, draw, sizeof draw);
    } while (rc == PSI_E_KEY_OUT_OF_RANGE);
    sodium_memzero(draw, sizeof draw);
    return rc;
}

int psi_engine_clone(psi_engine **out, const psi_engine *e, const psi_settings *s)
{
    PSI_CHECK_ARG(out != NULL);
    *out = NULL;
    PSI_CHECK_ARG(e != NULL);
    if (s == NULL)
        s = &e->settings;
    PSI_CHECK_ARG(settings_valid(s));
    PSI_CHECK_ARG(s->suite == e->settings.suite); /* the key belongs to one group */
    psi_engine *c = NULL;
    int rc = engine_alloc(&c, s);
    if (rc != PSI_OK)
        return rc;
    memcpy(c->secret, e->secret, sizeof *c->secret);
    sodium_mprotect_readonly(c->secret);
    *out = c;
    return PSI_OK;
}

void psi_engine_free(psi_engine *e)
{
    if (e == NULL)
        return;
    if (e->secret != NULL)
        sodium_free(e->secret); /* wipes before unmapping */
    sodium_memzero(e, sizeof *e);
    psi_free(e);
}

int psi_engine_export_key(const psi_engine *e, uint8_t *out, size_t *out_len)
{
    PSI_CHECK_ARG(out_len != NULL);
    size_t cap = *out_len;
    *out_len = 0;
    PSI_CHECK_ARG(e != NULL && out != NULL);
    if (cap < PSI_KEY_BYTES)
        return PSI_E_BUFFER_TOO_SMALL;
    memcpy(out, e->secret->k, PSI_KEY_BYTES);
    *out_len = PSI_KEY_BYTES;
    return PSI_OK;
}

psi_role psi_engine_role(const psi_engine *e)
{
    return e == NULL ? (psi_role)0 : e->settings.role;
}

int psi_engine_reveal(const psi_engine *e)
{
    return e == NULL ? 0 : e->settings.reveal_intersection;
}

psi_suite psi_engine_suite(const psi_engine *e)
{
    return e == NULL ? PSI_SUITE_OPENMINED_P256 : e->settings.suite;
}

void psi_report_progress(const psi_engine *e, uint64_t done, uint64_t total)
{
    if (e->settings.progress != NULL && (done % 1024 == 0 || done == total))
        e->settings.progress(e->settings.progress_arg, done, total);
}
