/* Fuzzes the server's answer (PROTOCOL.md §8): psi_server_process_request
 * on the input with a fixed-key server engine, reveal on and off.  The
 * result is checked against the building blocks: the code is the
 * decoder's, else PSI_E_REVEAL_MISMATCH, else the first bad point's; a
 * response is canonical, has the request's element count, is sorted when
 * reveal is off, and unmasks (same key) to the request's elements, in
 * order with reveal on.  The decoded elements also go through the three
 * setup encoders (psi_setup_encode: raw after psi_elements_sort, GCS,
 * Bloom), whose output must parse and match every element it was built
 * from.  psi_shards_server_process_request (3 shards, inline) must give
 * the same code and bytes. */
#include "fuzz_common.h"

static const int process_codes[] = {
    PSI_E_REVEAL_MISMATCH, FUZZ_MSG_CODES, FUZZ_POINT_CODES, PSI_E_NOMEM, PSI_E_CRYPTO
};
static const int point_codes[] = { FUZZ_POINT_CODES, PSI_E_NOMEM, PSI_E_CRYPTO };

static int compare_elements(const void *a, const void *b)
{
    return memcmp(a, b, PSI_ELEMENT_BYTES);
}

/* Decodes the request as the server must.  Returns: the decoder's code.
 * Out: *elements (malloc'd, freed by the caller), *n, *reveal. */
static int decode_request(uint8_t **elements, size_t *n, int *reveal, int suite,
                          const uint8_t *msg, size_t len)
{
    *n = psi_message_element_bound(suite, len);
    *elements = fuzz_alloc(*n * PSI_ELEMENT_BYTES);
    return psi_request_decode(*elements, n, reveal, suite, msg, len);
}

/* Returns: the first bad point's code, or PSI_OK. */
static int first_bad_point(const uint8_t *points, size_t n, int suite)
{
    for (size_t i = 0; i < n; i++) {
        int rc = psi_point_check(suite, points + i * PSI_ELEMENT_BYTES,
                                       psi_suite_element_bytes(suite));

        FUZZ_EXPECT("psi_point_check", rc, point_codes);
        if (rc != PSI_OK)
            return rc;
    }
    return PSI_OK;
}

/* Checks a successful response against the request's n elements. */
static void check_response(const psi_engine *e, const uint8_t *resp, size_t resp_len,
                           const uint8_t *req, size_t n)
{
    const char *fn = "psi_server_process_request";
    size_t m, len = n * PSI_ELEMENT_BYTES;
    uint8_t *got, *back = fuzz_alloc(len), *want = fuzz_alloc(len), *canon;
    int suite = psi_engine_suite(e);
    int rc = fuzz_decode_response(&got, &m, suite, resp, resp_len);

    fuzz_require(rc == PSI_OK, "psi_response_decode", rc, "the server's response does not decode");
    fuzz_require(m == n, fn, rc, "response element count differs from the request's");
    canon = fuzz_alloc(resp_len);
    len = resp_len;
    rc = psi_response_encode(canon, &len, suite, got, m);
    fuzz_require(rc == PSI_OK && len == resp_len && memcmp(canon, resp, len) == 0, fn, rc,
                 "response not in canonical encoding");
    len = n * PSI_ELEMENT_BYTES;
    rc = psi_engine_unmask(e, back, &len, got, n);
    FUZZ_EXPECT("psi_engine_unmask", rc, point_codes);
    if (rc == PSI_OK) {
        memcpy(want, req, n * PSI_ELEMENT_BYTES);
        if (!psi_engine_reveal(e)) {
            // sorted by bytes; unmasked, the same multiset as the request
            for (size_t i = 1; i < n; i++)
                fuzz_require(memcmp(got + (i - 1) * PSI_ELEMENT_BYTES, got + i * PSI_ELEMENT_BYTES,
                                    PSI_ELEMENT_BYTES) <= 0, fn, PSI_OK, "reveal off: not sorted");
            qsort(back, n, PSI_ELEMENT_BYTES, compare_elements);
            qsort(want, n, PSI_ELEMENT_BYTES, compare_elements);
        }
        fuzz_require(n == 0 || memcmp(back, want, n * PSI_ELEMENT_BYTES) == 0, fn, PSI_OK,
                     "response does not unmask to the request's elements");
    }
    free(canon);
    free(got);
    free(want);
    free(back);
}

/* One setup encoder on the n elements: the setup parses and every element
 * is in it (raw: each matches its own copy). */
