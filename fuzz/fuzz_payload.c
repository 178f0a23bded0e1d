/* Fuzzes the payload table reader (psi/payload.c, PROTOCOL.md §22): byte 0
 * picks the suite, byte 1 how many of the client's elements to open (0 to
 * 8), the rest is the table.  The elements are the server's masks of
 * "v0".."v7" under the fuzzing server key, which the seed corpus's tables
 * (fuzz/make-corpus.py) were built with, so records are found and opened.
 * Checked: only documented codes; psi_payload_open fails exactly as
 * psi_payload_table_check does on a table it refuses; an accepted table is
 * exactly its header and n records; an opened payload is at most L bytes
 * with the rest of its slot zero; a failed open leaves out and lens zero. */
#include "fuzz_common.h"

#define PAY_K 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t el[3][PAY_K * PSI_ELEMENT_BYTES];
    static int ready;
    static const int check_codes[] = {PSI_E_PAYLOAD_FORMAT, PSI_E_PAYLOAD_TRUNCATED,
                                      PSI_E_PAYLOAD_LENGTH, PSI_E_PAYLOAD_ORDER,
                                      PSI_E_SUITE_MISMATCH};
    static const int open_codes[] = {PSI_E_PAYLOAD_AUTH, PSI_E_PAYLOAD_LENGTH, PSI_E_NOMEM};

    if (!ready) {
        for (int s = 0; s < 3; s++) {
            uint8_t key[32];
            char names[PAY_K][4];
            psi_value v[PAY_K];
            psi_settings st;
            psi_engine *e = NULL;
            size_t len = sizeof el[s];
            memset(key, FUZZ_SERVER_KEY_BYTE, sizeof key);
            psi_settings_default(&st);
            st.role = PSI_ROLE_SERVER;
            st.suite = (psi_suite)s;
            for (int i = 0; i < PAY_K; i++) {
                snprintf(names[i], sizeof names[i], "v%d", i);
                v[i] = (psi_value){(const uint8_t *)names[i], strlen(names[i])};
            }
            if (psi_engine_create_from_key(&e, &st, key, sizeof key) != PSI_OK ||
                psi_engine_mask(e, el[s], &len, v, PAY_K) != PSI_OK)
                fuzz_fail("fuzz_payload setup", PSI_E_CRYPTO, "no server engine");
            psi_engine_free(e);
        }
        ready = 1;
    }
    if (size < 2)
        return 0;
    int suite = data[0] % 3;
    size_t k = data[1] % (PAY_K + 1), n = 0, L = 0, lens[PAY_K];
    const uint8_t *t = data + 2;
    size_t len = size - 2;
    int rc = psi_payload_table_check(suite, t, len, &n, &L);
    fuzz_expect_code("psi_payload_table_check", rc, check_codes, FUZZ_COUNT(check_codes));
    if (rc == PSI_OK)
        fuzz_require(n <= (len - PSI_PAYLOAD_HEAD_BYTES) / (36 + L) &&
                         len == PSI_PAYLOAD_HEAD_BYTES + n * (36 + L),
                     "psi_payload_table_check", rc, "accepted a table of another length");
    uint8_t *out = malloc(k * L + 1);
    if (out == NULL)
        return 0;
    memset(out, FUZZ_SENTINEL, k * L + 1);
    memset(lens, FUZZ_SENTINEL, sizeof lens);
    int orc = psi_payload_open(suite, t, len, el[suite], k, out, k * L, lens);
    if (rc != PSI_OK) {
        fuzz_require(orc == rc, "psi_payload_open", orc, "not the check's code");
        for (size_t i = 0; i < k; i++)
            fuzz_require(lens[i] == 0, "psi_payload_open", orc, "lens left after a refusal");
    } else {
        fuzz_expect_code("psi_payload_open", orc, open_codes, FUZZ_COUNT(open_codes));
        for (size_t i = 0; orc == PSI_OK && i < k; i++) {
            if (lens[i] == PSI_PAYLOAD_NONE)
                continue;
            fuzz_require(lens[i] <= L, "psi_payload_open", orc, "a payload longer than L");
            for (size_t j = lens[i]; j < L; j++)
                fuzz_require(out[i * L + j] == 0, "psi_payload_open", orc,
                             "padding handed out");
        }
        for (size_t i = 0; orc != PSI_OK && i < k; i++) {
            fuzz_require(lens[i] == 0, "psi_payload_open", orc, "lens left after a failure");
            for (size_t j = 0; j < L; j++)
                fuzz_require(out[i * L + j] == 0, "psi_payload_open", orc,
                             "a payload left after a failure");
        }
    }
    free(out);
    return 0;
}
