/* The engine's private layout and the per-call EC workspace shared by the
 * masking code (mask.c, h2c.c, point.c).  Not installed. */
#ifndef PSI_ENGINE_H
#define PSI_ENGINE_H

#include <openssl/bn.h>
#include <openssl/ec.h>

#include "common.h"

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

/* Workspace for one batch call.  Each call builds its own, so calls on a
 * const engine never share mutable state.  The scalar is copied into a
 * BIGNUM only for the duration of the call and cleared on release. */
typedef struct psi_ec {
    EC_GROUP *group;
    BN_CTX *bn;
    BIGNUM *scalar;   /* k or k^-1, BN_FLG_CONSTTIME; NULL when unused */
    BIGNUM *p;        /* field prime */
    BIGNUM *b;        /* curve coefficient b */
    BIGNUM *sqrt_exp; /* (p + 1) / 4 */
    BN_MONT_CTX *mont;
    EC_POINT *pt;
    BIGNUM *x, *y, *t, *u; /* scratch field elements */
    /* -Dp256=portable only (PSI_P256_PORTABLE): the scalar is not copied
     * but borrowed from the engine's guarded memory for the call, and the
     * current point is kept as affine big-endian coordinates instead of
     * ec->pt. */
    const uint8_t *key; /* k or k^-1, PSI_KEY_BYTES; NULL when unused */
    uint8_t px[32], py[32];
} psi_ec;

/* scalar may be NULL (decoding only); with PSI_P256_PORTABLE it must stay
 * valid until psi_ec_release (the engine's secret does).  Returns PSI_OK, PSI_E_NOMEM,
 * PSI_E_CRYPTO. */
int psi_ec_init(psi_ec *ec, const uint8_t *scalar);
void psi_ec_release(psi_ec *ec);

/* H(m) of PROTOCOL.md §3 into ec->pt (PSI_P256_PORTABLE: ec->px, ec->py).  Returns PSI_OK,
 * PSI_E_HASH_TO_CURVE, PSI_E_CRYPTO. */
int psi_h2c(psi_ec *ec, const uint8_t *m, size_t len);

/* Strict decode (§4.2) of one partner point into ec->pt (PSI_P256_PORTABLE:
 * ec->px, ec->py). */
int psi_point_decode(psi_ec *ec, const uint8_t *in, size_t len);

/* out = ser(scalar * ec->pt), 33 bytes. */
int psi_ec_mul_encode(psi_ec *ec, uint8_t *out);

/* Progress reporting for batch loops. */
void psi_report_progress(const psi_engine *e, uint64_t done, uint64_t total);

#endif /* PSI_ENGINE_H */
