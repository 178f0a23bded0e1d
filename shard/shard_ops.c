/* The sharded form of every operation of psi.h (PROTOCOL.md §14): the
 * library's plan of the operation (psi_op_run) with this layer's thread
 * pool as its executor.  Each call only names the operation; the checks,
 * the merge rules and the encodings are the plan's, the same as the single
 * engine's. */
#include <string.h>

#include "shard_exec.h"

/* The merges of a plan run on the calling thread: keep the caller's
 * progress callback ticking (psi_shard_settings.progress). */
static void merge_tick(void *arg, uint64_t done, uint64_t total)
{
    (void)done;
    (void)total;
    psi_shards_tick(arg);
}

/* One slice a shard: every slice of the plan on the pool. */
static int shards_exec(void *arg, psi_plan *p)
{
    return psi_shards_run(arg, p);
}

int psi_shards_run_op(psi_shards *g, const psi_op_args *args, psi_op_output *o)
{
    SHARD_CHECK_ARG(g != NULL && args != NULL && o != NULL);
    SHARD_CHECK_ARG(args->slices == 0 && args->slice_counts == NULL && args->progress == NULL);
    psi_op_args a = *args;
    a.slices = g->n_units;
    if (g->progress != NULL) {
        a.progress = merge_tick;
        a.progress_arg = g;
    }
    return psi_op_run(g->units[0].engine, &a, o, shards_exec, g);
}

/* A call with one output buffer (*out_len bytes) and perm. */
static int run_bytes(psi_shards *g, const psi_op_args *a, uint8_t *out, size_t *out_len,
                     size_t *perm)
{
    SHARD_CHECK_ARG(out_len != NULL);
    psi_op_output o = {.bytes = out, .len = *out_len, .perm = perm};
    *out_len = 0;
    SHARD_CHECK_ARG(out != NULL || o.len == 0);
    int rc = psi_shards_run_op(g, a, &o);
    *out_len = rc == PSI_OK ? o.len : 0;
    return rc;
}

static int run_step(psi_shards *g, psi_step_kind kind, uint8_t *out, size_t *out_len,
                    const psi_value *values, const uint8_t *points, size_t n)
{
    SHARD_CHECK_ARG(n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    psi_op_args a = {.op = PSI_OP_STEP, .step = kind, .values = values, .n_values = n,
                     .message = points, .message_len = points != NULL ? n * PSI_ELEMENT_BYTES
                                                                      : 0};
    return run_bytes(g, &a, out, out_len, NULL);
}

int psi_shards_mask(psi_shards *g, uint8_t *out, size_t *out_len, const psi_value *values,
                    size_t n)
{
    return run_step(g, PSI_STEP_MASK, out, out_len, values, NULL, n);
}

int psi_shards_remask(psi_shards *g, uint8_t *out, size_t *out_len, const uint8_t *points,
                      size_t n)
{
    return run_step(g, PSI_STEP_REMASK, out, out_len, NULL, points, n);
}

int psi_shards_unmask(psi_shards *g, uint8_t *out, size_t *out_len, const uint8_t *points,
                      size_t n)
{
    return run_step(g, PSI_STEP_UNMASK, out, out_len, NULL, points, n);
}

int psi_shards_server_create_setup(psi_shards *g, uint8_t *out, size_t *out_len, size_t *perm,
                                   const psi_setup_params *p, const psi_value *values,
                                   size_t n)
{
    SHARD_CHECK_ARG(p != NULL);
    psi_op_args a = {.op = PSI_OP_SETUP, .values = values, .n_values = n, .params = *p};
    return run_bytes(g, &a, out, out_len, perm);
}

int psi_shards_server_process_request(psi_shards *g, uint8_t *out, size_t *out_len,
                                      const uint8_t *request, size_t request_len)
{
    psi_op_args a = {.op = PSI_OP_RESPONSE, .message = request, .message_len = request_len};
    return run_bytes(g, &a, out, out_len, NULL);
}

int psi_shards_client_create_request(psi_shards *g, uint8_t *out, size_t *out_len,
                                     const psi_value *values, size_t n)
{
    psi_op_args a = {.op = PSI_OP_REQUEST, .values = values, .n_values = n};
    return run_bytes(g, &a, out, out_len, NULL);
}

static int run_client(psi_shards *g, psi_op op, size_t *indices, psi_pair *pairs,
                      size_t *count, const uint8_t *setup, size_t setup_len,
                      const uint8_t *response, size_t response_len)
{
    SHARD_CHECK_ARG(count != NULL);
    psi_op_output o = {.indices = indices, .pairs = pairs, .count = *count};
    *count = 0;
    psi_op_args a = {.op = op, .message = response, .message_len = response_len,
                     .setup = setup, .setup_len = setup_len};
    int rc = psi_shards_run_op(g, &a, &o);
    *count = rc == PSI_OK ? o.count : 0;
    return rc;
}

int psi_shards_client_get_intersection(psi_shards *g, size_t *out, size_t *out_count,
                                       const uint8_t *setup, size_t setup_len,
                                       const uint8_t *response, size_t response_len)
{
    return run_client(g, PSI_OP_INTERSECTION, out, NULL, out_count, setup, setup_len,
                      response, response_len);
}

int psi_shards_client_get_intersection_size(psi_shards *g, size_t *count, const uint8_t *setup,
                                            size_t setup_len, const uint8_t *response,
                                            size_t response_len)
{
    return run_client(g, PSI_OP_INTERSECTION_SIZE, NULL, NULL, count, setup, setup_len,
                      response, response_len);
}

int psi_shards_client_get_association(psi_shards *g, psi_pair *out, size_t *out_count,
                                      const uint8_t *setup, size_t setup_len,
                                      const uint8_t *response, size_t response_len)
{
    return run_client(g, PSI_OP_ASSOCIATION, NULL, out, out_count, setup, setup_len, response,
                      response_len);
}

int psi_shards_payload_table_build(psi_shards *g, uint8_t *out, size_t *out_len,
                                   const psi_value *values, const psi_value *payloads,
                                   size_t n, size_t pad_len, const uint8_t *salt)
{
    SHARD_CHECK_ARG(g != NULL && out_len != NULL && n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    if (g->role != PSI_ROLE_SERVER)
        return PSI_E_WRONG_ROLE;
    SHARD_CHECK_ARG(n == 0 || payloads != NULL);
    // The capacity first, so that a call that only asks the size masks nothing.
    size_t longest = 0;
    for (size_t i = 0; i < n; i++)
        longest = payloads[i].len > longest ? payloads[i].len : longest;
    size_t need = psi_payload_table_bytes(n, pad_len != 0 ? pad_len : longest);
    if (need != 0 && (out == NULL || *out_len < need) && (pad_len == 0 || longest <= pad_len)) {
        *out_len = need;
        return PSI_E_BUFFER_TOO_SMALL;
    }
    size_t el_len = n * PSI_ELEMENT_BYTES;
    uint8_t *el = psi_shard_alloc(el_len);
    if (el == NULL)
        return PSI_E_NOMEM;
    int rc = psi_shards_mask(g, el, &el_len, values, n);
    if (rc == PSI_OK)
        rc = psi_payload_table_build((int)g->suite, out, out_len, el, payloads, n, pad_len,
                                     salt);
    psi_shard_free(el);
    return rc;
}
