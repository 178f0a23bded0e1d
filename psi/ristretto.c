/* The ristretto255 suite's group operations (PROTOCOL.md §16.3), all of
 * them libsodium's: hash to group, scalar multiplication, encoding checks
 * and the scalar inverse.  Keys are 32-byte little-endian scalars, as
 * libsodium writes them. */
#include <string.h>

#include <sodium.h>

#include "ctcheck.h"
#include "suite.h"

/* The domain-separation prefix of H (§16.3). */
static const char h2g_prefix[] = "shardpsi-v1-ristretto255-H2G";

/* l = 2^252 + 27742317777372353535851937790883648493, little-endian. */
static const uint8_t group_order_le[PSI_R255_BYTES] = {
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2,
    0xde, 0xf9, 0xde, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
};

int psi_r255_key_set(uint8_t k[PSI_R255_BYTES], uint8_t kinv[PSI_R255_BYTES],
                     const uint8_t *key, size_t len)
{
    if (len != PSI_R255_BYTES)
        return PSI_E_KEY_OUT_OF_RANGE;
    /* sodium_compare and sodium_is_zero run in constant time; whether the
     * key is accepted is what the call returns, so it is public. */
    int ok = (sodium_compare(key, group_order_le, PSI_R255_BYTES) < 0) &
             !sodium_is_zero(key, PSI_R255_BYTES);
    PSI_DECLASSIFY(&ok, sizeof ok);
    if (!ok)
        return PSI_E_KEY_OUT_OF_RANGE;
    memcpy(k, key, PSI_R255_BYTES);
    /* k^(l-2), libsodium's constant-time inversion.  It reports whether k
     * was 0, which is already known (and public) to be false. */
    int rc = crypto_core_ristretto255_scalar_invert(kinv, k);
    PSI_DECLASSIFY(&rc, sizeof rc);
    return rc == 0 ? PSI_OK : PSI_E_CRYPTO;
}

int psi_r255_precheck(const uint8_t *in, size_t len)
{
    if (len != PSI_R255_BYTES)
        return PSI_E_POINT_LENGTH;
    /* The identity's only canonical encoding is 32 zero bytes (RFC 9496
     * §4.3.1); every input here is public. */
    if (sodium_is_zero(in, PSI_R255_BYTES))
        return PSI_E_POINT_IDENTITY;
    /* Bit 255 must be clear: s < p < 2^255 (RFC 9496 §4.3.1).  libsodium
     * 1.0.18 ignores that bit (its canonical check masks it off, as the
     * field decoding does), so it accepts a second encoding of most
     * elements; found by fuzz_point, whose re-encoding check failed. */
    if (in[PSI_R255_BYTES - 1] & 0x80)
        return PSI_E_POINT_ENCODING;
    return PSI_OK;
}

int psi_r255_check(const uint8_t *in, size_t len)
{
    int rc = psi_r255_precheck(in, len);
    if (rc != PSI_OK)
        return rc;
    /* Decodes: refuses a non-canonical field element, a negative s, and
     * any string that is not the encoding of a group element. */
    if (!crypto_core_ristretto255_is_valid_point(in))
        return PSI_E_POINT_ENCODING;
    return PSI_OK;
}

void psi_r255_hash_value(uint8_t digest[64], const uint8_t *m, size_t len)
{
    crypto_hash_sha512_state sha;
    crypto_hash_sha512_init(&sha);
    crypto_hash_sha512_update(&sha, (const uint8_t *)h2g_prefix, sizeof h2g_prefix - 1);
    if (len > 0)
        crypto_hash_sha512_update(&sha, m, len);
    crypto_hash_sha512_final(&sha, digest);
    sodium_memzero(&sha, sizeof sha);
}

int psi_r255_mask_value(uint8_t out[PSI_R255_BYTES], const uint8_t k[PSI_R255_BYTES],
                        const uint8_t *m, size_t len)
{
    uint8_t digest[crypto_hash_sha512_BYTES];
    uint8_t point[crypto_core_ristretto255_BYTES];
    psi_r255_hash_value(digest, m, len);
    crypto_core_ristretto255_from_hash(point, digest);
    /* Fails only for the identity, which k * H(m) is not (prime order,
     * k != 0, and H(m) is the identity with probability about 2^-252);
     * whether it failed is what the call reports, so it is public. */
    int failed = crypto_scalarmult_ristretto255(out, k, point);
    PSI_DECLASSIFY(&failed, sizeof failed);
    int rc = failed == 0 ? PSI_OK : PSI_E_CRYPTO;
    sodium_memzero(digest, sizeof digest);
    sodium_memzero(point, sizeof point);
    return rc;
}

int psi_r255_mul(uint8_t out[PSI_R255_BYTES], const uint8_t k[PSI_R255_BYTES],
                 const uint8_t p[PSI_R255_BYTES])
{
    int failed = crypto_scalarmult_ristretto255(out, k, p);
    // Public: P is a checked element and k != 0, so this never fails.
    PSI_DECLASSIFY(&failed, sizeof failed);
    return failed == 0 ? PSI_OK : PSI_E_CRYPTO;
}
