/*
 * Three protocol steps of the offline commands (PROTOCOL.md §17): `shardpsi
 * setup` and `shardpsi response` (the server) and `shardpsi request` (the
 * client); the fourth, `shardpsi match`, is in cli_offline_match.c.  Each reads its inputs, runs one operation of the sharding
 * layer and writes exactly the bytes it returns; a setup, request or
 * response goes to the output file in pieces as the library merges it
 * (PROTOCOL.md §10.1, §19), so no step holds a whole message it writes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "cli_offline.h"
#include "cli_offline_spill.h"
#include "app_util.h"

/* Runs a message operation on the shards with its message written to the
 * output as it is made; *len gets its size.  Returns: the psi code
 * (PSI_E_IO: the output could not be written, already reported). */
static int steps_run(psi_app_offline *s, const psi_op_args *a, size_t *perm, size_t *len)
{
    psi_op_output o;
    memset(&o, 0, sizeof o);
    o.sink = psi_app_output_sink;
    o.sink_arg = s->out.f;
    o.perm = perm;
    int prc = psi_shards_run_op(s->g, a, &o);
    *len = o.len;
    if (prc == PSI_E_IO)
        psi_app_offline_fail(s, "%s: cannot write", s->o.output);
    return prc;
}

/* Commits the output.  Returns: 0 or -1. */
static int steps_commit(psi_app_offline *s)
{
    if (psi_app_output_commit(&s->out, s->err, sizeof s->err) != 0)
        return psi_app_offline_fail(s, "%s", s->err);
    return 0;
}

/* Commits the permutation file. */
static int steps_commit_perm(psi_app_offline *s, psi_app_output *po)
{
    if (psi_app_output_commit(po, s->err, sizeof s->err) != 0)
        return psi_app_offline_fail(s, "%s", s->err);
    return 0;
}

/* Opens --input for reading in chunks of the budget and reads the first.
 * Returns: 0 or -1 (reported).  Out: *whole, 1 when that chunk is the
 * whole input (the step then runs in memory). */
static int steps_first_chunk(psi_app_offline *s, psi_app_input_stream *in, spill *x,
                             int *whole)
{
    const psi_app_budget *b = psi_cli_spill_budget(x);
    if (psi_app_input_stream_open(in, s->o.input, s->o.column, s->o.lines, b->block_bytes,
                                  b->chunk_values, b->record_max, s->err,
                                  sizeof s->err) != 0 ||
        psi_app_input_stream_next(in, s->err, sizeof s->err) != 0)
        return psi_app_offline_fail(s, "%s", s->err);
    *whole = psi_app_input_stream_at_end(in);
    return 0;
}

/* Masks every chunk of the input with `kind` and spills it.  Returns: 0,
 * -1 (reported: a failed step or the disk), -2 (the input; reported). */
static int steps_mask_chunks(psi_app_offline *s, psi_app_input_stream *in, spill *x,
                             psi_step_kind kind, const char *step, const char *what)
{
    psi_cli_spill_fault f = {NULL, PSI_OK, {0, NULL, -1, -1}};
    int rc = 0;

    psi_app_progress_begin(&s->prog, step, psi_app_input_stream_estimate(in));
    s->prog.chunked = 1;
    while (in->chunk.n > 0) {
        s->prog.total = psi_app_input_stream_estimate(in);
        if (psi_cli_spill_step(x, kind, in->chunk.values, NULL, in->chunk.n, in->values,
                               &f) != 0) {
            rc = -1;
            break;
        }
        if (psi_app_input_stream_next(in, s->err, sizeof s->err) != 0) {
            rc = -2;
            break;
        }
    }
    s->prog.total = psi_cli_spill_values(x);
    psi_app_progress_end(&s->prog);
    if (rc == -1 && f.rc != PSI_OK)
        psi_cli_spill_report(s, &f, what, NULL);
    if (rc == -2)
        psi_app_offline_fail(s, "%s", s->err);
    return rc;
}