static void check_setup_encoder(int suite, psi_structure structure, const uint8_t *elements,
                                size_t n)
{
    static const int bound_codes[] = { PSI_E_FPR, PSI_E_PARAM_OVERFLOW };
    static const int encode_codes[] = { PSI_E_NOMEM };
    static const int parse_codes[] = { PSI_E_NOMEM };
    const char *fn = "psi_setup_encode";
    psi_setup_params p = { structure, 0.001, n > 0 ? (int64_t)n : 1 };
    psi_setup *s = NULL;
    size_t bound = 0, len, count = 0;
    uint8_t *out;
    int rc = psi_setup_bound(&bound, suite, &p, n);

    FUZZ_EXPECT("psi_setup_bound", rc, bound_codes);
    fuzz_require(rc == PSI_OK, "psi_setup_bound", rc, "fixed parameters refused");
    out = fuzz_alloc(bound);
    len = bound;
    rc = psi_setup_encode(out, &len, suite, &p, elements, n);
    FUZZ_EXPECT(fn, rc, encode_codes);
    if (rc != PSI_OK) {
        fuzz_require(len == 0, fn, rc, "*out_len not 0 after a failure");
        goto done;
    }
    fuzz_require(len <= bound, fn, rc, "longer than psi_setup_bound");
    rc = psi_setup_parse(&s, suite, out, len);
    FUZZ_EXPECT("psi_setup_parse", rc, parse_codes);
    if (rc != PSI_OK)
        goto done;
    fuzz_require(psi_setup_structure(s) == structure, "psi_setup_parse", rc, "structure changed");
    rc = psi_setup_count(s, &count, elements, n);
    FUZZ_EXPECT("psi_setup_count", rc, encode_codes);
    fuzz_require(rc != PSI_OK || count == n, "psi_setup_count", rc,
                 "an element is missing from the setup built from it");
done:
    psi_setup_free(s);
    free(out);
}

/* The three encoders on the request's elements, as a server would build a
 * setup from them. */
static void check_setup_encoders(int suite, const uint8_t *elements, size_t n)
{
    static const int sort_codes[] = { PSI_E_NOMEM };
    uint8_t *sorted = fuzz_alloc(n * PSI_ELEMENT_BYTES);
    int rc;

    memcpy(sorted, elements, n * PSI_ELEMENT_BYTES);
    rc = psi_elements_sort(sorted, NULL, n);
    FUZZ_EXPECT("psi_elements_sort", rc, sort_codes);
    if (rc == PSI_OK)
        check_setup_encoder(suite, PSI_STRUCTURE_RAW, sorted, n);
    check_setup_encoder(suite, PSI_STRUCTURE_GCS, elements, n);
    check_setup_encoder(suite, PSI_STRUCTURE_BLOOM_FILTER, elements, n);
    free(sorted);
}

/* The sharded call must agree with the single engine's (rc, out, len). */
static void check_shards(psi_shards *g, int suite, const uint8_t *data, size_t size, int rc,
                         const uint8_t *out, size_t len)
{
    const char *fn = "psi_shards_server_process_request";
    size_t cap = psi_response_bound(suite, psi_message_element_bound(suite, size));
    size_t len2 = cap;
    uint8_t *out2 = fuzz_alloc(cap);
    int rc2 = psi_shards_server_process_request(g, out2, &len2, data, size);

    FUZZ_EXPECT(fn, rc2, process_codes);
    fuzz_require_same(fn, rc, rc2, out, out2, len, len2);
    if (rc2 != PSI_OK) {
        fuzz_require(len2 == 0, fn, rc2, "*out_len not 0 after a failure");
        fuzz_require_untouched(fn, rc2, out2, cap);
    }
    free(out2);
}

/* One engine (and its shards) on the input; with encoders, also the setup
 * encoders on the request's elements. */
static void run(const psi_engine *e, psi_shards *g, const uint8_t *data, size_t size,
                int encoders)
{
    const char *fn = "psi_server_process_request";
    int suite = psi_engine_suite(e);
    size_t n, cap = psi_response_bound(suite, psi_message_element_bound(suite, size));
    size_t len = cap;
    uint8_t *req, *out = fuzz_alloc(cap);
    int reveal = 0, dec = decode_request(&req, &n, &reveal, suite, data, size), want = dec;
    int rc = psi_server_process_request(e, out, &len, data, size);

    if (dec == PSI_OK)
        want = reveal != psi_engine_reveal(e) ? PSI_E_REVEAL_MISMATCH
                                              : first_bad_point(req, n, suite);
    FUZZ_EXPECT(fn, rc, process_codes);
    if (rc != PSI_E_NOMEM && rc != PSI_E_CRYPTO && want != PSI_E_NOMEM && want != PSI_E_CRYPTO)
        fuzz_require(rc == want, fn, rc, "not the decoder's, reveal or first bad point's code");
    if (rc != PSI_OK) {
        fuzz_require(len == 0, fn, rc, "*out_len not 0 after a failure");
        fuzz_require_untouched(fn, rc, out, cap);
    } else {
        check_response(e, out, len, req, n);
    }
    check_shards(g, suite, data, size, rc, out, len);
    if (encoders && dec == PSI_OK)
        check_setup_encoders(suite, req, n);
    free(req);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    // Per suite (PROTOCOL.md §16): reveal on and off, and their shards.
    static psi_engine *engines[3][2];
    static psi_shards *shards[3][2];
    int suite = fuzz_message_suite(data, size);

    if (engines[suite][0] == NULL) {
        for (int reveal = 0; reveal < 2; reveal++) {
            engines[suite][reveal] = fuzz_engine(PSI_ROLE_SERVER, reveal, FUZZ_SERVER_KEY_BYTE,
                                                 suite);
            shards[suite][reveal] = fuzz_shards(engines[suite][reveal]);
        }
    }
    run(engines[suite][1], shards[suite][1], data, size, 1);
    run(engines[suite][0], shards[suite][0], data, size, 0);
    return 0;
}
