/* shardpsi-mpi setup, request and response (PROTOCOL.md §18): each rank masks
 * its slice on its own shards, rank 0 writes the merged message.  The
 * failures and their messages are those of the single-process commands
 * (cli_offline_steps.c), prefixed with the failing rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app_clock.h"
#include "app_util.h"
#include "mpi_run.h"

/* Fails with "cannot write" when rc says rank 0 could not write `path`.
 * Returns: as psi_mpi_agree. */
static int steps_wrote(psi_mpi_run *r, int rc, const char *path)
{
    if (rc != 0)
        psi_app_offline_fail(&r->s, "%s: cannot write", path);
    return psi_mpi_agree(r, rc != 0 ? PSI_APP_EXIT_FAIL : 0);
}

/* Masks this rank's values into *elems.  Returns: as psi_mpi_agree. */
static int steps_mask(psi_mpi_run *r, const char *step, const char *fail, uint8_t **elems)
{
    size_t n = r->s.in.n, len = n * PSI_ELEMENT_BYTES;
    int prc;

    psi_app_progress_begin(&r->s.prog, step, n);
    prc = psi_shards_mask(r->s.g, *elems, &len, r->s.in.values, n);
    psi_app_progress_end(&r->s.prog);
    if (prc != PSI_OK)
        psi_app_offline_fail_psi(&r->s, fail, NULL, prc);
    return psi_mpi_agree(r, prc != PSI_OK ? PSI_APP_EXIT_FAIL : 0);
}

/* Allocates n elements (and n indices when idx != NULL).  Returns: as
 * psi_mpi_agree. */
static int steps_alloc(psi_mpi_run *r, size_t n, uint8_t **elems, uint64_t **idx,
                       const char *what)
{
    *elems = psi_app_alloc(n, PSI_ELEMENT_BYTES);
    if (idx != NULL)
        *idx = psi_app_alloc(n, sizeof **idx);
    if (*elems == NULL || (idx != NULL && *idx == NULL))
        psi_app_offline_fail(&r->s, "out of memory for the %s", what);
    return psi_mpi_agree(r, *elems == NULL || (idx != NULL && *idx == NULL) ? PSI_APP_EXIT_FAIL : 0);
}

/* The writer of a merged stream of records (raw setup, reveal-off
 * response; tag 0a in both): each element's record, and its line of the
 * permutation when perm is set. */
typedef struct record_writer {
    FILE *out, *perm;
    int suite;
} record_writer;

static int steps_emit(void *arg, const uint8_t *elem, uint64_t index)
{
    record_writer *w = arg;
    uint8_t rec[2 + PSI_ELEMENT_BYTES];
    size_t len = psi_mpi_record(rec, 0x0a, w->suite, elem);

    if (fwrite(rec, 1, len, w->out) != len)
        return -1;
    if (w->perm != NULL && fprintf(w->perm, "%llu\n", (unsigned long long)index) < 0)
        return -1;
    return 0;
}

/* The raw setup: sort each slice with its global indices, merge on rank 0
 * (§14.2).  Returns: as psi_mpi_agree. */
static int steps_setup_raw(psi_mpi_run *r, psi_app_output *po, uint8_t *elems, uint64_t *idx)
{
    size_t n = r->s.in.n, *perm = psi_app_alloc(n, sizeof *perm);
    uint8_t head[16], sub[16];
    size_t hlen = sizeof head, rec = 2 + psi_suite_element_bytes(r->s.o.suite), slen;
    record_writer w = {r->s.out.f, po->f, r->s.o.suite};
    int prc = perm == NULL ? PSI_E_NOMEM : psi_elements_sort(elems, perm, n), rc;

    if (prc != PSI_OK)
        psi_app_offline_fail_psi(&r->s, "cannot build the setup", NULL, prc);
    for (size_t i = 0; prc == PSI_OK && i < n; i++)
        idx[i] = r->offsets[r->rank] + perm[i];
    free(perm);
    if ((rc = psi_mpi_agree(r, prc != PSI_OK ? PSI_APP_EXIT_FAIL : 0)) != 0)
        return rc;
    rc = 0;
    if (r->rank == 0) {
        // The suite header (an empty Response is exactly that), then the
        // RawInfo field with its length: total records (§10).
        psi_response_encode_suite(head, &hlen, r->s.o.suite, NULL, 0);
        slen = 0;
        sub[slen++] = 0x0a;
        slen += psi_mpi_varint(sub + slen, r->total * rec);
        if (fwrite(head, 1, hlen, w.out) != hlen || fwrite(sub, 1, slen, w.out) != slen)
            rc = -1;
    }
    if (psi_mpi_stream_merge(r, elems, idx, n, steps_emit, &w) != 0)
        rc = -1;
    return steps_wrote(r, rc, r->s.o.output);
}

