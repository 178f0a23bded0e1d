/* The batch primitives (PROTOCOL.md §4): mask, re-mask, unmask.  Each call
 * builds one EC workspace and reuses it for the whole batch. */
#include <string.h>

#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <sodium.h>

#include "engine.h"
#include "p256.h"

/* b of P-256, big-endian (§1). */
static const uint8_t curve_b[32] = {
    0x5a, 0xc6, 0x35, 0xd8, 0xaa, 0x3a, 0x93, 0xe7, 0xb3, 0xeb, 0xbd, 0x55,
    0x76, 0x98, 0x86, 0xbc, 0x65, 0x1d, 0x06, 0xb0, 0xcc, 0x53, 0xb0, 0xf6,
    0x3b, 0xce, 0x3c, 0x3e, 0x27, 0xd2, 0x60, 0x4b,
};

static int ec_alloc(psi_ec *ec)
{
    ec->group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    ec->bn = BN_CTX_new();
    ec->p = BN_new();
    ec->b = BN_new();
    ec->sqrt_exp = BN_new();
    ec->mont = BN_MONT_CTX_new();
    ec->x = BN_new();
    ec->y = BN_new();
    ec->t = BN_new();
    ec->u = BN_new();
    if (ec->group == NULL || ec->bn == NULL || ec->p == NULL || ec->b == NULL ||
        ec->sqrt_exp == NULL || ec->mont == NULL || ec->x == NULL || ec->y == NULL ||
        ec->t == NULL || ec->u == NULL)
        return PSI_E_NOMEM;
    ec->pt = EC_POINT_new(ec->group);
    return ec->pt == NULL ? PSI_E_NOMEM : PSI_OK;
}

int psi_ec_init(psi_ec *ec, const uint8_t *scalar)
{
    memset(ec, 0, sizeof *ec);
    int rc = ec_alloc(ec);
    if (rc != PSI_OK) {
        ERR_clear_error();
        return rc;
    }
    if (!EC_GROUP_get_curve(ec->group, ec->p, NULL, NULL, ec->bn) ||
        BN_bin2bn(curve_b, sizeof curve_b, ec->b) == NULL ||
        !BN_add(ec->sqrt_exp, ec->p, BN_value_one()) ||
        !BN_rshift(ec->sqrt_exp, ec->sqrt_exp, 2) ||
        !BN_MONT_CTX_set(ec->mont, ec->p, ec->bn))
        return psi_crypto_error();
#ifdef PSI_P256_PORTABLE
    ec->key = scalar; /* no copy: p256.c wipes the ones it makes */
#else
    if (scalar != NULL) {
        ec->scalar = BN_secure_new();
        if (ec->scalar == NULL)
            return PSI_E_NOMEM;
        BN_set_flags(ec->scalar, BN_FLG_CONSTTIME);
        if (BN_bin2bn(scalar, PSI_KEY_BYTES, ec->scalar) == NULL)
            return psi_crypto_error();
    }
#endif
    return PSI_OK;
}

void psi_ec_release(psi_ec *ec)
{
    BN_clear_free(ec->scalar);
    /* Points and field scratch are derived from secret-scaled values. */
    EC_POINT_clear_free(ec->pt);
    BN_clear_free(ec->x);
    BN_clear_free(ec->y);
    BN_clear_free(ec->t);
    BN_clear_free(ec->u);
    sodium_memzero(ec->px, sizeof ec->px);
    sodium_memzero(ec->py, sizeof ec->py);
    BN_MONT_CTX_free(ec->mont);
    BN_free(ec->sqrt_exp);
    BN_free(ec->b);
    BN_free(ec->p);
    BN_CTX_free(ec->bn);
    EC_GROUP_free(ec->group);
    memset(ec, 0, sizeof *ec);
}

