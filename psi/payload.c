/* Payload tables (PROTOCOL.md §22): a tag and an AEAD ciphertext of each
 * server value's payload, derived from its masked element, so that a client
 * holding the same element opens that payload and no other.
 *
 *   d      = BLAKE2b-512(key = salt, "shardpsi payload v1" || suite || E)
 *   tag    = d[0..16), key = d[32..64)
 *   record = tag || XChaCha20-Poly1305(key, nonce 0^24, AD = header || tag,
 *                                      le32(len) || payload || 0^(L - len))
 *
 * Keys are unique to (salt, suite, element), and a table refuses equal
 * elements, so the fixed nonce never repeats under one key. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "common.h"
#include "suite.h"

#define PAY_MAGIC "SPSIPAY1"
#define PAY_LABEL "shardpsi payload v1"
#define PAY_FIELD "PayloadTable.records"
#define PAY_REC_EXTRA (PSI_PAYLOAD_TAG_BYTES + 4 + crypto_aead_xchacha20poly1305_ietf_ABYTES)

_Static_assert(PAY_REC_EXTRA == 36, "a record is 36 + L bytes");

size_t psi_payload_table_bytes(size_t n, size_t pad_len)
{
    if (pad_len > PSI_PAYLOAD_MAX)
        return 0;
    size_t rec = PAY_REC_EXTRA + pad_len;
    if (n > (SIZE_MAX - PSI_PAYLOAD_HEAD_BYTES) / rec)
        return 0;
    return PSI_PAYLOAD_HEAD_BYTES + n * rec;
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The tag and the key of element e (the suite's encoding, elen bytes). */
static void pay_derive(uint8_t tag[PSI_PAYLOAD_TAG_BYTES], uint8_t key[32], int suite,
                       const uint8_t salt[PSI_PAYLOAD_SALT_BYTES], const uint8_t *e,
                       size_t elen)
{
    crypto_generichash_state st;
    uint8_t d[64], s = (uint8_t)suite;

    crypto_generichash_init(&st, salt, PSI_PAYLOAD_SALT_BYTES, sizeof d);
    crypto_generichash_update(&st, (const uint8_t *)PAY_LABEL, sizeof PAY_LABEL - 1);
    crypto_generichash_update(&st, &s, 1);
    crypto_generichash_update(&st, e, elen);
    crypto_generichash_final(&st, d, sizeof d);
    memcpy(tag, d, PSI_PAYLOAD_TAG_BYTES);
    memcpy(key, d + 32, 32);
    sodium_memzero(d, sizeof d);
    sodium_memzero(&st, sizeof st);
}

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
    size_t elen = psi_suite_element_bytes(suite), longest = 0;
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
    size_t need = psi_payload_table_bytes(n, L), rec = PAY_REC_EXTRA + L;
    if (need == 0)
        return PSI_E_MSG_TOO_LARGE;
    if (out == NULL || *out_len < need) {
        *out_len = need;
        return PSI_E_BUFFER_TOO_SMALL;
    }
        uint8_t ad[PSI_PAYLOAD_HEAD_BYTES + PSI_PAYLOAD_TAG_BYTES];
    uint8_t *plain = psi_alloc(4 + L);
    pay_ref *refs = psi_alloc(n * sizeof *refs + 1);
    uint8_t key[32];
    int rc = PSI_E_NOMEM;
    if (plain == NULL || refs == NULL)
        goto done;
    // The header, which every record authenticates.
    memcpy(out, PAY_MAGIC, 8);
    out[8] = (uint8_t)suite;
    memset(out + 9, 0, 3);
    put_le(out + 12, L, 4);
    put_le(out + 16, n, 8);
    if (salt != NULL)
        memcpy(out + 24, salt, PSI_PAYLOAD_SALT_BYTES);
    else
        randombytes_buf(out + 24, PSI_PAYLOAD_SALT_BYTES);
    for (size_t i = 0; i < n; i++) {
        pay_derive(refs[i].tag, key, suite, out + 24, elements + i * PSI_ELEMENT_BYTES, elen);
        refs[i].i = i;
    }
    qsort(refs, n, sizeof *refs, pay_cmp);
    memcpy(ad, out, PSI_PAYLOAD_HEAD_BYTES);
    for (size_t j = 0; j < n; j++) {
        // Equal tags: equal elements, so equal values (a tag collision of
        // distinct elements has probability about n^2 / 2^129).
        if (j > 0 && memcmp(refs[j].tag, refs[j - 1].tag, PSI_PAYLOAD_TAG_BYTES) == 0) {
            rc = psi_fail_at(PSI_E_PAYLOAD_DUPLICATE, "values", (int64_t)refs[j].i, -1);
            goto done;
        }
    }
    for (size_t j = 0; j < n; j++) {
        size_t i = refs[j].i;
        uint8_t *r = out + PSI_PAYLOAD_HEAD_BYTES + j * rec;
        static const uint8_t nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
        unsigned long long clen = 0;
        uint8_t tag[PSI_PAYLOAD_TAG_BYTES];

        pay_derive(tag, key, suite, out + 24, elements + i * PSI_ELEMENT_BYTES, elen);
        put_le(plain, payloads[i].len, 4);
        if (payloads[i].len > 0)
            memcpy(plain + 4, payloads[i].data, payloads[i].len);
        memset(plain + 4 + payloads[i].len, 0, L - payloads[i].len);
        memcpy(ad + PSI_PAYLOAD_HEAD_BYTES, tag, PSI_PAYLOAD_TAG_BYTES);
        memcpy(r, tag, PSI_PAYLOAD_TAG_BYTES);
        if (crypto_aead_xchacha20poly1305_ietf_encrypt(r + PSI_PAYLOAD_TAG_BYTES, &clen, plain,
                                                       4 + L, ad, sizeof ad, NULL, nonce,
                                                       key) != 0 ||
            clen != 4 + L + crypto_aead_xchacha20poly1305_ietf_ABYTES) {
            rc = PSI_E_CRYPTO;
            goto done;
        }
    }
    *out_len = need;
    rc = PSI_OK;
