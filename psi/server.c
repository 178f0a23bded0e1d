/* The server's two message calls (PROTOCOL.md §7, §8), composed of the
 * batch primitives and the codec. */
#include <string.h>



#include "common.h"
#include "ctcheck.h"

/* Masks the server's values into a fresh array of n elements. */
static int mask_all(const psi_engine *e, uint8_t **elements, const psi_value *values, size_t n)
{
    size_t len = n * PSI_ELEMENT_BYTES;
    *elements = psi_alloc(len);
    if (*elements == NULL)
        return PSI_E_NOMEM;
    return psi_engine_mask(e, *elements, &len, values, n);
}

int psi_server_create_setup(const psi_engine *e, uint8_t *out, size_t *out_len,
                            size_t *perm, const psi_setup_params *p,
                            const psi_value *values, size_t n)
{
    PSI_CHECK_ARG(out_len != NULL);
    size_t cap = *out_len, bound;
    *out_len = 0;
    PSI_CHECK_ARG(e != NULL && p != NULL && (out != NULL || cap == 0));
    PSI_CHECK_ARG((values != NULL || n == 0) && n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    psi_detail_clear();
    if (psi_engine_role(e) != PSI_ROLE_SERVER)
        return PSI_E_WRONG_ROLE;
    /* Reject bad parameters before the expensive masking. */
    int rc = psi_setup_bound_suite(&bound, psi_engine_suite(e), p, n);
    if (rc != PSI_OK)
        return rc;
    uint8_t *elements = NULL;
    PSI_TRY(mask_all(e, &elements, values, n));
    // Public: the masked elements are the setup sent to the client (§7).
    PSI_DECLASSIFY(elements, n * PSI_ELEMENT_BYTES);
    if (p->structure == PSI_STRUCTURE_RAW)
        PSI_TRY(psi_elements_sort(elements, perm, n));
    *out_len = cap;
    rc = psi_setup_encode_suite(out, out_len, psi_engine_suite(e), p, elements, n);
done:
    psi_free(elements);
    return rc;
}

/* Decodes the request's elements and checks its reveal flag (§8 step 1). */
static int request_elements(const psi_engine *e, uint8_t **elements, size_t *n,
                            const uint8_t *request, size_t request_len)
{
    int reveal = 0;
    psi_suite suite = psi_engine_suite(e);
    *n = psi_message_element_bound_suite(suite, request_len);
    *elements = psi_calloc(*n, PSI_ELEMENT_BYTES);
    if (*elements == NULL)
        return PSI_E_NOMEM;
    int rc = psi_request_decode_suite(*elements, n, &reveal, suite, request, request_len);
    if (rc == PSI_OK && reveal != psi_engine_reveal(e))
        rc = psi_fail_at(PSI_E_REVEAL_MISMATCH, "Request.reveal_intersection", -1, -1);
    return rc;
}

int psi_server_process_request(const psi_engine *e, uint8_t *out, size_t *out_len,
                               const uint8_t *request, size_t request_len)
{
    PSI_CHECK_ARG(out_len != NULL);
    size_t cap = *out_len, n = 0, len;
    *out_len = 0;
    PSI_CHECK_ARG(e != NULL && (out != NULL || cap == 0));
    PSI_CHECK_ARG(request != NULL || request_len == 0);
    psi_detail_clear();
    if (psi_engine_role(e) != PSI_ROLE_SERVER)
        return PSI_E_WRONG_ROLE;
    uint8_t *in = NULL, *masked = NULL;
    int rc;
    PSI_TRY(request_elements(e, &in, &n, request, request_len));
    if (cap < psi_response_bound_suite(psi_engine_suite(e), n))
        PSI_TRY(PSI_E_BUFFER_TOO_SMALL);
    len = n * PSI_ELEMENT_BYTES;
    masked = psi_alloc(len);
    if (masked == NULL)
        PSI_TRY(PSI_E_NOMEM);
    // A bad point is the request's element at the same index.
    PSI_TRY(psi_detail_rename(psi_engine_remask(e, masked, &len, in, n),
                              "Request.encrypted_elements"));
    // Public: the re-masked elements are the response sent back (§8).
    PSI_DECLASSIFY(masked, n * PSI_ELEMENT_BYTES);
    if (!psi_engine_reveal(e))
        PSI_TRY(psi_elements_sort(masked, NULL, n));
    *out_len = cap;
    rc = psi_response_encode_suite(out, out_len, psi_engine_suite(e), masked, n);
done:
    psi_free(in);
    psi_free(masked);
    return rc;
}
