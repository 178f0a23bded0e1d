/* Golomb-compressed sets (PROTOCOL.md §7.2, §9.2, §9.4). */
#ifndef PSI_GCS_H
#define PSI_GCS_H

#include "common.h"

/* The part of §7 both filters share: fpr_c = fpr / num_client_inputs must
 * be in (0,1) (PSI_E_FPR otherwise, also for num_client_inputs < 1 and for
 * NaN) and m = max(num_client_inputs, ns) (PSI_E_PARAM_OVERFLOW past
 * int64). */
int psi_filter_params(double *fpr_c, int64_t *m, double fpr, int64_t num_client_inputs,
                      size_t ns);

/* hash_range = (int64) trunc(max(num_client_inputs, ns) / (fpr /
 * num_client_inputs)), with exactly the reference's double arithmetic.
 * Returns PSI_OK, PSI_E_FPR (fpr_c NaN or outside (0,1)),
 * PSI_E_PARAM_OVERFLOW (quotient >= 2^63). */
int psi_gcs_hash_range(int64_t *hash_range, double fpr, int64_t num_client_inputs,
                       size_t ns);

/* int(SHA256(element)) mod hash_range for the len bytes of an element;
 * hash_range >= 1. */
uint64_t psi_gcs_hash(const uint8_t *element, size_t len, int64_t hash_range);

/* int(digest) mod m for a big-endian byte string of any length, exact for
 * every m >= 1 (m may exceed 2^63).  Shared with bloom.c. */
uint64_t psi_digest_mod(const uint8_t *digest, size_t len, uint64_t m);

/* An upper bound on the bytes of the bit stream for n elements under
 * hash_range, whatever their hashes.  PSI_E_PARAM_OVERFLOW if it does not
 * fit in size_t. */
int psi_gcs_bits_bound(size_t *bound, int64_t hash_range, size_t n);

/* Builds the stream for n elements (any order, duplicates allowed), slots
 * of PSI_ELEMENT_BYTES of which the first elen are hashed (§16).
 * Out: *div; bits, *bits_len (capacity in, bytes out; n == 0 gives div 0
 * and no bytes).  Returns PSI_OK, PSI_E_BUFFER_TOO_SMALL, PSI_E_NOMEM,
 * PSI_E_PARAM_OVERFLOW (div would be infinite). */
int psi_gcs_build(int32_t *div, uint8_t *bits, size_t *bits_len, int64_t hash_range,
                  const uint8_t *elements, size_t n, size_t elen);

/* The encoder behind psi_gcs_build, on hash values directly (also used by
 * tests): sorts values[0..n) ascending in place, then computes div and the
 * stream exactly as psi_gcs_build does.  Every value must be below
 * INT64_MAX; values below the hash_range given to psi_gcs_bits_bound keep
 * *bits_len within that bound.
 * Out: *div; bits, *bits_len (capacity in, bytes out).  Returns PSI_OK,
 * PSI_E_INVALID_ARG, PSI_E_BUFFER_TOO_SMALL, PSI_E_PARAM_OVERFLOW. */
int psi_gcs_encode_values(int32_t *div, uint8_t *bits, size_t *bits_len, uint64_t *values,
                          size_t n);

/* Decodes and validates a received stream: hash_range >= 1
 * (PSI_E_GCS_HASH_RANGE), 0 <= div <= 63 (PSI_E_GCS_DIV), no value cut
 * short and every value < hash_range (PSI_E_GCS_STREAM).  Out: *values
 * (psi_alloc'ed, distinct, ascending; the caller psi_frees it, NULL when
 * *count is 0), *count. */
int psi_gcs_decode(uint64_t **values, size_t *count, int64_t hash_range, int32_t div,
                   const uint8_t *bits, size_t bits_len);

/* psi_gcs_decode with a bound: a stream holding more than max_count
 * distinct values fails with PSI_E_SETUP_MISMATCH (detail on the bits)
 * during the counting pass, before the values are allocated.  *end_bit
 * gets the stream position just past the last value's remainder (0 for
 * an empty set): an honest stream is ceil(*end_bit / 8) bytes long. */
int psi_gcs_decode_bounded(uint64_t **values, size_t *count, uint64_t *end_bit,
                           uint64_t max_count, int64_t hash_range, int32_t div,
                           const uint8_t *bits, size_t bits_len);

/* The div an honest encoder picks for n values (duplicates counted) whose
 * largest is vlast (§7.2), or 64 when it would overflow (also for n = 0 or
 * vlast >= INT64_MAX).  Nonincreasing in n for a fixed vlast. */
int psi_gcs_div_of(uint64_t vlast, size_t n);

/* The exact bits of the stream an encoder writes for `values` (ascending)
 * under div.  Returns PSI_OK, PSI_E_INVALID_ARG (div outside [0, 63]),
 * PSI_E_PARAM_OVERFLOW (more than 2^64 bits). */
int psi_gcs_stream_bits(uint64_t *nbits, const uint64_t *values, size_t n, int32_t div);

/* Indices of the elements (slots as for psi_gcs_build) whose hash is among `values` (distinct,
 * ascending), ordered by hash; equal hashes come in the order libc++'s
 * unstable std::sort leaves them, as the reference and psi.js emit them
 * (cxx_sort.h), not necessarily by index.  Out: out, *out_count (capacity
 * n is enough; cleared on entry). */
int psi_gcs_match(size_t *out, size_t *out_count, const uint64_t *values, size_t n_values,
                  int64_t hash_range, const uint8_t *elements, size_t n, size_t elen);

#endif /* PSI_GCS_H */