/* GCS and Bloom: rank 0 builds the structure from all elements (§14.2).
 * Returns: as psi_mpi_agree. */
static int steps_setup_built(psi_mpi_run *r, const psi_setup_params *p, size_t cap,
                             const uint8_t *elems)
{
    uint8_t *all = NULL, *buf = NULL;
    size_t len = cap;
    int rc = psi_mpi_gather_elements(r, elems, r->s.in.n, &all), prc, status = 0;

    if (rc != 0)
        return rc;
    if (r->rank == 0) {
        if ((buf = psi_app_alloc(cap, 1)) == NULL) {
            psi_app_offline_fail(&r->s, "out of memory for the setup");
            status = PSI_APP_EXIT_FAIL;
        } else if ((prc = psi_setup_encode_suite(buf, &len, r->s.o.suite, p, all,
                                                 (size_t)r->total)) != PSI_OK) {
            psi_app_offline_fail_psi(&r->s, "cannot build the setup", NULL, prc);
            status = PSI_APP_EXIT_FAIL;
        } else if (len > 0 && fwrite(buf, 1, len, r->s.out.f) != len) {
            psi_app_offline_fail(&r->s, "%s: cannot write", r->s.o.output);
            status = PSI_APP_EXIT_FAIL;
        }
    }
    free(all);
    free(buf);
    return psi_mpi_agree(r, status);
}

int psi_mpi_setup(psi_mpi_run *r)
{
    psi_app_output po;
    psi_setup_params p;
    uint8_t *elems = NULL;
    uint64_t *idx = NULL;
    size_t cap = 0;
    double t[3];
    int raw = r->s.o.structure == PSI_STRUCTURE_RAW, rc, prc;

    memset(&po, 0, sizeof po);
    t[0] = psi_app_now_ms();
    if ((rc = psi_mpi_share_key(r)) != 0 || (rc = psi_mpi_read_input(r)) != 0 ||
        (rc = psi_mpi_open(r, &r->s.out, r->s.o.output)) != 0 ||
        (r->s.o.permutation != NULL && (rc = psi_mpi_open(r, &po, r->s.o.permutation)) != 0))
        goto done;
    memset(&p, 0, sizeof p);
    p.structure = (psi_structure)r->s.o.structure;
    p.fpr = r->s.o.fpr != 0 ? r->s.o.fpr : PSI_APP_DEFAULT_FPR;
    p.num_client_inputs = r->s.o.num_client != 0 ? (int64_t)r->s.o.num_client : 1;
    prc = psi_setup_bound_suite(&cap, r->s.o.suite, &p, (size_t)r->total);
    if (prc != PSI_OK)
        psi_app_offline_fail_psi(&r->s, "setup parameters", NULL, prc);
    if ((rc = psi_mpi_agree(r, prc != PSI_OK ? PSI_APP_EXIT_FAIL : 0)) != 0 ||
        (rc = steps_alloc(r, r->s.in.n, &elems, raw ? &idx : NULL, "setup")) != 0 ||
        (rc = psi_mpi_shards(r, PSI_ROLE_SERVER, 1)) != 0 ||
        (rc = steps_mask(r, "masking this rank's part of the setup", "cannot build the setup",
                         &elems)) != 0)
        goto done;
    t[1] = psi_app_now_ms(); // after the agreement: the slowest rank's masking is done
    rc = raw ? steps_setup_raw(r, &po, elems, idx) : steps_setup_built(r, &p, cap, elems);
    // The permutation first: if the setup's rename then fails, it goes too.
    if (rc != 0 || (r->s.o.permutation != NULL && (rc = psi_mpi_commit(r, &po)) != 0))
        goto done;
    if ((rc = psi_mpi_commit(r, &r->s.out)) != 0) {
        if (r->rank == 0 && r->s.o.permutation != NULL)
            unlink(r->s.o.permutation);
        goto done;
    }
    t[2] = psi_app_now_ms();
    PSI_MPI_NOTE(r, "%llu values on %d ranks: a %s setup (suite %s)%s; "
                          "%.1f s: key, read and mask %.1f s, sort, merge and write %.1f s",
                          (unsigned long long)r->total, r->size,
                          psi_app_structure_name(r->s.o.structure),
                          psi_app_suite_label(r->s.o.suite),
                          r->s.o.permutation != NULL ? ", and its permutation" : "",
                          (t[2] - t[0]) / 1e3, (t[1] - t[0]) / 1e3, (t[2] - t[1]) / 1e3);
done:
    psi_app_output_abort(&po);
    free(elems);
    free(idx);
    return rc;
}

