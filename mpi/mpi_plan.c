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

/* A failed begin's message: for a GCS or Bloom setup refused before it
 * was read (a->setup_max_held), the budget it needs, as shardpsi match
 * gives it. */
static void plan_begin_fail(psi_mpi_run *r, const psi_op_args *a, int prc, const char *what,
                            const char *file)
{
    psi_error_detail d;
    const char *held;

    psi_error_detail_get(&d);
    if ((held = psi_app_setup_held_refused(prc, &d)) != NULL)
        psi_app_offline_fail(&r->s, "setup %s (%llu bytes) does not fit --memory %llu: each "
                             "rank holds a %s setup whole, in at most a quarter of its "
                             "budget: raise --memory to at least %llu (PROTOCOL.md §20)",
                             r->s.o.setup, (unsigned long long)a->setup_len,
                             (unsigned long long)r->b.bytes, held,
                             (unsigned long long)a->setup_len * 4);
    else
        psi_app_offline_fail_psi(&r->s, what, file, prc);
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
        plan_begin_fail(r, a, prc, what, file);
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

int psi_mpi_plan_chunk(psi_mpi_run *r, psi_mpi_plan *mp, const psi_value *values,
                       const uint8_t *points, size_t n, uint64_t base, const char *what,
                       const char *file)
{
    int indexed = plan_indexed(mp->st.kind), prc;
    psi_op_args a = {.op = PSI_OP_STEP, .step = mp->st.kind, .values = values, .n_values = n,
                     .message = points, .message_len = points != NULL ? n * PSI_ELEMENT_BYTES : 0};
    psi_op_output o = {.len = n * PSI_ELEMENT_BYTES};

    if (!mp->spilled) {
        // The first chunk: the runs' file (created by the first put) and
        // the chunk's buffers.
        psi_app_spill_init(&mp->sp, r->temp_dir);
        mp->spilled = 1;
        mp->chunk_out = psi_app_alloc(r->b.chunk_values, PSI_ELEMENT_BYTES);
        mp->chunk_idx = psi_app_alloc(r->b.chunk_values, sizeof *mp->chunk_idx);
        if (mp->chunk_out == NULL || mp->chunk_idx == NULL) {
            psi_app_offline_fail(&r->s, "out of memory for a chunk of %zu values",
                                 r->b.chunk_values);
            return PSI_APP_EXIT_FAIL;
        }
    }
    if (n == 0)
        return 0;
    if (n > r->b.chunk_values) {
        psi_app_offline_fail(&r->s, "a chunk of %zu values, more than the budget's %zu", n,
                             r->b.chunk_values);
        return PSI_APP_EXIT_FAIL;
    }
    o.bytes = mp->chunk_out;
    o.perm = indexed ? mp->chunk_idx : NULL;
    r->s.prog.base = base;
    prc = psi_shards_run_op(r->s.g, &a, &o);
    if (prc != PSI_OK) {
        // Counted in the slice, as the step on the whole slice counts.
        psi_error_detail d = psi_app_detail_in_whole(prc, base);
        psi_error_detail_set(&d);
        psi_app_offline_fail_psi(&r->s, what, file, prc);
        return PSI_APP_EXIT_FAIL;
    }
    // Its indices are counted in the whole input, as the plan counts them.
    if (psi_app_spill_put(&mp->sp, mp->chunk_out, indexed ? mp->chunk_idx : NULL,
                          mp->st.offset + (size_t)base, n) != 0) {
        psi_app_offline_fail(&r->s, "%s", mp->sp.err);
        return PSI_APP_EXIT_FAIL;
    }
    return 0;
}

/* Prepares reading a spilled slice back: one slice of the plan, its runs
 * merged in the plan's order as they are read (app_spill.h), with the
 * budget's share for reading.  Returns: 0, or -1 with a message. */
static int plan_spill_begin(psi_mpi_run *r, psi_mpi_plan *mp)
{
    free(mp->chunk_out);
    free(mp->chunk_idx);
    mp->chunk_out = NULL;
    mp->chunk_idx = NULL;
    if (psi_app_spill_read_begin(&mp->sp, r->b.read_bytes, 1, plan_indexed(mp->st.kind)) != 0) {
        psi_app_offline_fail(&r->s, "%s", mp->sp.err);
        return -1;
    }
    return 0;
}

/* Gives up the job after a rank could not read its runs back: the other
 * ranks wait in the merge for chunks it cannot send. */
static void plan_spill_abort(psi_mpi_run *r, psi_mpi_plan *mp)
{
    fprintf(stderr, "%s: error: rank %d: %s\n", r->label, r->rank,
            mp->sp.err[0] ? mp->sp.err : r->s.err);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
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
    uint64_t done;    // elements handed to the merge, for progress
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
    if (k == 0 && s->mp->spilled) {
        // Rank 0's own runs, merged as they are read.
        int prc = psi_app_spill_source(&s->mp->sp, 0, elements, index, count);
        if (prc != PSI_OK)
            return prc;
        if (!indexed)
            *index = NULL;
        s->left[0] -= *count;
        s->done += *count;
        psi_app_progress_update(&s->r->s.prog, s->done, s->r->total);
        return PSI_OK;
    }
    if (k == 0) {
        *elements = s->mp->out;
        *index = s->mp->idx;
        *count = s->left[0];
        s->left[0] = 0;
        return PSI_OK;
    }
    *count = plan_recv(s, k);
    s->done += *count;
    psi_app_progress_update(&s->r->s.prog, s->done, s->r->total);
    *index = indexed ? (const size_t *)(void *)s->buf[k] : NULL;
    *elements = s->buf[k] + (indexed ? *count * sizeof(size_t) : 0);
    return PSI_OK;
}

/* A rank's side: its outputs to rank 0 in chunks of r->chunk, in order
 * (from its runs when they are spilled), with their indices, which are
 * counted in the whole input. */
static void plan_send(psi_mpi_run *r, psi_mpi_plan *mp)
{
    size_t n = mp->st.count, skip = plan_indexed(mp->st.kind) ? sizeof(size_t) : 0;
    uint8_t *buf = n > 0 ? malloc(r->chunk * (PSI_ELEMENT_BYTES + skip)) : NULL;
    const uint8_t *pe = NULL;
    const size_t *pi = NULL;
    size_t have = 0; // of the runs' current piece, from pe and pi

    if (n > 0 && buf == NULL) // a few MiB at most: give up the whole job
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    if (n > 0 && mp->spilled && plan_spill_begin(r, mp) != 0)
        plan_spill_abort(r, mp);
    for (size_t i = 0; i < n;) {
        size_t c = n - i < r->chunk ? n - i : r->chunk;
        size_t *ib = (size_t *)(void *)buf;
        uint8_t *eb = buf + c * skip;
        for (size_t j = 0; j < c;) {
            size_t t;
            if (!mp->spilled) {
                pe = mp->out + (i + j) * PSI_ELEMENT_BYTES;
                pi = mp->idx != NULL ? mp->idx + i + j : NULL;
                have = c - j;
            } else if (have == 0 &&
                       psi_app_spill_source(&mp->sp, 0, &pe, &pi, &have) != PSI_OK) {
                plan_spill_abort(r, mp);
            }
            t = have < c - j ? have : c - j;
            memcpy(eb + j * PSI_ELEMENT_BYTES, pe, t * PSI_ELEMENT_BYTES);
            for (size_t q = 0; skip > 0 && q < t; q++)
                ib[j + q] = pi[q];
            pe += t * PSI_ELEMENT_BYTES;
            if (pi != NULL)
                pi += t;
            have -= t;
            j += t;
        }
        MPI_Send(buf, (int)(c * (PSI_ELEMENT_BYTES + skip)), MPI_BYTE, 0, PSI_MPI_TAG_CHUNK,
                 MPI_COMM_WORLD);
        i += c;
    }
    free(buf);
}

int psi_mpi_plan_finish(psi_mpi_run *r, psi_mpi_plan *mp, psi_op_output *o)
{
    plan_src s = {r, mp, PSI_ELEMENT_BYTES + (plan_indexed(mp->st.kind) ? sizeof(size_t) : 0),
                  NULL, NULL, 0};
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
    // Rank 0's own runs failing to be read back is PSI_E_IO with mp->sp.err.
    prc = mp->spilled && mp->st.count > 0 && plan_spill_begin(r, mp) != 0 ? PSI_E_IO : PSI_OK;
    if (prc == PSI_OK)
        prc = psi_plan_source(mp->p, plan_source, &s);
    psi_app_progress_begin(&r->s.prog, "merging the ranks' parts", r->total);
    if (prc == PSI_OK)
        prc = psi_plan_finish(mp->p, o);
    psi_app_progress_end(&r->s.prog);
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

void psi_mpi_plan_spilled(psi_mpi_run *r, const psi_mpi_plan *mp, char *note, size_t len)
{
    uint64_t mine[2] = {(uint64_t)(mp->spilled != 0), mp->spilled ? mp->sp.n_runs : 0};
    uint64_t all[2] = {0, 0};

    MPI_Reduce(mine, all, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    note[0] = '\0';
    if (all[0] > 0)
        snprintf(note, len, "; %llu of %d ranks past their budget, through %llu runs on disk",
                 (unsigned long long)all[0], r->size, (unsigned long long)all[1]);
}

void psi_mpi_plan_free(psi_mpi_plan *mp)
{
    psi_plan_free(mp->p);
    psi_engine_free(mp->e);
    free(mp->out);
    free(mp->idx);
    if (mp->spilled)
        psi_app_spill_close(&mp->sp);
    free(mp->chunk_out);
    free(mp->chunk_idx);
    memset(mp, 0, sizeof *mp);
}
