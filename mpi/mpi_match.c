/* shardpsi-mpi match (PROTOCOL.md §18.4): every rank counts its part of the
 * input, begins the library's client plan (reading the setup from its
 * file, a raw one in windows) and unmasks its slice of the response with
 * the step the plan names (a chunk at a time past its budget, §18.5); rank
 * 0's finish of the plan merges the slices and walks the setup (§9,
 * §14.4), handing the matched indices to sorted runs on disk
 * (app_index_runs.h).  They are read back in input order, the command's
 * output rule (as shardpsi match), and each rank writes its rows through
 * rank 0 a piece at a time (mpi_rows.c). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_index_runs.h"
#include "app_spill.h"
#include "app_util.h"
#include "mpi_run.h"

/* psi_mpi_records_each's job for match_check_points. */
typedef struct check_job {
    psi_mpi_run *r;
    uint8_t *un;           // a chunk's unmasked points, dropped
    const char *what, *files;
} check_job;

static int check_chunk(void *arg, const uint8_t *elems, size_t n, uint64_t first)
{
    check_job *j = arg;
    size_t len = n * PSI_ELEMENT_BYTES;
    int prc = psi_shards_unmask(j->r->s.g, j->un, &len, elems, n);

    if (prc != PSI_OK) {
        psi_error_detail d = psi_app_detail_in_whole(prc, first);
        psi_error_detail_set(&d);
        psi_app_offline_fail_psi(&j->r->s, j->what, j->files, prc);
    }
    return prc != PSI_OK;
}

/* A response of another size than the input's is refused, as shardpsi
 * match refuses it, only after its points have been checked as the
 * library checks them: this rank's part is unmasked here (whole, or a
 * chunk at a time when it was not held), and dropped.  Returns: as
 * psi_mpi_agree. */
static int match_check_points(psi_mpi_run *r, const psi_mpi_records *rec,
                              const uint8_t *resp, size_t n, const char *what,
                              const char *files)
{
    check_job j = {r, NULL, what, files};
    size_t most = rec->held ? n : r->b.chunk_values;
    int status;

    if ((j.un = psi_app_alloc(most > 0 ? most : 1, PSI_ELEMENT_BYTES)) == NULL) {
        psi_app_offline_fail(&r->s, "out of memory for %zu elements", most);
        status = PSI_APP_EXIT_FAIL;
    } else if (rec->held) {
        status = check_chunk(&j, resp, n, 0) ? PSI_APP_EXIT_FAIL : 0;
    } else {
        status = psi_mpi_records_each(r, rec, "checking this rank's part of the response",
                                      check_chunk, &j);
    }
    free(j.un);
    return psi_mpi_agree(r, status);
}

/* Writes the result: the count, the indices (rank 0 reads them from its
 * runs) or every rank's rows (psi_mpi_rows_write).  Returns: 0, -1 (rank
 * 0 could not write) or an exit code (reported). */
static int match_write(psi_mpi_run *r, psi_mpi_part *pt, psi_app_index_runs *runs, size_t k,
                       psi_mpi_pay *pay)
{
    size_t v = 0;
    int bad = 0, rc, have = 1;

    if (r->s.o.mode == PSI_APP_OFFLINE_COUNT)
        return r->rank == 0 && fprintf(r->s.out.f, "%zu\n", k) < 0 ? -1 : 0;
    if (r->s.o.mode != PSI_APP_OFFLINE_INDICES)
        return psi_mpi_rows_write(r, pt, runs, pay);
    if (r->rank == 0 && psi_app_index_runs_read_begin(runs) != 0)
        have = -1;
    while (r->rank == 0 && have > 0 && !bad && (have = psi_app_index_runs_next(runs, &v)) > 0)
        bad = fprintf(r->s.out.f, "%zu\n", v) < 0;
    if (have < 0 && r->rank == 0)
        psi_app_offline_fail(&r->s, "%s", runs->file.err);
    if ((rc = psi_mpi_agree(r, have < 0 ? PSI_APP_EXIT_FAIL : 0)) != 0)
        return rc;
    return bad ? -1 : 0;
}

