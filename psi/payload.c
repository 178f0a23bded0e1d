/* Payload tables in parts (PROTOCOL.md §22, §22.4): the header, the records
 * of a batch of elements, their tags, the order of consecutive records and
 * one record's opening.  A table of any size is built and read with these
 * a batch at a time (the CLI past its memory budget), and the whole-table
 * calls of payload_table.c are the same parts composed in memory.
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
#include "payload.h"
#include "suite.h"

#define PAY_MAGIC "SPSIPAY1"
#define PAY_LABEL "shardpsi payload v1"

_Static_assert(PSI_PAYLOAD_RECORD_EXTRA == 16 + 4 + crypto_aead_xchacha20poly1305_ietf_ABYTES,
               "a record is 36 + L bytes");

static const uint8_t pay_nonce[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES];

size_t psi_payload_table_bytes(size_t n, size_t pad_len)
{
    if (pad_len > PSI_PAYLOAD_MAX)
        return 0;
    size_t rec = PSI_PAYLOAD_RECORD_EXTRA + pad_len;
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

void psi_pay_derive(uint8_t tag[PSI_PAYLOAD_TAG_BYTES], uint8_t key[32], int suite,
                    const uint8_t salt[PSI_PAYLOAD_SALT_BYTES], const uint8_t *e)
{
    crypto_generichash_state st;
    uint8_t d[64], s = (uint8_t)suite;

    crypto_generichash_init(&st, salt, PSI_PAYLOAD_SALT_BYTES, sizeof d);
    crypto_generichash_update(&st, (const uint8_t *)PAY_LABEL, sizeof PAY_LABEL - 1);
    crypto_generichash_update(&st, &s, 1);
    crypto_generichash_update(&st, e, psi_suite_element_bytes(suite));
    crypto_generichash_final(&st, d, sizeof d);
    memcpy(tag, d, PSI_PAYLOAD_TAG_BYTES);
    if (key != NULL)
        memcpy(key, d + 32, 32);
    sodium_memzero(d, sizeof d);
    sodium_memzero(&st, sizeof st);
}

int psi_payload_head_make(int suite, uint8_t head[PSI_PAYLOAD_HEAD_BYTES], uint64_t n,
                          size_t pad_len, const uint8_t *salt)
{
    PSI_CHECK_ARG(head != NULL);
    psi_detail_clear();
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    if (pad_len > PSI_PAYLOAD_MAX)
        return psi_fail_at(PSI_E_PAYLOAD_LENGTH, "payloads", -1, -1);
    if (n > (UINT64_MAX - PSI_PAYLOAD_HEAD_BYTES) / (PSI_PAYLOAD_RECORD_EXTRA + pad_len))
        return PSI_E_MSG_TOO_LARGE;
    memcpy(head, PAY_MAGIC, 8);
    head[8] = (uint8_t)suite;
    memset(head + 9, 0, 3);
    put_le(head + 12, pad_len, 4);
    put_le(head + 16, n, 8);
    if (salt != NULL)
        memcpy(head + 24, salt, PSI_PAYLOAD_SALT_BYTES);
    else
        randombytes_buf(head + 24, PSI_PAYLOAD_SALT_BYTES);
    return PSI_OK;
}

int psi_payload_head_check(int suite, const uint8_t *head, size_t len, uint64_t *n,
                           size_t *pad_len)
{
    PSI_CHECK_ARG(head != NULL || len == 0);
    psi_detail_clear();
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    if (len < PSI_PAYLOAD_HEAD_BYTES)
        return psi_fail_at(PSI_E_PAYLOAD_TRUNCATED, "PayloadTable", -1, (int64_t)len);
    if (memcmp(head, PAY_MAGIC, 8) != 0 || head[9] != 0 || head[10] != 0 || head[11] != 0)
        return psi_fail_at(PSI_E_PAYLOAD_FORMAT, "PayloadTable", -1, 0);
    if (head[8] != (uint8_t)suite)
        return psi_fail_at(PSI_E_SUITE_MISMATCH, "PayloadTable", -1, 8);
    uint64_t L = get_le(head + 12, 4);
    if (L > PSI_PAYLOAD_MAX)
        return psi_fail_at(PSI_E_PAYLOAD_LENGTH, "PayloadTable", -1, 12);
    if (n != NULL)
        *n = get_le(head + 16, 8);
    if (pad_len != NULL)
        *pad_len = (size_t)L;
    return PSI_OK;
}

/* L of a header made by psi_payload_head_make or passed by _head_check. */
static size_t head_pad(const uint8_t *head)
{
    return (size_t)get_le(head + 12, 4);
}

