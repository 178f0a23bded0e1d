/* Fuzzes the Request decoder (PROTOCOL.md §6, §10, §16.1), in the suite the
 * input's header names (fuzz_message_suite): psi_request_decode with
 * the capacity psi_message_element_bound gives, then, for a message with
 * elements, with one element too few (and with none) of capacity, which
 * must fail with PSI_E_BUFFER_TOO_SMALL and leave nothing behind.  A
 * decoded message is re-encoded (psi_request_encode) and decoded again:
 * the same elements and flag, in no more bytes than the input.  Every other
 * suite refuses the input with PSI_E_SUITE_MISMATCH or a message error. */
#include "fuzz_common.h"

static const int decode_codes[] = { FUZZ_MSG_CODES };

/* One decode with capacity cap into a fresh buffer.  Returns: the code;
 * *elements (malloc'd, the caller frees it), *count, *reveal. */
static int decode(uint8_t **elements, size_t *count, int *reveal, size_t cap, int suite,
                  const uint8_t *msg, size_t len)
{
    static const int small_codes[] = { FUZZ_MSG_CODES, PSI_E_BUFFER_TOO_SMALL };
    const char *fn = "psi_request_decode";
    int rc;

    *elements = fuzz_alloc(cap * PSI_ELEMENT_BYTES);
    *count = cap;
    *reveal = -1;
    rc = psi_request_decode(*elements, count, reveal, suite, msg, len);
    if (cap >= psi_message_element_bound(suite, len))
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
static void check_reencode(const uint8_t *elements, size_t n, int reveal, int suite,
                           size_t in_len)
{
    const char *fn = "psi_request_encode";
    size_t cap = psi_request_bound(suite, n), len = cap, n2;
    uint8_t *out = fuzz_alloc(cap), *again;
    int reveal2, rc = psi_request_encode(out, &len, suite, reveal, elements, n);
    size_t header = suite == PSI_SUITE_OPENMINED_P256 ? 0 : PSI_SUITE_HEADER_BYTES;

    fuzz_require(rc == PSI_OK, fn, rc, "cannot encode what was decoded");
    fuzz_require(len == header + (reveal ? 2 : 0) + n * fuzz_element_wire_bytes(suite), fn, rc,
                 "canonical Request of the wrong size");
    fuzz_require(len <= in_len, fn, rc, "canonical Request longer than the input");
    rc = decode(&again, &n2, &reveal2, psi_message_element_bound(suite, len), suite, out,
                len);
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
    int reveal, reveal_small, suite = fuzz_message_suite(data, size);
    int rc = decode(&elements, &n, &reveal, psi_message_element_bound(suite, size), suite,
                    data, size);

    for (int other = 0; other < 3; other++) {
        uint8_t *none;
        size_t n_other;
        int reveal_other, rc_other;
        if (other == suite)
            continue;
        rc_other = decode(&none, &n_other, &reveal_other,
                          psi_message_element_bound(other, size), other, data, size);
        // Another suite's header, or none where a suite needs one: refused
        // before anything else is read.
        fuzz_require(rc_other == PSI_E_SUITE_MISMATCH, fn, rc_other,
                     "a message of another suite not refused as such");
        free(none);
    }

    if (rc == PSI_OK && n > 0) {
        rc = decode(&small, &n_small, &reveal_small, n - 1, suite, data, size);
        fuzz_require(rc == PSI_E_BUFFER_TOO_SMALL, fn, rc, "capacity one short not refused");
        free(small);
        // capacity 0: the buffer may be NULL
        n_small = 0;
        reveal_small = -1;
        rc = psi_request_decode(NULL, &n_small, &reveal_small, suite, data, size);
        fuzz_require(rc == PSI_E_BUFFER_TOO_SMALL && n_small == 0 && reveal_small == 0, fn, rc,
                     "capacity 0 not refused cleanly");
        rc = PSI_OK;
    }
    if (rc == PSI_OK)
        check_reencode(elements, n, reveal, suite, size);
    free(elements);
    return 0;
}
