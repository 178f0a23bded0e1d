/* Each rank's part of the library's plan of an operation (PROTOCOL.md §18.3,
 * §19); see mpi_run.h.  Every rank begins the same external plan, one slice
 * a rank, and runs its own slice's step on its own inputs; rank 0 runs the
 * plan's finish, whose merge pulls each rank's outputs chunk by chunk
 * through the source below.  The plan chooses the steps, merges and
 * encodes: this file only moves chunks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"
#include "mpi_run.h"

/* Whether a step kind gives its elements' input indices (psi.h: the _SORT
 * steps), which then travel with the elements. */
static int plan_indexed(psi_step_kind kind)
{
    return kind == PSI_STEP_MASK_SORT || kind == PSI_STEP_REMASK_SORT ||
           kind == PSI_STEP_UNMASK_SORT;
}

int psi_mpi_plan_begin(psi_mpi_run *r, psi_mpi_plan *mp, psi_role role, int reveal,
                       psi_op_args *a, const uint64_t *counts, const char *what,
                       const char *file)
{
    psi_settings st;
    size_t *cut = psi_app_alloc((size_t)r->size, sizeof *cut);
    int prc = PSI_E_NOMEM;

    memset(mp, 0, sizeof *mp);
    psi_settings_default(&st);
    st.role = role;
    st.reveal_intersection = reveal;
    st.suite = (psi_suite)r->s.o.suite;
    for (int k = 0; cut != NULL && k < r->size; k++)
        cut[k] = (size_t)counts[k];
    a->external = 1;
    a->slices = (size_t)r->size;
    a->slice_counts = cut;
    if (cut != NULL && (prc = psi_engine_clone(&mp->e, r->s.key, &st)) == PSI_OK &&
        (prc = psi_plan_begin(&mp->p, mp->e, a)) == PSI_OK)
        prc = psi_plan_step(mp->p, &mp->st, (size_t)r->rank);
    free(cut);
    a->slice_counts = NULL;
    if (prc != PSI_OK)
        psi_app_offline_fail_psi(&r->s, what, file, prc);
    return psi_mpi_agree(r, prc != PSI_OK ? PSI_APP_EXIT_FAIL : 0);
}

int psi_mpi_plan_run(psi_mpi_run *r, psi_mpi_plan *mp, const char *step,
                     const psi_value *values, const uint8_t *points, const char *what,
                     const char *file)
{
    size_t n = mp->st.count;
    psi_op_args a = {.op = PSI_OP_STEP, .step = mp->st.kind, .values = values, .n_values = n,
                     .message = points, .message_len = points != NULL ? n * PSI_ELEMENT_BYTES : 0};
    psi_op_output o = {.len = n * PSI_ELEMENT_BYTES};
    int prc = PSI_E_NOMEM;

    o.bytes = mp->out = psi_app_alloc(n, PSI_ELEMENT_BYTES);
    if (plan_indexed(mp->st.kind))
        o.perm = mp->idx = psi_app_alloc(n, sizeof *mp->idx);
    if (mp->out != NULL && (mp->idx != NULL || !plan_indexed(mp->st.kind))) {
        psi_app_progress_begin(&r->s.prog, step, n);
        prc = psi_shards_run_op(r->s.g, &a, &o);
        psi_app_progress_end(&r->s.prog);
    }
    // The step's indices are this rank's own; the plan counts in the whole input.
    for (size_t i = 0; prc == PSI_OK && mp->idx != NULL && i < n; i++)
        mp->idx[i] += mp->st.offset;
    if (prc != PSI_OK)
        psi_app_offline_fail_psi(&r->s, what, file, prc);
    return psi_mpi_agree(r, prc != PSI_OK ? PSI_APP_EXIT_FAIL : 0);
}

/* Rank 0's view of the other ranks' outputs: what each has still to send,
 * and one chunk's buffer each.  A chunk is [c indices][c elements] for an
 * indexed step (the indices first, so that they are aligned), else the c
 * elements. */
typedef struct plan_src {
    psi_mpi_run *r;
    psi_mpi_plan *mp;
    size_t each;      // bytes per element in a chunk
    size_t *left;     // elements rank k has still to send (rank 0: to hand over)
    uint8_t **buf;    // rank k's chunk
} plan_src;

