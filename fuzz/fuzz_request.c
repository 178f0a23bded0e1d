/* Fuzzes the Request decoder (PROTOCOL.md §6, §10): psi_request_decode with
 * the capacity psi_message_element_bound gives, then, for a message with
 * elements, with one element too few (and with none) of capacity, which
 * must fail with PSI_E_BUFFER_TOO_SMALL and leave nothing behind.  A
 * decoded message is re-encoded (psi_request_encode) and decoded again:
 * the same elements and flag, in no more bytes than the input. */
#include "fuzz_common.h"

static const int decode_codes[] = { FUZZ_MSG_CODES };

/* One decode with capacity cap into a fresh buffer.  Returns: the code;
 * *elements (malloc'd, the caller frees it), *count, *reveal. */
static int decode(uint8_t **elements, size_t *count, int *reveal, size_t cap,
                  const uint8_t *msg, size_t len)
{
    static const int small_codes[] = { FUZZ_MSG_CODES, PSI_E_BUFFER_TOO_SMALL };
    const char *fn = "psi_request_decode";
    int rc;

    *elements = fuzz_alloc(cap * PSI_ELEMENT_BYTES);
    *count = cap;
    *reveal = -1;
    rc = psi_request_decode(*elements, count, reveal, msg, len);
    if (cap >= psi_message_element_bound(len))
        FUZZ_EXPECT(fn, rc, decode_codes);
    else
        FUZZ_EXPECT(fn, rc, small_codes);
    if (rc != PSI_OK) {
        fuzz_require(*count == 0 && *reveal == 0, fn, rc, "*count or *reveal not 0 after a failure");
        fuzz_require_untouched(fn, rc, *elements, cap * PSI_ELEMENT_BYTES);
    } else {
        fuzz_require(*count <= cap, fn, rc, "more elements than the capacity");
        fuzz_require(*reveal == 0 || *reveal == 1, fn, rc, "*reveal not 0 or 1");
    }
    return rc;
}

/* Encodes the decoded message canonically and decodes that again. */
static void check_reencode(const uint8_t *elements, size_t n, int reveal, size_t in_len)
{
    const char *fn = "psi_request_encode";
    size_t cap = psi_request_bound(n), len = cap, n2;
    uint8_t *out = fuzz_alloc(cap), *again;
    int reveal2, rc = psi_request_encode(out, &len, reveal, elements, n);

    fuzz_require(rc == PSI_OK, fn, rc, "cannot encode what was decoded");
    fuzz_require(len == (reveal ? 2 : 0) + n * PSI_ELEMENT_WIRE_BYTES, fn, rc,
                 "canonical Request of the wrong size");
    fuzz_require(len <= in_len, fn, rc, "canonical Request longer than the input");
    rc = decode(&again, &n2, &reveal2, psi_message_element_bound(len), out, len);
    fuzz_require(rc == PSI_OK && n2 == n && reveal2 == reveal &&
                     (n == 0 || memcmp(again, elements, n * PSI_ELEMENT_BYTES) == 0),
                 "psi_request_decode", rc, "re-encoded Request decodes differently");
    free(again);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *fn = "psi_request_decode";
    uint8_t *elements, *small;
    size_t n, n_small;
    int reveal, reveal_small;
    int rc = decode(&elements, &n, &reveal, psi_message_element_bound(size), data, size);

    if (rc == PSI_OK && n > 0) {
        rc = decode(&small, &n_small, &reveal_small, n - 1, data, size);
        fuzz_require(rc == PSI_E_BUFFER_TOO_SMALL, fn, rc, "capacity one short not refused");
        free(small);
        // capacity 0: the buffer may be NULL
        n_small = 0;
        reveal_small = -1;
        rc = psi_request_decode(NULL, &n_small, &reveal_small, data, size);
        fuzz_require(rc == PSI_E_BUFFER_TOO_SMALL && n_small == 0 && reveal_small == 0, fn, rc,
                     "capacity 0 not refused cleanly");
        rc = PSI_OK;
    }
    if (rc == PSI_OK)
        check_reencode(elements, n, reveal, size);
    free(elements);
    return 0;
}
