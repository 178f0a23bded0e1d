/* Bloom filters (PROTOCOL.md §7.3, §9.3): sizing with the reference's exact
 * double arithmetic, double hashing with the ASCII-prefixed SHA-256 pair,
 * and bits set LSB-first within each byte. */
#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#include "bloom.h"
#include "gcs.h"

/* n_bytes < 2^60 keeps n_bits = 8 * n_bytes below 2^63, as the reference's
 * int64 arithmetic needs. */
#define BLOOM_BYTES_LIMIT 1152921504606846976.0

int psi_bloom_params(int32_t *k, size_t *n_bytes, double fpr, int64_t num_client_inputs,
                     size_t ns)
{
    PSI_CHECK_ARG(k != NULL && n_bytes != NULL);
    *k = 0;
    *n_bytes = 0;
    double fpr_c;
    int64_t m;
    int rc = psi_filter_params(&fpr_c, &m, fpr, num_client_inputs, ns);
    if (rc != PSI_OK)
        return rc;
    /* fpr_c in (0,1) puts k in [1, PSI_BLOOM_K_MAX = 1074] (psi.h): it
     * always fits, and the parser refuses anything above. */
    double hashes = ceil(-log2(fpr_c));
    /* Left to right, as the reference writes it; do not simplify. */
    double bytes = ceil((double)(-m) * log2(fpr_c) / log(2.0) / 8.0);
    if (!(bytes < BLOOM_BYTES_LIMIT))
        return psi_fail_at(PSI_E_PARAM_OVERFLOW, "params.fpr", -1, -1);
    if (!(bytes >= 1.0 && hashes >= 1.0 && hashes <= PSI_BLOOM_K_MAX)) /* only if log2 misbehaved */
        return psi_fail_at(PSI_E_FPR, "params.fpr", -1, -1);
    uint64_t nb = (uint64_t)bytes;
    if (nb > SIZE_MAX / 8)
        return psi_fail_at(PSI_E_PARAM_OVERFLOW, "params.fpr", -1, -1);
    *k = (int32_t)hashes;
    *n_bytes = (size_t)nb;
    return PSI_OK;
}

/* h1 and h2 of §7.3: SHA256 of the ASCII digit '1' or '2' (not the bytes
 * 01/02 of hash-to-curve) followed by the data, reduced mod n_bits. */
static void bloom_hashes(uint64_t h[2], uint64_t n_bits, const uint8_t *data, size_t len)
{
    static const uint8_t digits[2] = {'1', '2'};
    uint8_t md[crypto_hash_sha256_BYTES];
    for (int i = 0; i < 2; i++) {
        crypto_hash_sha256_state sha;
        crypto_hash_sha256_init(&sha);
        crypto_hash_sha256_update(&sha, &digits[i], 1);
        if (len > 0)
            crypto_hash_sha256_update(&sha, data, len);
        crypto_hash_sha256_final(&sha, md);
        h[i] = psi_digest_mod(md, sizeof md, n_bits);
    }
}

/* idx + h2 mod n_bits for idx, h2 < n_bits, without forming a sum that
 * could pass 2^64.  Stepping this way gives (h1 + i*h2) mod n_bits exactly,
 * where the reference's int64 product i*h2 could overflow. */
static uint64_t bloom_step(uint64_t idx, uint64_t h2, uint64_t n_bits)
{
    return idx >= n_bits - h2 ? idx - (n_bits - h2) : idx + h2;
}

/* The probe sequence repeats with a period dividing n_bits, so probes past
 * n_bits change nothing; capping them bounds the work a hostile k causes. */
static uint64_t bloom_probes(int32_t k, uint64_t n_bits)
{
    return (uint64_t)k < n_bits ? (uint64_t)k : n_bits;
}

void psi_bloom_insert(uint8_t *bits, size_t n_bytes, int32_t k, const uint8_t *data,
                      size_t len)
{
    assert(bits != NULL && n_bytes >= 1 && k >= 1 && (data != NULL || len == 0));
    uint64_t n_bits = (uint64_t)n_bytes * 8, h[2];
    bloom_hashes(h, n_bits, data, len);
    uint64_t idx = h[0], probes = bloom_probes(k, n_bits);
    for (uint64_t i = 0; i < probes; i++) {
        bits[(size_t)(idx >> 3)] |= (uint8_t)(1u << (idx & 7));
        idx = bloom_step(idx, h[1], n_bits);
    }
}

void psi_bloom_build(uint8_t *bits, size_t n_bytes, int32_t k, const uint8_t *elements,
                     size_t n, size_t elen)
{
    assert(elements != NULL || n == 0);
    for (size_t i = 0; i < n; i++)
        psi_bloom_insert(bits, n_bytes, k, elements + i * PSI_ELEMENT_BYTES, elen);
}

/* Whether all k probes of one element hit set bits (§9.3). */
static bool bloom_contains(const uint8_t *bits, uint64_t n_bits, int32_t k,
                           const uint8_t *element, size_t elen)
{
    uint64_t h[2];
    bloom_hashes(h, n_bits, element, elen);
    uint64_t idx = h[0], probes = bloom_probes(k, n_bits);
    for (uint64_t i = 0; i < probes; i++) {
        if (((bits[(size_t)(idx >> 3)] >> (idx & 7)) & 1u) == 0)
            return false;
        idx = bloom_step(idx, h[1], n_bits);
    }
    return true;
}

int psi_bloom_match(size_t *out, size_t *out_count, int32_t k, const uint8_t *bits,
                    size_t n_bytes, const uint8_t *elements, size_t n, size_t elen)
{
    PSI_CHECK_ARG(out_count != NULL);
    size_t cap = *out_count;
    *out_count = 0;
    PSI_CHECK_ARG((out != NULL || cap == 0) && (elements != NULL || n == 0));
    PSI_CHECK_ARG(n <= SIZE_MAX / PSI_ELEMENT_BYTES && elen <= PSI_ELEMENT_BYTES);
    uint64_t nb = n_bytes;
    PSI_CHECK_ARG(k >= 1 && bits != NULL && nb >= 1 && nb <= UINT64_MAX / 8);
    if (cap > 0)
        memset(out, 0, cap * sizeof *out);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!bloom_contains(bits, nb * 8, k, elements + i * PSI_ELEMENT_BYTES, elen))
            continue;
        if (m == cap) {
            memset(out, 0, cap * sizeof *out); /* no partial result */
            return PSI_E_BUFFER_TOO_SMALL;
        }
        out[m++] = i;
    }
    *out_count = m;
    return PSI_OK;
}
