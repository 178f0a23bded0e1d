/* The engine's private layout and the per-call EC workspace shared by the
 * masking code (mask.c, h2c.c, point.c).  Not installed. */
#ifndef PSI_ENGINE_H
#define PSI_ENGINE_H

#include <openssl/bn.h>
#include <openssl/ec.h>

#include "common.h"
#include "p256.h"

/* The secret half of an engine, in sodium_malloc memory (guard pages,
 * canary, mlock where allowed), read-only after creation and wiped by
 * sodium_free.  kinv = k^-1 mod n, precomputed because unmasking needs it. */
typedef struct psi_secret {
    uint8_t k[PSI_KEY_BYTES];
    uint8_t kinv[PSI_KEY_BYTES];
} psi_secret;

struct psi_engine {
    psi_settings settings;
    psi_secret *secret;
};

/* Points the OpenSSL build multiplies before converting them to affine
 * together (one field inversion per batch, psi/p256.c). */
#define PSI_EC_BATCH PSI_P256_BATCH_MAX

/* Workspace for one batch call.  Each call builds its own, so calls on a
 * const engine never share mutable state.  The current point is kept as
 * affine big-endian coordinates (px, py), set by psi_h2c or
 * psi_point_decode.  The scalar is borrowed from the engine's guarded
 * memory (portable build) or copied into a BIGNUM for the call and
 * cleared on release (OpenSSL build). */
typedef struct psi_ec {
    uint8_t px[32], py[32];
#ifdef PSI_P256_PORTABLE
    const uint8_t *key; /* k or k^-1, PSI_KEY_BYTES; NULL when unused */
#else
    EC_GROUP *group;    /* NULL when the workspace only decodes */
    BN_CTX *bn;
    BIGNUM *scalar;     /* k or k^-1, BN_FLG_CONSTTIME */
    BIGNUM *bx, *by, *bz;
    EC_POINT *point;
    const uint8_t *key; /* the scalar's bytes, borrowed, for the lane code */
    /* 1: full groups of eight go to the IFMA lane code (psi_cpu_ifma()).
     * ct_rest 1: the others to psi_p256_mul_compressed, not OpenSSL (the
     * p256-sswu suite's masking, whose points must not meet OpenSSL's
     * variable-time import). */
    int lanes, ct_rest;
    /* Points waiting for psi_ec_flush (affine, big-endian), where each
     * result goes, and their products in Jacobian coordinates. */
    uint8_t ax[PSI_EC_BATCH][32], ay[PSI_EC_BATCH][32];
    uint8_t *batch_out[PSI_EC_BATCH];
    size_t batch_n;
    uint8_t xyz[PSI_EC_BATCH][96];
#endif
} psi_ec;

/* scalar may be NULL (decoding only); it must stay valid until
 * psi_ec_release (the engine's secret does).  Returns PSI_OK, PSI_E_NOMEM,
 * PSI_E_CRYPTO. */
int psi_ec_init(psi_ec *ec, const uint8_t *scalar);
/* Frees and wipes everything, pending results included. */
void psi_ec_release(psi_ec *ec);

#ifdef PSI_HAVE_IFMA
/* H(m) of PROTOCOL.md §3 for eight values at once, the roots on the IFMA
 * lanes (PROTOCOL.md §21): (x[i], y[i]) = H(values[i]).  Call only where
 * psi_cpu_ifma() says so.  Returns 8, or the first lane whose tries ran
 * out (PSI_E_HASH_TO_CURVE for that value; never seen in practice). */
int psi_h2c_x8(uint8_t x[8][32], uint8_t y[8][32], const psi_value values[8]);
/* The same for the p256-sswu suite's H(m) (§16.2): hash_to_field by the
 * one-value code, both maps, the sum and its inversion on the lanes.
 * Returns 8, or the first lane whose sum is the identity. */
int psi_h2c_sswu_x8(uint8_t x[8][32], uint8_t y[8][32], const psi_value values[8]);
#endif

/* H(m) of PROTOCOL.md §3 into ec->px, ec->py.  Returns PSI_OK or
 * PSI_E_HASH_TO_CURVE. */
int psi_h2c(psi_ec *ec, const uint8_t *m, size_t len);

/* The p256-sswu suite's H(m) (§16.2, RFC 9380) into ec->px, ec->py,
 * constant time in m.  Returns PSI_OK or PSI_E_HASH_TO_CURVE (the point at
 * infinity, probability about 2^-256). */
int psi_h2c_sswu(psi_ec *ec, const uint8_t *m, size_t len);

/* Strict decode (§4.2) of one partner point into ec->px, ec->py. */
int psi_point_decode(psi_ec *ec, const uint8_t *in, size_t len);
/* psi_point_decode's checks before the square root: identity, length,
 * prefix, x below p.  Returns PSI_OK or the error psi_point_decode gives. */
int psi_point_precheck(const uint8_t *in, size_t len);

/* Queues out = ser(scalar * (px, py)), 33 bytes: out holds it once
 * psi_ec_flush has returned PSI_OK (the portable build writes it at once).
 * Returns PSI_OK, PSI_E_NOMEM, PSI_E_CRYPTO. */
int psi_ec_mul_queue(psi_ec *ec, uint8_t *out);
/* Writes every queued result.  Returns PSI_OK, PSI_E_CRYPTO. */
int psi_ec_flush(psi_ec *ec);

/* Progress reporting for batch loops. */
void psi_report_progress(const psi_engine *e, uint64_t done, uint64_t total);

#endif /* PSI_ENGINE_H */
