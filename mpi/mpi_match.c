/* shardpsi-mpi match (PROTOCOL.md §18.4): every rank begins the library's
 * client plan (parsing the whole setup), unmasks its slice of the response
 * with the step the plan names, and rank 0's finish of the plan merges the
 * slices and walks the setup (§9, §14.4) into the result.  The indices are
 * then put in input order, the command's output rule (as shardpsi match),
 * and each rank writes its rows. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"
#include "mpi_run.h"

/* The MPI type of the library's indices. */
#define MATCH_MPI_SIZE_T (sizeof(size_t) == 8 ? MPI_UINT64_T : MPI_UINT32_T)

/* Rank 0 sends each rank its part of the sorted result (global indices);
 * every rank ends with its own, as indices into its input.  Returns: 0. */
static int match_scatter(psi_mpi_run *r, const size_t *all, size_t k, size_t **mine,
                         size_t *n)
{
    uint64_t cnt = 0;

    if (r->rank == 0) {
        size_t a = 0;
        for (int q = 0; q < r->size; q++) {
            size_t b = a;
            while (b < k && all[b] < r->offsets[q] + r->counts[q])
                b++;
            cnt = b - a;
            if (q == 0) {
                *n = (size_t)cnt; // rank 0's come first, and its offset is 0
            } else {
                MPI_Send(&cnt, 1, MPI_UINT64_T, q, PSI_MPI_TAG_LIST, MPI_COMM_WORLD);
                MPI_Send(all + a, (int)cnt, MATCH_MPI_SIZE_T, q, PSI_MPI_TAG_LIST,
                         MPI_COMM_WORLD);
            }
            a = b;
        }
        return 0;
    }
    MPI_Recv(&cnt, 1, MPI_UINT64_T, 0, PSI_MPI_TAG_LIST, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if ((*mine = psi_app_alloc((size_t)cnt, sizeof **mine)) == NULL)
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    MPI_Recv(*mine, (int)cnt, MATCH_MPI_SIZE_T, 0, PSI_MPI_TAG_LIST, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    *n = (size_t)cnt;
    for (size_t i = 0; i < *n; i++)
        (*mine)[i] -= r->offsets[r->rank];
    return 0;
}

/* A response of another size than the input's is refused, as shardpsi
 * match refuses it, only after its points have been checked as the
 * library checks them: this rank's part is unmasked here, and dropped.
 * Returns: as psi_mpi_agree. */
static int match_check_points(psi_mpi_run *r, const uint8_t *resp, size_t n,
                              const char *what, const char *files)
{
    uint8_t *un = psi_app_alloc(n, PSI_ELEMENT_BYTES);
    size_t len = n * PSI_ELEMENT_BYTES;
    int prc = un == NULL ? PSI_E_NOMEM : psi_shards_unmask(r->s.g, un, &len, resp, n);

    free(un);
    if (prc != PSI_OK)
        psi_app_offline_fail_psi(&r->s, what, files, prc);
    return psi_mpi_agree(r, prc != PSI_OK ? PSI_APP_EXIT_FAIL : 0);
}

/* This rank's matched rows, in input order.  Returns: 0 or -1 (no memory). */
static int match_rows(psi_mpi_run *r, const size_t *idx, size_t k, uint8_t **buf, size_t *len)
{
    const psi_app_input *in = &r->s.in;
    size_t cap = 0, at = 0;

    for (size_t i = 0; i < k; i++) {
        if (cap > SIZE_MAX - in->values[idx[i]].len - 1)
            return -1;
        cap += in->values[idx[i]].len + 1;
    }
    if ((*buf = psi_app_alloc(cap, 1)) == NULL)
        return -1;
    for (size_t i = 0; i < k; i++) {
        memcpy(*buf + at, in->values[idx[i]].data, in->values[idx[i]].len);
        at += in->values[idx[i]].len;
        (*buf)[at++] = '\n';
    }
    *len = at;
    return 0;
}

/* Writes the result: the count, the indices (rank 0 holds them all) or
 * every rank's rows.  Returns: 0, -1 (rank 0 could not write) or an exit
 * code (reported). */
static int match_write(psi_mpi_run *r, size_t *idx, size_t k)
{
    size_t *mine = NULL, n = 0, len = 0;
    uint8_t *lines = NULL;
    int bad = 0, rc;

    if (r->s.o.mode == PSI_APP_OFFLINE_COUNT)
        return r->rank == 0 && fprintf(r->s.out.f, "%zu\n", k) < 0 ? -1 : 0;
    if (r->rank == 0)
        psi_app_sort_indices(idx, k);
    if (r->s.o.mode == PSI_APP_OFFLINE_INDICES) {
        for (size_t i = 0; r->rank == 0 && !bad && i < k; i++)
            bad = fprintf(r->s.out.f, "%zu\n", idx[i]) < 0;
        return bad ? -1 : 0;
    }
    match_scatter(r, idx, k, &mine, &n);
    if (match_rows(r, r->rank == 0 ? idx : mine, n, &lines, &len) != 0)
        psi_app_offline_fail(&r->s, "out of memory for this rank's result");
    free(mine);
    if ((rc = psi_mpi_agree(r, lines == NULL ? PSI_APP_EXIT_FAIL : 0)) != 0)
        return rc;
    rc = psi_mpi_stream_bytes(r, r->s.out.f, lines, len);
    free(lines);
    return rc;
}

int psi_mpi_match(psi_mpi_run *r)
{
    psi_mpi_plan mp;
    psi_op_args a;
    psi_op_output o;
    uint8_t *setup_msg = NULL, *resp = NULL;
    size_t setup_len = 0, n = 0, *idx = NULL;
    uint64_t total = 0;
    int count = r->s.o.mode == PSI_APP_OFFLINE_COUNT;
    const char *what = count ? "cannot count the intersection"
                             : "cannot compute the intersection";
    char files[512];
    int rc, prc, status = 0;

    memset(&mp, 0, sizeof mp);
    memset(&a, 0, sizeof a);
    memset(&o, 0, sizeof o);
    snprintf(files, sizeof files, "setup %s, response %s", r->s.o.setup, r->s.o.response);
    if ((rc = psi_mpi_share_key(r)) != 0 || (rc = psi_mpi_read_input(r)) != 0)
        goto done;
    // Every rank's plan parses the whole setup; its slices are the input's.
    if (psi_app_offline_read_msg(&r->s, r->s.o.setup, "setup", &setup_msg, &setup_len) != 0)
        status = PSI_APP_EXIT_USAGE;
    if ((rc = psi_mpi_agree(r, status)) != 0)
        goto done;
    a.op = count ? PSI_OP_INTERSECTION_SIZE : PSI_OP_INTERSECTION;
    a.n_values = (size_t)r->total;
    a.setup = setup_msg;
    a.setup_len = setup_len;
    rc = psi_mpi_plan_begin(r, &mp, PSI_ROLE_CLIENT, !count, &a, r->counts, what, files);
    free(setup_msg);
    if (rc != 0 ||
        (rc = psi_mpi_read_elements(r, r->s.o.response, what, 0, r->counts, &resp, &n, &total,
                                NULL)) != 0 ||
        (rc = psi_mpi_open(r, &r->s.out, r->s.o.output)) != 0 ||
        (rc = psi_mpi_shards(r, PSI_ROLE_CLIENT, !count)) != 0)
        goto done;
    rc = total == r->total ? psi_mpi_plan_run(r, &mp, "unmasking this rank's part of the "
                                              "response", NULL, resp, what, files)
                           : match_check_points(r, resp, n, what, files);
    if (rc != 0)
        goto done;
    free(resp);
    resp = NULL;
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
               (idx = psi_app_alloc((size_t)r->total, sizeof *idx)) == NULL) {
        psi_app_offline_fail(&r->s, "out of memory for the intersection");
        status = PSI_APP_EXIT_FAIL;
    }
    if ((rc = psi_mpi_agree(r, status)) != 0)
        goto done;
    o.indices = idx;
    o.count = count ? 0 : (size_t)r->total;
    if ((prc = psi_mpi_plan_finish(r, &mp, &o)) != PSI_OK)
        psi_app_offline_fail_psi(&r->s, what, files, prc);
    if ((rc = psi_mpi_agree(r, prc != PSI_OK ? PSI_APP_EXIT_FAIL : 0)) != 0)
        goto done;
    if ((status = match_write(r, idx, o.count)) > 0) {
        rc = status;
        goto done;
    }
    if (status != 0)
        psi_app_offline_fail(&r->s, "%s: cannot write", r->s.o.output);
    if ((rc = psi_mpi_agree(r, status != 0 ? PSI_APP_EXIT_FAIL : 0)) != 0 ||
        (rc = psi_mpi_commit(r, &r->s.out)) != 0)
        goto done;
    PSI_MPI_NOTE(r, "%zu of %llu values in the intersection (%d ranks, suite %s)", o.count,
                 (unsigned long long)r->total, r->size, psi_app_suite_label(r->s.o.suite));
done:
    psi_mpi_plan_free(&mp);
    free(resp);
    free(idx);
    return rc;
}