int psi_payload_seal(int suite, const uint8_t head[PSI_PAYLOAD_HEAD_BYTES],
                     const uint8_t *elements, const psi_value *payloads, size_t k,
                     uint8_t *out)
{
    PSI_CHECK_ARG(head != NULL && (k == 0 || (elements != NULL && payloads != NULL &&
                                              out != NULL)));
    int rc = psi_payload_head_check(suite, head, PSI_PAYLOAD_HEAD_BYTES, NULL, NULL);
    if (rc != PSI_OK)
        return rc;
    size_t L = head_pad(head), rec = PSI_PAYLOAD_RECORD_EXTRA + L;
    for (size_t i = 0; i < k; i++) {
        PSI_CHECK_ARG(payloads[i].data != NULL || payloads[i].len == 0);
        if (payloads[i].len > L)
            return psi_fail_at(PSI_E_PAYLOAD_LENGTH, "payloads", (int64_t)i, -1);
    }
    uint8_t ad[PSI_PAYLOAD_HEAD_BYTES + PSI_PAYLOAD_TAG_BYTES], key[32];
    uint8_t *plain = psi_alloc(4 + L);
    if (plain == NULL)
        return PSI_E_NOMEM;
    memcpy(ad, head, PSI_PAYLOAD_HEAD_BYTES);
    for (size_t i = 0; i < k && rc == PSI_OK; i++) {
        uint8_t *r = out + i * rec;
        unsigned long long clen = 0;

        psi_pay_derive(r, key, suite, head + 24, elements + i * PSI_ELEMENT_BYTES);
        put_le(plain, payloads[i].len, 4);
        if (payloads[i].len > 0)
            memcpy(plain + 4, payloads[i].data, payloads[i].len);
        memset(plain + 4 + payloads[i].len, 0, L - payloads[i].len);
        memcpy(ad + PSI_PAYLOAD_HEAD_BYTES, r, PSI_PAYLOAD_TAG_BYTES);
        if (crypto_aead_xchacha20poly1305_ietf_encrypt(r + PSI_PAYLOAD_TAG_BYTES, &clen, plain,
                                                       4 + L, ad, sizeof ad, NULL, pay_nonce,
                                                       key) != 0 ||
            clen != 4 + L + crypto_aead_xchacha20poly1305_ietf_ABYTES)
            rc = PSI_E_CRYPTO;
    }
    sodium_memzero(key, sizeof key);
    psi_free_wipe(plain, 4 + L);
    if (rc != PSI_OK)
        sodium_memzero(out, k * rec);
    return rc;
}

int psi_payload_tags(int suite, const uint8_t head[PSI_PAYLOAD_HEAD_BYTES],
                     const uint8_t *elements, size_t k, uint8_t *tags)
{
    PSI_CHECK_ARG(head != NULL && (k == 0 || (elements != NULL && tags != NULL)));
    int rc = psi_payload_head_check(suite, head, PSI_PAYLOAD_HEAD_BYTES, NULL, NULL);
    if (rc != PSI_OK)
        return rc;
    for (size_t i = 0; i < k; i++)
        psi_pay_derive(tags + i * PSI_PAYLOAD_TAG_BYTES, NULL, suite, head + 24,
                       elements + i * PSI_ELEMENT_BYTES);
    return PSI_OK;
}

int psi_payload_records_check(const uint8_t head[PSI_PAYLOAD_HEAD_BYTES], const uint8_t *prev,
                              const uint8_t *records, size_t count, uint64_t first)
{
    PSI_CHECK_ARG(head != NULL && (count == 0 || records != NULL));
    psi_detail_clear();
    size_t rec = PSI_PAYLOAD_RECORD_EXTRA + head_pad(head);
    for (size_t j = 0; j < count; j++) {
        const uint8_t *before = j > 0 ? records + (j - 1) * rec : prev;
        if (before != NULL && memcmp(before, records + j * rec, PSI_PAYLOAD_TAG_BYTES) >= 0)
            return psi_fail_at(PSI_E_PAYLOAD_ORDER, PSI_PAYLOAD_FIELD, (int64_t)(first + j),
                               (int64_t)(PSI_PAYLOAD_HEAD_BYTES + (first + j) * rec));
    }
    return PSI_OK;
}

int psi_payload_record_open(int suite, const uint8_t head[PSI_PAYLOAD_HEAD_BYTES],
                            const uint8_t *element, const uint8_t *record, uint8_t *out,
                            size_t *len)
{
    PSI_CHECK_ARG(head != NULL && element != NULL && record != NULL && len != NULL);
    *len = PSI_PAYLOAD_NONE;
    int rc = psi_payload_head_check(suite, head, PSI_PAYLOAD_HEAD_BYTES, NULL, NULL);
    if (rc != PSI_OK)
        return rc;
    size_t L = head_pad(head), rec = PSI_PAYLOAD_RECORD_EXTRA + L;
    PSI_CHECK_ARG(out != NULL || L == 0);
    uint8_t ad[PSI_PAYLOAD_HEAD_BYTES + PSI_PAYLOAD_TAG_BYTES], key[32];
    uint8_t *plain = psi_alloc(4 + L);
    unsigned long long plen = 0;
    if (plain == NULL)
        return PSI_E_NOMEM;
    memcpy(ad, head, PSI_PAYLOAD_HEAD_BYTES);
    // The derived tag, not the record's, goes into the AD: a record found
    // for another element does not authenticate.
    psi_pay_derive(ad + PSI_PAYLOAD_HEAD_BYTES, key, suite, head + 24, element);
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(plain, &plen, NULL,
                                                   record + PSI_PAYLOAD_TAG_BYTES,
                                                   rec - PSI_PAYLOAD_TAG_BYTES, ad, sizeof ad,
                                                   pay_nonce, key) != 0 ||
        plen != 4 + L) {
        rc = PSI_E_PAYLOAD_AUTH;
    } else {
        uint64_t l = get_le(plain, 4);
        int pad_ok = l <= L;
        for (size_t j = 4 + (pad_ok ? (size_t)l : L); j < 4 + L; j++)
            pad_ok &= plain[j] == 0;
        if (!pad_ok) {
            rc = PSI_E_PAYLOAD_LENGTH;
        } else {
            *len = (size_t)l;
            if (L > 0)
                memcpy(out, plain + 4, L);
        }
    }
    sodium_memzero(key, sizeof key);
    psi_free_wipe(plain, 4 + L);
    return rc == PSI_OK ? rc : psi_fail_at(rc, PSI_PAYLOAD_FIELD, -1, -1);
}