done:
    sodium_memzero(key, sizeof key);
    if (plain != NULL)
        psi_free_wipe(plain, 4 + L);
    psi_free(refs);
    if (rc != PSI_OK && out != NULL && *out_len >= need)
        memset(out, 0, need);
    return rc;
}

int psi_payload_table_check(int suite, const uint8_t *table, size_t len, size_t *n,
                            size_t *pad_len)
{
    PSI_CHECK_ARG(table != NULL || len == 0);
    psi_detail_clear();
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    if (len < PSI_PAYLOAD_HEAD_BYTES)
        return psi_fail_at(PSI_E_PAYLOAD_TRUNCATED, "PayloadTable", -1, (int64_t)len);
    if (memcmp(table, PAY_MAGIC, 8) != 0 || table[9] != 0 || table[10] != 0 || table[11] != 0)
        return psi_fail_at(PSI_E_PAYLOAD_FORMAT, "PayloadTable", -1, 0);
    if (table[8] != (uint8_t)suite)
        return psi_fail_at(PSI_E_SUITE_MISMATCH, "PayloadTable", -1, 8);
    uint64_t L = get_le(table + 12, 4), count = get_le(table + 16, 8);
    if (L > PSI_PAYLOAD_MAX)
        return psi_fail_at(PSI_E_PAYLOAD_LENGTH, "PayloadTable", -1, 12);
    size_t rec = PAY_REC_EXTRA + (size_t)L;
    if (count > (len - PSI_PAYLOAD_HEAD_BYTES) / rec ||
        len - PSI_PAYLOAD_HEAD_BYTES != (size_t)count * rec)
        return psi_fail_at(PSI_E_PAYLOAD_TRUNCATED, PAY_FIELD, -1, (int64_t)len);
    const uint8_t *r = table + PSI_PAYLOAD_HEAD_BYTES;
    for (size_t j = 1; j < count; j++)
        if (memcmp(r + (j - 1) * rec, r + j * rec, PSI_PAYLOAD_TAG_BYTES) >= 0)
            return psi_fail_at(PSI_E_PAYLOAD_ORDER, PAY_FIELD, (int64_t)j,
                               (int64_t)(PSI_PAYLOAD_HEAD_BYTES + j * rec));
    if (n != NULL)
        *n = (size_t)count;
    if (pad_len != NULL)
        *pad_len = (size_t)L;
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
    size_t rec = PAY_REC_EXTRA + L, elen = psi_suite_element_bytes(suite);
    uint8_t *plain = psi_alloc(4 + L), key[32], tag[PSI_PAYLOAD_TAG_BYTES];
    uint8_t ad[PSI_PAYLOAD_HEAD_BYTES + PSI_PAYLOAD_TAG_BYTES];
    static const uint8_t nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];
    if (plain == NULL)
        return PSI_E_NOMEM;
    memcpy(ad, table, PSI_PAYLOAD_HEAD_BYTES);
    for (size_t i = 0; i < k && rc == PSI_OK; i++) {
        pay_derive(tag, key, suite, table + 24, elements + i * PSI_ELEMENT_BYTES, elen);
        const uint8_t *r = pay_find(table + PSI_PAYLOAD_HEAD_BYTES, count, rec, tag);
        unsigned long long plen = 0;
        lens[i] = PSI_PAYLOAD_NONE;
        if (r == NULL)
            continue;
        memcpy(ad + PSI_PAYLOAD_HEAD_BYTES, tag, PSI_PAYLOAD_TAG_BYTES);
        if (crypto_aead_xchacha20poly1305_ietf_decrypt(plain, &plen, NULL,
                                                       r + PSI_PAYLOAD_TAG_BYTES,
                                                       rec - PSI_PAYLOAD_TAG_BYTES, ad,
                                                       sizeof ad, nonce, key) != 0 ||
            plen != 4 + L) {
            rc = psi_fail_at(PSI_E_PAYLOAD_AUTH, PAY_FIELD, (int64_t)i,
                             (int64_t)(r - table));
            break;
        }
        uint64_t l = get_le(plain, 4);
        int pad_ok = l <= L;
        for (size_t j = 4 + (pad_ok ? (size_t)l : L); j < 4 + L; j++)
            pad_ok &= plain[j] == 0;
        if (!pad_ok) {
            rc = psi_fail_at(PSI_E_PAYLOAD_LENGTH, PAY_FIELD, (int64_t)i, (int64_t)(r - table));
            break;
        }
        lens[i] = (size_t)l;
        if (L > 0)
            memcpy(out + i * L, plain + 4, L);
    }
    sodium_memzero(key, sizeof key);
    psi_free_wipe(plain, 4 + L);
    if (rc != PSI_OK) {
        if (out != NULL && L > 0)
            sodium_memzero(out, k * L);
        memset(lens, 0, k * sizeof *lens);
    }
    return rc;
}
