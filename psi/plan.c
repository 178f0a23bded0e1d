/* The step API's first half (PROTOCOL.md §19): psi_plan_begin runs every
 * check of an operation in the single engine's order and cuts the input
 * into slices (§14.1); psi_step_run is the one pure step; psi_plan_run and
 * psi_plan_put keep a slice's outcome for finish (plan_finish.c). */
#include <string.h>

#include "codec.h"
#include "ctcheck.h"
#include "plan.h"

int psi_step_sorts(psi_step_kind kind)
{
    return kind == PSI_STEP_MASK_SORT || kind == PSI_STEP_REMASK_SORT ||
           kind == PSI_STEP_UNMASK_SORT;
}

static int step_masks(psi_step_kind kind)
{
    return kind == PSI_STEP_MASK || kind == PSI_STEP_MASK_SORT;
}

static int kind_known(psi_step_kind kind)
{
    return kind >= PSI_STEP_MASK && kind <= PSI_STEP_UNMASK_SORT;
}

/* ------------------------------------------------------------ the step */

int psi_step_run(const psi_engine *e, uint8_t *out, size_t *perm, psi_error_detail *detail,
                 const psi_step *s)
{
    if (detail != NULL)
        *detail = (psi_error_detail){PSI_OK, NULL, -1, -1};
    PSI_CHECK_ARG(e != NULL && s != NULL && kind_known(s->kind));
    PSI_CHECK_ARG(s->count <= SIZE_MAX / PSI_ELEMENT_BYTES && s->offset <= SIZE_MAX - s->count);
    PSI_CHECK_ARG(out != NULL || s->count == 0);
    PSI_CHECK_ARG(perm != NULL || s->count == 0 || !psi_step_sorts(s->kind));
    PSI_CHECK_ARG(step_masks(s->kind) ? s->values != NULL || s->count == 0
                                      : s->points != NULL || s->count == 0);
    size_t len = s->count * PSI_ELEMENT_BYTES;
    int rc;
    if (step_masks(s->kind))
        rc = psi_engine_mask(e, out, &len, s->values, s->count);
    else if (s->kind == PSI_STEP_REMASK || s->kind == PSI_STEP_REMASK_SORT)
        rc = psi_engine_remask(e, out, &len, s->points, s->count);
    else
        rc = psi_engine_unmask(e, out, &len, s->points, s->count);
    if (rc == PSI_OK) {
        // Public: every step's output is sent or is the partner's mask (§7-§9).
        PSI_DECLASSIFY(out, s->count * PSI_ELEMENT_BYTES);
    }
    if (rc == PSI_OK && psi_step_sorts(s->kind)) {
        rc = psi_elements_sort(out, perm, s->count);
        for (size_t i = 0; rc == PSI_OK && i < s->count; i++)
            perm[i] += s->offset;
    }
    psi_error_detail d;
    psi_error_detail_get(&d);
    if (rc != PSI_OK && s->count != 0)
        memset(out, 0, s->count * PSI_ELEMENT_BYTES); /* no partial result */
    if (rc != PSI_OK && d.code == rc) {
        if (d.index >= 0)
            d.index += (int64_t)s->offset; /* an index into the whole input */
        if (detail != NULL)
            *detail = d;
    }
    return rc;
}

/* ------------------------------------------------------------- the cut */

/* §14.1, or the executor's own counts. */
static int plan_cut(psi_plan *p, const psi_op_args *a)
{
    size_t k_n = a->slices != 0 ? a->slices : 1, at = 0;
    PSI_CHECK_ARG(k_n <= PSI_PLAN_MAX_SLICES);
    p->slices = psi_calloc(k_n, sizeof *p->slices);
    if (p->slices == NULL)
        return PSI_E_NOMEM;
    p->n_slices = k_n;
    size_t q = p->n / k_n, r = p->n % k_n;
    for (size_t k = 0; k < k_n; k++) {
        plan_slice *s = &p->slices[k];
        s->offset = at;
        s->count = a->slice_counts != NULL ? a->slice_counts[k] : q + (k < r ? 1 : 0);
        PSI_CHECK_ARG(s->count <= p->n - at);
        at += s->count;
        s->index = -1;
    }
    PSI_CHECK_ARG(at == p->n);
    return PSI_OK;
}

/* ---------------------------------------------------------- the checks */

static int values_valid(const psi_value *values, size_t n)
{
    for (size_t i = 0; values != NULL && i < n; i++)
        if (values[i].data == NULL && values[i].len != 0)
            return 0;
    return 1;
}