int psi_ec_mul_encode(psi_ec *ec, uint8_t *out)
{
#ifdef PSI_P256_PORTABLE
    /* The key is in [1, n - 1] (§2) and (px, py) on the curve, checked by
     * psi_h2c or psi_point_decode. */
    psi_p256_mul_compressed(out, ec->key, ec->px, ec->py);
    return PSI_OK;
#else
    if (!EC_POINT_mul(ec->group, ec->pt, NULL, ec->pt, ec->scalar, ec->bn) ||
        EC_POINT_point2oct(ec->group, ec->pt, POINT_CONVERSION_COMPRESSED, out,
                           PSI_ELEMENT_BYTES, ec->bn) != PSI_ELEMENT_BYTES)
        return psi_crypto_error();
    return PSI_OK;
#endif
}

/* Checks a batch call's arguments and clears its output (header rules). */
static int batch_begin(const psi_engine *e, uint8_t *out, size_t *out_len,
                       const void *in, size_t n)
{
    PSI_CHECK_ARG(out_len != NULL);
    size_t cap = *out_len;
    *out_len = 0;
    PSI_CHECK_ARG(e != NULL && (in != NULL || n == 0) && (out != NULL || cap == 0));
    if (n > SIZE_MAX / PSI_ELEMENT_BYTES || cap < n * PSI_ELEMENT_BYTES)
        return PSI_E_BUFFER_TOO_SMALL;
    if (n > 0)
        memset(out, 0, n * PSI_ELEMENT_BYTES);
    return PSI_OK;
}

/* Ends a batch: on failure nothing of the partial output stays behind. */
static int batch_end(psi_ec *ec, int rc, uint8_t *out, size_t *out_len, size_t n)
{
    psi_ec_release(ec);
    if (rc == PSI_OK)
        *out_len = n * PSI_ELEMENT_BYTES;
    else if (n > 0)
        sodium_memzero(out, n * PSI_ELEMENT_BYTES);
    return rc;
}

int psi_engine_mask(const psi_engine *e, uint8_t *out, size_t *out_len,
                    const psi_value *values, size_t n)
{
    int rc = batch_begin(e, out, out_len, values, n);
    if (rc != PSI_OK)
        return rc;
    for (size_t i = 0; i < n; i++)
        PSI_CHECK_ARG(values[i].data != NULL || values[i].len == 0);
    psi_ec ec;
    rc = psi_ec_init(&ec, e->secret->k);
    for (size_t i = 0; rc == PSI_OK && i < n; i++) {
        rc = psi_h2c(&ec, values[i].data, values[i].len);
        if (rc == PSI_OK)
            rc = psi_ec_mul_encode(&ec, out + i * PSI_ELEMENT_BYTES);
        psi_report_progress(e, i + 1, n);
    }
    return batch_end(&ec, rc, out, out_len, n);
}

/* Decodes each point strictly and multiplies it by `scalar`. */
static int scale_points(const psi_engine *e, const uint8_t *scalar, uint8_t *out,
                        size_t *out_len, const uint8_t *points, size_t n)
{
    int rc = batch_begin(e, out, out_len, points, n);
    if (rc != PSI_OK)
        return rc;
    psi_ec ec;
    rc = psi_ec_init(&ec, scalar);
    for (size_t i = 0; rc == PSI_OK && i < n; i++) {
        rc = psi_point_decode(&ec, points + i * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES);
        if (rc == PSI_OK)
            rc = psi_ec_mul_encode(&ec, out + i * PSI_ELEMENT_BYTES);
        psi_report_progress(e, i + 1, n);
    }
    return batch_end(&ec, rc, out, out_len, n);
}

int psi_engine_remask(const psi_engine *e, uint8_t *out, size_t *out_len,
                      const uint8_t *points, size_t n)
{
    PSI_CHECK_ARG(e != NULL);
    return scale_points(e, e->secret->k, out, out_len, points, n);
}

int psi_engine_unmask(const psi_engine *e, uint8_t *out, size_t *out_len,
                      const uint8_t *points, size_t n)
{
    PSI_CHECK_ARG(e != NULL);
    return scale_points(e, e->secret->kinv, out, out_len, points, n);
}
