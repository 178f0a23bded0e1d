/* The pure steps of the sharding layer (PROTOCOL.md §14): the plan that
 * cuts the input, one shard's run, and the merge of a raw setup's sorted
 * slices.  No threads here: any executor (the native pool, browser
 * workers, separate processes) composes these. */
#include <string.h>

#include "shard_util.h"

int psi_shard_plan(size_t *offset, size_t *count, size_t n, size_t shards, size_t k)
{
    SHARD_CHECK_ARG(offset != NULL && count != NULL);
    *offset = 0;
    *count = 0;
    SHARD_CHECK_ARG(shards > 0 && k < shards);
    /* The first n mod shards slices take one extra input.  k * q < n, so
     * nothing overflows. */
    size_t q = n / shards, r = n % shards;
    *offset = k * q + (k < r ? k : r);
    *count = q + (k < r ? 1 : 0);
    return PSI_OK;
}

static int slice_valid(const psi_shard_slice *in, const uint8_t *out, const size_t *perm)
{
    if (in->count > SIZE_MAX / PSI_ELEMENT_BYTES || in->offset > SIZE_MAX - in->count)
        return 0;
    if (out == NULL && in->count != 0)
        return 0;
    switch (in->step) {
    case PSI_SHARD_MASK_SORT:
    case PSI_SHARD_REMASK_SORT:
    case PSI_SHARD_UNMASK_SORT:
        if (perm == NULL && in->count != 0)
            return 0;
        break;
    case PSI_SHARD_MASK:
    case PSI_SHARD_REMASK:
    case PSI_SHARD_UNMASK:
        break;
    default:
        return 0;
    }
    if (in->step == PSI_SHARD_MASK || in->step == PSI_SHARD_MASK_SORT)
        return in->values != NULL || in->count == 0;
    return in->points != NULL || in->count == 0;
}

static int step_sorts(psi_shard_step step)
{
    return step == PSI_SHARD_MASK_SORT || step == PSI_SHARD_REMASK_SORT ||
           step == PSI_SHARD_UNMASK_SORT;
}

int psi_shard_run_one(const psi_engine *e, uint8_t *out, size_t *perm,
                      const psi_shard_slice *in)
{
    SHARD_CHECK_ARG(e != NULL && in != NULL && slice_valid(in, out, perm));
    size_t len = in->count * PSI_ELEMENT_BYTES;
    int rc;
    switch (in->step) {
    case PSI_SHARD_MASK:
    case PSI_SHARD_MASK_SORT:
        rc = psi_engine_mask(e, out, &len, in->values, in->count);
        break;
    case PSI_SHARD_REMASK:
    case PSI_SHARD_REMASK_SORT:
        rc = psi_engine_remask(e, out, &len, in->points, in->count);
        break;
    default: /* PSI_SHARD_UNMASK(_SORT), checked by slice_valid */
        rc = psi_engine_unmask(e, out, &len, in->points, in->count);
        break;
    }
    if (rc == PSI_OK && step_sorts(in->step)) {
        rc = psi_elements_sort(out, perm, in->count);
        for (size_t i = 0; rc == PSI_OK && i < in->count; i++)
            perm[i] += in->offset;
    }
    if (rc != PSI_OK && in->count != 0)
        memset(out, 0, in->count * PSI_ELEMENT_BYTES); /* no partial result */
    psi_error_detail d;
    psi_error_detail_get(&d);
    if (rc != PSI_OK && d.code == rc && d.index >= 0) {
        d.index += (int64_t)in->offset; /* an index into the whole input */
        psi_error_detail_set(&d);
    }
    return rc;
}

/* ------------------------------------------------------ k-way merge §14.2 */

/* The head of one sorted slice. */
typedef struct run {
    const uint8_t *element; /* current head */
    const size_t *index;    /* its input index */
    size_t left;            /* elements left, head included; > 0 in the heap */
} run;

/* (bytes, input index): the order of one stable sort of the whole input. */
static int run_less(const run *a, const run *b)
{
    int c = memcmp(a->element, b->element, PSI_ELEMENT_BYTES);
    return c != 0 ? c < 0 : *a->index < *b->index;
}

static void heap_down(run *heap, size_t size, size_t i)
{
    for (;;) {
        size_t least = i, l = 2 * i + 1, r = l + 1;
        if (l < size && run_less(&heap[l], &heap[least]))
            least = l;
        if (r < size && run_less(&heap[r], &heap[least]))
            least = r;
        if (least == i)
            return;
        run t = heap[i];
        heap[i] = heap[least];
        heap[least] = t;
        i = least;
    }
}

/* Moves the heap's least head to the output; PSI_E_SETUP_UNSORTED if its
 * slice then goes down. */
static int heap_pop(run *heap, size_t *size, uint8_t *out, size_t *out_perm)
{
    run *top = &heap[0];
    memcpy(out, top->element, PSI_ELEMENT_BYTES);
    *out_perm = *top->index;
    if (--top->left == 0) {
        heap[0] = heap[--*size];
    } else {
        run prev = *top;
        top->element += PSI_ELEMENT_BYTES;
        top->index++;
        if (run_less(top, &prev))
            return PSI_E_SETUP_UNSORTED;
    }
    heap_down(heap, *size, 0);
    return PSI_OK;
}

int psi_shard_merge_sorted(uint8_t *out, size_t *out_perm, const uint8_t *elements,
                           const size_t *perm, size_t n, size_t shards)
{
    return psi_shard_merge_ticked(out, out_perm, elements, perm, n, shards, NULL, NULL);
}

int psi_shard_merge_ticked(uint8_t *out, size_t *out_perm, const uint8_t *elements,
                           const size_t *perm, size_t n, size_t shards,
                           void (*tick)(void *arg), void *tick_arg)
{
    SHARD_CHECK_ARG(shards > 0 && shards <= PSI_SHARD_MAX_SHARDS);
    SHARD_CHECK_ARG(n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    SHARD_CHECK_ARG(n == 0 || (out != NULL && out_perm != NULL && elements != NULL &&
                               perm != NULL));
    if (n == 0)
        return PSI_OK;
    run *heap = psi_shard_calloc(shards, sizeof *heap);
    if (heap == NULL)
        return PSI_E_NOMEM;
    size_t size = 0, off, count;
    for (size_t k = 0; k < shards; k++) {
        psi_shard_plan(&off, &count, n, shards, k);
        if (count > 0)
            heap[size++] = (run){elements + off * PSI_ELEMENT_BYTES, perm + off, count};
    }
    for (size_t i = size / 2; i-- > 0;)
        heap_down(heap, size, i);
    int rc = PSI_OK;
    for (size_t j = 0; j < n && rc == PSI_OK; j++) {
        if (tick != NULL && j % PSI_SHARD_TICK == PSI_SHARD_TICK - 1)
            tick(tick_arg);
        rc = heap_pop(heap, &size, out + j * PSI_ELEMENT_BYTES, out_perm + j);
    }
    psi_shard_free(heap);
    if (rc != PSI_OK) {
        memset(out, 0, n * PSI_ELEMENT_BYTES);
        memset(out_perm, 0, n * sizeof *out_perm);
    }
    return rc;
}