/* Decodes the message's elements into p->owned (§8 step 1, §9 step 2). */
static int decode_points(psi_plan *p, const psi_op_args *a, int *reveal, int request)
{
    p->n = psi_message_element_bound(p->suite, a->message_len);
    p->owned = psi_calloc(p->n, PSI_ELEMENT_BYTES);
    if (p->owned == NULL)
        return PSI_E_NOMEM;
    p->points = p->owned;
    if (request)
        return psi_request_decode(p->owned, &p->n, reveal, p->suite, a->message,
                                        a->message_len);
    return psi_response_decode(p->owned, &p->n, p->suite, a->message, a->message_len);
}

static int begin_setup(psi_plan *p, const psi_engine *e, const psi_op_args *a)
{
    PSI_CHECK_ARG(a->values != NULL || a->n_values == 0 || a->external);
    PSI_CHECK_ARG(a->n_values <= SIZE_MAX / PSI_ELEMENT_BYTES);
    psi_detail_clear();
    if (psi_engine_role(e) != PSI_ROLE_SERVER)
        return PSI_E_WRONG_ROLE;
    size_t bound;
    int rc = psi_setup_bound(&bound, p->suite, &a->params, a->n_values);
    if (rc != PSI_OK) /* bad parameters before the expensive masking */
        return rc;
    PSI_CHECK_ARG(values_valid(a->values, a->n_values));
    p->params = a->params;
    p->kind = a->params.structure == PSI_STRUCTURE_RAW ? PSI_STEP_MASK_SORT : PSI_STEP_MASK;
    p->values = a->values;
    p->n = a->n_values;
    p->field = "values";
    return PSI_OK;
}

static int begin_request(psi_plan *p, const psi_engine *e, const psi_op_args *a,
                         const plan_caps *caps)
{
    PSI_CHECK_ARG(a->values != NULL || a->n_values == 0 || a->external);
    PSI_CHECK_ARG(a->n_values <= SIZE_MAX / PSI_ELEMENT_BYTES);
    psi_detail_clear();
    if (psi_engine_role(e) != PSI_ROLE_CLIENT)
        return PSI_E_WRONG_ROLE;
    size_t bound = psi_request_bound(p->suite, a->n_values);
    if (bound == 0 || (caps->given && caps->bytes < bound))
        return PSI_E_BUFFER_TOO_SMALL;
    PSI_CHECK_ARG(values_valid(a->values, a->n_values));
    p->kind = PSI_STEP_MASK;
    p->values = a->values;
    p->n = a->n_values;
    p->field = "values";
    return PSI_OK;
}

static int begin_response(psi_plan *p, const psi_engine *e, const psi_op_args *a,
                          const plan_caps *caps)
{
    PSI_CHECK_ARG(a->message != NULL || a->message_len == 0 || a->external);
    psi_detail_clear();
    if (psi_engine_role(e) != PSI_ROLE_SERVER)
        return PSI_E_WRONG_ROLE;
    if (a->external) {
        p->n = a->n_values;
    } else {
        int reveal = 0;
        int rc = decode_points(p, a, &reveal, 1);
        if (rc != PSI_OK)
            return rc;
        if (reveal != p->reveal)
            return psi_fail_at(PSI_E_REVEAL_MISMATCH, "Request.reveal_intersection", -1, -1);
    }
    if (caps->given && caps->bytes < psi_response_bound(p->suite, p->n))
        return PSI_E_BUFFER_TOO_SMALL;
    // Concatenated in slice order; without reveal, sorted (§8, §14.3).
    p->kind = p->reveal ? PSI_STEP_REMASK : PSI_STEP_REMASK_SORT;
    p->field = "Request.encrypted_elements";
    return PSI_OK;
}

