/* Fuzzes the client's results (PROTOCOL.md §9, §9.6).  The input is a
 * ServerSetup and a Response: its first 4 bytes, little-endian, give the
 * setup's length (clamped to what follows), the rest is the response.
 * Client engines from a fixed key (psi.js's client key of the psi.js 2.0.6
 * vectors, tests/data/openmined-psi-js/, whose messages seed the corpus),
 * reveal on and off, run psi_client_get_intersection, _size and
 * psi_client_get_association.  Checked: documented codes, outputs cleared
 * on failure, indices below the response's element count, the size equal
 * to the intersection's count and independent of the reveal flag, pairs
 * below the element and raw setup counts, in setup order, with exactly
 * the intersection's client indices for a raw setup.  The psi_shards_*
 * forms of the three calls (3 shards, inline) must give the same codes
 * and results.  The suite is the one the setup's header names
 * (fuzz_message_suite, PROTOCOL.md §16.1), with engines of that suite. */
#include "fuzz_common.h"

#define SETUP_LEN_BYTES 4

static const int intersection_codes[] = {
    FUZZ_MSG_CODES, FUZZ_POINT_CODES, FUZZ_GCS_CODES, FUZZ_BLOOM_CODES, PSI_E_SETUP_UNSORTED,
    PSI_E_NOMEM, PSI_E_CRYPTO
};
static const int intersection_off_codes[] = {
    PSI_E_REVEAL_DISABLED, FUZZ_MSG_CODES, FUZZ_POINT_CODES, FUZZ_GCS_CODES, FUZZ_BLOOM_CODES,
    PSI_E_SETUP_UNSORTED, PSI_E_NOMEM, PSI_E_CRYPTO
};
static const int association_codes[] = {
    FUZZ_MSG_CODES, FUZZ_POINT_CODES, FUZZ_GCS_CODES, FUZZ_BLOOM_CODES, PSI_E_SETUP_UNSORTED,
    PSI_E_STRUCTURE, PSI_E_NOMEM, PSI_E_CRYPTO
};
static const int association_off_codes[] = {
    PSI_E_REVEAL_DISABLED, FUZZ_MSG_CODES, FUZZ_POINT_CODES, FUZZ_GCS_CODES, FUZZ_BLOOM_CODES,
    PSI_E_SETUP_UNSORTED, PSI_E_STRUCTURE, PSI_E_NOMEM, PSI_E_CRYPTO
};
/* psi_setup_parse, only to learn the structure and raw count. */
static const int parse_codes[] = {
    FUZZ_MSG_CODES, FUZZ_GCS_CODES, FUZZ_BLOOM_CODES, PSI_E_SETUP_UNSORTED, PSI_E_NOMEM
};

/* The two messages of one input. */
typedef struct client_input {
    const uint8_t *setup, *response;
    size_t setup_len, response_len;
    size_t n;            // the response's element count (0 if it does not decode)
    int setup_ok;        // psi_setup_parse accepted the setup
    psi_structure structure;
    size_t raw_count;
    int suite;           // named by the setup's header
} client_input;

static int transient(int rc)
{
    return rc == PSI_E_NOMEM || rc == PSI_E_CRYPTO;
}

/* Splits the input and learns what the checks need from the building
 * blocks.  Returns: 0 when an allocation failed (skip the input). */
static int split(client_input *in, const uint8_t *data, size_t size)
{
    uint32_t want = 0;
    uint8_t *elements;
    psi_setup *s = NULL;
    int rc;

    memset(in, 0, sizeof *in);
    for (size_t i = 0; i < SETUP_LEN_BYTES && i < size; i++)
        want |= (uint32_t)data[i] << (8 * i);
    data += size < SETUP_LEN_BYTES ? size : SETUP_LEN_BYTES;
    size -= size < SETUP_LEN_BYTES ? size : SETUP_LEN_BYTES;
    in->setup = data;
    in->setup_len = want < size ? want : size;
    in->response = data + in->setup_len;
    in->response_len = size - in->setup_len;

    in->suite = fuzz_message_suite(in->setup, in->setup_len);
    rc = psi_setup_parse(&s, in->suite, in->setup, in->setup_len);
    FUZZ_EXPECT("psi_setup_parse", rc, parse_codes);
    if (transient(rc))
        return 0;
    in->setup_ok = rc == PSI_OK;
    in->structure = psi_setup_structure(s);
    in->raw_count = psi_setup_raw_count(s);
    psi_setup_free(s);
    rc = fuzz_decode_response(&elements, &in->n, in->suite, in->response, in->response_len);
    free(elements);
    if (rc != PSI_OK)
        in->n = 0;
    return 1;
}

