/* OpenMined's hash to curve (PROTOCOL.md §3): try-and-increment over a
 * 512-bit SHA-256 random oracle reduced mod p, always the even root.
 * Variable time in the value hashed, by design of the compatible suite. */
#include <sodium.h>

#include "engine.h"
#include "p256.h"

/* Tries before giving up; each fails with probability about 1/2, so 512
 * failures in a row never happen in practice (§3.2). */
#define H2C_MAX_TRIES 512

/* x = int(SHA256(01 || m) || SHA256(02 || m)) mod p (§3.1). */
static int random_oracle(psi_ec *ec, const uint8_t *m, size_t len)
{
    static const uint8_t counters[2] = {0x01, 0x02};
    uint8_t wide[2 * crypto_hash_sha256_BYTES];
    for (int i = 0; i < 2; i++) {
        crypto_hash_sha256_state sha;
        crypto_hash_sha256_init(&sha);
        crypto_hash_sha256_update(&sha, &counters[i], 1);
        if (len > 0)
            crypto_hash_sha256_update(&sha, m, len);
        crypto_hash_sha256_final(&sha, wide + i * crypto_hash_sha256_BYTES);
    }
    if (BN_bin2bn(wide, sizeof wide, ec->t) == NULL ||
        !BN_nnmod(ec->x, ec->t, ec->p, ec->bn))
        return psi_crypto_error();
    return PSI_OK;
}

#ifndef PSI_P256_PORTABLE
/* t = x^3 - 3x + b mod p. */
static int curve_rhs(psi_ec *ec)
{
    if (!BN_mod_sqr(ec->t, ec->x, ec->p, ec->bn) ||
        !BN_mod_sub(ec->t, ec->t, BN_value_one(), ec->p, ec->bn) ||
        !BN_mod_sub(ec->t, ec->t, BN_value_one(), ec->p, ec->bn) ||
        !BN_mod_sub(ec->t, ec->t, BN_value_one(), ec->p, ec->bn) ||
        !BN_mod_mul(ec->t, ec->t, ec->x, ec->p, ec->bn) ||
        !BN_mod_add(ec->t, ec->t, ec->b, ec->p, ec->bn))
        return psi_crypto_error();
    return PSI_OK;
}

/* Sets *found when t is a square, leaving the even root in ec->y.  One
 * exponentiation serves as both the square test and the root: since
 * p = 3 mod 4, y = t^((p+1)/4) satisfies y^2 = t exactly when t is a
 * non-zero square; the reference's Euler test gives the same answer. */
static int even_root(psi_ec *ec, int *found)
{
    if (!BN_mod_exp_mont(ec->y, ec->t, ec->sqrt_exp, ec->p, ec->bn, ec->mont) ||
        !BN_mod_sqr(ec->u, ec->y, ec->p, ec->bn))
        return psi_crypto_error();
    *found = !BN_is_zero(ec->t) && BN_cmp(ec->u, ec->t) == 0;
    if (*found && BN_is_odd(ec->y) && !BN_sub(ec->y, ec->p, ec->y))
        return psi_crypto_error();
    return PSI_OK;
}
#else
/* The same test and root as the OpenSSL build's even_root, computed by
 * psi/p256.c in constant time: y = t^((p+1)/4) for t = x^3 - 3x + b,
 * accepted iff t != 0 and y^2 = t, then p - y if y is odd.  Sets *found
 * and leaves the point in ec->px, ec->py. */
static int even_point(psi_ec *ec, int *found)
{
    if (BN_bn2binpad(ec->x, ec->px, 32) != 32)
        return psi_crypto_error();
    *found = psi_p256_decompress(ec->py, ec->px, 0);
    return PSI_OK;
}
#endif

/* Next candidate: the oracle applied to the minimal big-endian bytes of
 * the previous x (leading zeros stripped, §3.2). */
static int rehash(psi_ec *ec)
{
    uint8_t prev[32];
    int n = BN_bn2bin(ec->x, prev);
    if (n < 0)
        return psi_crypto_error();
    return random_oracle(ec, prev, (size_t)n);
}

int psi_h2c(psi_ec *ec, const uint8_t *m, size_t len)
{
    int rc = random_oracle(ec, m, len);
    for (int tries = 0; rc == PSI_OK && tries < H2C_MAX_TRIES; tries++) {
        int found = 0;
#ifdef PSI_P256_PORTABLE
        if ((rc = even_point(ec, &found)) != PSI_OK)
            break;
        if (found)
            return PSI_OK;
#else
        if ((rc = curve_rhs(ec)) != PSI_OK || (rc = even_root(ec, &found)) != PSI_OK)
            break;
        if (found) {
            if (!EC_POINT_set_affine_coordinates(ec->group, ec->pt, ec->x, ec->y, ec->bn))
                rc = psi_crypto_error();
            return rc;
        }
#endif
        rc = rehash(ec);
    }
    return rc != PSI_OK ? rc : PSI_E_HASH_TO_CURVE;
}