static int begin_client(psi_plan *p, const psi_engine *e, const psi_op_args *a)
{
    psi_detail_clear();
    if (a->op != PSI_OP_INTERSECTION_SIZE && psi_engine_role(e) == PSI_ROLE_CLIENT &&
        !p->reveal)
        return PSI_E_REVEAL_DISABLED;
    PSI_CHECK_ARG(a->setup != NULL || a->setup_len == 0 || a->setup_read != NULL);
    PSI_CHECK_ARG(a->setup == NULL || a->setup_read == NULL);
    PSI_CHECK_ARG(a->message != NULL || a->message_len == 0 || a->external);
    if (psi_engine_role(e) != PSI_ROLE_CLIENT)
        return PSI_E_WRONG_ROLE;
    int rc = a->setup_read != NULL
                 ? psi_setup_parse_read(&p->setup, p->suite, a->setup_read, a->setup_read_arg,
                                        a->setup_len,
                                        a->setup_max_held != 0 ? a->setup_max_held : UINT64_MAX)
                 : psi_setup_parse(&p->setup, p->suite, a->setup, a->setup_len);
    if (rc != PSI_OK)
        return rc;
    if (a->external) {
        p->n = a->n_values;
    } else if ((rc = decode_points(p, a, NULL, 0)) != PSI_OK) {
        return rc;
    }
    // A raw setup's walk wants the unmasked elements in (bytes, index)
    // order: each slice sorts its own and finish merges them (§14.4).
    p->kind = psi_setup_structure(p->setup) == PSI_STRUCTURE_RAW ? PSI_STEP_UNMASK_SORT
                                                                 : PSI_STEP_UNMASK;
    p->field = "Response.encrypted_elements";
    return PSI_OK;
}

static int begin_step(psi_plan *p, const psi_op_args *a, const plan_caps *caps)
{
    PSI_CHECK_ARG(kind_known(a->step));
    int masks = step_masks(a->step);
    PSI_CHECK_ARG(masks ? a->values != NULL || a->n_values == 0 || a->external
                        : a->message != NULL || a->n_values == 0 || a->external);
    if (a->n_values > SIZE_MAX / PSI_ELEMENT_BYTES ||
        (caps->given && caps->bytes < a->n_values * PSI_ELEMENT_BYTES))
        return PSI_E_BUFFER_TOO_SMALL;
    PSI_CHECK_ARG(!masks || values_valid(a->values, a->n_values));
    PSI_CHECK_ARG(masks || a->external || a->message_len == a->n_values * PSI_ELEMENT_BYTES);
    psi_detail_clear();
    p->kind = a->step;
    p->n = a->n_values;
    p->values = masks ? a->values : NULL;
    p->points = masks ? NULL : a->message;
    p->field = masks ? "values" : "points";
    return PSI_OK;
}

static int args_valid(const psi_op_args *a)
{
    for (size_t i = 0; i < sizeof a->reserved; i++)
        if (a->reserved[i] != 0)
            return 0;
    int client = a->op >= PSI_OP_INTERSECTION && a->op <= PSI_OP_ASSOCIATION;
    return a->op >= PSI_OP_SETUP && a->op <= PSI_OP_STEP && (a->external == 0 || a->external == 1) &&
           (client || (a->setup_read == NULL && a->setup_read_arg == NULL)) &&
           (a->setup_read != NULL || a->setup_max_held == 0);
}

int psi_plan_begin_checked(psi_plan **out, const psi_engine *e, const psi_op_args *a,
                           const plan_caps *caps)
{
    PSI_CHECK_ARG(out != NULL);
    *out = NULL;
    PSI_CHECK_ARG(e != NULL && a != NULL && args_valid(a));
    psi_plan *p = psi_calloc(1, sizeof *p);
    if (p == NULL)
        return PSI_E_NOMEM;
    p->op = a->op;
    p->suite = psi_engine_suite(e);
    p->reveal = psi_engine_reveal(e);
    p->external = a->external;
    p->progress = a->progress;
    p->progress_arg = a->progress_arg;
    int rc;
    switch (a->op) {
    case PSI_OP_SETUP:
        rc = begin_setup(p, e, a);
        break;
    case PSI_OP_REQUEST:
        rc = begin_request(p, e, a, caps);
        break;
    case PSI_OP_RESPONSE:
        rc = begin_response(p, e, a, caps);
        break;
    case PSI_OP_STEP:
        rc = begin_step(p, a, caps);
        break;
    default:
        rc = begin_client(p, e, a);
        break;
    }
    if (rc == PSI_OK)
        rc = plan_cut(p, a);
    if (rc == PSI_OK && !p->external) {
        p->out = psi_calloc(p->n, PSI_ELEMENT_BYTES);
        if (psi_step_sorts(p->kind))
            p->perm = psi_calloc(p->n, sizeof *p->perm);
        if (p->out == NULL || (psi_step_sorts(p->kind) && p->perm == NULL))
            rc = PSI_E_NOMEM;
    }
    if (rc != PSI_OK) {
        psi_plan_free(p);
        return rc;
    }
    *out = p;
    return PSI_OK;
}

int psi_plan_begin(psi_plan **out, const psi_engine *e, const psi_op_args *args)
{
    plan_caps none = {0, 0};
    return psi_plan_begin_checked(out, e, args, &none);
}

