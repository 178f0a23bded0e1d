/* The batch primitives (PROTOCOL.md §4): mask, re-mask, unmask.  Each call
 * builds one EC workspace and reuses it for the whole batch. */
/* EC_POINT_get_Jprojective_coordinates_GFp (see flush_batch). */
#define OPENSSL_SUPPRESS_DEPRECATED

#include <string.h>

#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <sodium.h>

#include "cpu.h"
#include "ctcheck.h"
#include "engine.h"
#include "p256.h"
#include "p256_x8.h"
#include "r255_x8.h"
#include "suite.h"

#ifdef PSI_P256_PORTABLE
int psi_ec_init(psi_ec *ec, const uint8_t *scalar)
{
    memset(ec, 0, sizeof *ec);
    ec->key = scalar; /* no copy: p256.c wipes the ones it makes */
    return PSI_OK;
}

void psi_ec_release(psi_ec *ec)
{
    sodium_memzero(ec, sizeof *ec);
}

int psi_ec_mul_queue(psi_ec *ec, uint8_t *out)
{
    /* The key is in [1, n - 1] (§2) and (px, py) on the curve, checked by
     * psi_h2c or psi_point_decode. */
    psi_p256_mul_compressed(out, ec->key, ec->px, ec->py);
    return PSI_OK;
}

int psi_ec_flush(psi_ec *ec)
{
    (void)ec;
    return PSI_OK;
}
#else
int psi_ec_init(psi_ec *ec, const uint8_t *scalar)
{
    memset(ec, 0, sizeof *ec);
    if (scalar == NULL)
        return PSI_OK; /* decoding needs no OpenSSL object */
    ec->key = scalar;
    ec->lanes = psi_cpu_ifma();
    ec->group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    ec->bn = BN_CTX_new();
    ec->scalar = BN_secure_new();
    ec->bx = BN_new();
    ec->by = BN_new();
    ec->bz = BN_new();
    ec->point = ec->group != NULL ? EC_POINT_new(ec->group) : NULL;
    if (ec->group == NULL || ec->bn == NULL || ec->scalar == NULL || ec->bx == NULL ||
        ec->by == NULL || ec->bz == NULL || ec->point == NULL) {
        ERR_clear_error();
        return PSI_E_NOMEM;
    }
    BN_set_flags(ec->scalar, BN_FLG_CONSTTIME);
    if (BN_bin2bn(scalar, PSI_KEY_BYTES, ec->scalar) == NULL)
        return psi_crypto_error();
    return PSI_OK;
}

void psi_ec_release(psi_ec *ec)
{
    BN_clear_free(ec->scalar);
    /* Points and coordinates are derived from secret-scaled values. */
    EC_POINT_clear_free(ec->point);
    BN_clear_free(ec->bx);
    BN_clear_free(ec->by);
    BN_clear_free(ec->bz);
    BN_CTX_free(ec->bn);
    EC_GROUP_free(ec->group);
    sodium_memzero(ec, sizeof *ec);
}

int psi_ec_mul_queue(psi_ec *ec, uint8_t *out)
{
    size_t j = ec->batch_n;
    memcpy(ec->ax[j], ec->px, 32);
    memcpy(ec->ay[j], ec->py, 32);
    ec->batch_out[j] = out;
    ec->batch_n = j + 1;
    return ec->batch_n == PSI_EC_BATCH ? psi_ec_flush(ec) : PSI_OK;
}

/* ec->point = key * (ax[j], ay[j]) by OpenSSL.  set_affine_coordinates
 * checks the curve equation again (psi_h2c and psi_point_decode already
 * did): a second, independent guard before the key touches the point. */
static int ossl_mul(psi_ec *ec, size_t j)
{
    if (BN_bin2bn(ec->ax[j], 32, ec->bx) == NULL || BN_bin2bn(ec->ay[j], 32, ec->by) == NULL ||
        !EC_POINT_set_affine_coordinates(ec->group, ec->point, ec->bx, ec->by, ec->bn) ||
        !EC_POINT_mul(ec->group, ec->point, NULL, ec->point, ec->scalar, ec->bn))
        return psi_crypto_error();
    return PSI_OK;
}

#ifndef OPENSSL_NO_DEPRECATED_3_0
/* The Jacobian coordinates of OpenSSL's product into xyz[j], compressed
 * with the batch by one inversion (psi/p256.c) instead of point2oct's one
 * a point (about 5 us each).  EC_POINT_get_Jprojective_coordinates_GFp is
 * deprecated in OpenSSL 3.0 but the only public way to the coordinates
 * without that inversion; builds without deprecated APIs take point2oct. */