/* The setup of values that fit the budget, in memory. */
static int steps_setup_whole(psi_app_offline *s, const psi_app_input *in,
                             const psi_setup_params *p, psi_app_output *po, size_t *len)
{
    psi_op_args a;
    size_t *perm = NULL;
    int prc;

    if (po->f != NULL && (perm = psi_app_alloc(in->n, sizeof *perm)) == NULL)
        return psi_app_offline_fail(s, "out of memory for the setup");
    memset(&a, 0, sizeof a);
    a.op = PSI_OP_SETUP;
    a.params = *p;
    a.values = in->values;
    a.n_values = in->n;
    psi_app_progress_begin(&s->prog, "masking the setup", in->n);
    prc = steps_run(s, &a, perm, len);
    psi_app_progress_end(&s->prog);
    if (prc != PSI_OK) {
        free(perm);
        return prc == PSI_E_IO ? -1
                               : psi_app_offline_fail_psi(s, "cannot build the setup", NULL, prc);
    }
    if (perm != NULL) {
        for (size_t j = 0; j < in->n; j++)
            fprintf(po->f, "%zu\n", perm[j]);
        free(perm);
    }
    return 0;
}

/* Refuses a GCS or Bloom setup whose structure does not fit the budget. */
static int steps_setup_refuse(psi_app_offline *s, spill *x, const psi_setup_params *p,
                              uint64_t n, uint64_t need, const char *about)
{
    return psi_app_offline_fail(s, "a %s setup of %s%" PRIu64 " values holds %s%" PRIu64
                                " bytes in memory while it is built (%s), more than "
                                "--memory %" PRIu64 ": raise --memory to at least %s%" PRIu64
                                ", or use the raw structure (PROTOCOL.md §20)",
                                psi_app_structure_name(s->o.structure), about, n, about, need,
                                psi_app_setup_need_what(p->structure),
                                psi_cli_spill_budget(x)->bytes, about, need);
}

/* The setup of a set past the budget: masked (and for raw sorted) a chunk
 * at a time, then merged from the runs by the library, which builds a GCS
 * or Bloom structure as the elements pass (§20): refused when what that
 * structure holds does not fit the budget, before any masking when the
 * input's size tells (a file: from its first chunk), else once it is read. */
static int steps_setup_spill(psi_app_offline *s, psi_app_input_stream *in, spill *x,
                             const psi_setup_params *p, psi_app_output *po, size_t *len)
{
    int raw = p->structure == PSI_STRUCTURE_RAW, prc;
    uint64_t budget = psi_cli_spill_budget(x)->bytes, need = 0, n;
    psi_op_args a;

    n = psi_app_input_stream_estimate(in);
    if (!raw && in->size != 0 && psi_app_setup_need(&need, s->o.suite, p, n) == PSI_OK && need > budget)
        return steps_setup_refuse(s, x, p, n, need, "about ");
    int rc = steps_mask_chunks(s, in, x, raw ? PSI_STEP_MASK_SORT : PSI_STEP_MASK,
                               "masking the setup", "cannot build the setup");
    if (rc != 0)
        return rc;
    psi_app_input_stream_close(in); // read to its end: its buffer is not needed again
    n = psi_cli_spill_values(x);
    if ((prc = psi_app_setup_need(&need, s->o.suite, p, n)) != PSI_OK)
        return psi_app_offline_fail_psi(s, "setup parameters", NULL, prc);
    if (!raw && need > budget)
        return steps_setup_refuse(s, x, p, n, need, "");
    memset(&a, 0, sizeof a);
    a.op = PSI_OP_SETUP;
    a.params = *p;
    return psi_cli_spill_finish(x, &a, po->f, len, "cannot build the setup", NULL);
}