int psi_mpi_match(psi_mpi_run *r)
{
    psi_mpi_plan mp;
    psi_mpi_part pt;
    psi_mpi_records rec;
    psi_op_args a;
    psi_op_output o;
    psi_app_msg_file setup = {.fd = -1};
    psi_app_index_runs runs;
    uint8_t *resp = NULL;
    size_t n = 0;
    uint64_t total = 0;
    uint64_t budget = r->b.bytes;
    int count = r->s.o.mode == PSI_APP_OFFLINE_COUNT;
    const char *what = count ? "cannot count the intersection"
                             : "cannot compute the intersection";
    char files[512], spilled[128];
    int rc, prc, status = 0, pay_open = 0;
    psi_mpi_pay pay;

    memset(&mp, 0, sizeof mp);
    memset(&pt, 0, sizeof pt);
    pt.in.fd = -1;
    memset(&a, 0, sizeof a);
    memset(&o, 0, sizeof o);
    // Rank 0's matched indices go to sorted runs in --temp-dir (else
    // $TMPDIR, else the output's directory), a sixteenth of the budget.
    psi_app_index_runs_init(&runs, r->temp_dir, budget / 16);
    snprintf(files, sizeof files, "setup %s, response %s", r->s.o.setup, r->s.o.response);
    if ((rc = psi_mpi_share_key(r)) != 0 || (rc = psi_mpi_part_open(r, &pt)) != 0)
        goto done;
    // Every rank's plan reads the setup from its file: a raw one through a
    // window, never whole (§20); its slices are the input's.
    if (psi_app_offline_open_msg(&r->s, r->s.o.setup, "setup", &setup) != 0)
        status = PSI_APP_EXIT_USAGE;
    if ((rc = psi_mpi_agree(r, status)) != 0)
        goto done;
    a.op = count ? PSI_OP_INTERSECTION_SIZE : PSI_OP_INTERSECTION;
    a.n_values = (size_t)r->total;
    a.setup_len = (size_t)setup.len;
    a.setup_read = psi_app_msg_read;
    a.setup_read_arg = &setup;
    // GCS and Bloom are held whole on every rank: past a quarter of the
    // budget they are refused before they are read.
    a.setup_max_held = budget / 4;
    rc = psi_mpi_plan_begin(r, &mp, PSI_ROLE_CLIENT, !count, &a, r->counts, what, files);
    if (rc != 0 ||
        (rc = psi_mpi_read_elements(r, r->s.o.response, what, 0, r->counts, &resp, &n, &total,
                                    NULL, &rec)) != 0 ||
        (rc = psi_mpi_open(r, &r->s.out, r->s.o.output)) != 0 ||
        (rc = psi_mpi_shards(r, PSI_ROLE_CLIENT, !count)) != 0)
        goto done;
    // This rank's part of the response: held, or unmasked a chunk at a
    // time into runs on disk when it is larger than a chunk (§18.5).
    rc = total == r->total ? psi_mpi_records_run(r, &mp, &rec, resp, "unmasking this rank's "
                                                 "part of the response", what, files)
                           : match_check_points(r, &rec, resp, n, what, files);
    if (rc != 0)
        goto done;
    // --payloads: the payload file opened on every rank, and the part's
    // elements kept (held) or found again in the response's records.
    if (r->s.o.payloads != NULL && total == r->total) {
        pay_open = 1;
        if ((rc = psi_mpi_pay_open(r, &pay, resp, &rec,
                                   mp.st.kind == PSI_STEP_UNMASK_SORT)) != 0)
            goto done;
    } else {
        free(resp);
        resp = NULL;
    }
    // A response holds one element per request value (as shardpsi match
    // checks, after the library's checks of the response).
    status = 0;
    if (r->rank == 0 && total != r->total) {
        psi_app_offline_fail(&r->s, "response %s (%llu elements) does not answer a request "
                             "of the %llu values of %s: give the response to this input's "
                             "request", r->s.o.response, (unsigned long long)total,
                             (unsigned long long)r->total, r->s.o.input);
        status = PSI_APP_EXIT_FAIL;
    } else if (r->rank == 0 && !count &&
               psi_plan_match_sink(mp.p, psi_app_index_runs_add, &runs) != PSI_OK) {
        psi_app_offline_fail(&r->s, "cannot stream the intersection");
        status = PSI_APP_EXIT_FAIL;
    }
    if ((rc = psi_mpi_agree(r, status)) != 0)
        goto done;
    // Against GCS and Bloom the plan, with the sink, matches each chunk as
    // it arrives instead of gathering every rank's elements (§20).
    prc = psi_mpi_plan_finish(r, &mp, &o);
    if (prc == PSI_E_IO && runs.file.err[0] != '\0')
        psi_app_offline_fail(&r->s, "%s", runs.file.err);
    else if (prc == PSI_E_IO && setup.err[0] != '\0')
        psi_app_offline_fail(&r->s, "setup %s", setup.err);
    else if (prc != PSI_OK)
        psi_app_offline_fail_psi(&r->s, what, files, prc);
    if ((rc = psi_mpi_agree(r, prc != PSI_OK ? PSI_APP_EXIT_FAIL : 0)) != 0)
        goto done;
    if ((status = match_write(r, &pt, &runs, o.count, pay_open ? &pay : NULL)) > 0) {
        rc = status;
        goto done;
    }
    if (status != 0)
        psi_app_offline_fail(&r->s, "%s: cannot write", r->s.o.output);
    if ((rc = psi_mpi_agree(r, status != 0 ? PSI_APP_EXIT_FAIL : 0)) != 0 ||
        (rc = psi_mpi_commit(r, &r->s.out)) != 0)
        goto done;
    psi_mpi_plan_spilled(r, &mp, spilled, sizeof spilled);
    PSI_MPI_NOTE(r, "%zu of %llu values in the intersection (%d ranks, suite %s)%s", o.count,
                 (unsigned long long)r->total, r->size, psi_app_suite_label(r->s.o.suite),
                 spilled);
done:
    if (pay_open)
        psi_mpi_pay_free(&pay);
    psi_mpi_plan_free(&mp);
    psi_mpi_part_free(&pt);
    psi_app_msg_close(&setup);
    psi_app_index_runs_close(&runs);
    free(resp);
    return rc;
}