#define OSSL_JACOBIAN 1
static int ossl_finish(psi_ec *ec, size_t j, uint8_t out[PSI_ELEMENT_BYTES])
{
    (void)out;
    if (!EC_POINT_get_Jprojective_coordinates_GFp(ec->group, ec->point, ec->bx, ec->by, ec->bz,
                                                 ec->bn) ||
        BN_bn2binpad(ec->bx, ec->xyz[j], 32) != 32 ||
        BN_bn2binpad(ec->by, ec->xyz[j] + 32, 32) != 32 ||
        BN_bn2binpad(ec->bz, ec->xyz[j] + 64, 32) != 32)
        return psi_crypto_error();
    return PSI_OK;
}
#else
#define OSSL_JACOBIAN 0
static int ossl_finish(psi_ec *ec, size_t j, uint8_t out[PSI_ELEMENT_BYTES])
{
    (void)j;
    if (EC_POINT_point2oct(ec->group, ec->point, POINT_CONVERSION_COMPRESSED, out,
                           PSI_ELEMENT_BYTES, ec->bn) != PSI_ELEMENT_BYTES)
        return psi_crypto_error();
    return PSI_OK;
}
#endif

/* Full groups of eight on the IFMA lanes (PROTOCOL.md §21) when enabled;
 * returns how many points it multiplied into xyz. */
static size_t lanes_mul(psi_ec *ec)
{
#ifdef PSI_HAVE_IFMA
    if (!ec->lanes)
        return 0;
    size_t nl = ec->batch_n / PSI_X8_LANES * PSI_X8_LANES;
    uint8_t k8[PSI_X8_LANES][32];
    for (size_t l = 0; l < PSI_X8_LANES; l++)
        memcpy(k8[l], ec->key, 32);
    for (size_t j = 0; j < nl; j += PSI_X8_LANES)
        psi_p256_x8_mul_ifma(ec->xyz + j, (const uint8_t(*)[32])k8,
                             (const uint8_t(*)[32])(ec->ax + j), (const uint8_t(*)[32])(ec->ay + j));
    sodium_memzero(k8, sizeof k8);
    return nl;
#else
    (void)ec;
    return 0;
#endif
}

/* psi_p256_jacobian_compress of the nl points lanes_mul made, on the
 * lanes (nl is a multiple of 8, 0 without them: then the IFMA code is not
 * called, as the CPU may not have it). */
static int lanes_compress(uint8_t *out, const uint8_t *xyz, size_t nl)
{
#ifdef PSI_HAVE_IFMA
    _Static_assert(PSI_EC_BATCH <= PSI_X8_COMPRESS_MAX, "a batch is one lane compression");
    return nl == 0 ? 1 : psi_p256_x8_compress_ifma(out, xyz, nl);
#else
    (void)out;
    (void)xyz;
    (void)nl;
    return 1;
#endif
}

static int flush_batch(psi_ec *ec, uint8_t out[PSI_EC_BATCH][PSI_ELEMENT_BYTES])
{
    size_t n = ec->batch_n, nl = lanes_mul(ec);
    for (size_t j = nl; j < n; j++) {
        if (ec->ct_rest) {
            psi_p256_mul_compressed(out[j], ec->key, ec->ax[j], ec->ay[j]);
            continue;
        }
        int rc = ossl_mul(ec, j);
        if (rc == PSI_OK)
            rc = ossl_finish(ec, j, out[j]);
        if (rc != PSI_OK)
            return rc;
    }
    /* xyz holds the lanes' products, and OpenSSL's where it gave them:
     * the lanes' own compressed on the lanes, the rest by p256.c */
    size_t nj = ec->ct_rest || !OSSL_JACOBIAN ? nl : n;
    if (nj == 0)
        return PSI_OK;
    int finite = lanes_compress(&out[0][0], &ec->xyz[0][0], nl);
    if (nj > nl)
        finite &= psi_p256_jacobian_compress(out[nl], ec->xyz[nl], nj - nl);
    // Public: infinity cannot occur (§4.1), and would be reported as an error.
    PSI_DECLASSIFY(&finite, sizeof finite);
    if (!finite)
        return PSI_E_CRYPTO; /* a point at infinity: cannot happen */
    return PSI_OK;
}

