/* The sharded form of every engine operation of psi.h (PROTOCOL.md §14).
 * Each mirrors the single engine's call step for step, with the same
 * argument checks and errors in the same order; only the expensive batch
 * step runs on the shards, and the merge rules put its parts together. */
#include <string.h>

#include "shard_exec.h"

/* ------------------------------------------------------ batch primitives */

/* The checks of psi.h's batch calls, then the step over all shards. */
static int batch(psi_shards *g, psi_shard_step step, uint8_t *out, size_t *out_len,
                 const psi_value *values, const uint8_t *points, size_t n)
{
    SHARD_CHECK_ARG(out_len != NULL);
    size_t cap = *out_len;
    *out_len = 0;
    SHARD_CHECK_ARG(g != NULL && (values != NULL || points != NULL || n == 0));
    SHARD_CHECK_ARG(out != NULL || cap == 0);
    if (n > SIZE_MAX / PSI_ELEMENT_BYTES || cap < n * PSI_ELEMENT_BYTES)
        return PSI_E_BUFFER_TOO_SMALL;
    for (size_t i = 0; values != NULL && i < n; i++)
        SHARD_CHECK_ARG(values[i].data != NULL || values[i].len == 0);
    int rc = psi_shards_run(g, step, out, NULL, values, points, n);
    if (rc == PSI_OK)
        *out_len = n * PSI_ELEMENT_BYTES;
    return rc;
}

int psi_shards_mask(psi_shards *g, uint8_t *out, size_t *out_len, const psi_value *values,
                    size_t n)
{
    return batch(g, PSI_SHARD_MASK, out, out_len, values, NULL, n);
}

int psi_shards_remask(psi_shards *g, uint8_t *out, size_t *out_len, const uint8_t *points,
                      size_t n)
{
    return batch(g, PSI_SHARD_REMASK, out, out_len, NULL, points, n);
}

int psi_shards_unmask(psi_shards *g, uint8_t *out, size_t *out_len, const uint8_t *points,
                      size_t n)
{
    return batch(g, PSI_SHARD_UNMASK, out, out_len, NULL, points, n);
}

/* --------------------------------------------------------------- server */

/* Runs a _SORT step on the shards: *sorted gets the n results as the
 * shards' sorted slices, *local their input indices.  The caller frees
 * both (psi_shard_free), also on failure. */
static int run_slices_sorted(psi_shards *g, psi_shard_step step, uint8_t **sorted,
                             size_t **local, const psi_value *values, const uint8_t *points,
                             size_t n)
{
    *local = psi_shard_calloc(n, sizeof **local);
    *sorted = psi_shard_alloc(n * PSI_ELEMENT_BYTES);
    if (*local == NULL || *sorted == NULL)
        return PSI_E_NOMEM;
    return psi_shards_run(g, step, *sorted, *local, values, points, n);
}

/* Merges the sorted slices (§14.2) into out: n elements in (bytes, input
 * index) order, the order of one stable sort of the whole.  perm, when not
 * NULL, gets the merged permutation.  Runs on the calling thread and ticks
 * the progress callback. */
static int merge_slices(psi_shards *g, uint8_t *out, size_t *perm, const uint8_t *sorted,
                        const size_t *local, size_t n)
{
    size_t *merged = perm != NULL ? perm : psi_shard_calloc(n, sizeof *merged);
    if (merged == NULL)
        return PSI_E_NOMEM;
    int rc = psi_shard_merge_ticked(out, merged, sorted, local, n, g->n_units, psi_shards_tick,
                                    g);
    if (merged != perm)
        psi_shard_free(merged);
    return rc;
}

/* Both: a _SORT step, then the merge into out and perm (may be NULL). */
static int run_sorted(psi_shards *g, psi_shard_step step, uint8_t *out, size_t *perm,
                      const psi_value *values, const uint8_t *points, size_t n)
{
    uint8_t *sorted = NULL;
    size_t *local = NULL;
    int rc = run_slices_sorted(g, step, &sorted, &local, values, points, n);
    if (rc == PSI_OK)
        rc = merge_slices(g, out, perm, sorted, local, n);
    psi_shard_free(local);
    psi_shard_free(sorted);
    return rc;
}