int psi_cli_offline_setup(psi_app_offline *s)
{
    psi_app_output po;
    psi_app_input_stream in;
    psi_setup_params p;
    spill *x = NULL;
    size_t cap = 0, len = 0;
    int rc = PSI_APP_EXIT_USAGE, prc, whole = 0, step;

    memset(&po, 0, sizeof po);
    memset(&in, 0, sizeof in);
    in.fd = -1;
    if (psi_app_offline_key(s) != 0 || psi_cli_spill_init(&x, s, PSI_ROLE_SERVER, 1) != 0 ||
        steps_first_chunk(s, &in, x, &whole) != 0 ||
        psi_app_offline_open(s, &s->out, s->o.output) != 0 ||
        (s->o.permutation != NULL && psi_app_offline_open(s, &po, s->o.permutation) != 0))
        goto done;
    rc = PSI_APP_EXIT_FAIL;
    memset(&p, 0, sizeof p);
    p.structure = (psi_structure)s->o.structure;
    p.fpr = s->o.fpr != 0 ? s->o.fpr : PSI_APP_DEFAULT_FPR;
    p.num_client_inputs = s->o.num_client != 0 ? (int64_t)s->o.num_client : 1;
    prc = psi_setup_bound(&cap, s->o.suite, &p, whole ? in.chunk.n : 0);
    if (prc != PSI_OK) {
        psi_app_offline_fail_psi(s, "setup parameters", NULL, prc);
        goto done;
    }
    if (psi_app_offline_shards(s, PSI_ROLE_SERVER, 1) != 0)
        goto done;
    step = whole ? steps_setup_whole(s, &in.chunk, &p, &po, &len)
                 : steps_setup_spill(s, &in, x, &p, &po, &len);
    if (step == -2)
        rc = PSI_APP_EXIT_USAGE;
    if (step != 0)
        goto done;
    // The permutation first: if the setup's rename then fails, it goes too.
    if (po.f != NULL && steps_commit_perm(s, &po) != 0)
        goto done;
    if (steps_commit(s) != 0) {
        if (s->o.permutation != NULL)
            unlink(s->o.permutation);
        goto done;
    }
    s->values = whole ? (uint64_t)in.chunk.n : psi_cli_spill_values(x);
    psi_app_progress_note(&s->prog, "%" PRIu64 " values: a %s setup of %zu bytes (suite %s)%s%s",
                          s->values,
                          psi_app_structure_name(s->o.structure), len,
                          psi_app_suite_label(s->o.suite),
                          s->o.permutation != NULL ? ", and its permutation" : "",
                          whole ? "" : ", merged from sorted runs on disk");
    rc = PSI_APP_EXIT_OK;
done:
    psi_app_output_abort(&po);
    psi_app_input_stream_close(&in);
    psi_cli_spill_free(x);
    return rc;
}

int psi_cli_offline_request(psi_app_offline *s)
{
    psi_app_input_stream in;
    spill *x = NULL;
    size_t len = 0;
    int rc = PSI_APP_EXIT_USAGE, prc, whole = 0, step = 0;
    int reveal = s->o.mode != PSI_APP_OFFLINE_COUNT;

    memset(&in, 0, sizeof in);
    in.fd = -1;
    if (psi_app_offline_key(s) != 0 || psi_cli_spill_init(&x, s, PSI_ROLE_CLIENT, reveal) != 0 ||
        steps_first_chunk(s, &in, x, &whole) != 0 ||
        psi_app_offline_open(s, &s->out, s->o.output) != 0)
        goto done;
    rc = PSI_APP_EXIT_FAIL;
    if (psi_app_offline_shards(s, PSI_ROLE_CLIENT, reveal) != 0)
        goto done;
    if (whole) {
        psi_op_args a;
        memset(&a, 0, sizeof a);
        a.op = PSI_OP_REQUEST;
        a.values = in.chunk.values;
        a.n_values = in.chunk.n;
        psi_app_progress_begin(&s->prog, "masking the request", in.chunk.n);
        prc = steps_run(s, &a, NULL, &len);
        psi_app_progress_end(&s->prog);
        if (prc != PSI_OK && prc != PSI_E_IO)
            psi_app_offline_fail_psi(s, "cannot build the request", NULL, prc);
        step = prc == PSI_OK ? 0 : -1;
    } else {
        psi_op_args a;
        step = steps_mask_chunks(s, &in, x, PSI_STEP_MASK, "masking the request",
                                 "cannot build the request");
        psi_app_input_stream_close(&in);
        memset(&a, 0, sizeof a);
        a.op = PSI_OP_REQUEST;
        if (step == 0)
            step = psi_cli_spill_finish(x, &a, NULL, &len, "cannot build the request", NULL);
    }
    if (step == -2)
        rc = PSI_APP_EXIT_USAGE;
    if (step != 0 || steps_commit(s) != 0)
        goto done;
    s->values = whole ? (uint64_t)in.chunk.n : psi_cli_spill_values(x);
    psi_app_progress_note(&s->prog, "%" PRIu64 " values: a request of %zu bytes (suite %s, %s)",
                          s->values, len,
                          psi_app_suite_label(s->o.suite),
                          reveal ? "reveal" : "count only");
    rc = PSI_APP_EXIT_OK;
done:
    psi_app_input_stream_close(&in);
    psi_cli_spill_free(x);
    return rc;
}

/* The reveal flag's refusal, worded for the offline commands. */
static void steps_reveal_mismatch(psi_app_offline *s)
{
    if (s->o.reveal)
        psi_app_offline_fail(s, "request %s was made with --count-only and asks only for "
                             "the size of the intersection: answer it without --reveal",
                             s->o.request);
    else
        psi_app_offline_fail(s, "request %s asks for the intersection itself, and this "
                             "side reveals only its size: answer it with --reveal, or have "
                             "the client make its request with --count-only",
                             s->o.request);
}

