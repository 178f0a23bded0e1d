/* ristretto255 eight lanes at a time (RFC 9496), giving exactly the bytes
 * of libsodium 1.0.18.  Two builds of one source (r255_x8_impl.h over
 * lanes.h): the _ifma functions use AVX-512 IFMA and may be called only
 * where the CPU and OS allow it (psi_cpu_ifma(), cpu.h); the _c functions are
 * plain C, run anywhere, and give the same bytes.  All run in constant time
 * in the scalars and the points; only the returned failure masks are
 * public.  Internal: not installed. */
#ifndef PSI_R255_X8_H
#define PSI_R255_X8_H

#include <stdint.h>

/* out[i] = encode(k[i] * decode(p[i])), as
 * crypto_scalarmult_ristretto255(out[i], k[i], p[i]): bit 255 of each
 * scalar is ignored (libsodium clears it), and so is bit 255 of each point
 * encoding (libsodium 1.0.18's decode ignores it).  Returns a mask, bit i
 * set when p[i] does not decode or the result is the identity (the cases
 * where libsodium returns -1); out[i] is then 32 zero bytes. */
int psi_r255_x8_mul_ifma(uint8_t out[8][32], const uint8_t k[8][32], const uint8_t p[8][32]);
int psi_r255_x8_mul_c(uint8_t out[8][32], const uint8_t k[8][32], const uint8_t p[8][32]);

/* out[i] = crypto_core_ristretto255_from_hash(h[i]) (RFC 9496 §4.3.4). */
void psi_r255_x8_from_hash_ifma(uint8_t out[8][32], const uint8_t h[8][64]);
void psi_r255_x8_from_hash_c(uint8_t out[8][32], const uint8_t h[8][64]);

/* The ristretto255 suite's masking (PROTOCOL.md §16.3) of eight values:
 * out[i] = encode(k[i] * from_hash(h[i])), as psi_r255_mask_value after its
 * SHA-512 (crypto_core_ristretto255_from_hash, then
 * crypto_scalarmult_ristretto255).  Returns the mask of the lanes whose
 * product is the identity (out[i] then zero), for k[i] = 0 mod l only. */
int psi_r255_x8_mask_ifma(uint8_t out[8][32], const uint8_t k[8][32], const uint8_t h[8][64]);
int psi_r255_x8_mask_c(uint8_t out[8][32], const uint8_t k[8][32], const uint8_t h[8][64]);

/* Field hooks for the tests: r[i] = a[i] * b[i] (or a[i]^2) mod 2^255 - 19,
 * inputs read as 32 little-endian bytes with bit 255 ignored (values from
 * p to 2^255 - 1 allowed), the result canonical. */
void psi_r255_x8_fe_mul_ifma(uint8_t r[8][32], const uint8_t a[8][32], const uint8_t b[8][32]);
void psi_r255_x8_fe_mul_c(uint8_t r[8][32], const uint8_t a[8][32], const uint8_t b[8][32]);
void psi_r255_x8_fe_sqr_ifma(uint8_t r[8][32], const uint8_t a[8][32]);
void psi_r255_x8_fe_sqr_c(uint8_t r[8][32], const uint8_t a[8][32]);

#endif /* PSI_R255_X8_H */