/* Masks on the shards; for the raw structure sorted and merged (§14.2),
 * perm receiving the merged permutation when not NULL. */
static int setup_elements(psi_shards *g, uint8_t *elements, size_t *perm,
                          const psi_setup_params *p, const psi_value *values, size_t n)
{
    if (p->structure != PSI_STRUCTURE_RAW)
        return psi_shards_run(g, PSI_SHARD_MASK, elements, NULL, values, NULL, n);
    return run_sorted(g, PSI_SHARD_MASK_SORT, elements, perm, values, NULL, n);
}

int psi_shards_server_create_setup(psi_shards *g, uint8_t *out, size_t *out_len, size_t *perm,
                                   const psi_setup_params *p, const psi_value *values,
                                   size_t n)
{
    SHARD_CHECK_ARG(out_len != NULL);
    size_t cap = *out_len, bound;
    *out_len = 0;
    SHARD_CHECK_ARG(g != NULL && p != NULL && (out != NULL || cap == 0));
    SHARD_CHECK_ARG((values != NULL || n == 0) && n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    psi_error_detail_set(NULL);
    if (g->role != PSI_ROLE_SERVER)
        return PSI_E_WRONG_ROLE;
    int rc = psi_setup_bound_suite(&bound, g->suite, p, n); /* bad parameters before masking */
    if (rc != PSI_OK)
        return rc;
    for (size_t i = 0; i < n; i++) /* checked where the engine checks them */
        SHARD_CHECK_ARG(values[i].data != NULL || values[i].len == 0);
    uint8_t *elements = psi_shard_alloc(n * PSI_ELEMENT_BYTES);
    if (elements == NULL)
        return PSI_E_NOMEM;
    rc = setup_elements(g, elements, perm, p, values, n);
    if (rc == PSI_OK) {
        *out_len = cap;
        rc = psi_setup_encode_suite(out, out_len, g->suite, p, elements, n);
    }
    psi_shard_free(elements);
    return rc;
}

/* As the engine does (psi/server.c, psi/client.c): a bad point found by a
 * shard is the message's element at the same index.  Returns rc. */
static int detail_rename(int rc, const char *field)
{
    psi_error_detail d;
    psi_error_detail_get(&d);
    if (rc != PSI_OK && d.code == rc) {
        d.field = field;
        psi_error_detail_set(&d);
    }
    return rc;
}

/* Re-masks or unmasks the n points of *points on the shards into a new
 * array *out of n elements: in shard order for REMASK and UNMASK; for
 * their _SORT steps sorted, each shard sorting its slice before the merge
 * (§14.2), and *perm, when perm is not NULL, a new array of the merged
 * permutation.  *points is freed (and set NULL) before the merge's buffers
 * are allocated, so one fewer array is held at once.  A bad point's detail
 * names `field`.  The caller frees *points, *out and *perm, also on
 * failure. */
static int run_points(psi_shards *g, psi_shard_step step, uint8_t **points, size_t n,
                      uint8_t **out, size_t **perm, const char *field)
{
    if (step == PSI_SHARD_REMASK || step == PSI_SHARD_UNMASK) {
        *out = psi_shard_calloc(n, PSI_ELEMENT_BYTES);
        int rc = *out == NULL ? PSI_E_NOMEM
                              : psi_shards_run(g, step, *out, NULL, NULL, *points, n);
        return detail_rename(rc, field);
    }
    uint8_t *sorted = NULL;
    size_t *local = NULL;
    int rc = detail_rename(run_slices_sorted(g, step, &sorted, &local, NULL, *points, n), field);
    if (rc == PSI_OK) {
        psi_shard_free(*points);
        *points = NULL;
        *out = psi_shard_calloc(n, PSI_ELEMENT_BYTES);
        if (perm != NULL)
            *perm = psi_shard_calloc(n, sizeof **perm);
        rc = *out == NULL || (perm != NULL && *perm == NULL)
                 ? PSI_E_NOMEM
                 : merge_slices(g, *out, perm != NULL ? *perm : NULL, sorted, local, n);
    }
    psi_shard_free(local);
    psi_shard_free(sorted);
    return rc;
}

/* Decodes the request's elements and checks its reveal flag (§8). */
static int request_elements(psi_shards *g, uint8_t **elements, size_t *n,
                            const uint8_t *request, size_t request_len)
{
    int reveal = 0;
    *n = psi_message_element_bound_suite(g->suite, request_len);
    *elements = psi_shard_calloc(*n, PSI_ELEMENT_BYTES);
    if (*elements == NULL)
        return PSI_E_NOMEM;
    int rc = psi_request_decode_suite(*elements, n, &reveal, g->suite, request, request_len);
    if (rc == PSI_OK && reveal != g->reveal) {
        rc = PSI_E_REVEAL_MISMATCH;
        psi_error_detail d = {rc, "Request.reveal_intersection", -1, -1};
        psi_error_detail_set(&d);
    }
    return rc;
}

int psi_shards_server_process_request(psi_shards *g, uint8_t *out, size_t *out_len,
                                      const uint8_t *request, size_t request_len)
{
    SHARD_CHECK_ARG(out_len != NULL);
    size_t cap = *out_len, n = 0;
    *out_len = 0;
    SHARD_CHECK_ARG(g != NULL && (out != NULL || cap == 0));
    SHARD_CHECK_ARG(request != NULL || request_len == 0);
    psi_error_detail_set(NULL);
    if (g->role != PSI_ROLE_SERVER)
        return PSI_E_WRONG_ROLE;
    uint8_t *in = NULL, *masked = NULL;
    int rc;
    SHARD_TRY(request_elements(g, &in, &n, request, request_len));
    if (cap < psi_response_bound_suite(g->suite, n))
        SHARD_TRY(PSI_E_BUFFER_TOO_SMALL);
    /* Concatenated in shard order (§14.3); without reveal, sorted. */
    SHARD_TRY(run_points(g, g->reveal ? PSI_SHARD_REMASK : PSI_SHARD_REMASK_SORT, &in, n, &masked,
                         NULL, "Request.encrypted_elements"));
    *out_len = cap;
    rc = psi_response_encode_suite(out, out_len, g->suite, masked, n);
done:
    psi_shard_free(in);
    psi_shard_free(masked);
    return rc;
}

/* --------------------------------------------------------------- client */

int psi_shards_client_create_request(psi_shards *g, uint8_t *out, size_t *out_len,
                                     const psi_value *values, size_t n)
{
    SHARD_CHECK_ARG(out_len != NULL);
    size_t cap = *out_len;
    *out_len = 0;
    SHARD_CHECK_ARG(g != NULL && (out != NULL || cap == 0));
    SHARD_CHECK_ARG((values != NULL || n == 0) && n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    psi_error_detail_set(NULL);
    if (g->role != PSI_ROLE_CLIENT)
        return PSI_E_WRONG_ROLE;
    if (psi_request_bound_suite(g->suite, n) == 0 || cap < psi_request_bound_suite(g->suite, n))
        return PSI_E_BUFFER_TOO_SMALL;
    for (size_t i = 0; i < n; i++)
        SHARD_CHECK_ARG(values[i].data != NULL || values[i].len == 0);
    uint8_t *elements = psi_shard_alloc(n * PSI_ELEMENT_BYTES);
    if (elements == NULL)
        return PSI_E_NOMEM;
    int rc = psi_shards_run(g, PSI_SHARD_MASK, elements, NULL, values, NULL, n);
    if (rc == PSI_OK) {
        *out_len = cap;
        rc = psi_request_encode_suite(out, out_len, g->suite, g->reveal, elements, n);
    }
    psi_shard_free(elements);
    return rc;
}

/* The first half of every client result (§9 steps 2-3): parse the setup,
 * decode the response, unmask it on the shards into one array in response
 * order (§14.3).  For a raw setup the array is in (bytes, response index)
 * order instead, each shard sorting its slice before the merge, and
 * perm[j] is the response index of element j: the raw walk then has
 * nothing left to sort, and its results map back through perm. */
typedef struct client_round {
    psi_setup *setup;
    uint8_t *unmasked;
    size_t *perm; /* raw setup only, else NULL */
    size_t n;
} client_round;

static void round_free(client_round *r)
{
    psi_setup_free(r->setup);
    psi_shard_free(r->unmasked);
    psi_shard_free(r->perm);
}

static int round_start(client_round *r, psi_shards *g, const uint8_t *setup, size_t setup_len,
                       const uint8_t *response, size_t response_len)
{
    memset(r, 0, sizeof *r);
    SHARD_CHECK_ARG(g != NULL && (setup != NULL || setup_len == 0));
    SHARD_CHECK_ARG(response != NULL || response_len == 0);
    psi_error_detail_set(NULL);
    if (g->role != PSI_ROLE_CLIENT)
        return PSI_E_WRONG_ROLE;
    int rc, raw;
    uint8_t *masked = NULL;
    SHARD_TRY(psi_setup_parse_suite(&r->setup, g->suite, setup, setup_len));
    r->n = psi_message_element_bound_suite(g->suite, response_len);
    masked = psi_shard_calloc(r->n, PSI_ELEMENT_BYTES);
    if (masked == NULL)
        SHARD_TRY(PSI_E_NOMEM);
    SHARD_TRY(psi_response_decode_suite(masked, &r->n, g->suite, response, response_len));
    raw = psi_setup_structure(r->setup) == PSI_STRUCTURE_RAW;
    rc = run_points(g, raw ? PSI_SHARD_UNMASK_SORT : PSI_SHARD_UNMASK, &masked, r->n,
                    &r->unmasked, raw ? &r->perm : NULL, "Response.encrypted_elements");
done:
    psi_shard_free(masked);
    return rc;
}

/* The match step runs once over all unmasked elements (§14.4): the raw
 * walk pairs each setup copy with one client copy across shards, and the
 * GCS order of equal hashes depends on the whole list. */
typedef int (*reveal_fn)(const client_round *r, void *out, size_t *out_count);

static int match_indices(const client_round *r, void *out, size_t *out_count)
{
    size_t *idx = out;
    int rc = psi_setup_match(r->setup, idx, out_count, r->unmasked, r->n);
    for (size_t i = 0; rc == PSI_OK && r->perm != NULL && i < *out_count; i++)
        idx[i] = r->perm[idx[i]];
    return rc;
}

static int match_pairs(const client_round *r, void *out, size_t *out_count)
{
    psi_pair *pairs = out;
    int rc = psi_setup_associate(r->setup, pairs, out_count, r->unmasked, r->n);
    for (size_t i = 0; rc == PSI_OK && r->perm != NULL && i < *out_count; i++)
        pairs[i].client_index = r->perm[pairs[i].client_index];
    return rc;
}

static int client_reveal(psi_shards *g, reveal_fn fn, void *out, size_t *out_count,
                         const uint8_t *setup, size_t setup_len, const uint8_t *response,
                         size_t response_len)
{
    SHARD_CHECK_ARG(out_count != NULL);
    size_t cap = *out_count;
    *out_count = 0;
    SHARD_CHECK_ARG(g != NULL && (out != NULL || cap == 0));
    if (g->role == PSI_ROLE_CLIENT && !g->reveal)
        return PSI_E_REVEAL_DISABLED;
    client_round r;
    int rc = round_start(&r, g, setup, setup_len, response, response_len);
    if (rc == PSI_OK) {
        *out_count = cap;
        rc = fn(&r, out, out_count);
    }
    round_free(&r);
    return rc;
}

int psi_shards_client_get_intersection(psi_shards *g, size_t *out, size_t *out_count,
                                       const uint8_t *setup, size_t setup_len,
                                       const uint8_t *response, size_t response_len)
{
    return client_reveal(g, match_indices, out, out_count, setup, setup_len, response,
                         response_len);
}

int psi_shards_client_get_intersection_size(psi_shards *g, size_t *count, const uint8_t *setup,
                                            size_t setup_len, const uint8_t *response,
                                            size_t response_len)
{
    SHARD_CHECK_ARG(count != NULL);
    *count = 0;
    client_round r;
    int rc = round_start(&r, g, setup, setup_len, response, response_len);
    if (rc == PSI_OK)
        rc = psi_setup_count(r.setup, count, r.unmasked, r.n);
    round_free(&r);
    return rc;
}

int psi_shards_client_get_association(psi_shards *g, psi_pair *out, size_t *out_count,
                                      const uint8_t *setup, size_t setup_len,
                                      const uint8_t *response, size_t response_len)
{
    return client_reveal(g, match_pairs, out, out_count, setup, setup_len, response,
                         response_len);
}
