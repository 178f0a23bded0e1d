/* P-256 scalar multiplication on eight lanes at once (PROTOCOL.md §21):
 * one form on AVX-512 IFMA, one in plain C, the same code (lanes.h,
 * p256_x8_impl.h) and the same bytes.  Not installed.
 *
 * Byte strings are 32-byte big-endian integers; field inputs must be below
 * p, points on the curve (neither is checked).  Constant time in the
 * scalars and the coordinates; stack copies are wiped. */
#ifndef PSI_P256_X8_H
#define PSI_P256_X8_H

#include <stdint.h>

#define PSI_X8_LANES 8

/* xyz[i] = Jacobian coordinates (X, Y, Z; affine (X/Z^2, Y/Z^3)) of
 * k[i] * (x[i], y[i]), canonical, 96 bytes a lane, ready for
 * psi_p256_jacobian_compress.  Z is 0 where the product is the identity
 * (k[i] a multiple of n). */
void psi_p256_x8_mul_c(uint8_t xyz[PSI_X8_LANES][96], const uint8_t k[PSI_X8_LANES][32],
                       const uint8_t x[PSI_X8_LANES][32], const uint8_t y[PSI_X8_LANES][32]);

/* As psi_p256_decompress for each lane: y[i] = the root of
 * x[i]^3 - 3 x[i] + b with the parity odd[i] (0 or 1) and ok[i] = 1 when
 * x[i] is the abscissa of a curve point, else y[i] = 0 and ok[i] = 0. */
void psi_p256_x8_decompress_c(uint8_t y[PSI_X8_LANES][32], uint8_t ok[PSI_X8_LANES],
                              const uint8_t x[PSI_X8_LANES][32], const uint8_t odd[PSI_X8_LANES]);

/* RFC 9380 hash_to_curve for P256_XMD:SHA-256_SSWU_RO_ from its two field
 * elements: (x[i], y[i]) = map(u0[i]) + map(u1[i]), affine, as
 * psi_p256_sswu_hash after hash_to_field (u0, u1 canonical).  inf[i] = 1
 * (and x[i], y[i] zero) where the sum is the identity, else 0. */
void psi_p256_x8_sswu_c(uint8_t x[PSI_X8_LANES][32], uint8_t y[PSI_X8_LANES][32],
                        uint8_t inf[PSI_X8_LANES], const uint8_t u0[PSI_X8_LANES][32],
                        const uint8_t u1[PSI_X8_LANES][32]);

/* As psi_p256_jacobian_compress for n points, n a multiple of 8 up to
 * PSI_X8_COMPRESS_MAX (other n: returns 0 and leaves out alone): the
 * batch inversion runs lane by lane (point 8 g + l in lane l), one lane
 * inversion for the n points.  Returns 1, or 0 with out zeroed when some Z
 * is 0. */
#define PSI_X8_COMPRESS_MAX 64
int psi_p256_x8_compress_c(uint8_t *out, const uint8_t *xyz, size_t n);

/* Field operations on canonical values, for the tests: op 0 r = a b,
 * 1 r = a^2, 2 r = a + b, 3 r = a - b, all mod p. */
void psi_p256_x8_fe_op_c(uint8_t r[PSI_X8_LANES][32], const uint8_t a[PSI_X8_LANES][32],
                         const uint8_t b[PSI_X8_LANES][32], int op);

#ifdef PSI_HAVE_IFMA
/* The same on AVX-512 IFMA; call only when psi_cpu_ifma() returns 1. */
void psi_p256_x8_mul_ifma(uint8_t xyz[PSI_X8_LANES][96], const uint8_t k[PSI_X8_LANES][32],
                          const uint8_t x[PSI_X8_LANES][32], const uint8_t y[PSI_X8_LANES][32]);
void psi_p256_x8_decompress_ifma(uint8_t y[PSI_X8_LANES][32], uint8_t ok[PSI_X8_LANES],
                                 const uint8_t x[PSI_X8_LANES][32],
                                 const uint8_t odd[PSI_X8_LANES]);
void psi_p256_x8_sswu_ifma(uint8_t x[PSI_X8_LANES][32], uint8_t y[PSI_X8_LANES][32],
                           uint8_t inf[PSI_X8_LANES], const uint8_t u0[PSI_X8_LANES][32],
                           const uint8_t u1[PSI_X8_LANES][32]);
int psi_p256_x8_compress_ifma(uint8_t *out, const uint8_t *xyz, size_t n);
void psi_p256_x8_fe_op_ifma(uint8_t r[PSI_X8_LANES][32], const uint8_t a[PSI_X8_LANES][32],
                            const uint8_t b[PSI_X8_LANES][32], int op);
#endif

#endif /* PSI_P256_X8_H */
