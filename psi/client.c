/* The client's message calls (PROTOCOL.md §6, §9, §9.6): request, then
 * intersection, its size, or the association table from setup and
 * response. */
#include <string.h>

#include "common.h"
#include "ctcheck.h"

int psi_client_create_request(const psi_engine *e, uint8_t *out, size_t *out_len,
                              const psi_value *values, size_t n)
{
    PSI_CHECK_ARG(out_len != NULL);
    size_t cap = *out_len;
    *out_len = 0;
    PSI_CHECK_ARG(e != NULL && (out != NULL || cap == 0));
    PSI_CHECK_ARG((values != NULL || n == 0) && n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    psi_detail_clear();
    if (psi_engine_role(e) != PSI_ROLE_CLIENT)
        return PSI_E_WRONG_ROLE;
    psi_suite suite = psi_engine_suite(e);
    size_t bound = psi_request_bound_suite(suite, n);
    if (bound == 0 || cap < bound)
        return PSI_E_BUFFER_TOO_SMALL;
    size_t len = n * PSI_ELEMENT_BYTES;
    uint8_t *elements = psi_alloc(len);
    if (elements == NULL)
        return PSI_E_NOMEM;
    int rc = psi_engine_mask(e, elements, &len, values, n);
    if (rc == PSI_OK) {
        *out_len = cap;
        rc = psi_request_encode_suite(out, out_len, suite, psi_engine_reveal(e), elements, n);
    }
    psi_free(elements);
    return rc;
}

/* The common first half of every client result (§9 steps 2-3): parse the
 * setup, decode the response and unmask it. */
typedef struct client_round {
    psi_setup *setup;
    uint8_t *unmasked;
    size_t n;
} client_round;

static void round_free(client_round *r)
{
    psi_setup_free(r->setup);
    psi_free(r->unmasked);
}

static int round_start(client_round *r, const psi_engine *e, const uint8_t *setup,
                       size_t setup_len, const uint8_t *response, size_t response_len)
{
    memset(r, 0, sizeof *r);
    PSI_CHECK_ARG(e != NULL && (setup != NULL || setup_len == 0));
    PSI_CHECK_ARG(response != NULL || response_len == 0);
    psi_detail_clear();
    if (psi_engine_role(e) != PSI_ROLE_CLIENT)
        return PSI_E_WRONG_ROLE;
    int rc;
    uint8_t *masked = NULL;
    psi_suite suite = psi_engine_suite(e);
    PSI_TRY(psi_setup_parse_suite(&r->setup, suite, setup, setup_len));
    r->n = psi_message_element_bound_suite(suite, response_len);
    masked = psi_calloc(r->n, PSI_ELEMENT_BYTES);
    r->unmasked = psi_calloc(r->n, PSI_ELEMENT_BYTES);
    if (masked == NULL || r->unmasked == NULL)
        PSI_TRY(PSI_E_NOMEM);
    PSI_TRY(psi_response_decode_suite(masked, &r->n, suite, response, response_len));
    size_t len = r->n * PSI_ELEMENT_BYTES;
    // A bad point is the response's element at the same index.
    rc = psi_detail_rename(psi_engine_unmask(e, r->unmasked, &len, masked, r->n),
                           "Response.encrypted_elements");
    // Public: unmasked, they are the server's masks s·H(v) (§9), free of our key.
    PSI_DECLASSIFY(r->unmasked, r->n * PSI_ELEMENT_BYTES);
done:
    psi_free(masked);
    return rc;
}

/* The match step of a result that reveals indices: the intersection or
 * the association table, each writing into the caller's array. */
typedef int (*reveal_fn)(const psi_setup *s, void *out, size_t *out_count,
                         const uint8_t *elements, size_t n);

static int match_indices(const psi_setup *s, void *out, size_t *out_count,
                         const uint8_t *elements, size_t n)
{
    return psi_setup_match(s, out, out_count, elements, n);
}

static int match_pairs(const psi_setup *s, void *out, size_t *out_count,
                       const uint8_t *elements, size_t n)
{
    return psi_setup_associate(s, out, out_count, elements, n);
}

/* Shared by the revealing calls: needs a client engine with reveal on. */
static int client_reveal(const psi_engine *e, reveal_fn fn, void *out, size_t *out_count,
                         const uint8_t *setup, size_t setup_len, const uint8_t *response,
                         size_t response_len)
{
    PSI_CHECK_ARG(out_count != NULL);
    size_t cap = *out_count;
    *out_count = 0;
    PSI_CHECK_ARG(e != NULL && (out != NULL || cap == 0));
    psi_detail_clear();
    if (psi_engine_role(e) == PSI_ROLE_CLIENT && !psi_engine_reveal(e))
        return PSI_E_REVEAL_DISABLED;
    client_round r;
    int rc = round_start(&r, e, setup, setup_len, response, response_len);
    if (rc == PSI_OK) {
        *out_count = cap;
        rc = fn(r.setup, out, out_count, r.unmasked, r.n);
    }
    round_free(&r);
    return rc;
}

int psi_client_get_intersection(const psi_engine *e, size_t *out, size_t *out_count,
                                const uint8_t *setup, size_t setup_len,
                                const uint8_t *response, size_t response_len)
{
    return client_reveal(e, match_indices, out, out_count, setup, setup_len, response,
                         response_len);
}

int psi_client_get_intersection_size(const psi_engine *e, size_t *count,
                                     const uint8_t *setup, size_t setup_len,
                                     const uint8_t *response, size_t response_len)
{
    PSI_CHECK_ARG(count != NULL);
    *count = 0;
    client_round r;
    int rc = round_start(&r, e, setup, setup_len, response, response_len);
    if (rc == PSI_OK)
        rc = psi_setup_count(r.setup, count, r.unmasked, r.n);
    round_free(&r);
    return rc;
}

int psi_client_get_association(const psi_engine *e, psi_pair *out, size_t *out_count,
                               const uint8_t *setup, size_t setup_len,
                               const uint8_t *response, size_t response_len)
{
    return client_reveal(e, match_pairs, out, out_count, setup, setup_len, response,
                         response_len);
}
