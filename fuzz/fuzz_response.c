/* Fuzzes the Response decoder (PROTOCOL.md §8, §10, §16.1), in the suite
 * the input's header names (fuzz_message_suite): psi_response_decode
 * with the capacity psi_message_element_bound gives, then, for a message
 * with elements, with one element too few (and with none) of capacity,
 * which must fail with PSI_E_BUFFER_TOO_SMALL and leave nothing behind.  A
 * decoded message is re-encoded (psi_response_encode) and decoded again:
 * the same elements, in no more bytes than the input.  Every other suite
 * refuses the input with PSI_E_SUITE_MISMATCH. */
#include "fuzz_common.h"

static const int decode_codes[] = { FUZZ_MSG_CODES };

/* One decode with capacity cap into a fresh buffer.  Returns: the code;
 * *elements (malloc'd, the caller frees it), *count. */
static int decode(uint8_t **elements, size_t *count, size_t cap, int suite, const uint8_t *msg,
                  size_t len)
{
    static const int small_codes[] = { FUZZ_MSG_CODES, PSI_E_BUFFER_TOO_SMALL };
    const char *fn = "psi_response_decode";
    int rc;

    *elements = fuzz_alloc(cap * PSI_ELEMENT_BYTES);
    *count = cap;
    rc = psi_response_decode(*elements, count, suite, msg, len);
    if (cap >= psi_message_element_bound(suite, len))
        FUZZ_EXPECT(fn, rc, decode_codes);
    else
        FUZZ_EXPECT(fn, rc, small_codes);
    if (rc != PSI_OK) {
        fuzz_require(*count == 0, fn, rc, "*count not 0 after a failure");
        fuzz_require_untouched(fn, rc, *elements, cap * PSI_ELEMENT_BYTES);
    } else {
        fuzz_require(*count <= cap, fn, rc, "more elements than the capacity");
    }
    return rc;
}

/* Encodes the decoded message canonically and decodes that again. */
static void check_reencode(const uint8_t *elements, size_t n, int suite, size_t in_len)
{
    const char *fn = "psi_response_encode";
    size_t cap = psi_response_bound(suite, n), len = cap, n2;
    uint8_t *out = fuzz_alloc(cap), *again;
    int rc = psi_response_encode(out, &len, suite, elements, n);
    size_t header = suite == PSI_SUITE_OPENMINED_P256 ? 0 : PSI_SUITE_HEADER_BYTES;

    fuzz_require(rc == PSI_OK, fn, rc, "cannot encode what was decoded");
    fuzz_require(len == header + n * fuzz_element_wire_bytes(suite), fn, rc,
                 "canonical Response of the wrong size");
    fuzz_require(len <= in_len, fn, rc, "canonical Response longer than the input");
    rc = decode(&again, &n2, psi_message_element_bound(suite, len), suite, out, len);
    fuzz_require(rc == PSI_OK && n2 == n &&
                     (n == 0 || memcmp(again, elements, n * PSI_ELEMENT_BYTES) == 0),
                 "psi_response_decode", rc, "re-encoded Response decodes differently");
    free(again);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *fn = "psi_response_decode";
    uint8_t *elements, *small;
    size_t n, n_small;
    int suite = fuzz_message_suite(data, size);
    int rc = decode(&elements, &n, psi_message_element_bound(suite, size), suite, data,
                    size);

    for (int other = 0; other < 3; other++) {
        uint8_t *none;
        size_t n_other;
        if (other == suite)
            continue;
        // Another suite's header, or none where a suite needs one: refused
        // before anything else is read.
        int rc_other = decode(&none, &n_other, psi_message_element_bound(other, size),
                              other, data, size);
        fuzz_require(rc_other == PSI_E_SUITE_MISMATCH, fn, rc_other,
                     "a message of another suite not refused as such");
        free(none);
    }

    if (rc == PSI_OK && n > 0) {
        rc = decode(&small, &n_small, n - 1, suite, data, size);
        fuzz_require(rc == PSI_E_BUFFER_TOO_SMALL, fn, rc, "capacity one short not refused");
        free(small);
        // capacity 0: the buffer may be NULL
        n_small = 0;
        rc = psi_response_decode(NULL, &n_small, suite, data, size);
        fuzz_require(rc == PSI_E_BUFFER_TOO_SMALL && n_small == 0, fn, rc,
                     "capacity 0 not refused cleanly");
        rc = PSI_OK;
    }
    if (rc == PSI_OK)
        check_reencode(elements, n, suite, size);
    free(elements);
    return 0;
}
