/* shardpsi-mpi setup, request and response (PROTOCOL.md §18): every rank
 * begins the library's plan of the step, runs its slice's step on its own
 * shards, and rank 0's finish of the plan writes the message (mpi_plan.c).
 * The failures and their messages are those of the single-process
 * commands (cli_offline_steps.c), prefixed with the failing rank. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app_clock.h"
#include "app_perm.h"
#include "app_util.h"
#include "mpi_run.h"

/* Rank 0's finish of a message into r->s.out (and a raw setup's
 * permutation into perm->f, when perm is not NULL), reported as `fail`
 * unless a file could not be written.  Returns: as psi_mpi_agree. */
static int steps_finish(psi_mpi_run *r, psi_mpi_plan *mp, psi_app_perm_writer *perm, const char *fail)
{
    psi_op_output o = {.sink = psi_app_output_sink, .sink_arg = r->s.out.f};
    int prc = PSI_OK;

    if (r->rank == 0 && perm != NULL)
        prc = psi_plan_perm_sink(mp->p, psi_app_perm_write, perm);
    if (prc == PSI_OK)
        prc = psi_mpi_plan_finish(r, mp, &o);
    if (prc == PSI_E_IO && mp->spilled && mp->sp.err[0] != '\0')
        psi_app_offline_fail(&r->s, "%s", mp->sp.err);
    else if (prc == PSI_E_IO && perm != NULL && perm->failed)
        psi_app_offline_fail(&r->s, "%s: cannot write", r->s.o.permutation);
    else if (prc == PSI_E_IO)
        psi_app_offline_fail(&r->s, "%s: cannot write", r->s.o.output);
    else if (prc != PSI_OK)
        psi_app_offline_fail_psi(&r->s, fail, NULL, prc);
    return psi_mpi_agree(r, prc != PSI_OK ? PSI_APP_EXIT_FAIL : 0);
}

/* Rank 0 builds a GCS or Bloom setup in the plan's finish, holding what
 * PROTOCOL.md §20 names: refused up front when that is more than the
 * budget (a raw setup holds nothing of the kind).  Returns: as
 * psi_mpi_agree. */
static int steps_setup_fits(psi_mpi_run *r, const psi_setup_params *p)
{
    uint64_t need = 0;
    int status = 0;

    if (r->rank == 0 && psi_app_setup_need(&need, r->s.o.suite, p, r->total) == PSI_OK &&
        need > r->b.bytes) {
        psi_app_offline_fail(&r->s, "a %s setup of %" PRIu64 " values holds %" PRIu64
                             " bytes on rank 0 while it is built (%s), more than --memory %"
                             PRIu64 ": raise --memory to at least %" PRIu64 ", or use the "
                             "raw structure (PROTOCOL.md §20)",
                             psi_app_structure_name(r->s.o.structure), r->total, need,
                             psi_app_setup_need_what(p->structure), r->b.bytes, need);
        status = PSI_APP_EXIT_FAIL;
    }
    return psi_mpi_agree(r, status);
}

int psi_mpi_setup(psi_mpi_run *r)
{
    psi_app_output po;
    psi_mpi_part pt;
    psi_mpi_plan mp;
    psi_op_args a;
    psi_app_perm_writer perm = {NULL, 0};
    char spilled[128];
    double t[3];
    int rc;

    memset(&po, 0, sizeof po);
    memset(&mp, 0, sizeof mp);
    memset(&pt, 0, sizeof pt);
    pt.in.fd = -1;
    t[0] = psi_app_now_ms();
    if ((rc = psi_mpi_share_key(r)) != 0 || (rc = psi_mpi_part_open(r, &pt)) != 0 ||
        (rc = psi_mpi_open(r, &r->s.out, r->s.o.output)) != 0 ||
        (r->s.o.permutation != NULL && (rc = psi_mpi_open(r, &po, r->s.o.permutation)) != 0))
        goto done;
    memset(&a, 0, sizeof a);
    a.op = PSI_OP_SETUP;
    a.n_values = (size_t)r->total;
    a.params.structure = (psi_structure)r->s.o.structure;
    a.params.fpr = r->s.o.fpr != 0 ? r->s.o.fpr : PSI_APP_DEFAULT_FPR;
    a.params.num_client_inputs = r->s.o.num_client != 0 ? (int64_t)r->s.o.num_client : 1;
    if ((rc = psi_mpi_plan_begin(r, &mp, PSI_ROLE_SERVER, 1, &a, r->counts,
                                 "setup parameters", NULL)) != 0 ||
        (rc = steps_setup_fits(r, &a.params)) != 0 ||
        (rc = psi_mpi_shards(r, PSI_ROLE_SERVER, 1)) != 0 ||
        (rc = psi_mpi_part_run(r, &mp, &pt, "masking this rank's part of the setup",
                               "cannot build the setup")) != 0)
        goto done;
    psi_mpi_part_free(&pt);
    // After the agreement: the slowest rank's step (masking and, raw, sorting) is done.
    t[1] = psi_app_now_ms();
    // The permutation is the plan's merged indices, written as they come.
    perm.f = po.f;
    if ((rc = steps_finish(r, &mp, r->s.o.permutation != NULL ? &perm : NULL,
                           "cannot build the setup")) != 0)
        goto done;
    // The permutation first: if the setup's rename then fails, it goes too.
    if (r->s.o.permutation != NULL && (rc = psi_mpi_commit(r, &po)) != 0)
        goto done;
    if ((rc = psi_mpi_commit(r, &r->s.out)) != 0) {
        if (r->rank == 0 && r->s.o.permutation != NULL)
            unlink(r->s.o.permutation);
        goto done;
    }
    t[2] = psi_app_now_ms();
    psi_mpi_plan_spilled(r, &mp, spilled, sizeof spilled);
    PSI_MPI_NOTE(r, "%llu values on %d ranks: a %s setup (suite %s)%s; "
                          "%.1f s: key, read and mask %.1f s, merge and write %.1f s%s",
                          (unsigned long long)r->total, r->size,
                          psi_app_structure_name(r->s.o.structure),
                          psi_app_suite_label(r->s.o.suite),
                          r->s.o.permutation != NULL ? ", and its permutation" : "",
                          (t[2] - t[0]) / 1e3, (t[1] - t[0]) / 1e3, (t[2] - t[1]) / 1e3,
                          spilled);
done:
    psi_app_output_abort(&po);
    psi_mpi_part_free(&pt);
    psi_mpi_plan_free(&mp);
    return rc;
}

