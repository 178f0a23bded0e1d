/* Whole payload tables in memory (PROTOCOL.md §22): build, check and open,
 * composed of the parts of payload.c (the header, sealing a record, the
 * order of records, opening one), so a table built or read a batch at a
 * time has the same bytes and the same checks. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "common.h"
#include "payload.h"
#include "suite.h"

/* Sorting the records by tag: their tags and input positions. */
typedef struct pay_ref {
    uint8_t tag[PSI_PAYLOAD_TAG_BYTES];
    size_t i;
} pay_ref;

static int pay_cmp(const void *a, const void *b)
{
    const pay_ref *x = a, *y = b;
    int c = memcmp(x->tag, y->tag, PSI_PAYLOAD_TAG_BYTES);
    return c != 0 ? c : (x->i > y->i) - (x->i < y->i);
}

int psi_payload_table_build(int suite, uint8_t *out, size_t *out_len, const uint8_t *elements,
                            const psi_value *payloads, size_t n, size_t pad_len,
                            const uint8_t *salt)
{
    PSI_CHECK_ARG(out_len != NULL && (n == 0 || (elements != NULL && payloads != NULL)));
    psi_detail_clear();
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    size_t longest = 0;
    for (size_t i = 0; i < n; i++) {
        PSI_CHECK_ARG(payloads[i].data != NULL || payloads[i].len == 0);
        if (payloads[i].len > longest)
            longest = payloads[i].len;
        if (pad_len != 0 && payloads[i].len > pad_len)
            return psi_fail_at(PSI_E_PAYLOAD_LENGTH, "payloads", (int64_t)i, -1);
    }
    size_t L = pad_len != 0 ? pad_len : longest;
    if (L > PSI_PAYLOAD_MAX)
        return psi_fail_at(PSI_E_PAYLOAD_LENGTH, "payloads", -1, -1);
    size_t need = psi_payload_table_bytes(n, L), rec = PSI_PAYLOAD_RECORD_EXTRA + L;
    if (need == 0)
        return PSI_E_MSG_TOO_LARGE;
    if (out == NULL || *out_len < need) {
        *out_len = need;
        return PSI_E_BUFFER_TOO_SMALL;
    }
    pay_ref *refs = psi_alloc(n * sizeof *refs + 1);
    int rc = PSI_E_NOMEM;
    if (refs == NULL)
        goto done;
    // The header, which every record authenticates.
    if ((rc = psi_payload_head_make(suite, out, n, L, salt)) != PSI_OK)
        goto done;
    for (size_t i = 0; i < n; i++) {
        psi_pay_derive(refs[i].tag, NULL, suite, out + 24, elements + i * PSI_ELEMENT_BYTES);
        refs[i].i = i;
    }
    qsort(refs, n, sizeof *refs, pay_cmp);
    for (size_t j = 1; j < n; j++) {
        // Equal tags: equal elements, so equal values (a tag collision of
        // distinct elements has probability about n^2 / 2^129).
        if (memcmp(refs[j].tag, refs[j - 1].tag, PSI_PAYLOAD_TAG_BYTES) == 0) {
            rc = psi_fail_at(PSI_E_PAYLOAD_DUPLICATE, "values", (int64_t)refs[j].i, -1);
            goto done;
        }
    }
    for (size_t j = 0; j < n && rc == PSI_OK; j++) {
        size_t i = refs[j].i;
        rc = psi_payload_seal(suite, out, elements + i * PSI_ELEMENT_BYTES, payloads + i, 1,
                              out + PSI_PAYLOAD_HEAD_BYTES + j * rec);
    }
    if (rc == PSI_OK)
        *out_len = need;
done:
    psi_free(refs);
    if (rc != PSI_OK)
        memset(out, 0, need);
    return rc;
}

int psi_payload_table_check(int suite, const uint8_t *table, size_t len, size_t *n,
                            size_t *pad_len)
{
    uint64_t count = 0;
    size_t L = 0;
    PSI_CHECK_ARG(table != NULL || len == 0);
    int rc = psi_payload_head_check(suite, table, len, &count, &L);
    if (rc != PSI_OK)
        return rc;
    size_t rec = PSI_PAYLOAD_RECORD_EXTRA + L;
    if (count > (len - PSI_PAYLOAD_HEAD_BYTES) / rec ||
        len - PSI_PAYLOAD_HEAD_BYTES != (size_t)count * rec)
        return psi_fail_at(PSI_E_PAYLOAD_TRUNCATED, PSI_PAYLOAD_FIELD, -1, (int64_t)len);
    rc = psi_payload_records_check(table, NULL, table + PSI_PAYLOAD_HEAD_BYTES, (size_t)count,
                                   0);
    if (rc != PSI_OK)
        return rc;
    if (n != NULL)
        *n = (size_t)count;
    if (pad_len != NULL)
        *pad_len = L;
    return PSI_OK;
}

/* The record with `tag`, by binary search of the checked table, or NULL. */
static const uint8_t *pay_find(const uint8_t *recs, size_t count, size_t rec, const uint8_t *tag)
{
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = memcmp(recs + mid * rec, tag, PSI_PAYLOAD_TAG_BYTES);
        if (c == 0)
            return recs + mid * rec;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int psi_payload_open(int suite, const uint8_t *table, size_t len, const uint8_t *elements,
                     size_t k, uint8_t *out, size_t out_len, size_t *lens)
{
    size_t count = 0, L = 0;
    PSI_CHECK_ARG(k == 0 || (elements != NULL && lens != NULL));
    int rc = psi_payload_table_check(suite, table, len, &count, &L);
    if (rc != PSI_OK) {
        if (k > 0)
            memset(lens, 0, k * sizeof *lens);
        return rc;
    }
    if (k > 0 && L > 0 && (out == NULL || out_len / L < k))
        return PSI_E_BUFFER_TOO_SMALL;
    size_t rec = PSI_PAYLOAD_RECORD_EXTRA + L;
    uint8_t tag[PSI_PAYLOAD_TAG_BYTES];
    for (size_t i = 0; i < k && rc == PSI_OK; i++) {
        psi_pay_derive(tag, NULL, suite, table + 24, elements + i * PSI_ELEMENT_BYTES);
        const uint8_t *r = pay_find(table + PSI_PAYLOAD_HEAD_BYTES, count, rec, tag);
        lens[i] = PSI_PAYLOAD_NONE;
        if (r == NULL)
            continue;
        rc = psi_payload_record_open(suite, table, elements + i * PSI_ELEMENT_BYTES, r,
                                     L > 0 ? out + i * L : NULL, &lens[i]);
        if (rc != PSI_OK)
            rc = psi_fail_at(rc, PSI_PAYLOAD_FIELD, (int64_t)i, (int64_t)(r - table));
    }
    if (rc != PSI_OK) {
        if (out != NULL && L > 0)
            sodium_memzero(out, k * L);
        memset(lens, 0, k * sizeof *lens);
    }
    return rc;
}
