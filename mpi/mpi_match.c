/* shardpsi-mpi match (PROTOCOL.md §18.4): every rank begins the library's
 * client plan (reading the setup from its file, a raw one in windows),
 * unmasks its slice of the response with the step the plan names, and rank
 * 0's finish of the plan merges the slices and walks the setup (§9, §14.4),
 * handing the matched indices to sorted runs on disk (app_index_runs.h).
 * They are read back in input order, the command's output rule (as
 * shardpsi match), each rank is sent its part, and each writes its rows. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_index_runs.h"
#include "app_spill.h"
#include "app_util.h"
#include "mpi_run.h"

/* The MPI type of the library's indices. */
#define MATCH_MPI_SIZE_T (sizeof(size_t) == 8 ? MPI_UINT64_T : MPI_UINT32_T)

/* Indices a list message holds at most. */
#define MATCH_LIST_CHUNK 65536

/* Appends v to a growing list.  Returns: 0 or -1 (no memory). */
static int list_push(size_t **list, size_t *n, size_t *cap, size_t v)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 4096;
        size_t *g = realloc(*list, c * sizeof *g);
        if (g == NULL)
            return -1;
        *list = g;
        *cap = c;
    }
    (*list)[(*n)++] = v;
    return 0;
}

/* Sends rank q a piece of its list (a count, then the indices; a count of
 * 0 ends the list). */
static void list_send(int q, const size_t *piece, size_t c)
{
    uint64_t cnt = c;
    MPI_Send(&cnt, 1, MPI_UINT64_T, q, PSI_MPI_TAG_LIST, MPI_COMM_WORLD);
    if (c > 0)
        MPI_Send(piece, (int)c, MATCH_MPI_SIZE_T, q, PSI_MPI_TAG_LIST, MPI_COMM_WORLD);
}

/* Rank 0 reads the matched indices in ascending order from its runs and
 * sends each rank its part in pieces as it goes, so that it holds one
 * piece and its own part; every rank ends with its own, as indices into
 * its input.  Every rank gets its end of list, even after a failed read on
 * rank 0.  Returns: 0, or -1 (rank 0: a failed read, message in r->s.err;
 * another rank: no memory). */
