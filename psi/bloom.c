/* Bloom filters (PROTOCOL.md §7.3, §7.4, §9.3): sizing with the
 * reference's exact double arithmetic, double hashing with the
 * ASCII-prefixed SHA-256 pair for openmined-p256 (psi.js's probes), k
 * distinct probes from a SHA-256 stream for the project's own suites
 * (format 2), and bits set LSB-first within each byte. */
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

/* ------------------------------------------------------------ probers */

psi_bloom_format psi_bloom_format_of(int suite)
{
    return suite == PSI_SUITE_OPENMINED_P256 ? PSI_BLOOM_FORMAT_PSIJS
                                             : PSI_BLOOM_FORMAT_DISTINCT;
}

/* Slots of the repeat table: a power of two at least twice PSI_BLOOM_K_MAX,
 * so it is never more than half full. */
#define SEEN_SLOTS 4096
_Static_assert(SEEN_SLOTS >= 2 * PSI_BLOOM_K_MAX, "the repeat table stays half empty");

int psi_bloom_prober_init(psi_bloom_prober *pr, psi_bloom_format format, int32_t k,
                          uint64_t n_bytes)
{
    assert(n_bytes >= 1 && n_bytes <= UINT64_MAX / 8 && k >= 1);
    *pr = (psi_bloom_prober){format, k, n_bytes * 8, NULL, NULL};
    if (format == PSI_BLOOM_FORMAT_PSIJS)
        return PSI_OK;
    pr->slots = psi_calloc(SEEN_SLOTS, sizeof *pr->slots);
    pr->taken = psi_alloc(PSI_BLOOM_K_MAX * sizeof *pr->taken);
    if (pr->slots == NULL || pr->taken == NULL) {
        psi_bloom_prober_free(pr);
        return PSI_E_NOMEM;
    }
    return PSI_OK;
}

void psi_bloom_prober_free(psi_bloom_prober *pr)
{
    psi_free(pr->slots);
    psi_free(pr->taken);
    pr->slots = pr->taken = NULL;
}

/* The probe sequence repeats with a period dividing n_bits in psi.js's
 * format, and format 2 draws distinct bits, so more than n_bits probes
 * change nothing; capping them bounds the work a hostile k causes. */
static uint64_t bloom_count(int32_t k, uint64_t n_bits)
{
    return (uint64_t)k < n_bits ? (uint64_t)k : n_bits;
}

/* Called with each probe in order; returns 0 to stop. */
typedef int (*probe_fn)(void *ctx, uint64_t idx);

/* psi.js's probes (§7.3): h1 and h2 are SHA256 of the ASCII digit '1' or
 * '2' (not the bytes 01/02 of hash-to-curve) followed by the data, mod
 * n_bits; the probes h1 + i*h2 mod n_bits, stepped without forming a sum
 * that could pass 2^64 (the reference's int64 product i*h2 could
 * overflow).  Returns 0 if fn stopped the walk, else 1. */
static int walk_psijs(const psi_bloom_prober *pr, const uint8_t *data, size_t len, probe_fn fn,
                      void *ctx)
{
    static const uint8_t digits[2] = {'1', '2'};
    uint8_t md[crypto_hash_sha256_BYTES];
    uint64_t h[2], n_bits = pr->n_bits;
    for (int i = 0; i < 2; i++) {
        crypto_hash_sha256_state sha;
        crypto_hash_sha256_init(&sha);
        crypto_hash_sha256_update(&sha, &digits[i], 1);
        if (len > 0)
            crypto_hash_sha256_update(&sha, data, len);
        crypto_hash_sha256_final(&sha, md);
        h[i] = psi_digest_mod(md, sizeof md, n_bits);
    }
    uint64_t idx = h[0], probes = bloom_count(pr->k, n_bits);
    for (uint64_t i = 0; i < probes; i++) {
        if (!fn(ctx, idx))
            return 0;
        idx = idx >= n_bits - h[1] ? idx - (n_bits - h[1]) : idx + h[1];
    }
    return 1;
}

/* Adds idx to this element's indices: 1 if it is new, 0 if taken. */
static int seen_add(psi_bloom_prober *pr, uint64_t idx, size_t *n_taken)
{
    size_t at = (size_t)((idx * 0x9e3779b97f4a7c15u) >> 52) & (SEEN_SLOTS - 1);
    for (; pr->slots[at] != 0; at = (at + 1) & (SEEN_SLOTS - 1))
        if (pr->slots[at] == idx + 1)
            return 0;
    pr->slots[at] = idx + 1;
    pr->taken[(*n_taken)++] = at;
    return 1;
}

/* The domain of format 2's stream (§7.4), 17 bytes. */
static const uint8_t STREAM_TAG[] = "shardpsi-v2-bloom";

/* Format 2's probes (§7.4): the words w of SHA256(tag || be32(j) || data),
 * j = 0, 1, ..., four big-endian 64-bit words a block, give w mod n_bits;
 * the first min(k, n_bits) distinct ones are the probes.  Returns 0 if fn
 * stopped the walk, else 1. */
