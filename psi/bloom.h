/* Bloom filters (PROTOCOL.md §7.3, §7.4, §9.3). */
#ifndef PSI_BLOOM_H
#define PSI_BLOOM_H

#include "common.h"

/* The two probe formats: psi.js's double hashing, h1 + i*h2 mod n_bits
 * (§7.3), for openmined-p256, whose probes repeat when gcd(h2, n_bits) is
 * large; and format 2 (§7.4) for the project's own suites, k distinct bits
 * drawn from a SHA-256 stream.  The number is the value of the
 * BloomFilterInfo field `format` (absent in psi.js's). */
typedef enum psi_bloom_format {
    PSI_BLOOM_FORMAT_PSIJS = 1,
    PSI_BLOOM_FORMAT_DISTINCT = 2
} psi_bloom_format;

/* Field 3 of BloomFilterInfo in the project's own suites (§7.4). */
#define PSI_BLOOM_FORMAT_FIELD 3

/* The probe format of `suite`'s Bloom setups: PSI_BLOOM_FORMAT_PSIJS for
 * openmined-p256, PSI_BLOOM_FORMAT_DISTINCT for p256-sswu and
 * ristretto255. */
psi_bloom_format psi_bloom_format_of(int suite);

/* What probing one filter needs: its size, k and format, and for format 2
 * the table that finds repeated indices (one allocation, reused for every
 * element). */
typedef struct psi_bloom_prober {
    psi_bloom_format format;
    int32_t k;
    uint64_t n_bits;
    uint64_t *slots; /* format 2: open addressing, index + 1, 0 = free */
    uint64_t *taken; /* format 2: this element's indices so far */
} psi_bloom_prober;

/* Prepares *pr for a filter of n_bytes (1 <= n_bytes <= UINT64_MAX / 8)
 * and k >= 1 in `format`.  Returns PSI_OK or PSI_E_NOMEM; on success free
 * it with psi_bloom_prober_free. */
int psi_bloom_prober_init(psi_bloom_prober *pr, psi_bloom_format format, int32_t k,
                          uint64_t n_bytes);
void psi_bloom_prober_free(psi_bloom_prober *pr);

/* k = ceil(-log2(fpr_c)), n_bytes = ceil(-m * log2(fpr_c) / ln 2 / 8) with
 * m = max(num_client_inputs, ns), with the reference's double arithmetic.
 * The same in both formats.  Returns PSI_OK, PSI_E_FPR,
 * PSI_E_PARAM_OVERFLOW (k or n_bytes too large for int32 / size_t, or
 * 8 * n_bytes overflows). */
int psi_bloom_params(int32_t *k, size_t *n_bytes, double fpr, int64_t num_client_inputs,
                     size_t ns);

/* Sets the k bits of each of the n elements in bits (n_bytes >= 1 bytes,
 * zeroed by the caller), probed as `format`.  Returns PSI_OK or
 * PSI_E_NOMEM. */
int psi_bloom_build(uint8_t *bits, size_t n_bytes, int32_t k, psi_bloom_format format,
                    const uint8_t *elements, size_t n, size_t elen);

/* Sets the bits of one byte string of any length (data may be NULL when
 * len is 0) in the filter `pr` was made for.  psi_bloom_build applies it
 * to the first elen bytes of each element slot (the suite's element,
 * §16); tests use it to replay OpenMined's own filter of raw strings. */
void psi_bloom_insert(uint8_t *bits, psi_bloom_prober *pr, const uint8_t *data, size_t len);

/* The probes of one byte string: writes min(k, n_bits) bit indices to
 * idx, in probe order, and returns their number.  For tests. */
uint64_t psi_bloom_probes(uint64_t *idx, psi_bloom_prober *pr, const uint8_t *data, size_t len);

/* Indices of the elements all of whose k bits are set, ascending, probed
 * as `format`.  k >= 1 and n_bytes >= 1 (validated by the parser).  Out:
 * out, *out_count (capacity n is enough). */
int psi_bloom_match(size_t *out, size_t *out_count, int32_t k, psi_bloom_format format,
                    const uint8_t *bits, size_t n_bytes, const uint8_t *elements, size_t n,
                    size_t elen);

#endif /* PSI_BLOOM_H */
