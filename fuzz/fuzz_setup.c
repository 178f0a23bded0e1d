/* Fuzzes the ServerSetup parser and the matchers (PROTOCOL.md §7, §9,
 * §9.4, §10): psi_setup_parse, then psi_setup_match, psi_setup_count and
 * psi_setup_associate against a fixed list of masked elements (psi.js's
 * client values of the psi.js 2.0.6 vectors, tests/data/openmined-psi-js/,
 * masked with its server key, so the seed setups from that file match
 * some) and, for a raw setup, against the setup's own elements (each
 * matches itself).
 * Results are checked against a reference where one is cheap: raw by
 * brute force, GCS by the decoded value set (this harness reads the
 * parsed setup through psi/setup.h). */
#include "fuzz_common.h"
#include "gcs.h"
#include "setup.h"

#define FIXED_COUNT 7

static const int parse_codes[] = {
    FUZZ_MSG_CODES, FUZZ_GCS_CODES, FUZZ_BLOOM_CODES, PSI_E_SETUP_UNSORTED, PSI_E_NOMEM
};
/* psi_setup_match has no Returns line of its own: it allocates (NOMEM) and
 * with capacity n it always has room. */
static const int match_codes[] = { PSI_E_NOMEM };
static const int match_small_codes[] = { PSI_E_NOMEM, PSI_E_BUFFER_TOO_SMALL };
static const int associate_codes[] = { PSI_E_NOMEM, PSI_E_STRUCTURE };

/* The fixed elements, masked once. */
static const uint8_t *fixed_elements(void)
{
    static const char *const values[FIXED_COUNT] = {
        "a", "b", "c", "hello world", "user@example.com", "caf\xc3\xa9", "b"
    };
    static uint8_t out[FIXED_COUNT * PSI_ELEMENT_BYTES];
    static int init;

    if (!init) {
        psi_engine *e = fuzz_engine(PSI_ROLE_SERVER, 1, FUZZ_SERVER_KEY_BYTE, PSI_SUITE_OPENMINED_P256);
        psi_value v[FIXED_COUNT];
        size_t len = sizeof out;
        int rc;

        for (size_t i = 0; i < FIXED_COUNT; i++)
            v[i] = (psi_value){ (const uint8_t *)values[i], strlen(values[i]) };
        rc = psi_engine_mask(e, out, &len, v, FIXED_COUNT);
        if (rc != PSI_OK)
            fuzz_fail("psi_engine_mask", rc, "fixed values");
        psi_engine_free(e);
        init = 1;
    }
    return out;
}

static const uint8_t *element(const uint8_t *elements, size_t i)
{
    return elements + i * PSI_ELEMENT_BYTES;
}

