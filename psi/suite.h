/* Suite facts shared inside psi/ (PROTOCOL.md §16).  Not installed. */
#ifndef PSI_SUITE_H
#define PSI_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* Number of suites; psi_suite values are 0 .. PSI_SUITE_COUNT - 1. */
#define PSI_SUITE_COUNT 3

/* The first byte of a suite header (§16.1): field 15, wire type 7, which
 * no protobuf parser accepts.  The second byte is the suite's number. */
#define PSI_SUITE_HEADER_TAG 0x7f

/* A ristretto255 element and scalar. */
#define PSI_R255_BYTES 32

/* Returns 1 for a known suite number, else 0. */
int psi_suite_known(int suite);

/* ristretto255 (ristretto.c, §16.3), through libsodium. */

/* Checks key (exactly 32 bytes, little-endian, 1 <= k < l) and writes k
 * and k^-1 mod l.  Constant time in the key; only the verdict is public.
 * Returns PSI_OK, PSI_E_KEY_OUT_OF_RANGE, PSI_E_CRYPTO. */
int psi_r255_key_set(uint8_t k[PSI_R255_BYTES], uint8_t kinv[PSI_R255_BYTES],
                     const uint8_t *key, size_t len);
/* Strict decoding of a partner element: PSI_OK, PSI_E_POINT_LENGTH,
 * PSI_E_POINT_IDENTITY, PSI_E_POINT_ENCODING. */
int psi_r255_check(const uint8_t *in, size_t len);
/* psi_r255_check's checks before decoding: length, identity, bit 255.
 * Returns PSI_OK or the error psi_r255_check gives for them. */
int psi_r255_precheck(const uint8_t *in, size_t len);
/* digest = SHA-512(prefix || m), the input of H's from_hash (§16.3). */
void psi_r255_hash_value(uint8_t digest[64], const uint8_t *m, size_t len);
/* out = enc(k * H(m)), H(m) = from_hash(SHA-512(prefix || m)).  Constant
 * time in m (not its length) and k.  Returns PSI_OK, PSI_E_CRYPTO. */
int psi_r255_mask_value(uint8_t out[PSI_R255_BYTES], const uint8_t k[PSI_R255_BYTES],
                        const uint8_t *m, size_t len);
/* out = enc(k * P) for a checked element P.  Returns PSI_OK or
 * PSI_E_CRYPTO. */
int psi_r255_mul(uint8_t out[PSI_R255_BYTES], const uint8_t k[PSI_R255_BYTES],
                 const uint8_t p[PSI_R255_BYTES]);

#endif /* PSI_SUITE_H */
