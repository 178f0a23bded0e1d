/* Constant-time P-256 arithmetic (PROTOCOL.md §1, §3, §4.3): the field
 * work of every build (hash-to-curve roots, point decoding, the batched
 * affine conversion after OpenSSL's multiplication) and the variable-base
 * scalar multiplication of the `-Dp256=portable` build.  64-bit limbs
 * where the compiler has 128-bit products, else 32-bit (wasm32).  Not
 * installed.
 *
 * All byte strings are 32-byte big-endian integers.  Field inputs must be
 * below p; the functions do not check it. */
#ifndef PSI_P256_H
#define PSI_P256_H

#include <stddef.h>
#include <stdint.h>

/* out = ser(k * (x, y)) (§4.1), 33 bytes.
 * In: k: 1 <= k < n, secret (constant time in k; stack copies are wiped).
 *     x, y: affine coordinates of a point on the curve (not checked). */
void psi_p256_mul_compressed(uint8_t out[33], const uint8_t k[32], const uint8_t x[32],
                             const uint8_t y[32]);

/* Returns 1 if t is a non-zero square mod p, else 0.  y = t^((p+1)/4),
 * the root whose square is t when t is a square.  Constant time. */
int psi_p256_sqrt(uint8_t y[32], const uint8_t t[32]);

/* Returns 1 and sets y to the root of x^3 - 3x + b with the given parity
 * (0 even, 1 odd) when x is the abscissa of a curve point, else 0 and y
 * is zeroed.  Constant time in x. */
int psi_p256_decompress(uint8_t y[32], const uint8_t x[32], int odd);

/* x = int(wide) mod p for a 64-byte big-endian integer (§3.1).  Constant
 * time. */
void psi_p256_reduce_wide(uint8_t x[32], const uint8_t wide[64]);

/* Most points psi_p256_jacobian_compress takes in one call. */
#define PSI_P256_BATCH_MAX 64

/* Compresses n Jacobian points (96 bytes each: X, Y, Z, each 32 bytes
 * big-endian and below p; the affine point is (X/Z^2, Y/Z^3)) into n
 * 33-byte encodings (§4.1) with one field inversion for the batch.
 * Returns 1, or 0 when n > PSI_P256_BATCH_MAX or some Z is 0 (infinity),
 * and then out is zeroed.  Constant time in the coordinates. */
int psi_p256_jacobian_compress(uint8_t *out, const uint8_t *xyz, size_t n);

/* RFC 9380 hashing (p256_sswu.c), suite P256_XMD:SHA-256_SSWU_RO_ and its
 * encode_to_curve sibling _NU_.  Constant time in the message bytes, not
 * in its length or the DST; stack copies are wiped.  msg may be NULL when
 * msg_len is 0.  dst is 1 to 255 bytes: a longer tag must first be
 * shortened by the caller as RFC 9380 §5.3.3 says. */

/* Most bytes psi_p256_expand_xmd gives: 255 SHA-256 blocks. */
#define PSI_P256_XMD_MAX_BYTES (255 * 32)

/* out = expand_message_xmd(msg, dst, out_len) with SHA-256 (§5.3.1).
 * Returns 1, or 0 when out_len > PSI_P256_XMD_MAX_BYTES or dst_len is 0
 * or above 255, and then out is zeroed.  out_len 0 writes nothing. */
int psi_p256_expand_xmd(uint8_t *out, size_t out_len, const uint8_t *msg, size_t msg_len,
                        const uint8_t *dst, size_t dst_len);

/* (x, y) = hash_to_curve(msg) (§3, random oracle: two field elements
 * from 96 bytes, each mapped by simplified SWU, summed), affine.  Returns
 * 1, or 0 with x and y zeroed when the DST is refused or the sum is the
 * point at infinity (probability about 2^-256). */
int psi_p256_sswu_hash(uint8_t x[32], uint8_t y[32], const uint8_t *msg, size_t msg_len,
                       const uint8_t *dst, size_t dst_len);

/* (x, y) = encode_to_curve(msg) (§3, nonuniform: one field element, one
 * map), affine; for the tests.  Returns 1, or 0 with x and y zeroed when
 * the DST is refused. */
int psi_p256_sswu_encode(uint8_t x[32], uint8_t y[32], const uint8_t *msg, size_t msg_len,
                         const uint8_t *dst, size_t dst_len);

/* Field operations on canonical values below p, for the tests. */
void psi_p256_fe_mul(uint8_t r[32], const uint8_t a[32], const uint8_t b[32]);
void psi_p256_fe_sqr(uint8_t r[32], const uint8_t a[32]);
/* r = a^(p-2): the inverse, and 0 for 0. */
void psi_p256_fe_inv(uint8_t r[32], const uint8_t a[32]);

#endif /* PSI_P256_H */