/* Receives rank k's next chunk into its buffer.  Returns: its elements. */
static size_t plan_recv(plan_src *s, size_t k)
{
    size_t c = s->left[k] < s->r->chunk ? s->left[k] : s->r->chunk;

    MPI_Recv(s->buf[k], (int)(c * s->each), MPI_BYTE, (int)k, PSI_MPI_TAG_CHUNK,
             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    s->left[k] -= c;
    return c;
}

/* The plan's source (psi_plan_source): rank 0's own outputs in one piece,
 * another rank's next chunk when the plan's merge reaches it. */
static int plan_source(void *arg, size_t k, const uint8_t **elements, const size_t **index,
                       size_t *count)
{
    plan_src *s = arg;
    int indexed = plan_indexed(s->mp->st.kind);

    if (k >= (size_t)s->r->size || s->left[k] == 0)
        return PSI_E_INVALID_ARG;
    if (k == 0) {
        *elements = s->mp->out;
        *index = s->mp->idx;
        *count = s->left[0];
        s->left[0] = 0;
        return PSI_OK;
    }
    *count = plan_recv(s, k);
    *index = indexed ? (const size_t *)(void *)s->buf[k] : NULL;
    *elements = s->buf[k] + (indexed ? *count * sizeof(size_t) : 0);
    return PSI_OK;
}

/* A rank's side: its outputs to rank 0 in chunks, in order. */
static void plan_send(psi_mpi_run *r, const psi_mpi_plan *mp)
{
    size_t n = mp->st.count, skip = plan_indexed(mp->st.kind) ? sizeof(size_t) : 0;
    uint8_t *buf = n > 0 ? malloc(r->chunk * (PSI_ELEMENT_BYTES + skip)) : NULL;

    if (n > 0 && buf == NULL) // a few MiB: give up the whole job
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    for (size_t i = 0; i < n; i += r->chunk) {
        size_t c = n - i < r->chunk ? n - i : r->chunk;
        if (skip > 0)
            memcpy(buf, mp->idx + i, c * skip);
        memcpy(buf + c * skip, mp->out + i * PSI_ELEMENT_BYTES, c * PSI_ELEMENT_BYTES);
        MPI_Send(buf, (int)(c * (PSI_ELEMENT_BYTES + skip)), MPI_BYTE, 0, PSI_MPI_TAG_CHUNK,
                 MPI_COMM_WORLD);
    }
    free(buf);
}

int psi_mpi_plan_finish(psi_mpi_run *r, psi_mpi_plan *mp, psi_op_output *o)
{
    plan_src s = {r, mp, PSI_ELEMENT_BYTES + (plan_indexed(mp->st.kind) ? sizeof(size_t) : 0),
                  NULL, NULL};
    psi_step st;
    int prc;

    if (r->rank != 0) {
        plan_send(r, mp);
        return PSI_OK;
    }
    s.left = calloc((size_t)r->size, sizeof *s.left);
    s.buf = calloc((size_t)r->size, sizeof *s.buf);
    if (s.left == NULL || s.buf == NULL)
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    // One chunk a rank: at most about 64 MiB in all (§18.3).
    for (int k = 0; k < r->size; k++) {
        psi_plan_step(mp->p, &st, (size_t)k);
        s.left[k] = st.count;
        if (k > 0 && st.count > 0 && (s.buf[k] = malloc(r->chunk * s.each)) == NULL)
            MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    }
    prc = psi_plan_source(mp->p, plan_source, &s);
    if (prc == PSI_OK)
        prc = psi_plan_finish(mp->p, o);
    // A finish that stopped early (a write failed) still takes every chunk,
    // so that no sender waits forever.
    for (int k = 1; k < r->size; k++)
        while (s.left[k] > 0)
            plan_recv(&s, (size_t)k);
    for (int k = 0; k < r->size; k++)
        free(s.buf[k]);
    free(s.buf);
    free(s.left);
    return prc;
}

void psi_mpi_plan_free(psi_mpi_plan *mp)
{
    psi_plan_free(mp->p);
    psi_engine_free(mp->e);
    free(mp->out);
    free(mp->idx);
    memset(mp, 0, sizeof *mp);
}