int psi_mpi_request(psi_mpi_run *r)
{
    uint8_t *elems = NULL, head[16];
    size_t hlen = sizeof head;
    int reveal = r->s.o.mode != PSI_APP_OFFLINE_COUNT, rc, wrc = 0;

    if ((rc = psi_mpi_share_key(r)) != 0 || (rc = psi_mpi_read_input(r)) != 0 ||
        (rc = psi_mpi_open(r, &r->s.out, r->s.o.output)) != 0 ||
        (rc = steps_alloc(r, r->s.in.n, &elems, NULL, "request")) != 0 ||
        (rc = psi_mpi_shards(r, PSI_ROLE_CLIENT, reveal)) != 0 ||
        (rc = steps_mask(r, "masking this rank's part of the request",
                         "cannot build the request", &elems)) != 0)
        goto done;
    if (r->rank == 0) {
        psi_request_encode_suite(head, &hlen, r->s.o.suite, reveal, NULL, 0);
        if (hlen > 0 && fwrite(head, 1, hlen, r->s.out.f) != hlen)
            wrc = -1;
    }
    if (psi_mpi_stream_records(r, r->s.out.f, 0x12, elems, r->s.in.n) != 0)
        wrc = -1;
    if ((rc = steps_wrote(r, wrc, r->s.o.output)) != 0 ||
        (rc = psi_mpi_commit(r, &r->s.out)) != 0)
        goto done;
    PSI_MPI_NOTE(r, "%llu values on %d ranks: a request (suite %s, %s)",
                          (unsigned long long)r->total, r->size,
                          psi_app_suite_label(r->s.o.suite),
                          reveal ? "reveal" : "count only");
done:
    free(elems);
    return rc;
}

/* The reveal check of §8, with shardpsi response's messages.  Returns: 0 or 1. */
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
    uint8_t *in = NULL, *out = NULL, head[16];
    size_t n = 0, len, hlen = sizeof head;
    uint64_t total = 0;
    record_writer w = {NULL, NULL, r->s.o.suite};
    int asked = 0, rc, prc, wrc = 0;

    if ((rc = psi_mpi_share_key(r)) != 0 ||
        (rc = psi_mpi_read_elements(r, r->s.o.request, "the request is invalid", 1, NULL, &in,
                                &n, &total, &asked)) != 0 ||
        (rc = psi_mpi_open(r, &r->s.out, r->s.o.output)) != 0 ||
        (rc = psi_mpi_agree(r, r->rank == 0 ? steps_reveal_check(r, asked) : 0)) != 0 ||
        (rc = steps_alloc(r, n, &out, NULL, "response")) != 0 ||
        (rc = psi_mpi_shards(r, PSI_ROLE_SERVER, r->s.o.reveal)) != 0)
        goto done;
    len = n * PSI_ELEMENT_BYTES;
    psi_app_progress_begin(&r->s.prog, "masking this rank's part of the response", n);
    prc = psi_shards_remask(r->s.g, out, &len, in, n);
    psi_app_progress_end(&r->s.prog);
    if (prc == PSI_OK && !r->s.o.reveal)
        prc = psi_elements_sort(out, NULL, n); // §8: sorted when only the size is revealed
    if (prc != PSI_OK)
        psi_app_offline_fail_psi(&r->s, "the request is invalid", r->s.o.request, prc);
    if ((rc = psi_mpi_agree(r, prc != PSI_OK ? PSI_APP_EXIT_FAIL : 0)) != 0)
        goto done;
    if (r->rank == 0) {
        psi_response_encode_suite(head, &hlen, r->s.o.suite, NULL, 0);
        if (hlen > 0 && fwrite(head, 1, hlen, r->s.out.f) != hlen)
            wrc = -1;
    }
    w.out = r->s.out.f;
    if (r->s.o.reveal ? psi_mpi_stream_records(r, r->s.out.f, 0x0a, out, n) != 0
                      : psi_mpi_stream_merge(r, out, NULL, n, steps_emit, &w) != 0)
        wrc = -1;
    if ((rc = steps_wrote(r, wrc, r->s.o.output)) != 0 ||
        (rc = psi_mpi_commit(r, &r->s.out)) != 0)
        goto done;
    PSI_MPI_NOTE(r, "%llu elements on %d ranks: a response (suite %s, %s)",
                          (unsigned long long)total, r->size,
                          psi_app_suite_label(r->s.o.suite),
                          r->s.o.reveal ? "intersection revealed" : "size only");
done:
    free(in);
    free(out);
    return rc;
}