int psi_mpi_request(psi_mpi_run *r)
{
    psi_mpi_part pt;
    psi_mpi_plan mp;
    psi_op_args a;
    int reveal = r->s.o.mode != PSI_APP_OFFLINE_COUNT, rc;
    char spilled[128];

    memset(&mp, 0, sizeof mp);
    memset(&pt, 0, sizeof pt);
    pt.in.fd = -1;
    memset(&a, 0, sizeof a);
    a.op = PSI_OP_REQUEST;
    if ((rc = psi_mpi_share_key(r)) != 0 || (rc = psi_mpi_part_open(r, &pt)) != 0 ||
        (rc = psi_mpi_open(r, &r->s.out, r->s.o.output)) != 0)
        goto done;
    a.n_values = (size_t)r->total;
    if ((rc = psi_mpi_plan_begin(r, &mp, PSI_ROLE_CLIENT, reveal, &a, r->counts,
                                 "cannot build the request", NULL)) != 0 ||
        (rc = psi_mpi_shards(r, PSI_ROLE_CLIENT, reveal)) != 0 ||
        (rc = psi_mpi_part_run(r, &mp, &pt, "masking this rank's part of the request",
                               "cannot build the request")) != 0 ||
        (rc = steps_finish(r, &mp, NULL, "cannot build the request")) != 0 ||
        (rc = psi_mpi_commit(r, &r->s.out)) != 0)
        goto done;
    psi_mpi_plan_spilled(r, &mp, spilled, sizeof spilled);
    PSI_MPI_NOTE(r, "%llu values on %d ranks: a request (suite %s, %s)%s",
                          (unsigned long long)r->total, r->size,
                          psi_app_suite_label(r->s.o.suite),
                          reveal ? "reveal" : "count only", spilled);
done:
    psi_mpi_part_free(&pt);
    psi_mpi_plan_free(&mp);
    return rc;
}

/* The reveal check of §8, with shardpsi response's messages (an external
 * plan leaves it to its executor, which alone has read the request).
 * Returns: 0 or 1. */
static int steps_reveal_check(psi_mpi_run *r, int asked)
{
    if (asked == r->s.o.reveal)
        return 0;
    if (r->s.o.reveal)
        psi_app_offline_fail(&r->s, "request %s was made with --count-only and asks only "
                             "for the size of the intersection: answer it without --reveal",
                             r->s.o.request);
    else
        psi_app_offline_fail(&r->s, "request %s asks for the intersection itself, and this "
                             "side reveals only its size: answer it with --reveal, or have "
                             "the client make its request with --count-only",
                             r->s.o.request);
    return PSI_APP_EXIT_FAIL;
}

int psi_mpi_response(psi_mpi_run *r)
{
    psi_mpi_plan mp;
    psi_mpi_records rec;
    psi_op_args a;
    uint8_t *in = NULL;
    size_t n = 0;
    uint64_t total = 0;
    int asked = 0, rc;
    char spilled[128];

    memset(&mp, 0, sizeof mp);
    memset(&a, 0, sizeof a);
    a.op = PSI_OP_RESPONSE;
    if ((rc = psi_mpi_share_key(r)) != 0 ||
        (rc = psi_mpi_read_elements(r, r->s.o.request, "the request is invalid", 1, NULL, &in,
                                &n, &total, &asked, &rec)) != 0 ||
        (rc = psi_mpi_open(r, &r->s.out, r->s.o.output)) != 0 ||
        (rc = psi_mpi_agree(r, r->rank == 0 ? steps_reveal_check(r, asked) : 0)) != 0)
        goto done;
    // The plan's slices are the ranks' parts of the request.
    psi_mpi_share_counts(r, n);
    a.n_values = (size_t)total;
    if ((rc = psi_mpi_plan_begin(r, &mp, PSI_ROLE_SERVER, r->s.o.reveal, &a, r->counts,
                                 "the request is invalid", r->s.o.request)) != 0 ||
        (rc = psi_mpi_shards(r, PSI_ROLE_SERVER, r->s.o.reveal)) != 0 ||
        (rc = psi_mpi_records_run(r, &mp, &rec, in, "masking this rank's part of the response",
                                  "the request is invalid", r->s.o.request)) != 0)
        goto done;
    free(in);
    in = NULL;
    if ((rc = steps_finish(r, &mp, NULL, "cannot build the response")) != 0 ||
        (rc = psi_mpi_commit(r, &r->s.out)) != 0)
        goto done;
    psi_mpi_plan_spilled(r, &mp, spilled, sizeof spilled);
    PSI_MPI_NOTE(r, "%llu elements on %d ranks: a response (suite %s, %s)%s",
                          (unsigned long long)total, r->size,
                          psi_app_suite_label(r->s.o.suite),
                          r->s.o.reveal ? "intersection revealed" : "size only", spilled);
done:
    free(in);
    psi_mpi_plan_free(&mp);
    return rc;
}
