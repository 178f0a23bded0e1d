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

/* Tries before giving up; each fails with probability about 1/2, so 512
 * failures in a row never happen in practice (§3.2). */
#define H2C_MAX_TRIES 512

/* ec->px = int(SHA256(01 || m) || SHA256(02 || m)) mod p (§3.1). */
static void random_oracle(psi_ec *ec, const uint8_t *m, size_t len)
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
    psi_p256_reduce_wide(ec->px, wide);
}

/* Next candidate: the oracle applied to the minimal big-endian bytes of
 * the previous x (leading zeros stripped, §3.2). */
static void rehash(psi_ec *ec)
{
    uint8_t prev[32];
    size_t skip = 0;
    while (skip < sizeof prev && ec->px[skip] == 0)
        skip++;
    memcpy(prev, ec->px, sizeof prev);
    random_oracle(ec, prev + skip, sizeof prev - skip);
}

int psi_h2c(psi_ec *ec, const uint8_t *m, size_t len)
{
    random_oracle(ec, m, len);
    for (int tries = 0; tries < H2C_MAX_TRIES; tries++) {
        /* y = t^((p+1)/4) for t = x^3 - 3x + b, accepted iff t != 0 and
         * y^2 = t, then p - y if y is odd: the reference's Euler test and
         * root give the same answer since p = 3 mod 4. */
        if (psi_p256_decompress(ec->py, ec->px, 0))
            return PSI_OK;
        rehash(ec);
    }
    return PSI_E_HASH_TO_CURVE;
}

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