static int match_scatter(psi_mpi_run *r, psi_app_index_runs *runs, size_t **mine, size_t *n)
{
    size_t cap = 0, v = 0;
    int rc = 0;

    *n = 0;
    if (r->rank == 0) {
        size_t *piece = malloc(MATCH_LIST_CHUNK * sizeof *piece), in_piece = 0;
        int have = piece == NULL ? -1 : psi_app_index_runs_next(runs, &v);
        if (piece == NULL)
            snprintf(runs->file.err, sizeof runs->file.err, "out of memory");
        for (int q = 0; q < r->size; q++) {
            uint64_t end = r->offsets[q] + r->counts[q];
            for (; have > 0 && v < end; have = psi_app_index_runs_next(runs, &v)) {
                if (q == 0 && list_push(mine, n, &cap, v) != 0) {
                    snprintf(runs->file.err, sizeof runs->file.err, "out of memory");
                    have = -1;
                    break;
                }
                if (q > 0)
                    piece[in_piece++] = v - (size_t)r->offsets[q];
                if (in_piece == MATCH_LIST_CHUNK) {
                    list_send(q, piece, in_piece);
                    in_piece = 0;
                }
            }
            if (q > 0 && in_piece > 0)
                list_send(q, piece, in_piece);
            if (q > 0)
                list_send(q, NULL, 0);
            in_piece = 0;
        }
        free(piece);
        if (have < 0) {
            snprintf(r->s.err, sizeof r->s.err, "%s", runs->file.err);
            rc = -1;
        }
        return rc;
    }
    for (;;) {
        uint64_t cnt = 0;
        MPI_Recv(&cnt, 1, MPI_UINT64_T, 0, PSI_MPI_TAG_LIST, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (cnt == 0)
            break;
        if (rc == 0 && *n + cnt > cap) {
            size_t c = cap ? cap : 4096;
            while (c < *n + cnt)
                c *= 2;
            size_t *g = realloc(*mine, c * sizeof *g);
            if (g == NULL)
                rc = -1;
            else
                *mine = g, cap = c;
        }
        if (rc == 0) {
            MPI_Recv(*mine + *n, (int)cnt, MATCH_MPI_SIZE_T, 0, PSI_MPI_TAG_LIST,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            *n += (size_t)cnt;
        } else {
            size_t *sink = malloc((size_t)cnt * sizeof *sink); // drained, so rank 0 goes on
            if (sink == NULL)
                MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
            MPI_Recv(sink, (int)cnt, MATCH_MPI_SIZE_T, 0, PSI_MPI_TAG_LIST, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            free(sink);
        }
    }
    if (rc != 0)
        snprintf(r->s.err, sizeof r->s.err, "out of memory for this rank's result");
    return rc;
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

/* Writes the result: the count, the indices (rank 0 reads them from its
 * runs) or every rank's rows.  Returns: 0, -1 (rank 0 could not write) or
 * an exit code (reported). */
static int match_write(psi_mpi_run *r, psi_app_index_runs *runs, size_t k)
{
    size_t *mine = NULL, n = 0, len = 0, v = 0;
    uint8_t *lines = NULL;
    int bad = 0, rc, have = 1;

    if (r->s.o.mode == PSI_APP_OFFLINE_COUNT)
        return r->rank == 0 && fprintf(r->s.out.f, "%zu\n", k) < 0 ? -1 : 0;
    if (r->rank == 0 && psi_app_index_runs_read_begin(runs) != 0) {
        snprintf(r->s.err, sizeof r->s.err, "%s", runs->file.err);
        have = -1;
    }
    if (r->s.o.mode == PSI_APP_OFFLINE_INDICES) {
        while (r->rank == 0 && have > 0 && !bad &&
               (have = psi_app_index_runs_next(runs, &v)) > 0)
            bad = fprintf(r->s.out.f, "%zu\n", v) < 0;
        if (have < 0 && r->rank == 0)
            snprintf(r->s.err, sizeof r->s.err, "%s", runs->file.err);
        if ((rc = psi_mpi_agree(r, have < 0 ? PSI_APP_EXIT_FAIL : 0)) != 0)
            return rc;
        return bad ? -1 : 0;
    }
    if ((rc = psi_mpi_agree(r, have < 0 ? PSI_APP_EXIT_FAIL : 0)) != 0)
        return rc;
    int st = match_scatter(r, runs, &mine, &n);
    if (st == 0 && match_rows(r, mine, n, &lines, &len) != 0) {
        snprintf(r->s.err, sizeof r->s.err, "out of memory for this rank's result");
        st = -1;
    }
    free(mine);
    if ((rc = psi_mpi_agree(r, st != 0 ? PSI_APP_EXIT_FAIL : 0)) != 0) {
        free(lines);
        return rc;
    }
    rc = psi_mpi_stream_bytes(r, r->s.out.f, lines, len);
    free(lines);
    return rc;
}

int psi_mpi_match(psi_mpi_run *r)
{
    psi_mpi_plan mp;
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
    char files[512];
    int rc, prc, status = 0;

    memset(&mp, 0, sizeof mp);
    memset(&a, 0, sizeof a);
    memset(&o, 0, sizeof o);
    // Rank 0's matched indices go to sorted runs in --temp-dir (else
    // $TMPDIR, else the output's directory), a sixteenth of the budget.
    psi_app_index_runs_init(&runs, r->temp_dir, budget / 16);
    snprintf(files, sizeof files, "setup %s, response %s", r->s.o.setup, r->s.o.response);
    if ((rc = psi_mpi_share_key(r)) != 0 || (rc = psi_mpi_read_input(r)) != 0)
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
    rc = psi_mpi_plan_begin(r, &mp, PSI_ROLE_CLIENT, !count, &a, r->counts, what, files);
    if (rc != 0 ||
        (rc = psi_mpi_read_elements(r, r->s.o.response, what, 0, r->counts, &resp, &n, &total,
                                NULL, NULL)) != 0 ||
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
    if ((status = match_write(r, &runs, o.count)) > 0) {
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
    psi_app_msg_close(&setup);
    psi_app_index_runs_close(&runs);
    free(resp);
    return rc;
}