int psi_ec_flush(psi_ec *ec)
{
    uint8_t out[PSI_EC_BATCH][PSI_ELEMENT_BYTES];
    if (ec->batch_n == 0)
        return PSI_OK;
    int rc = flush_batch(ec, out);
    if (rc == PSI_OK) {
        for (size_t j = 0; j < ec->batch_n; j++)
            memcpy(ec->batch_out[j], out[j], PSI_ELEMENT_BYTES);
    }
    ec->batch_n = 0;
    sodium_memzero(ec->ax, sizeof ec->ax);
    sodium_memzero(ec->ay, sizeof ec->ay);
    sodium_memzero(ec->xyz, sizeof ec->xyz);
    sodium_memzero(out, sizeof out);
    return rc;
}
#endif

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

/* The ristretto255 suite's batches (§16.3): libsodium works on encodings,
 * so there is no workspace; each result fills the first 32 bytes of its
 * slot and batch_begin zeroed the 33rd.  Full groups of eight go to the
 * IFMA lanes (PROTOCOL.md §21) when psi_cpu_ifma() allows, with the same
 * bytes, codes and details; the rest to libsodium. */
static int r255_mask(const psi_engine *e, uint8_t *out, const psi_value *values, size_t n)
{
    int rc = PSI_OK;
    size_t i = 0;
#ifdef PSI_HAVE_IFMA
    if (psi_cpu_ifma()) {
        uint8_t k8[PSI_X8_LANES][32], h[PSI_X8_LANES][64], r[PSI_X8_LANES][32];
        for (size_t l = 0; l < PSI_X8_LANES; l++)
            memcpy(k8[l], e->secret->k, 32);
        for (; rc == PSI_OK && i + PSI_X8_LANES <= n; i += PSI_X8_LANES) {
            for (size_t l = 0; l < PSI_X8_LANES; l++)
                psi_r255_hash_value(h[l], values[i + l].data, values[i + l].len);
            int failed = psi_r255_x8_mask_ifma(r, (const uint8_t(*)[32])k8,
                                               (const uint8_t(*)[64])h);
            // Public: k * H(m) is never the identity (psi_r255_mask_value).
            PSI_DECLASSIFY(&failed, sizeof failed);
            if (failed)
                rc = PSI_E_CRYPTO;
            for (size_t l = 0; rc == PSI_OK && l < PSI_X8_LANES; l++) {
                memcpy(out + (i + l) * PSI_ELEMENT_BYTES, r[l], PSI_R255_BYTES);
                psi_report_progress(e, i + l + 1, n);
            }
        }
        sodium_memzero(k8, sizeof k8);
        sodium_memzero(h, sizeof h);
        sodium_memzero(r, sizeof r);
    }
#endif
    for (; rc == PSI_OK && i < n; i++) {
        rc = psi_r255_mask_value(out + i * PSI_ELEMENT_BYTES, e->secret->k, values[i].data,
                                 values[i].len);
        psi_report_progress(e, i + 1, n);
    }
    return rc;
}

/* The checks of slot p before its decoding: its 33rd byte, zero in this
 * suite (psi.h), then psi_r255_precheck's.  PSI_OK leaves the decoding to
 * decide. */
static int r255_precheck(const uint8_t *p)
{
    return p[PSI_R255_BYTES] != 0 ? PSI_E_POINT_ENCODING : psi_r255_precheck(p, PSI_R255_BYTES);
}

