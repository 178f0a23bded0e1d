/* Bloom filters (PROTOCOL.md §7.3, §9.3). */
#ifndef PSI_BLOOM_H
#define PSI_BLOOM_H

#include "common.h"

/* k = ceil(-log2(fpr_c)), n_bytes = ceil(-m * log2(fpr_c) / ln 2 / 8) with
 * m = max(num_client_inputs, ns), with the reference's double arithmetic.
 * Returns PSI_OK, PSI_E_FPR, PSI_E_PARAM_OVERFLOW (k or n_bytes too large
 * for int32 / size_t, or 8 * n_bytes overflows). */
int psi_bloom_params(int32_t *k, size_t *n_bytes, double fpr, int64_t num_client_inputs,
                     size_t ns);

/* Sets the k bits of each of the n elements in bits (n_bytes >= 1 bytes,
 * zeroed by the caller). */
void psi_bloom_build(uint8_t *bits, size_t n_bytes, int32_t k, const uint8_t *elements,
                     size_t n, size_t elen);

/* Sets the k bits of one byte string of any length (data may be NULL when
 * len is 0).  psi_bloom_build applies it to the first elen bytes of each element slot
 * (the suite's element, §16); tests use
 * it to replay OpenMined's own filter of raw strings.  k >= 1, n_bytes >= 1. */
void psi_bloom_insert(uint8_t *bits, size_t n_bytes, int32_t k, const uint8_t *data,
                      size_t len);

/* Indices of the elements all of whose k bits are set, ascending.
 * k >= 1 and n_bytes >= 1 (validated by the parser).  Out: out, *out_count
 * (capacity n is enough). */
int psi_bloom_match(size_t *out, size_t *out_count, int32_t k, const uint8_t *bits,
                    size_t n_bytes, const uint8_t *elements, size_t n, size_t elen);

#endif /* PSI_BLOOM_H */
