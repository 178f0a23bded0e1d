/* Whole operations (psi_op_run) and the message calls of psi.h, each one
 * plan run inline (PROTOCOL.md §19): no call here composes the protocol
 * itself, every check, order and encoding is the plan's. */
#include <string.h>

#include "plan.h"

/* The inline executor: the slices in order on the calling thread, stopping
 * at the first failure (the single engine's error, §14.4). */
static int run_inline(const psi_engine *e, psi_plan *p)
{
    for (size_t k = 0; k < psi_plan_slices(p); k++)
        if (psi_plan_run(p, e, k) != PSI_OK)
            break;
    return PSI_OK;
}

int psi_op_run(const psi_engine *e, const psi_op_args *args, psi_op_output *o,
               psi_exec_fn exec, void *exec_arg)
{
    PSI_CHECK_ARG(o != NULL);
    size_t len_cap = o->len;
    o->len = 0;
    o->count = args != NULL && args->op == PSI_OP_INTERSECTION_SIZE ? 0 : o->count;
    PSI_CHECK_ARG(args != NULL);
    plan_caps caps = {o->sink == NULL, len_cap}; /* a sink takes any size */
    psi_plan *p = NULL;
    int rc = psi_plan_begin_checked(&p, e, args, &caps);
    if (rc == PSI_OK)
        rc = exec != NULL ? exec(exec_arg, p) : run_inline(e, p);
    if (rc == PSI_OK) {
        o->len = len_cap;
        rc = psi_plan_finish(p, o);
    } else {
        o->count = 0;
    }
    psi_plan_free(p);
    return rc;
}

/* ------------------------------------------------------- message calls */

/* The three message calls: the message into (out, *out_len), and perm. */
static int message_op(const psi_engine *e, const psi_op_args *a, uint8_t *out, size_t *out_len,
                      size_t *perm)
{
    PSI_CHECK_ARG(out_len != NULL);
    psi_op_output o = {.bytes = out, .len = *out_len, .perm = perm};
    *out_len = 0;
    PSI_CHECK_ARG(out != NULL || o.len == 0);
    int rc = psi_op_run(e, a, &o, NULL, NULL);
    *out_len = rc == PSI_OK ? o.len : 0;
    return rc;
}

int psi_server_create_setup(const psi_engine *e, uint8_t *out, size_t *out_len, size_t *perm,
                            const psi_setup_params *p, const psi_value *values, size_t n)
{
    if (p == NULL && out_len != NULL)
        *out_len = 0;
    PSI_CHECK_ARG(p != NULL);
    psi_op_args a = {.op = PSI_OP_SETUP, .values = values, .n_values = n, .params = *p};
    return message_op(e, &a, out, out_len, perm);
}

int psi_server_process_request(const psi_engine *e, uint8_t *out, size_t *out_len,
                               const uint8_t *request, size_t request_len)
{
    psi_op_args a = {.op = PSI_OP_RESPONSE, .message = request, .message_len = request_len};
    return message_op(e, &a, out, out_len, NULL);
}

int psi_client_create_request(const psi_engine *e, uint8_t *out, size_t *out_len,
                              const psi_value *values, size_t n)
{
    psi_op_args a = {.op = PSI_OP_REQUEST, .values = values, .n_values = n};
    return message_op(e, &a, out, out_len, NULL);
}

/* The three client results: indices, pairs, or the count alone. */
static int client_op(const psi_engine *e, psi_op op, size_t *indices, psi_pair *pairs,
                     size_t *count, const uint8_t *setup, size_t setup_len,
                     const uint8_t *response, size_t response_len)
{
    PSI_CHECK_ARG(count != NULL);
    psi_op_output o = {.indices = indices, .pairs = pairs, .count = *count};
    *count = 0;
    PSI_CHECK_ARG(op == PSI_OP_INTERSECTION_SIZE || indices != NULL || pairs != NULL ||
                  o.count == 0);
    psi_op_args a = {.op = op, .message = response, .message_len = response_len,
                     .setup = setup, .setup_len = setup_len};
    int rc = psi_op_run(e, &a, &o, NULL, NULL);
    *count = rc == PSI_OK ? o.count : 0;
    return rc;
}

int psi_client_get_intersection(const psi_engine *e, size_t *out, size_t *out_count,
                                const uint8_t *setup, size_t setup_len,
                                const uint8_t *response, size_t response_len)
{
    return client_op(e, PSI_OP_INTERSECTION, out, NULL, out_count, setup, setup_len, response,
                     response_len);
}

int psi_client_get_intersection_size(const psi_engine *e, size_t *count,
                                     const uint8_t *setup, size_t setup_len,
                                     const uint8_t *response, size_t response_len)
{
    if (count != NULL)
        *count = 0;
    return client_op(e, PSI_OP_INTERSECTION_SIZE, NULL, NULL, count, setup, setup_len,
                     response, response_len);
}

int psi_client_get_association(const psi_engine *e, psi_pair *out, size_t *out_count,
                               const uint8_t *setup, size_t setup_len,
                               const uint8_t *response, size_t response_len)
{
    return client_op(e, PSI_OP_ASSOCIATION, NULL, out, out_count, setup, setup_len, response,
                     response_len);
}