/* A response whose request is read whole. */
static int steps_response_whole(psi_app_offline *s, size_t *len)
{
    psi_op_args a;
    size_t req_len = 0, n;
    uint8_t *req = NULL;
    int prc;

    if (psi_app_offline_read_msg(s, s->o.request, "request", &req, &req_len) != 0)
        return -1;
    n = psi_message_element_bound(s->o.suite, req_len);
    memset(&a, 0, sizeof a);
    a.op = PSI_OP_RESPONSE;
    a.message = req;
    a.message_len = req_len;
    psi_app_progress_begin(&s->prog, "masking the response", n);
    prc = steps_run(s, &a, NULL, len);
    psi_app_progress_end(&s->prog);
    free(req);
    if (prc == PSI_E_REVEAL_MISMATCH)
        steps_reveal_mismatch(s);
    else if (prc != PSI_OK && prc != PSI_E_IO)
        psi_app_offline_fail_psi(s, "the request is invalid", s->o.request, prc);
    return prc == PSI_OK ? 0 : -1;
}

/* A response to a request past the budget: the request decoded as it is
 * read, re-masked a chunk at a time and spilled, merged from the runs.
 * The checks keep the whole call's order: the message's encoding, then
 * its reveal flag, then the first bad point. */
static int steps_response_spill(psi_app_offline *s, spill *x, uint64_t n_est, size_t *len)
{
    psi_cli_spill_fault f = {"Request.encrypted_elements", PSI_OK, {0, NULL, -1, -1}};
    psi_step_kind kind = s->o.reveal ? PSI_STEP_REMASK : PSI_STEP_REMASK_SORT;
    int reveal = 0, prc = PSI_OK;

    if (psi_cli_spill_message(x, s->o.request, "request", PSI_MESSAGE_REQUEST, kind,
                              s->o.reveal, "masking the response", n_est, &prc, &reveal,
                              &f) != 0)
        return -1;
    if (prc != PSI_OK)
        return psi_app_offline_fail_psi(s, "the request is invalid", s->o.request, prc);
    if (reveal != s->o.reveal) {
        steps_reveal_mismatch(s);
        return -1;
    }
    if (f.rc != PSI_OK) {
        psi_cli_spill_report(s, &f, "the request is invalid", s->o.request);
        return -1;
    }
    psi_op_args a;
    memset(&a, 0, sizeof a);
    a.op = PSI_OP_RESPONSE;
    return psi_cli_spill_finish(x, &a, NULL, len, "the request is invalid", s->o.request);
}

int psi_cli_offline_response(psi_app_offline *s)
{
    struct stat st;
    spill *x = NULL;
    size_t len = 0;
    int rc = PSI_APP_EXIT_USAGE, step;

    if (psi_app_offline_key(s) != 0 || psi_cli_spill_init(&x, s, PSI_ROLE_SERVER, s->o.reveal) != 0)
        goto done;
    if (stat(s->o.request, &st) != 0 || !S_ISREG(st.st_mode)) {
        // Named by the reader of the whole file.
        uint8_t *req = NULL;
        size_t req_len = 0;
        psi_app_offline_read_msg(s, s->o.request, "request", &req, &req_len);
        free(req);
        goto done;
    }
    if (psi_app_offline_open(s, &s->out, s->o.output) != 0)
        goto done;
    rc = PSI_APP_EXIT_FAIL;
    if (psi_app_offline_shards(s, PSI_ROLE_SERVER, s->o.reveal) != 0)
        goto done;
    // A request of more elements than a chunk holds is read in pieces.
    uint64_t n_est = psi_message_element_bound(s->o.suite, (size_t)st.st_size);
    if (n_est <= psi_cli_spill_budget(x)->chunk_values)
        step = steps_response_whole(s, &len);
    else
        step = steps_response_spill(s, x, n_est, &len);
    if (step != 0 || steps_commit(s) != 0)
        goto done;
    psi_app_progress_note(&s->prog, "a response of %zu bytes (suite %s, %s)%s", len,
                          psi_app_suite_label(s->o.suite),
                          s->o.reveal ? "intersection revealed" : "size only",
                          psi_cli_spill_runs(x) > 0 ? ", merged from runs on disk" : "");
    rc = PSI_APP_EXIT_OK;
done:
    psi_cli_spill_free(x);
    return rc;
}