/* psi_client_get_intersection.  Returns: the code.  Out: *seen (malloc'd,
 * freed by the caller), seen[i] = 1 for each index i < in->n in the
 * intersection; *count. */
static int intersection(const psi_engine *e, psi_shards *g, uint8_t **seen, size_t *count,
                        const client_input *in)
{
    const char *fn = "psi_client_get_intersection";
    size_t cap = psi_message_element_bound(in->suite, in->response_len);
    size_t *out = fuzz_alloc(cap * sizeof *out);
    int rc;

    *seen = fuzz_alloc(in->n);
    memset(*seen, 0, in->n);
    *count = cap;
    rc = psi_client_get_intersection(e, out, count, in->setup, in->setup_len, in->response,
                                     in->response_len);
    if (psi_engine_reveal(e)) {
        FUZZ_EXPECT(fn, rc, intersection_codes);
    } else {
        FUZZ_EXPECT(fn, rc, intersection_off_codes);
        fuzz_require(rc != PSI_OK, fn, rc, "succeeded with reveal off");
    }
    if (rc != PSI_OK) {
        fuzz_require(*count == 0, fn, rc, "*out_count not 0 after a failure");
        fuzz_require_untouched(fn, rc, out, cap * sizeof *out);
    } else {
        fuzz_require(in->setup_ok, fn, rc, "succeeded on a setup psi_setup_parse refuses");
        fuzz_require(*count <= cap && *count <= in->n, fn, rc, "more indices than elements");
        for (size_t k = 0; k < *count; k++) {
            fuzz_require(out[k] < in->n, fn, rc, "index not below the response's element count");
            fuzz_require(!(*seen)[out[k]], fn, rc, "index returned twice");
            (*seen)[out[k]] = 1;
        }
    }
    if (g != NULL) {
        size_t *out2 = fuzz_alloc(cap * sizeof *out2), count2 = cap;
        int rc2 = psi_shards_client_get_intersection(g, out2, &count2, in->setup, in->setup_len,
                                                     in->response, in->response_len);

        fuzz_require_same("psi_shards_client_get_intersection", rc, rc2, out, out2,
                          *count * sizeof *out, count2 * sizeof *out2);
        fuzz_require(rc2 == PSI_OK || count2 == 0, "psi_shards_client_get_intersection", rc2,
                     "*out_count not 0 after a failure");
        free(out2);
    }
    free(out);
    return rc;
}

/* psi_client_get_intersection_size.  Returns: the code; *count. */
static int intersection_size(const psi_engine *e, psi_shards *g, size_t *count,
                             const client_input *in)
{
    const char *fn = "psi_client_get_intersection_size";
    int rc;

    *count = SIZE_MAX;
    rc = psi_client_get_intersection_size(e, count, in->setup, in->setup_len, in->response,
                                          in->response_len);
    FUZZ_EXPECT(fn, rc, intersection_codes);
    if (rc != PSI_OK)
        fuzz_require(*count == 0, fn, rc, "*count not 0 after a failure");
    else
        fuzz_require(in->setup_ok && *count <= in->n, fn, rc, "more matches than elements");
    if (g != NULL) {
        size_t count2 = SIZE_MAX;
        int rc2 = psi_shards_client_get_intersection_size(g, &count2, in->setup, in->setup_len,
                                                          in->response, in->response_len);

        fuzz_require_same("psi_shards_client_get_intersection_size", rc, rc2, count, &count2,
                          sizeof *count, sizeof count2);
        fuzz_require(rc2 == PSI_OK || count2 == 0, "psi_shards_client_get_intersection_size", rc2,
                     "*count not 0 after a failure");
    }
    return rc;
}

/* psi_client_get_association, given the intersection's code, indices
 * (seen[], cleared here as pairs are found) and count with the same
 * engine. */
