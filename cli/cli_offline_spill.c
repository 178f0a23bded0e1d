/*
 * The offline steps on sets larger than their memory budget (PROTOCOL.md
 * §20): each chunk of the input runs as one step of the library (masked,
 * re-masked, and sorted where the operation sorts) on the shards, its
 * output is spilled as a run, and the library's finish of an external plan
 * over the runs merges and encodes them into the output file, exactly as
 * it does for slices held in memory.  Nothing here orders, merges or
 * encodes: it moves chunks between the input, the disk and the plan.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_offline_spill.h"
#include "app_util.h"

/* The chunk buffers and the runs of one spilled step. */
typedef struct spill {
    psi_app_offline *s;
    psi_app_budget b;
    psi_app_spill sp;
    psi_engine *plan_engine;  // the party's role and reveal flag, for the plan
    uint8_t *elems;           // chunk_values elements
    size_t *perm;             // chunk_values indices
    char dir[4096];
} spill;

/* --temp-dir, else $TMPDIR, else the output's directory. */
static void spill_dir(spill *x)
{
    const char *d = x->s->o.temp_dir, *env = getenv("TMPDIR"), *out = x->s->o.output;
    if (d == NULL && env != NULL && env[0] != '\0')
        d = env;
    if (d != NULL) {
        snprintf(x->dir, sizeof x->dir, "%s", d);
        return;
    }
    const char *slash = out != NULL ? strrchr(out, '/') : NULL;
    if (slash == NULL || strcmp(out, "-") == 0)
        snprintf(x->dir, sizeof x->dir, ".");
    else if (slash == out)
        snprintf(x->dir, sizeof x->dir, "/");
    else
        snprintf(x->dir, sizeof x->dir, "%.*s", (int)(slash - out), out);
}

int psi_cli_spill_init(spill **out, psi_app_offline *s, psi_role role, int reveal)
{
    psi_settings st;
    spill *x = calloc(1, sizeof *x);
    *out = x;
    if (x == NULL)
        return psi_app_offline_fail(s, "out of memory");
    x->s = s;
    psi_app_budget_init(&x->b, s->o.memory != 0 ? s->o.memory : psi_app_memory_default());
    spill_dir(x);
    psi_app_spill_init(&x->sp, x->dir);
    psi_settings_default(&st);
    st.role = role;
    st.reveal_intersection = reveal;
    st.suite = (psi_suite)s->o.suite;
    int prc = psi_engine_clone(&x->plan_engine, s->key, &st);
    if (prc != PSI_OK)
        return psi_app_offline_fail_psi(s, "cannot use the key", NULL, prc);
    return 0;
}

const psi_app_budget *psi_cli_spill_budget(const spill *x)
{
    return &x->b;
}

uint64_t psi_cli_spill_values(const spill *x)
{
    return x->sp.n_values;
}

size_t psi_cli_spill_runs(const spill *x)
{
    return x->sp.n_runs;
}

void psi_cli_spill_free(spill *x)
{
    if (x == NULL)
        return;
    psi_app_spill_close(&x->sp);
    psi_engine_free(x->plan_engine);
    free(x->elems);
    free(x->perm);
    free(x);
}

int psi_cli_spill_step(spill *x, psi_step_kind kind, const psi_value *values,
                       const uint8_t *points, size_t n, uint64_t base, psi_cli_spill_fault *f)
{
    int sorts = kind == PSI_STEP_MASK_SORT || kind == PSI_STEP_REMASK_SORT ||
                kind == PSI_STEP_UNMASK_SORT;
    psi_op_args a;
    psi_op_output o;

    if (x->elems == NULL) {
        // The chunk buffers, once a chunk is to be spilled.
        x->elems = psi_app_alloc(x->b.chunk_values, PSI_ELEMENT_BYTES);
        x->perm = psi_app_alloc(x->b.chunk_values, sizeof *x->perm);
        if (x->elems == NULL || x->perm == NULL)
            return psi_app_offline_fail(x->s, "out of memory for a chunk of %zu values",
                                        x->b.chunk_values);
    }
    memset(&a, 0, sizeof a);
    memset(&o, 0, sizeof o);
    a.op = PSI_OP_STEP;
    a.step = kind;
    a.values = values;
    a.message = points;
    a.message_len = points != NULL ? n * PSI_ELEMENT_BYTES : 0;
    a.n_values = n;
    o.bytes = x->elems;
    o.len = n * PSI_ELEMENT_BYTES;
    o.perm = sorts ? x->perm : NULL;
    x->s->prog.base = base;
    int prc = psi_shards_run_op(x->s->g, &a, &o);
    if (prc != PSI_OK) {
        // The place in the whole input, as the whole call names it.
        psi_error_detail d;
        psi_error_detail_get(&d);
        if (d.code == prc && d.index >= 0)
            d.index += (int64_t)base;
        if (d.code == prc && f->field != NULL)
            d.field = f->field;
        f->rc = prc;
        f->detail = d;
        return -1;
    }
    if (psi_app_spill_put(&x->sp, x->elems, sorts ? x->perm : NULL, base, n) != 0)
        return psi_app_offline_fail(x->s, "%s", x->sp.err);
    return 0;
}