/* Returns: whether the GCS value set holds v (values ascending). */
static int gcs_has(const psi_setup *s, uint64_t v)
{
    size_t lo = 0, hi = s->gcs_count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (s->gcs_values[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->gcs_count && s->gcs_values[lo] == v;
}

/* Returns: the raw intersection size by brute force: for each distinct
 * value, the smaller of its client and setup copy counts. */
static size_t raw_reference(const psi_setup *s, const uint8_t *elements, size_t n)
{
    size_t total = 0;

    for (size_t i = 0; i < n; i++) {
        size_t before = 0, client = 0, server = 0;

        for (size_t j = 0; j < i; j++)
            before += memcmp(element(elements, j), element(elements, i), PSI_ELEMENT_BYTES) == 0;
        if (before > 0)
            continue; // counted at its first copy
        for (size_t j = i; j < n; j++)
            client += memcmp(element(elements, j), element(elements, i), PSI_ELEMENT_BYTES) == 0;
        for (size_t j = 0; j < s->raw_count; j++)
            server += memcmp(element(s->raw, j), element(elements, i), PSI_ELEMENT_BYTES) == 0;
        total += client < server ? client : server;
    }
    return total;
}

/* Checks one intersection (indices out[0..m)) against the structure's
 * rules and, for GCS, against the decoded value set.  Out: seen[i] = 1
 * for each index in the intersection, 0 for the others. */
static void check_indices(uint8_t *seen, const psi_setup *s, const size_t *out, size_t m,
                          const uint8_t *elements, size_t n)
{
    const char *fn = "psi_setup_match";

    memset(seen, 0, n);
    for (size_t k = 0; k < m; k++) {
        fuzz_require(out[k] < n, fn, PSI_OK, "index out of range");
        fuzz_require(!seen[out[k]], fn, PSI_OK, "index returned twice");
        seen[out[k]] = 1;
        if (k == 0)
            continue;
        if (s->structure == PSI_STRUCTURE_RAW)
            fuzz_require(memcmp(element(elements, out[k - 1]), element(elements, out[k]),
                                PSI_ELEMENT_BYTES) <= 0, fn, PSI_OK, "raw: not in ciphertext order");
        else if (s->structure == PSI_STRUCTURE_BLOOM_FILTER)
            fuzz_require(out[k - 1] < out[k], fn, PSI_OK, "Bloom: not ascending");
        else
            fuzz_require(psi_gcs_hash(element(elements, out[k - 1]), s->elen, s->gcs_hash_range) <=
                             psi_gcs_hash(element(elements, out[k]), s->elen, s->gcs_hash_range),
                         fn, PSI_OK, "GCS: not in hash order");
    }
    if (s->structure == PSI_STRUCTURE_GCS)
        for (size_t i = 0; i < n; i++)
            fuzz_require(seen[i] == gcs_has(s, psi_gcs_hash(element(elements, i), s->elen, s->gcs_hash_range)),
                         fn, PSI_OK, "GCS: membership differs from the decoded values");
}

/* psi_setup_associate: pairs in setup order, each an equal pair of
 * elements, with exactly the intersection's client indices (seen[], m of
 * them; cleared here as they are found). */
static void check_associate(const psi_setup *s, uint8_t *seen, size_t m,
                            const uint8_t *elements, size_t n)
{
    const char *fn = "psi_setup_associate";
    psi_pair *pairs = fuzz_alloc(n * sizeof *pairs);
    size_t count = n;
    int rc = psi_setup_associate(s, pairs, &count, elements, n);

    FUZZ_EXPECT(fn, rc, associate_codes);
    if (rc == PSI_E_NOMEM)
        goto done;
    fuzz_require((rc == PSI_OK) == (s->structure == PSI_STRUCTURE_RAW), fn, rc,
                 "PSI_E_STRUCTURE exactly when the setup is not raw");
    if (rc != PSI_OK) {
        fuzz_require(count == 0, fn, rc, "*out_count not 0 after a failure");
        fuzz_require_untouched(fn, rc, pairs, n * sizeof *pairs);
        goto done;
    }
    fuzz_require(count == m, fn, rc, "not as many pairs as the intersection");
    for (size_t k = 0; k < count; k++) {
        size_t c = pairs[k].client_index, j = pairs[k].server_index;

        fuzz_require(c < n && j < s->raw_count, fn, rc, "index out of range");
        fuzz_require(k == 0 || pairs[k - 1].server_index < j, fn, rc,
                     "setup positions not strictly ascending");
        fuzz_require(memcmp(element(elements, c), element(s->raw, j), PSI_ELEMENT_BYTES) == 0,
                     fn, rc, "pair of unequal elements");
        fuzz_require(seen[c], fn, rc, "client index not in the intersection, or twice");
        seen[c] = 0;
    }
done:
    free(pairs);
}

/* Runs the three matchers on n elements.  Returns: the intersection size,
 * or SIZE_MAX when an allocation failed. */
static size_t match_all(const psi_setup *s, const uint8_t *elements, size_t n)
{
    size_t *idx = fuzz_alloc(n * sizeof *idx), m = n, count = SIZE_MAX;
    uint8_t *seen = fuzz_alloc(n);
    int rc = psi_setup_match(s, idx, &m, elements, n);

    FUZZ_EXPECT("psi_setup_match", rc, match_codes);
    if (rc != PSI_OK) {
        fuzz_require(m == 0, "psi_setup_match", rc, "*out_count not 0 after a failure");
        goto done;
    }
    fuzz_require(m <= n, "psi_setup_match", rc, "more matches than elements");
    check_indices(seen, s, idx, m, elements, n);
    rc = psi_setup_count(s, &count, elements, n);
    FUZZ_EXPECT("psi_setup_count", rc, match_codes);
    fuzz_require(rc != PSI_OK || count == m, "psi_setup_count", rc, "differs from psi_setup_match");
    if (m > 0) { // one item short: nothing may be handed over
        size_t *small = fuzz_alloc((m - 1) * sizeof *small), m2 = m - 1;

        rc = psi_setup_match(s, small, &m2, elements, n);
        FUZZ_EXPECT("psi_setup_match", rc, match_small_codes);
        fuzz_require(rc != PSI_OK && m2 == 0, "psi_setup_match", rc, "capacity one short accepted");
        fuzz_require_untouched("psi_setup_match", rc, small, (m - 1) * sizeof *small);
        free(small);
    }
    check_associate(s, seen, m, elements, n);
    count = m;
done:
    free(seen);
    free(idx);
    return count;
}

static int check_ok(int rc)
{
    return rc == PSI_OK || rc == PSI_E_SETUP_MISMATCH || rc == PSI_E_NOMEM;
}

/* psi_setup_check with each structure, fpr 0.001 and a client count and
 * server count from the input's size: it parses as psi_setup_parse does
 * (the same code, except that a GCS stream may be refused for its count
 * before its end is reached), refuses another structure, and is monotone
 * in the server count (raw: exact). */
static void setup_checks(const uint8_t *data, size_t size, int suite, int parse_rc,
                         const psi_setup *s)
{
    static const char *fn = "psi_setup_check";
    for (int st = PSI_STRUCTURE_RAW; st <= PSI_STRUCTURE_BLOOM_FILTER; st++) {
        psi_setup_params p = {(psi_structure)st, 0.001, 1 + (int64_t)(size % 64)};
        uint64_t n = s != NULL && st == PSI_STRUCTURE_RAW ? s->raw_count : size % 300;
        int rc = psi_setup_check(suite, &p, n, data, size);
        if (parse_rc != PSI_OK) {
            fuzz_require(rc == parse_rc || (st == PSI_STRUCTURE_GCS && rc == PSI_E_SETUP_MISMATCH),
                         fn, rc, "a code other than the parser's");
            continue;
        }
        fuzz_require(check_ok(rc), fn, rc, "an undocumented code");
        if (s->structure != (psi_structure)st)
            fuzz_require(rc == PSI_E_SETUP_MISMATCH, fn, rc, "another structure accepted");
        if (rc != PSI_OK)
            continue;
        int more = psi_setup_check(suite, &p, n + 1, data, size);
        if (st == PSI_STRUCTURE_RAW)
            fuzz_require(more == PSI_E_SETUP_MISMATCH, fn, more, "raw accepted for another count");
        else
            fuzz_require(more == PSI_OK && psi_setup_check(suite, &p, 10 * n + 1000, data, size) ==
                         PSI_OK, fn, more, "not monotone in n_server");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *fn = "psi_setup_parse";
    static psi_setup dummy;
    psi_setup *s = &dummy; // not NULL: the call must clear it
    int suite = fuzz_message_suite(data, size);
    int rc = psi_setup_parse(&s, suite, data, size);
    size_t m;

    FUZZ_EXPECT(fn, rc, parse_codes);
    setup_checks(data, size, suite, rc, rc == PSI_OK ? s : NULL);
    if (rc != PSI_OK) {
        fuzz_require(s == NULL, fn, rc, "*out not NULL after a failure");
        return 0;
    }
    fuzz_require(s != NULL, fn, rc, "no setup");
    fuzz_require(psi_setup_structure(s) == s->structure, fn, rc, "psi_setup_structure");
    if (s->structure == PSI_STRUCTURE_RAW) {
        fuzz_require(psi_setup_raw_count(s) == s->raw_count &&
                         s->raw_count <= psi_message_element_bound(suite, size), fn, rc, "raw count");
        for (size_t j = 1; j < s->raw_count; j++)
            fuzz_require(memcmp(element(s->raw, j - 1), element(s->raw, j), PSI_ELEMENT_BYTES) <= 0,
                         fn, rc, "raw elements accepted out of order");
    } else {
        fuzz_require(s->structure == PSI_STRUCTURE_GCS || s->structure == PSI_STRUCTURE_BLOOM_FILTER,
                     fn, rc, "unknown structure");
        fuzz_require(psi_setup_raw_count(s) == 0, fn, rc, "raw count of a GCS or Bloom setup");
    }
    m = match_all(s, fixed_elements(), FIXED_COUNT);
    if (s->structure == PSI_STRUCTURE_RAW && m != SIZE_MAX)
        fuzz_require(m == raw_reference(s, fixed_elements(), FIXED_COUNT), "psi_setup_match", PSI_OK,
                     "raw intersection differs from brute force");
    if (s->structure == PSI_STRUCTURE_RAW) {
        m = match_all(s, s->raw, s->raw_count);
        fuzz_require(m == SIZE_MAX || m == s->raw_count, "psi_setup_match", PSI_OK,
                     "a raw setup's own elements do not all match");
    }
    psi_setup_free(s);
    return 0;
}
