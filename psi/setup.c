/* Matching unmasked client elements against a parsed setup (PROTOCOL.md
 * §9).  Raw matching is a merge walk over two byte-ordered lists; GCS and
 * Bloom matching live in gcs.c and bloom.c. */
#include <string.h>

#include "codec.h"
#include "bloom.h"
#include "gcs.h"
#include "setup.h"
#include "sort.h"

/* The raw merge walk (§9.1): client elements sorted by (bytes, index)
 * against the setup's sorted list; each setup element matches at most one
 * client element.  Either output may be NULL; *count gets the matches. */
static int raw_walk(const psi_setup *s, size_t *idx_out, psi_pair *pair_out, size_t *count,
                    const uint8_t *elements, size_t n)
{
    psi_keyed *items = psi_calloc(n, sizeof *items);
    if (items == NULL && n > 0)
        return PSI_E_NOMEM;
    for (size_t i = 0; i < n; i++)
        items[i] = (psi_keyed){elements + i * PSI_ELEMENT_BYTES, i};
    psi_keyed_sort(items, n);
    psi_raw_cursor cur;
    const uint8_t *elem;
    size_t a = 0, b = 0, m = 0;
    int rc = psi_raw_cursor_init(&cur, s);
    while (rc == PSI_OK && a < n && b < s->raw_count &&
           (rc = psi_raw_cursor_at(&cur, b, &elem)) == PSI_OK) {
        int c = memcmp(items[a].bytes, elem, PSI_ELEMENT_BYTES);
        if (c < 0) {
            a++;
        } else if (c > 0) {
            b++;
        } else {
            if (idx_out != NULL)
                idx_out[m] = items[a].index;
            if (pair_out != NULL)
                pair_out[m] = (psi_pair){items[a].index, b};
            m++, a++, b++;
        }
    }
    psi_raw_cursor_free(&cur);
    psi_free(items);
    *count = rc == PSI_OK ? m : 0;
    return rc;
}

/* Checks the common arguments of the match calls.  The output needs no
 * clearing: results are handed over whole by deliver() or not at all. */
static int match_begin(const psi_setup *s, const void *out, size_t *out_count,
                       const uint8_t *elements, size_t n, size_t *cap)
{
    PSI_CHECK_ARG(out_count != NULL);
    *cap = *out_count;
    *out_count = 0;
    PSI_CHECK_ARG(s != NULL && (elements != NULL || n == 0) && (out != NULL || *cap == 0));
    PSI_CHECK_ARG(n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    psi_detail_clear();
    return PSI_OK;
}

/* Runs the structure's matcher into a fresh array of n indices, *idx,
 * which the caller frees; *count gets the number of matches. */
static int match_all(const psi_setup *s, size_t **idx, size_t *count, const uint8_t *elements,
                     size_t n)
{
    *idx = psi_calloc(n, sizeof **idx);
    if (*idx == NULL)
        return PSI_E_NOMEM;
    *count = n;
    switch (s->structure) {
    case PSI_STRUCTURE_RAW:
        return raw_walk(s, *idx, NULL, count, elements, n);
    case PSI_STRUCTURE_GCS:
        return psi_gcs_match(*idx, count, s->gcs_values, s->gcs_count, s->gcs_hash_range,
                             elements, n, s->elen);
    case PSI_STRUCTURE_BLOOM_FILTER:
        return psi_bloom_match(*idx, count, s->bloom_k, psi_bloom_format_of(s->suite),
                               s->bloom_bits, s->bloom_bytes, elements, n, s->elen);
    }
    return PSI_E_STRUCTURE;
}

/* Hands a complete result to the caller, or nothing if it does not fit. */
static int deliver(void *out, size_t *out_count, size_t cap, const void *result, size_t m,
                   size_t item)
{
    if (m > cap)
        return PSI_E_BUFFER_TOO_SMALL;
    if (m > 0)
        memcpy(out, result, m * item);
    *out_count = m;
    return PSI_OK;
}

int psi_setup_match(const psi_setup *s, size_t *out, size_t *out_count,
                    const uint8_t *elements, size_t n)
{
    size_t cap;
    int rc = match_begin(s, out, out_count, elements, n, &cap);
    if (rc != PSI_OK)
        return rc;
    size_t *idx = NULL, m = 0;
    rc = match_all(s, &idx, &m, elements, n);
    if (rc == PSI_OK)
        rc = deliver(out, out_count, cap, idx, m, sizeof *idx);
    psi_free(idx);
    return rc;
}

int psi_setup_count(const psi_setup *s, size_t *count, const uint8_t *elements, size_t n)
{
    PSI_CHECK_ARG(count != NULL);
    *count = 0;
    PSI_CHECK_ARG(s != NULL && (elements != NULL || n == 0));
    psi_detail_clear();
    if (s->structure == PSI_STRUCTURE_RAW)
        return raw_walk(s, NULL, NULL, count, elements, n);
    size_t *idx = NULL, m = 0;
    int rc = match_all(s, &idx, &m, elements, n);
    if (rc == PSI_OK)
        *count = m;
    psi_free(idx);
    return rc;
}

int psi_setup_associate(const psi_setup *s, psi_pair *out, size_t *out_count,
                        const uint8_t *elements, size_t n)
{
    size_t cap;
    int rc = match_begin(s, out, out_count, elements, n, &cap);
    if (rc != PSI_OK)
        return rc;
    if (s->structure != PSI_STRUCTURE_RAW)
        return psi_fail_at(PSI_E_STRUCTURE, "ServerSetup", -1, -1);
    psi_pair *pairs = psi_calloc(n, sizeof *pairs);
    size_t m = 0;
    if (pairs == NULL && n > 0)
        return PSI_E_NOMEM;
    rc = raw_walk(s, NULL, pairs, &m, elements, n);
    if (rc == PSI_OK)
        rc = deliver(out, out_count, cap, pairs, m, sizeof *pairs);
    psi_free(pairs);
    return rc;
}

int psi_association_map(psi_pair *pairs, size_t n_pairs, const size_t *perm, size_t n_perm)
{
    PSI_CHECK_ARG((pairs != NULL || n_pairs == 0) && (perm != NULL || n_perm == 0));
    for (size_t i = 0; i < n_pairs; i++)
        PSI_CHECK_ARG(pairs[i].server_index < n_perm);
    for (size_t i = 0; i < n_pairs; i++)
        pairs[i].server_index = perm[pairs[i].server_index];
    psi_pairs_sort(pairs, n_pairs);
    return PSI_OK;
}