static int r255_scale(const psi_engine *e, const uint8_t *scalar, uint8_t *out,
                      const uint8_t *points, size_t n)
{
    int rc = PSI_OK;
    size_t i = 0;
#ifdef PSI_HAVE_IFMA
    if (psi_cpu_ifma()) {
        uint8_t k8[PSI_X8_LANES][32], in[PSI_X8_LANES][32], r[PSI_X8_LANES][32];
        for (size_t l = 0; l < PSI_X8_LANES; l++)
            memcpy(k8[l], scalar, 32);
        for (; rc == PSI_OK && i + PSI_X8_LANES <= n; i += PSI_X8_LANES) {
            size_t l;
            for (l = 0; l < PSI_X8_LANES; l++) {
                const uint8_t *p = points + (i + l) * PSI_ELEMENT_BYTES;
                if (r255_precheck(p) != PSI_OK)
                    break;
                memcpy(in[l], p, 32);
            }
            if (l < PSI_X8_LANES)
                break; /* the one-point loop takes this group and reports */
            int failed = psi_r255_x8_mul_ifma(r, (const uint8_t(*)[32])k8,
                                              (const uint8_t(*)[32])in);
            /* A lane fails where its point does not decode (a checked point
             * times k != 0 is never the identity): the first such is the
             * error crypto_core_ristretto255_is_valid_point would give. */
            for (l = 0; rc == PSI_OK && l < PSI_X8_LANES; l++) {
                if (failed & (1 << l)) {
                    rc = psi_fail_at(PSI_E_POINT_ENCODING, "points", (int64_t)(i + l), -1);
                    break;
                }
                memcpy(out + (i + l) * PSI_ELEMENT_BYTES, r[l], PSI_R255_BYTES);
                psi_report_progress(e, i + l + 1, n);
            }
        }
        sodium_memzero(k8, sizeof k8);
        sodium_memzero(r, sizeof r);
    }
#endif
    for (; rc == PSI_OK && i < n; i++) {
        const uint8_t *p = points + i * PSI_ELEMENT_BYTES;
        /* A slot's 33rd byte is zero in this suite (psi.h). */
        rc = p[PSI_R255_BYTES] != 0 ? PSI_E_POINT_ENCODING : psi_r255_check(p, PSI_R255_BYTES);
        if (rc != PSI_OK)
            psi_fail_at(rc, "points", (int64_t)i, -1);
        else
            rc = psi_r255_mul(out + i * PSI_ELEMENT_BYTES, scalar, p);
        psi_report_progress(e, i + 1, n);
    }
    return rc;
}

/* The P-256 suites' masking: hash each value (§3 or, p256-sswu, §16.2),
 * then multiply.  The p256-sswu suite hashes and multiplies by shardpsi's
 * constant-time code in every build (full groups of eight on the IFMA
 * lanes, the rest by psi_p256_mul_compressed: ct_rest), since the point
 * depends on the value and OpenSSL's EC_POINT import (BN_bin2bn,
 * BN_nnmod) is variable time in the coordinates.  Re-masking and
 * unmasking take the partner's public points and keep OpenSSL's faster
 * multiplication for what the lanes do not take. */
/* The hash of full groups of eight values on the IFMA lanes (psi_h2c_x8,
 * or psi_h2c_sswu_x8 for p256-sswu), queued for multiplication; *next is
 * where the one-value loop goes on. */
static int lanes_hash(const psi_engine *e, psi_ec *ec, uint8_t *out, const psi_value *values,
                      size_t n, size_t *next)
{
    *next = 0;
#if defined(PSI_HAVE_IFMA) && !defined(PSI_P256_PORTABLE)
    if (!ec->lanes)
        return PSI_OK;
    int sswu = e->settings.suite == PSI_SUITE_P256_SSWU;
    uint8_t x[PSI_X8_LANES][32], y[PSI_X8_LANES][32];
    int rc = PSI_OK;
    size_t g = 0;
    for (; rc == PSI_OK && g + PSI_X8_LANES <= n; g += PSI_X8_LANES) {
        int l = sswu ? psi_h2c_sswu_x8(x, y, values + g) : psi_h2c_x8(x, y, values + g);
        if (l < PSI_X8_LANES) {
            rc = psi_fail_at(PSI_E_HASH_TO_CURVE, "values", (int64_t)(g + (size_t)l), -1);
            break;
        }
        for (l = 0; rc == PSI_OK && l < PSI_X8_LANES; l++) {
            memcpy(ec->px, x[l], 32);
            memcpy(ec->py, y[l], 32);
            rc = psi_ec_mul_queue(ec, out + (g + (size_t)l) * PSI_ELEMENT_BYTES);
            psi_report_progress(e, g + (size_t)l + 1, n);
        }
    }
    sodium_memzero(x, sizeof x);
    sodium_memzero(y, sizeof y);
    *next = g;
    return rc;
#else
    (void)e, (void)ec, (void)out, (void)values, (void)n;
    return PSI_OK;
#endif
}