static int walk_distinct(psi_bloom_prober *pr, const uint8_t *data, size_t len, probe_fn fn,
                         void *ctx)
{
    uint64_t want = bloom_count(pr->k, pr->n_bits), got = 0;
    size_t n_taken = 0;
    int go_on = 1;
    for (uint32_t j = 0; go_on && got < want; j++) {
        uint8_t ctr[4] = {(uint8_t)(j >> 24), (uint8_t)(j >> 16), (uint8_t)(j >> 8), (uint8_t)j};
        uint8_t md[crypto_hash_sha256_BYTES];
        crypto_hash_sha256_state sha;
        crypto_hash_sha256_init(&sha);
        crypto_hash_sha256_update(&sha, STREAM_TAG, sizeof STREAM_TAG - 1);
        crypto_hash_sha256_update(&sha, ctr, sizeof ctr);
        if (len > 0)
            crypto_hash_sha256_update(&sha, data, len);
        crypto_hash_sha256_final(&sha, md);
        for (int t = 0; t < 4 && got < want; t++) {
            uint64_t w = 0;
            for (int b = 0; b < 8; b++)
                w = (w << 8) | md[8 * t + b];
            uint64_t idx = w % pr->n_bits;
            if (!seen_add(pr, idx, &n_taken))
                continue;
            got++;
            if (!fn(ctx, idx)) {
                go_on = 0;
                break;
            }
        }
    }
    for (size_t i = 0; i < n_taken; i++)
        pr->slots[pr->taken[i]] = 0;
    return go_on;
}

/* The walk of `pr`'s format. */
static int bloom_walk(psi_bloom_prober *pr, const uint8_t *data, size_t len, probe_fn fn,
                      void *ctx)
{
    return pr->format == PSI_BLOOM_FORMAT_PSIJS ? walk_psijs(pr, data, len, fn, ctx)
                                                : walk_distinct(pr, data, len, fn, ctx);
}

/* ------------------------------------------------ build, probes, match */

static int set_bit(void *ctx, uint64_t idx)
{
    uint8_t *bits = ctx;
    bits[(size_t)(idx >> 3)] |= (uint8_t)(1u << (idx & 7));
    return 1;
}

void psi_bloom_insert(uint8_t *bits, psi_bloom_prober *pr, const uint8_t *data, size_t len)
{
    assert(bits != NULL && pr != NULL && (data != NULL || len == 0));
    bloom_walk(pr, data, len, set_bit, bits);
}

typedef struct probe_list {
    uint64_t *idx;
    uint64_t n;
} probe_list;

static int record(void *ctx, uint64_t idx)
{
    probe_list *l = ctx;
    l->idx[l->n++] = idx;
    return 1;
}

uint64_t psi_bloom_probes(uint64_t *idx, psi_bloom_prober *pr, const uint8_t *data, size_t len)
{
    assert(idx != NULL && pr != NULL && (data != NULL || len == 0));
    probe_list l = {idx, 0};
    bloom_walk(pr, data, len, record, &l);
    return l.n;
}

int psi_bloom_build(uint8_t *bits, size_t n_bytes, int32_t k, psi_bloom_format format,
                    const uint8_t *elements, size_t n, size_t elen)
{
    assert(elements != NULL || n == 0);
    psi_bloom_prober pr;
    int rc = psi_bloom_prober_init(&pr, format, k, n_bytes);
    if (rc != PSI_OK)
        return rc;
    for (size_t i = 0; i < n; i++)
        psi_bloom_insert(bits, &pr, elements + i * PSI_ELEMENT_BYTES, elen);
    psi_bloom_prober_free(&pr);
    return PSI_OK;
}

/* Stops at the first probe whose bit is clear (§9.3). */
static int bit_is_set(void *ctx, uint64_t idx)
{
    const uint8_t *bits = ctx;
    return (bits[(size_t)(idx >> 3)] >> (idx & 7)) & 1u;
}

int psi_bloom_match(size_t *out, size_t *out_count, int32_t k, psi_bloom_format format,
                    const uint8_t *bits, size_t n_bytes, const uint8_t *elements, size_t n,
                    size_t elen)
{
    PSI_CHECK_ARG(out_count != NULL);
    size_t cap = *out_count;
    *out_count = 0;
    PSI_CHECK_ARG((out != NULL || cap == 0) && (elements != NULL || n == 0));
    PSI_CHECK_ARG(n <= SIZE_MAX / PSI_ELEMENT_BYTES && elen <= PSI_ELEMENT_BYTES);
    uint64_t nb = n_bytes;
    PSI_CHECK_ARG(k >= 1 && bits != NULL && nb >= 1 && nb <= UINT64_MAX / 8);
    PSI_CHECK_ARG(format == PSI_BLOOM_FORMAT_PSIJS || format == PSI_BLOOM_FORMAT_DISTINCT);
    if (cap > 0)
        memset(out, 0, cap * sizeof *out);
    psi_bloom_prober pr;
    int rc = psi_bloom_prober_init(&pr, format, k, nb);
    if (rc != PSI_OK)
        return rc;
    size_t m = 0;
    void *ctx = (void *)(uintptr_t)bits; /* read only */
    for (size_t i = 0; i < n; i++) {
        if (!bloom_walk(&pr, elements + i * PSI_ELEMENT_BYTES, elen, bit_is_set, ctx))
            continue;
        if (m == cap) {
            memset(out, 0, cap * sizeof *out); /* no partial result */
            rc = PSI_E_BUFFER_TOO_SMALL;
            break;
        }
        out[m++] = i;
    }
    psi_bloom_prober_free(&pr);
    if (rc == PSI_OK)
        *out_count = m;
    return rc;
}