void psi_plan_free(psi_plan *p)
{
    if (p == NULL)
        return;
    psi_setup_free(p->setup);
    psi_free_wipe(p->owned, p->n * PSI_ELEMENT_BYTES);
    psi_free_wipe(p->out, p->n * PSI_ELEMENT_BYTES);
    psi_free(p->perm);
    psi_free(p->slices);
    psi_free(p);
}

size_t psi_plan_slices(const psi_plan *p)
{
    return p == NULL ? 0 : p->n_slices;
}

int psi_plan_step(const psi_plan *p, psi_step *s, size_t k)
{
    PSI_CHECK_ARG(s != NULL);
    memset(s, 0, sizeof *s);
    PSI_CHECK_ARG(p != NULL && k < p->n_slices);
    const plan_slice *sl = &p->slices[k];
    s->kind = p->kind;
    s->offset = sl->offset;
    s->count = sl->count;
    // NULL stays NULL: no offset is added to a null pointer.
    if (p->values != NULL)
        s->values = p->values + sl->offset;
    if (p->points != NULL)
        s->points = p->points + sl->offset * PSI_ELEMENT_BYTES;
    return PSI_OK;
}

int psi_plan_run(psi_plan *p, const psi_engine *e, size_t k)
{
    PSI_CHECK_ARG(p != NULL && e != NULL && k < p->n_slices && !p->external);
    psi_step s;
    psi_plan_step(p, &s, k);
    psi_error_detail d;
    plan_slice *sl = &p->slices[k];
    sl->rc = psi_step_run(e, p->out + sl->offset * PSI_ELEMENT_BYTES,
                          p->perm != NULL ? p->perm + sl->offset : NULL, &d, &s);
    sl->index = sl->rc != PSI_OK && d.code == sl->rc ? d.index : -1;
    sl->done = 1;
    return sl->rc;
}

int psi_plan_put(psi_plan *p, size_t k, int code, int64_t index, const uint8_t *out,
                 const size_t *perm)
{
    PSI_CHECK_ARG(p != NULL && k < p->n_slices && code <= 0);
    // An external plan's outputs come from its source: only failures are put.
    PSI_CHECK_ARG(!p->external || code != PSI_OK);
    plan_slice *sl = &p->slices[k];
    if (code == PSI_OK) {
        PSI_CHECK_ARG(out != NULL || sl->count == 0);
        PSI_CHECK_ARG(perm != NULL || sl->count == 0 || p->perm == NULL);
        // A slice's indices are its own inputs': anything else is a broken executor.
        for (size_t i = 0; p->perm != NULL && i < sl->count; i++)
            PSI_CHECK_ARG(perm[i] >= sl->offset && perm[i] - sl->offset < sl->count);
        if (sl->count > 0)
            memcpy(p->out + sl->offset * PSI_ELEMENT_BYTES, out,
                   sl->count * PSI_ELEMENT_BYTES);
        if (p->perm != NULL && sl->count > 0)
            memcpy(p->perm + sl->offset, perm, sl->count * sizeof *perm);
    }
    PSI_CHECK_ARG(code == PSI_OK || index < 0 || (uint64_t)index < p->n);
    sl->rc = code;
    sl->index = code != PSI_OK ? index : -1;
    sl->done = 1;
    return PSI_OK;
}

int psi_plan_perm_sink(psi_plan *p, psi_perm_sink_fn fn, void *arg)
{
    PSI_CHECK_ARG(p != NULL && fn != NULL && p->op == PSI_OP_SETUP);
    p->perm_sink = fn;
    p->perm_sink_arg = arg;
    return PSI_OK;
}

int psi_plan_match_sink(psi_plan *p, psi_perm_sink_fn fn, void *arg)
{
    PSI_CHECK_ARG(p != NULL && fn != NULL && p->op == PSI_OP_INTERSECTION);
    p->match_sink = fn;
    p->match_sink_arg = arg;
    return PSI_OK;
}

int psi_plan_pair_sink(psi_plan *p, psi_pair_sink_fn fn, void *arg)
{
    PSI_CHECK_ARG(p != NULL && fn != NULL && p->op == PSI_OP_ASSOCIATION);
    p->pair_sink = fn;
    p->pair_sink_arg = arg;
    return PSI_OK;
}

int psi_plan_source(psi_plan *p, psi_plan_source_fn fn, void *arg)
{
    PSI_CHECK_ARG(p != NULL && fn != NULL && p->external);
    p->source = fn;
    p->source_arg = arg;
    return PSI_OK;
}