void psi_cli_spill_report(psi_app_offline *s, const psi_cli_spill_fault *f, const char *what,
                          const char *file)
{
    psi_error_detail_set(&f->detail);
    psi_app_offline_fail_psi(s, what, file, f->rc);
}

/* The permutation's pieces, one 0-based input index a line. */
static int spill_perm_sink(void *arg, const size_t *index, size_t n)
{
    FILE *f = arg;
    for (size_t i = 0; i < n; i++)
        if (fprintf(f, "%zu\n", index[i]) < 0)
            return 1;
    return 0;
}

static void spill_on_read(void *arg, uint64_t done)
{
    psi_app_progress *p = arg;
    psi_app_progress_update(p, done, p->total);
}

int psi_cli_spill_finish(spill *x, psi_op_args *a, FILE *perm_out, size_t *len,
                         const char *what, const char *file)
{
    psi_app_offline *s = x->s;
    psi_plan *plan = NULL;
    size_t *counts = NULL;
    psi_op_output o;
    char step[96];
    int rc = -1, prc;

    *len = 0;
    // The chunks are done: their buffers go back before the runs' come.
    free(x->elems);
    free(x->perm);
    x->elems = NULL;
    x->perm = NULL;
    if (x->sp.n_runs > PSI_PLAN_MAX_SLICES)
        return psi_app_offline_fail(s, "%" PRIu64 " values made %zu sorted runs at --memory "
                                    "%" PRIu64 ", more than the %d one merge takes: raise "
                                    "--memory to at least %" PRIu64, x->sp.n_values,
                                    x->sp.n_runs, x->b.bytes, PSI_PLAN_MAX_SLICES,
                                    x->b.bytes / PSI_PLAN_MAX_SLICES * x->sp.n_runs + 1);
    if ((counts = psi_app_spill_counts(&x->sp)) == NULL ||
        psi_app_spill_read_begin(&x->sp, x->b.bytes / 2) != 0) {
        free(counts);
        return psi_app_offline_fail(s, "%s", x->sp.err[0] ? x->sp.err : "out of memory");
    }
    a->external = 1;
    a->n_values = (size_t)x->sp.n_values;
    a->slices = x->sp.n_runs;
    a->slice_counts = counts;
    prc = psi_plan_begin(&plan, x->plan_engine, a);
    if (prc == PSI_OK)
        prc = psi_plan_source(plan, psi_app_spill_source, &x->sp);
    if (prc == PSI_OK && perm_out != NULL)
        prc = psi_plan_perm_sink(plan, spill_perm_sink, perm_out);
    if (prc != PSI_OK) {
        psi_app_offline_fail_psi(s, what, file, prc);
        goto done;
    }
    snprintf(step, sizeof step, "merging %zu runs", x->sp.n_runs);
    psi_app_progress_begin(&s->prog, step, x->sp.n_values);
    x->sp.on_read = spill_on_read;
    x->sp.on_read_arg = &s->prog;
    memset(&o, 0, sizeof o);
    o.sink = psi_app_output_sink;
    o.sink_arg = s->out.f;
    prc = psi_plan_finish(plan, &o);
    psi_app_progress_end(&s->prog);
    if (prc == PSI_E_IO && x->sp.err[0] != '\0')
        psi_app_offline_fail(s, "%s", x->sp.err);
    else if (prc == PSI_E_IO)
        psi_app_offline_fail(s, "%s: cannot write", s->o.output);
    else if (prc != PSI_OK)
        psi_app_offline_fail_psi(s, what, file, prc);
    else
        rc = 0;
    *len = o.len;
done:
    psi_plan_free(plan);
    free(counts);
    return rc;
}
