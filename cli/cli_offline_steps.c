/*
 * The four protocol steps of the offline commands (PROTOCOL.md §17): `psi
 * setup` and `shardpsi response` (the server), `shardpsi request` and `shardpsi match`
 * (the client).  Each reads its inputs, runs one operation of the sharding
 * layer and writes exactly the bytes it returns; a setup, request or
 * response goes to the output file in pieces as the library merges it
 * (PROTOCOL.md §10.1, §19), so no step holds a whole message it writes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_offline.h"
#include "app_util.h"

/* The library's pieces of a message, to the output file. */
static int steps_sink(void *arg, const uint8_t *bytes, size_t len)
{
    return fwrite(bytes, 1, len, arg) == len ? 0 : 1;
}

/* Runs a message operation on the shards with its message written to the
 * output as it is made; *len gets its size.  Returns: the psi code
 * (PSI_E_IO: the output could not be written, already reported). */
static int steps_run(psi_app_offline *s, const psi_op_args *a, size_t *perm, size_t *len)
{
    psi_op_output o;
    memset(&o, 0, sizeof o);
    o.sink = steps_sink;
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

/* Writes the permutation, one 0-based input index per line, and commits it. */
static int steps_write_perm(psi_app_offline *s, psi_app_output *po, const size_t *perm,
                            size_t n)
{
    for (size_t j = 0; j < n; j++)
        fprintf(po->f, "%zu\n", perm[j]);
    if (psi_app_output_commit(po, s->err, sizeof s->err) != 0)
        return psi_app_offline_fail(s, "%s", s->err);
    return 0;
}

int psi_cli_offline_setup(psi_app_offline *s)
{
    psi_app_output po;
    psi_setup_params p;
    psi_op_args a;
    size_t cap = 0, len, *perm = NULL;
    int rc = PSI_APP_EXIT_USAGE, prc;

    memset(&po, 0, sizeof po);
    if (psi_app_offline_key(s) != 0 || psi_app_offline_input(s) != 0 ||
        psi_app_offline_open(s, &s->out, s->o.output) != 0 ||
        (s->o.permutation != NULL && psi_app_offline_open(s, &po, s->o.permutation) != 0))
        goto done;
    rc = PSI_APP_EXIT_FAIL;
    memset(&p, 0, sizeof p);
    p.structure = (psi_structure)s->o.structure;
    p.fpr = s->o.fpr != 0 ? s->o.fpr : PSI_APP_DEFAULT_FPR;
    p.num_client_inputs = s->o.num_client != 0 ? (int64_t)s->o.num_client : 1;
    prc = psi_setup_bound(&cap, s->o.suite, &p, s->in.n);
    if (prc != PSI_OK) {
        psi_app_offline_fail_psi(s, "setup parameters", NULL, prc);
        goto done;
    }
    if (s->o.permutation != NULL && (perm = psi_app_alloc(s->in.n, sizeof *perm)) == NULL) {
        psi_app_offline_fail(s, "out of memory for the setup");
        goto done;
    }
    if (psi_app_offline_shards(s, PSI_ROLE_SERVER, 1) != 0)
        goto done;
    memset(&a, 0, sizeof a);
    a.op = PSI_OP_SETUP;
    a.params = p;
    a.values = s->in.values;
    a.n_values = s->in.n;
    psi_app_progress_begin(&s->prog, "masking the setup", s->in.n);
    prc = steps_run(s, &a, perm, &len);
    psi_app_progress_end(&s->prog);
    if (prc == PSI_E_IO)
        goto done;
    if (prc != PSI_OK) {
        psi_app_offline_fail_psi(s, "cannot build the setup", NULL, prc);
        goto done;
    }
    // The permutation first: if the setup's rename then fails, it goes too.
    if (perm != NULL && steps_write_perm(s, &po, perm, s->in.n) != 0)
        goto done;
    if (steps_commit(s) != 0) {
        if (perm != NULL)
            unlink(s->o.permutation);
        goto done;
    }
    psi_app_progress_note(&s->prog, "%zu values: a %s setup of %zu bytes (suite %s)%s",
                          s->in.n, psi_app_structure_name(s->o.structure), len,
                          psi_app_suite_label(s->o.suite),
                          perm != NULL ? ", and its permutation" : "");
    rc = PSI_APP_EXIT_OK;
done:
    psi_app_output_abort(&po);
    free(perm);
    return rc;
}

int psi_cli_offline_request(psi_app_offline *s)
{
    psi_op_args a;
    size_t len;
    int rc = PSI_APP_EXIT_USAGE, prc;

    if (psi_app_offline_key(s) != 0 || psi_app_offline_input(s) != 0 ||
        psi_app_offline_open(s, &s->out, s->o.output) != 0)
        goto done;
    rc = PSI_APP_EXIT_FAIL;
    if (psi_app_offline_shards(s, PSI_ROLE_CLIENT, s->o.mode != PSI_APP_OFFLINE_COUNT) != 0)
        goto done;
    memset(&a, 0, sizeof a);
    a.op = PSI_OP_REQUEST;
    a.values = s->in.values;
    a.n_values = s->in.n;
    psi_app_progress_begin(&s->prog, "masking the request", s->in.n);
    prc = steps_run(s, &a, NULL, &len);
    psi_app_progress_end(&s->prog);
    if (prc == PSI_E_IO)
        goto done;
    if (prc != PSI_OK) {
        psi_app_offline_fail_psi(s, "cannot build the request", NULL, prc);
        goto done;
    }
    if (steps_commit(s) != 0)
        goto done;
    psi_app_progress_note(&s->prog, "%zu values: a request of %zu bytes (suite %s, %s)",
                          s->in.n, len, psi_app_suite_label(s->o.suite),
                          s->o.mode == PSI_APP_OFFLINE_COUNT ? "count only" : "reveal");
    rc = PSI_APP_EXIT_OK;
done:
    return rc;
}

int psi_cli_offline_response(psi_app_offline *s)
{
    psi_op_args a;
    size_t req_len = 0, n, len;
    uint8_t *req = NULL;
    int rc = PSI_APP_EXIT_USAGE, prc;

    if (psi_app_offline_key(s) != 0 ||
        psi_app_offline_read_msg(s, s->o.request, "request", &req, &req_len) != 0 ||
        psi_app_offline_open(s, &s->out, s->o.output) != 0)
        goto done;
    rc = PSI_APP_EXIT_FAIL;
    n = psi_message_element_bound(s->o.suite, req_len);
    if (psi_app_offline_shards(s, PSI_ROLE_SERVER, s->o.reveal) != 0)
        goto done;
    memset(&a, 0, sizeof a);
    a.op = PSI_OP_RESPONSE;
    a.message = req;
    a.message_len = req_len;
    psi_app_progress_begin(&s->prog, "masking the response", n);
    prc = steps_run(s, &a, NULL, &len);
    psi_app_progress_end(&s->prog);
    if (prc == PSI_E_IO)
        goto done;
    if (prc == PSI_E_REVEAL_MISMATCH && s->o.reveal) {
        psi_app_offline_fail(s, "request %s was made with --count-only and asks only for "
                             "the size of the intersection: answer it without --reveal",
                             s->o.request);
        goto done;
    }
    if (prc == PSI_E_REVEAL_MISMATCH) {
        psi_app_offline_fail(s, "request %s asks for the intersection itself, and this "
                             "side reveals only its size: answer it with --reveal, or have "
                             "the client make its request with --count-only",
                             s->o.request);
        goto done;
    }
    if (prc != PSI_OK) {
        psi_app_offline_fail_psi(s, "the request is invalid", s->o.request, prc);
        goto done;
    }
    if (steps_commit(s) != 0)
        goto done;
    psi_app_progress_note(&s->prog, "a response of %zu bytes (suite %s, %s)", len,
                          psi_app_suite_label(s->o.suite),
                          s->o.reveal ? "intersection revealed" : "size only");
    rc = PSI_APP_EXIT_OK;
done:
    free(req);
    return rc;
}

/* Computes the result and writes it to s->out (not committed).  Out: *count. */
static int steps_match_write(psi_app_offline *s, const uint8_t *setup, size_t setup_len,
                             const uint8_t *resp, size_t resp_len, size_t *count)
{
    size_t cap = psi_message_element_bound(s->o.suite, resp_len), k = cap;
    size_t *idx = NULL;
    char files[512];
    int prc;

    snprintf(files, sizeof files, "setup %s, response %s", s->o.setup, s->o.response);

    if (s->o.mode == PSI_APP_OFFLINE_COUNT) {
        prc = psi_shards_client_get_intersection_size(s->g, count, setup, setup_len, resp,
                                                      resp_len);
        if (prc != PSI_OK)
            return psi_app_offline_fail_psi(s, "cannot count the intersection", files,
                                            prc);
        fprintf(s->out.f, "%zu\n", *count);
        return 0;
    }
    if ((idx = psi_app_alloc(cap, sizeof *idx)) == NULL)
        return psi_app_offline_fail(s, "out of memory for the intersection");
    prc = psi_shards_client_get_intersection(s->g, idx, &k, setup, setup_len, resp,
                                             resp_len);
    if (prc != PSI_OK) {
        free(idx);
        return psi_app_offline_fail_psi(s, "cannot compute the intersection", files,
                                        prc);
    }
    psi_app_sort_indices(idx, k);
    if (s->o.mode == PSI_APP_OFFLINE_ROWS)
        psi_app_input_write_header(s->out.f, &s->in);
    for (size_t i = 0; i < k; i++) {
        if (idx[i] >= s->in.n)
            break; // refused below: the response is not this input's
        if (s->o.mode == PSI_APP_OFFLINE_ROWS)
            psi_app_input_write_row(s->out.f, &s->in, idx[i]);
        else
            fprintf(s->out.f, "%zu\n", idx[i]);
    }
    free(idx);
    *count = k;
    return 0;
}

int psi_cli_offline_match(psi_app_offline *s)
{
    size_t setup_len = 0, resp_len = 0, count = 0, want;
    uint8_t *setup = NULL, *resp = NULL;
    int rc = PSI_APP_EXIT_USAGE;

    if (psi_app_offline_key(s) != 0 || psi_app_offline_input(s) != 0 ||
        psi_app_offline_read_msg(s, s->o.setup, "setup", &setup, &setup_len) != 0 ||
        psi_app_offline_read_msg(s, s->o.response, "response", &resp, &resp_len) != 0 ||
        psi_app_offline_open(s, &s->out, s->o.output) != 0)
        goto done;
    rc = PSI_APP_EXIT_FAIL;
    if (psi_app_offline_shards(s, PSI_ROLE_CLIENT, s->o.mode != PSI_APP_OFFLINE_COUNT) != 0)
        goto done;
    psi_app_progress_begin(&s->prog, "matching", s->in.n);
    if (steps_match_write(s, setup, setup_len, resp, resp_len, &count) != 0) {
        psi_app_progress_end(&s->prog);
        goto done;
    }
    psi_app_progress_end(&s->prog);
    // A response holds one element per request value: another size is the
    // answer to another input's request (checked after the library, which
    // names a malformed file or one of another suite first).
    want = psi_response_bound(s->o.suite, s->in.n);
    if (resp_len != want) {
        psi_app_offline_fail(s, "response %s (%zu bytes) does not answer a request of the "
                             "%zu values of %s (%zu bytes expected): give the response to "
                             "this input's request", s->o.response, resp_len, s->in.n,
                             s->o.input, want);
        goto done;
    }
    if (psi_app_output_commit(&s->out, s->err, sizeof s->err) != 0) {
        psi_app_offline_fail(s, "%s", s->err);
        goto done;
    }
    psi_app_progress_note(&s->prog, "%zu of %zu values in the intersection (suite %s)",
                          count, s->in.n, psi_app_suite_label(s->o.suite));
    rc = PSI_APP_EXIT_OK;
done:
    free(setup);
    free(resp);
    return rc;
}
