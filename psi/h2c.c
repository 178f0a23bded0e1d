/* Hashing to P-256.  OpenMined's hash to curve (PROTOCOL.md §3):
 * try-and-increment over a 512-bit SHA-256 random oracle reduced mod p,
 * always the even root; variable time in the value hashed (the number of
 * tries), by design of the compatible suite; each try is constant time
 * (psi/p256.c).  The p256-sswu suite's (§16.2): RFC 9380, constant time
 * (psi/p256_sswu.c). */
#include <string.h>

#include <sodium.h>

#include "ctcheck.h"
#include "engine.h"
#include "p256.h"
#include "p256_x8.h"

/* Tries before giving up; each fails with probability about 1/2, so 512
 * failures in a row never happen in practice (§3.2). */
#define H2C_MAX_TRIES 512

/* x = int(SHA256(01 || m) || SHA256(02 || m)) mod p (§3.1). */
static void random_oracle(uint8_t x[32], const uint8_t *m, size_t len)
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
    psi_p256_reduce_wide(x, wide);
}

/* Next candidate: the oracle applied to the minimal big-endian bytes of
 * the previous x (leading zeros stripped, §3.2). */
static void rehash(uint8_t x[32])
{
    uint8_t prev[32];
    size_t skip = 0;
    while (skip < sizeof prev && x[skip] == 0)
        skip++;
    memcpy(prev, x, sizeof prev);
    random_oracle(x, prev + skip, sizeof prev - skip);
}

int psi_h2c(psi_ec *ec, const uint8_t *m, size_t len)
{
    random_oracle(ec->px, m, len);
    for (int tries = 0; tries < H2C_MAX_TRIES; tries++) {
        /* y = t^((p+1)/4) for t = x^3 - 3x + b, accepted iff t != 0 and
         * y^2 = t, then p - y if y is odd: the reference's Euler test and
         * root give the same answer since p = 3 mod 4. */
        if (psi_p256_decompress(ec->py, ec->px, 0))
            return PSI_OK;
        rehash(ec->px);
    }
    return PSI_E_HASH_TO_CURVE;
}

#ifdef PSI_HAVE_IFMA
int psi_h2c_x8(uint8_t x[PSI_X8_LANES][32], uint8_t y[PSI_X8_LANES][32],
               const psi_value values[PSI_X8_LANES])
{
    static const uint8_t even[PSI_X8_LANES];
    uint8_t root[PSI_X8_LANES][32], ok[PSI_X8_LANES], done[PSI_X8_LANES] = {0};
    for (int l = 0; l < PSI_X8_LANES; l++)
        random_oracle(x[l], values[l].data, values[l].len);
    int rc = PSI_E_HASH_TO_CURVE;
    for (int tries = 0; tries < H2C_MAX_TRIES && rc != PSI_OK; tries++) {
        /* Every lane computes each time; a lane already done recomputes
         * its own x and is ignored. */
        psi_p256_x8_decompress_ifma(root, ok, (const uint8_t(*)[32])x, even);
        // Public by design of this suite: the number of tries (§12.4).
        PSI_DECLASSIFY(ok, sizeof ok);
        rc = PSI_OK;
        for (int l = 0; l < PSI_X8_LANES; l++) {
            if (done[l])
                continue;
            if (ok[l]) {
                memcpy(y[l], root[l], 32);
                done[l] = 1;
            } else {
                rehash(x[l]);
                rc = PSI_E_HASH_TO_CURVE;
            }
        }
    }
    sodium_memzero(root, sizeof root);
    if (rc == PSI_OK)
        return PSI_X8_LANES;
    for (int l = 0; l < PSI_X8_LANES; l++)
        if (!done[l])
            return l;
    return PSI_X8_LANES; /* not reached */
}
#endif

/* The domain-separation tag of the p256-sswu suite (§16.2): the project,
 * the protocol version, the suite and RFC 9380's suite identifier. */
static const char sswu_dst[] = "shardpsi-v1-p256-sswu-P256_XMD:SHA-256_SSWU_RO_";

int psi_h2c_sswu(psi_ec *ec, const uint8_t *m, size_t len)
{
    static const uint8_t none[1];
    int ok = psi_p256_sswu_hash(ec->px, ec->py, len > 0 ? m : none, len,
                                (const uint8_t *)sswu_dst, sizeof sswu_dst - 1);
    // Public: the point at infinity never occurs and would be an error.
    PSI_DECLASSIFY(&ok, sizeof ok);
    return ok ? PSI_OK : PSI_E_HASH_TO_CURVE;
}

#ifdef PSI_HAVE_IFMA
int psi_h2c_sswu_x8(uint8_t x[PSI_X8_LANES][32], uint8_t y[PSI_X8_LANES][32],
                    const psi_value values[PSI_X8_LANES])
{
    static const uint8_t none[1];
    uint8_t u[2][PSI_X8_LANES][32], uniform[96], wide[64] = {0}, inf[PSI_X8_LANES];
    int refused = 0;
    for (int l = 0; l < PSI_X8_LANES; l++) {
        const psi_value *v = &values[l];
        /* hash_to_field (RFC 9380 §5.2, L = 48): each 48-byte half, zero
         * padded to the 64 bytes psi_p256_reduce_wide takes, mod p */
        refused |= !psi_p256_expand_xmd(uniform, sizeof uniform, v->len > 0 ? v->data : none,
                                        v->len, (const uint8_t *)sswu_dst, sizeof sswu_dst - 1);
        for (int i = 0; i < 2; i++) {
            memcpy(wide + 16, uniform + 48 * i, 48);
            psi_p256_reduce_wide(u[i][l], wide);
        }
    }
    psi_p256_x8_sswu_ifma(x, y, inf, (const uint8_t(*)[32])u[0], (const uint8_t(*)[32])u[1]);
    sodium_memzero(u, sizeof u);
    sodium_memzero(uniform, sizeof uniform);
    sodium_memzero(wide, sizeof wide);
    // Public: the point at infinity never occurs and would be an error.
    PSI_DECLASSIFY(inf, sizeof inf);
    for (int l = 0; l < PSI_X8_LANES; l++)
        if (inf[l] || refused)
            return l; /* the DST is fixed and accepted: refused cannot happen */
    return PSI_X8_LANES;
}
#endif