static int p256_mask(const psi_engine *e, uint8_t *out, const psi_value *values, size_t n)
{
    int sswu = e->settings.suite == PSI_SUITE_P256_SSWU;
    psi_ec ec;
    size_t start = 0;
    int rc = psi_ec_init(&ec, e->secret->k);
#ifndef PSI_P256_PORTABLE
    ec.ct_rest = sswu;
#endif
    if (rc == PSI_OK)
        rc = lanes_hash(e, &ec, out, values, n, &start);
    for (size_t i = start; rc == PSI_OK && i < n; i++) {
        const psi_value *v = &values[i];
        rc = sswu ? psi_h2c_sswu(&ec, v->data, v->len) : psi_h2c(&ec, v->data, v->len);
        if (rc == PSI_E_HASH_TO_CURVE)
            psi_fail_at(rc, "values", (int64_t)i, -1);
        if (rc == PSI_OK)
            rc = psi_ec_mul_queue(&ec, out + i * PSI_ELEMENT_BYTES);
        psi_report_progress(e, i + 1, n);
    }
    if (rc == PSI_OK)
        rc = psi_ec_flush(&ec);
    psi_ec_release(&ec);
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
    psi_detail_clear();
    psi_ec ec;
    if (e->settings.suite == PSI_SUITE_RISTRETTO255) {
        psi_ec_init(&ec, NULL);
        rc = r255_mask(e, out, values, n);
        return batch_end(&ec, rc, out, out_len, n);
    }
    rc = p256_mask(e, out, values, n);
    psi_ec_init(&ec, NULL);
    return batch_end(&ec, rc, out, out_len, n);
}

/* Decodes full groups of eight points with their square roots on the IFMA
 * lanes and queues them; *next is where the one-point loop goes on.  A
 * group with a point that fails the checks before the root is left to
 * that loop, which reports the first error in order as before. */
static int lanes_decode(const psi_engine *e, psi_ec *ec, uint8_t *out, const uint8_t *points,
                        size_t n, size_t *next)
{
    *next = 0;
#if defined(PSI_HAVE_IFMA) && !defined(PSI_P256_PORTABLE)
    if (!ec->lanes)
        return PSI_OK;
    uint8_t x[PSI_X8_LANES][32], y[PSI_X8_LANES][32], odd[PSI_X8_LANES], ok[PSI_X8_LANES];
    int rc = PSI_OK;
    size_t g = 0;
    for (; rc == PSI_OK && g + PSI_X8_LANES <= n; g += PSI_X8_LANES) {
        const uint8_t *in = points + g * PSI_ELEMENT_BYTES;
        int l;
        for (l = 0; l < PSI_X8_LANES; l++) {
            const uint8_t *pt = in + (size_t)l * PSI_ELEMENT_BYTES;
            if (psi_point_precheck(pt, PSI_ELEMENT_BYTES) != PSI_OK)
                break;
            memcpy(x[l], pt + 1, 32);
            odd[l] = pt[0] & 1;
        }
        if (l < PSI_X8_LANES)
            break; /* the one-point loop takes this group and reports */
        psi_p256_x8_decompress_ifma(y, ok, (const uint8_t(*)[32])x, odd);
        for (l = 0; rc == PSI_OK && l < PSI_X8_LANES; l++) {
            if (!ok[l]) {
                rc = psi_fail_at(PSI_E_POINT_NOT_ON_CURVE, "points", (int64_t)(g + (size_t)l), -1);
                break;
            }
            memcpy(ec->px, x[l], 32);
            memcpy(ec->py, y[l], 32);
            rc = psi_ec_mul_queue(ec, out + (g + (size_t)l) * PSI_ELEMENT_BYTES);
            psi_report_progress(e, g + (size_t)l + 1, n);
        }
    }
    *next = g;
    return rc;
#else
    (void)e, (void)ec, (void)out, (void)points, (void)n;
    return PSI_OK;
#endif
}

/* Decodes each point strictly and multiplies it by `scalar`. */
static int scale_points(const psi_engine *e, const uint8_t *scalar, uint8_t *out,
                        size_t *out_len, const uint8_t *points, size_t n)
{
    int rc = batch_begin(e, out, out_len, points, n);
    if (rc != PSI_OK)
        return rc;
    psi_detail_clear();
    psi_ec ec;
    if (e->settings.suite == PSI_SUITE_RISTRETTO255) {
        psi_ec_init(&ec, NULL);
        rc = r255_scale(e, scalar, out, points, n);
        return batch_end(&ec, rc, out, out_len, n);
    }
    rc = psi_ec_init(&ec, scalar);
    size_t start = 0;
    if (rc == PSI_OK)
        rc = lanes_decode(e, &ec, out, points, n, &start);
    for (size_t i = start; rc == PSI_OK && i < n; i++) {
        rc = psi_point_decode(&ec, points + i * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES);
        if (rc != PSI_OK)
            psi_fail_at(rc, "points", (int64_t)i, -1);
        if (rc == PSI_OK)
            rc = psi_ec_mul_queue(&ec, out + i * PSI_ELEMENT_BYTES);
        psi_report_progress(e, i + 1, n);
    }
    if (rc == PSI_OK)
        rc = psi_ec_flush(&ec);
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
