/*
 * The offline steps on sets larger than their memory budget (PROTOCOL.md
 * §20): each chunk of the input runs as one step of the library (masked,
 * re-masked, and sorted where the operation sorts) on the shards, its
 * output is spilled as a run, and the library's finish of an external plan
 * over the runs merges and encodes them into the output file, exactly as
 * it does for slices held in memory.  Nothing here orders, merges or
 * encodes: it moves chunks between the input, the disk and the plan.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_offline_spill.h"
#include "app_perm.h"
#include "app_util.h"

/* The chunk buffers and the runs of one spilled step. */
typedef struct spill {
    psi_app_offline *s;
    psi_app_budget b;
    psi_app_spill sp;
    psi_engine *plan_engine;  // the party's role and reveal flag, for the plan
    uint8_t *elems;           // chunk_values elements
    size_t *perm;             // chunk_values indices
    int sorted;               // the runs are of a _SORT step
    char dir[4096];
} spill;

/* --temp-dir, else $TMPDIR, else the output's directory. */
static void spill_dir(spill *x)
{
    char out_dir[1024];

    psi_app_output_dir(out_dir, sizeof out_dir, x->s->o.output);
    snprintf(x->dir, sizeof x->dir, "%s", psi_app_temp_dir(x->s->o.temp_dir, out_dir));
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

const char *psi_cli_spill_dir(const spill *x)
{
    return x->dir;
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

    x->sorted = sorts;
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
        psi_error_detail d = psi_app_detail_in_whole(prc, base);
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

/* Runs the chunk's step unless an earlier one failed.  Returns: 0, or -1
 * for the disk (reported). */
static int spill_chunk(spill *x, psi_step_kind step, const uint8_t *pts, size_t n,
                       uint64_t base, psi_cli_spill_fault *f)
{
    if (n == 0 || f->rc != PSI_OK)
        return 0; // after a failed step, read on: a malformed message is named first
    if (psi_cli_spill_step(x, step, NULL, pts, n, base, f) != 0 && f->rc == PSI_OK)
        return -1;
    return 0;
}

int psi_cli_spill_message(spill *x, const char *path, const char *name,
                          psi_message_kind kind, psi_step_kind step, int want_reveal,
                          const char *label, uint64_t n_est, int *prc, int *reveal,
                          psi_cli_spill_fault *f)
{
    psi_app_offline *s = x->s;
    size_t cap = x->b.chunk_values, have = 0;
    uint64_t base = 0, total = 0;
    uint8_t *pts = psi_app_alloc(cap, PSI_ELEMENT_BYTES), *buf = malloc(1 << 16);
    psi_reader *r = NULL;
    int rc = -1;
    FILE *fin = fopen(path, "rb");

    *prc = PSI_OK;
    *reveal = 0;
    if (fin == NULL) {
        psi_app_offline_fail(s, "%s %s: cannot open: %s", name, path, strerror(errno));
        goto done;
    }
    if (pts == NULL || buf == NULL) {
        psi_app_offline_fail(s, "out of memory for a chunk of %zu values", cap);
        goto done;
    }
    if ((*prc = psi_reader_create(&r, s->o.suite, kind)) != PSI_OK) {
        rc = 0;
        goto done;
    }
    psi_app_progress_begin(&s->prog, label, n_est);
    s->prog.chunked = 1;
    for (;;) {
        size_t got = fread(buf, 1, 1 << 16, fin), at = 0;
        if (got == 0 && ferror(fin)) {
            psi_app_progress_end(&s->prog);
            psi_app_offline_fail(s, "%s %s: cannot read", name, path);
            goto done;
        }
        while (*prc == PSI_OK && at < got) {
            size_t count = cap - have, used = 0;
            *prc = psi_reader_feed(r, pts + have * PSI_ELEMENT_BYTES, &count, &used,
                                   buf + at, got - at);
            at += used;
            have += count;
            if (*prc == PSI_OK && have == cap) {
                if (spill_chunk(x, step, pts, have, base, f) != 0) {
                    psi_app_progress_end(&s->prog);
                    goto done;
                }
                base += have;
                have = 0;
            }
        }
        if (*prc != PSI_OK || got == 0)
            break;
    }
    if (*prc == PSI_OK)
        *prc = psi_reader_end(r, reveal, &total);
    // The last chunk's step only for a message that is going to be used.
    if (*prc == PSI_OK && (want_reveal < 0 || *reveal == want_reveal) &&
        spill_chunk(x, step, pts, have, base, f) != 0) {
        psi_app_progress_end(&s->prog);
        goto done;
    }
    s->prog.total = base + have;
    psi_app_progress_end(&s->prog);
    rc = 0;
done:
    if (fin != NULL)
        fclose(fin);
    psi_reader_free(r);
    free(pts);
    free(buf);
    return rc;
}

static void spill_on_read(void *arg, uint64_t done)
{
    psi_app_progress *p = arg;
    psi_app_progress_update(p, done, p->total);
}

/* The most slices one merge of the plan takes: PSI_PLAN_MAX_SLICES, or
 * fewer from $SHARDPSI_MERGE_WIDTH (at least 2), with which the tests make
 * a few thousand values behave as billions do at a real budget. */
static size_t spill_merge_width(void)
{
    const char *v = getenv("SHARDPSI_MERGE_WIDTH");
    char *end = NULL;
    unsigned long w = v != NULL ? strtoul(v, &end, 10) : 0;

    if (v == NULL || end == v || *end != '\0' || w < 2 || w > PSI_PLAN_MAX_SLICES)
        return PSI_PLAN_MAX_SLICES;
    return (size_t)w;
}

/* Begins the external plan of operation a->op over the runs, with
 * `memory` bytes of buffers to read them back.  Returns: 0 or -1
 * (reported).  Out: *plan, *counts (the caller frees both). */
static int spill_plan(spill *x, psi_op_args *a, uint64_t memory, psi_plan **plan,
                      size_t **counts, const char *what, const char *file)
{
    psi_app_offline *s = x->s;
    int prc;

    *plan = NULL;
    *counts = NULL;
    // The chunks are done: their buffers go back before the runs' come.
    free(x->elems);
    free(x->perm);
    x->elems = NULL;
    x->perm = NULL;
    // More runs than one merge takes are read as groups, each merged as it
    // is read (app_spill.h).
    if (psi_app_spill_read_begin(&x->sp, memory, spill_merge_width(), x->sorted) != 0 ||
        (*counts = psi_app_spill_counts(&x->sp)) == NULL)
        return psi_app_offline_fail(s, "%s", x->sp.err[0] ? x->sp.err : "out of memory");
    if (x->sp.n_groups > 0)
        psi_app_progress_note(&s->prog, "%zu runs read as %zu groups of consecutive runs",
                              x->sp.n_runs, x->sp.n_groups);
    a->external = 1;
    a->n_values = (size_t)x->sp.n_values;
    a->slices = psi_app_spill_slices(&x->sp);
    a->slice_counts = *counts;
    prc = psi_plan_begin(plan, x->plan_engine, a);
    if (prc == PSI_E_IO && a->setup_read == psi_app_msg_read)
        return psi_app_offline_fail(s, "setup %s",
                                    ((psi_app_msg_file *)a->setup_read_arg)->err);
    if (prc == PSI_OK)
        prc = psi_plan_source(*plan, psi_app_spill_source, &x->sp);
    if (prc != PSI_OK)
        return psi_app_offline_fail_psi(s, what, file, prc);
    return 0;
}

/* Finishes the plan into o with progress, reporting a failure: the runs'
 * file, else the setup that could not be read (`read_err`), else the sink
 * that refused (`sink_err`, NULL: the output), else the library.  The
 * messages are read after the finish, so a reader or sink may fill them
 * as it fails.  Returns: 0 or -1. */
static int spill_plan_finish(spill *x, psi_plan *plan, psi_op_output *o, const char *read_err,
                             const char *sink_err, const char *what, const char *file)
{
    psi_app_offline *s = x->s;
    char step[96];

    snprintf(step, sizeof step, "merging %zu runs", x->sp.n_runs);
    psi_app_progress_begin(&s->prog, step, x->sp.n_values);
    x->sp.on_read = spill_on_read;
    x->sp.on_read_arg = &s->prog;
    int prc = psi_plan_finish(plan, o);
    psi_app_progress_end(&s->prog);
    if (prc == PSI_E_IO && x->sp.err[0] != '\0')
        return psi_app_offline_fail(s, "%s", x->sp.err);
    if (prc == PSI_E_IO && read_err != NULL && read_err[0] != '\0')
        return psi_app_offline_fail(s, "setup %s", read_err);
    if (prc == PSI_E_IO && sink_err != NULL && sink_err[0] != '\0')
        return psi_app_offline_fail(s, "%s", sink_err);
    if (prc == PSI_E_IO && read_err != NULL) // a match writes no output of its own
        return psi_app_offline_fail(s, "%s: the setup changed while it was read", file);
    if (prc == PSI_E_IO)
        return psi_app_offline_fail(s, "%s: cannot write", s->o.output);
    if (prc != PSI_OK)
        return psi_app_offline_fail_psi(s, what, file, prc);
    return 0;
}

/* The permutation's writer, which names its file when a write fails. */
typedef struct spill_perm {
    psi_app_perm_writer w;
    const char *path;
    char err[4200];
} spill_perm;

static int spill_perm_write(void *arg, const size_t *index, size_t n)
{
    spill_perm *p = arg;
    if (psi_app_perm_write(&p->w, index, n) == 0)
        return 0;
    snprintf(p->err, sizeof p->err, "%s: cannot write", p->path);
    return 1;
}

int psi_cli_spill_finish(spill *x, psi_op_args *a, FILE *perm_out, size_t *len,
                         const char *what, const char *file)
{
    spill_perm pw;
    psi_plan *plan = NULL;
    size_t *counts = NULL;
    psi_op_output o;
    int rc = -1;

    *len = 0;
    if (spill_plan(x, a, x->b.read_bytes, &plan, &counts, what, file) != 0)
        goto done;
    memset(&pw, 0, sizeof pw);
    pw.w.f = perm_out;
    pw.path = x->s->o.permutation;
    if (perm_out != NULL && psi_plan_perm_sink(plan, spill_perm_write, &pw) != PSI_OK) {
        psi_app_offline_fail(x->s, "cannot stream the permutation");
        goto done;
    }
    memset(&o, 0, sizeof o);
    o.sink = psi_app_output_sink;
    o.sink_arg = x->s->out.f;
    rc = spill_plan_finish(x, plan, &o, NULL, pw.err, what, file);
    if (rc == 0)
        *len = o.len;
done:
    psi_plan_free(plan);
    free(counts);
    return rc;
}

int psi_cli_spill_match(spill *x, psi_op_args *a, psi_app_msg_file *setup,
                        const psi_cli_match_sink *sink, size_t *count, const char *what,
                        const char *file)
{
    psi_plan *plan = NULL;
    size_t *counts = NULL;
    psi_op_output o;
    int rc = -1;

    *count = 0;
    a->setup = NULL;
    a->setup_len = (size_t)setup->len;
    a->setup_read = psi_app_msg_read;
    a->setup_read_arg = setup;
    if (spill_plan(x, a, x->b.read_bytes, &plan, &counts, what, file) != 0)
        goto done;
    if (sink != NULL &&
        (sink->pairs != NULL ? psi_plan_pair_sink(plan, sink->pairs, sink->arg)
                             : psi_plan_match_sink(plan, sink->indices, sink->arg)) != PSI_OK) {
        psi_app_offline_fail(x->s, "cannot stream the intersection");
        goto done;
    }
    memset(&o, 0, sizeof o);
    rc = spill_plan_finish(x, plan, &o, setup->err, sink != NULL ? sink->err : NULL, what,
                           file);
    if (rc == 0)
        *count = o.count;
done:
    psi_plan_free(plan);
    free(counts);
    return rc;
}