static void association(const psi_engine *e, psi_shards *g, const client_input *in, int rc_int,
                        uint8_t *seen, size_t m)
{
    const char *fn = "psi_client_get_association";
    size_t cap = psi_message_element_bound(in->suite, in->response_len), count = cap;
    psi_pair *out = fuzz_alloc(cap * sizeof *out);
    int rc = psi_client_get_association(e, out, &count, in->setup, in->setup_len, in->response,
                                        in->response_len);

    if (psi_engine_reveal(e)) {
        FUZZ_EXPECT(fn, rc, association_codes);
    } else {
        FUZZ_EXPECT(fn, rc, association_off_codes);
        fuzz_require(rc != PSI_OK, fn, rc, "succeeded with reveal off");
    }
    if (psi_engine_reveal(e) && !transient(rc) && !transient(rc_int)) {
        // the same steps as the intersection, then the structure (§9.6)
        if (rc_int != PSI_OK)
            fuzz_require(rc == rc_int, fn, rc, "differs from psi_client_get_intersection's error");
        else
            fuzz_require(rc == (in->structure == PSI_STRUCTURE_RAW ? PSI_OK : PSI_E_STRUCTURE), fn,
                         rc, "not PSI_OK for raw and PSI_E_STRUCTURE otherwise");
    }
    if (rc != PSI_OK) {
        fuzz_require(count == 0, fn, rc, "*out_count not 0 after a failure");
        fuzz_require_untouched(fn, rc, out, cap * sizeof *out);
        goto done;
    }
    fuzz_require(in->structure == PSI_STRUCTURE_RAW, fn, rc, "succeeded on a setup that is not raw");
    fuzz_require(rc_int != PSI_OK || count == m, fn, rc, "not as many pairs as the intersection");
    for (size_t k = 0; k < count; k++) {
        fuzz_require(out[k].client_index < in->n, fn, rc, "client_index not below the element count");
        fuzz_require(out[k].server_index < in->raw_count, fn, rc,
                     "server_index not below psi_setup_raw_count");
        fuzz_require(k == 0 || out[k - 1].server_index < out[k].server_index, fn, rc,
                     "setup positions not strictly ascending");
        if (rc_int == PSI_OK) {
            fuzz_require(seen[out[k].client_index], fn, rc,
                         "client_index not in the intersection, or twice");
            seen[out[k].client_index] = 0;
        }
    }
done:
    if (g != NULL) {
        psi_pair *out2 = fuzz_alloc(cap * sizeof *out2);
        size_t count2 = cap;
        int rc2 = psi_shards_client_get_association(g, out2, &count2, in->setup, in->setup_len,
                                                    in->response, in->response_len);

        fuzz_require_same("psi_shards_client_get_association", rc, rc2, out, out2,
                          count * sizeof *out, count2 * sizeof *out2);
        fuzz_require(rc2 == PSI_OK || count2 == 0, "psi_shards_client_get_association", rc2,
                     "*out_count not 0 after a failure");
        free(out2);
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static psi_engine *all_engines[3][2];
    static psi_shards *all_shards[3][2];
    psi_engine **engines;
    psi_shards **shards;
    client_input in;
    uint8_t *seen_on, *seen_off;
    size_t m_on = 0, m_off = 0, size_on = 0, size_off = 0;
    int rc_on, rc_off, rs_on, rs_off;

    if (!split(&in, data, size))
        return 0;
    engines = all_engines[in.suite];
    shards = all_shards[in.suite];
    if (engines[0] == NULL) {
        engines[0] = fuzz_engine(PSI_ROLE_CLIENT, 1, FUZZ_CLIENT_KEY_BYTE, in.suite);
        engines[1] = fuzz_engine(PSI_ROLE_CLIENT, 0, FUZZ_CLIENT_KEY_BYTE, in.suite);
        shards[0] = fuzz_shards(engines[0]);
        shards[1] = fuzz_shards(engines[1]);
    }
    // the shards repeat the calls that reach the unmasking: reveal on, and
    // the size with reveal off
    rc_on = intersection(engines[0], shards[0], &seen_on, &m_on, &in);
    rc_off = intersection(engines[1], NULL, &seen_off, &m_off, &in);
    rs_on = intersection_size(engines[0], NULL, &size_on, &in);
    rs_off = intersection_size(engines[1], shards[1], &size_off, &in);
    if (!transient(rc_on) && !transient(rs_on))
        fuzz_require(rs_on == rc_on && size_on == m_on, "psi_client_get_intersection_size", rs_on,
                     "differs from psi_client_get_intersection (reveal on)");
    if (!transient(rs_on) && !transient(rs_off))
        fuzz_require(rs_on == rs_off && size_on == size_off, "psi_client_get_intersection_size",
                     rs_off, "depends on the reveal flag");
    association(engines[0], shards[0], &in, rc_on, seen_on, m_on);
    association(engines[1], NULL, &in, rc_off, seen_off, m_off);
    free(seen_on);
    free(seen_off);
    return 0;
}
