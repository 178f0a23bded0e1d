/* shardpsi-mpi match (PROTOCOL.md §18.4): each rank unmasks its slice of the
 * response and matches it against the whole setup; for GCS and Bloom that
 * is exact per element, and the indices only need the rank's offset.  A raw
 * setup pairs each setup copy with one client copy (§9.1), so copies of one
 * value on several ranks could claim one setup copy twice: rank 0 merges
 * the ranks' matches in (bytes, index) order and drops the copies beyond
 * the setup's, which the ranks then remove. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"
#include "mpi_run.h"

static int match_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

static int match_cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;

    return (x > y) - (x < y);
}

/* Rank 0's walk over the merged matches: a run of equal elements keeps its
 * first m copies, m = how many of them the setup pairs (psi_setup_count on
 * the run), and the rest are dropped. */
typedef struct match_walk {
    const psi_setup *setup;
    uint8_t *run;         // the current run's copies, run_n of them
    uint64_t *run_idx;
    size_t run_n, run_cap;
    uint64_t *drop;       // dropped global indices
    size_t drop_n, drop_cap;
    int failed;
} match_walk;

static int walk_grow(void **p, size_t *cap, size_t need, size_t each)
{
    size_t c = *cap ? *cap : 64;
    void *q;

    if (need <= *cap)
        return 0;
    while (c < need)
        c *= 2;
    if ((q = realloc(*p, c * each)) == NULL)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int walk_flush(match_walk *w)
{
    size_t keep = 0;

    if (w->run_n > 1 && psi_setup_count(w->setup, &keep, w->run, w->run_n) != PSI_OK)
        return -1;
    if (w->run_n <= 1)
        keep = w->run_n;
    for (size_t i = keep; i < w->run_n; i++) {
        size_t cap = w->drop_cap;
        if (walk_grow((void **)&w->drop, &cap, w->drop_n + 1, sizeof *w->drop) != 0)
            return -1;
        w->drop_cap = cap;
        w->drop[w->drop_n++] = w->run_idx[i];
    }
    w->run_n = 0;
    return 0;
}

static int walk_emit(void *arg, const uint8_t *elem, uint64_t index)
{
    match_walk *w = arg;
    size_t cap;

    if (w->run_n > 0 && memcmp(w->run, elem, PSI_ELEMENT_BYTES) != 0 && walk_flush(w) != 0)
        return -1;
    cap = w->run_cap;
    if (walk_grow((void **)&w->run, &cap, w->run_n + 1, PSI_ELEMENT_BYTES) != 0)
        return -1;
    cap = w->run_cap;
    if (walk_grow((void **)&w->run_idx, &cap, w->run_n + 1, sizeof *w->run_idx) != 0)
        return -1;
    w->run_cap = cap;
    memcpy(w->run + w->run_n * PSI_ELEMENT_BYTES, elem, PSI_ELEMENT_BYTES);
    w->run_idx[w->run_n++] = index;
    return 0;
}

/* A raw setup: removes from idx (k local indices, ascending) the copies the
 * single walk would not pair.  Returns: as psi_mpi_agree. */
static int match_raw_pairs(psi_mpi_run *r, const psi_setup *setup, const uint8_t *un,
                           size_t *idx, size_t *k)
{
    size_t n = *k, *perm = psi_app_alloc(n, sizeof *perm);
    uint8_t *cand = psi_app_alloc(n, PSI_ELEMENT_BYTES);
    uint64_t *gidx = psi_app_alloc(n, sizeof *gidx), *drop = NULL, cnt = 0;
    const uint64_t *list;
    match_walk w;
    int status = 0, rc;

    memset(&w, 0, sizeof w);
    w.setup = setup;
    if (perm == NULL || cand == NULL || gidx == NULL) {
        psi_app_offline_fail(&r->s, "out of memory for the matches");
        status = PSI_APP_EXIT_FAIL;
    }
    for (size_t i = 0; status == 0 && i < n; i++)
        memcpy(cand + i * PSI_ELEMENT_BYTES, un + idx[i] * PSI_ELEMENT_BYTES,
               PSI_ELEMENT_BYTES);
    if (status == 0 && psi_elements_sort(cand, perm, n) != PSI_OK) {
        psi_app_offline_fail(&r->s, "out of memory for the matches");
        status = PSI_APP_EXIT_FAIL;
    }
    for (size_t i = 0; status == 0 && i < n; i++)
        gidx[i] = r->offsets[r->rank] + idx[perm[i]];
    free(perm);
    if ((rc = psi_mpi_agree(r, status)) != 0)
        goto done;
    // (bytes, index) order on every rank: idx ascending and a stable sort.
    if (psi_mpi_stream_merge(r, cand, gidx, n, walk_emit, &w) != 0 || walk_flush(&w) != 0) {
        psi_app_offline_fail(&r->s, "out of memory for the matches");
        w.failed = 1;
    }
    if ((rc = psi_mpi_agree(r, w.failed ? PSI_APP_EXIT_FAIL : 0)) != 0)
        goto done;
    // The dropped indices go back to the ranks that hold them (w.drop is
    // NULL when none was dropped: then `none` stands for the empty list).
    if (r->rank == 0) {
        static const uint64_t none[1];
        size_t a = 0;
        if (w.drop_n > 1)
            qsort(w.drop, w.drop_n, sizeof *w.drop, match_cmp_u64);
        for (int q = 0; q < r->size; q++) {
            size_t b = a;
            while (b < w.drop_n && w.drop[b] < r->offsets[q] + r->counts[q])
                b++;
            cnt = b - a;
            if (q == 0) {
                n = (size_t)cnt; // rank 0's come first
            } else {
                MPI_Send(&cnt, 1, MPI_UINT64_T, q, PSI_MPI_TAG_LIST, MPI_COMM_WORLD);
                MPI_Send(w.drop != NULL ? w.drop + a : none, (int)cnt, MPI_UINT64_T, q,
                         PSI_MPI_TAG_LIST, MPI_COMM_WORLD);
            }
            a = b;
        }
        list = w.drop != NULL ? w.drop : none;
    } else {
        MPI_Recv(&cnt, 1, MPI_UINT64_T, 0, PSI_MPI_TAG_LIST, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if ((drop = psi_app_alloc((size_t)cnt, sizeof *drop)) == NULL)
            MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
        MPI_Recv(drop, (int)cnt, MPI_UINT64_T, 0, PSI_MPI_TAG_LIST, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        n = (size_t)cnt;
        list = drop;
    }
    {
        size_t d = 0, kept = 0;
        for (size_t i = 0; i < *k; i++) {
            uint64_t g = r->offsets[r->rank] + idx[i];
            while (d < n && list[d] < g)
                d++;
            if (d >= n || list[d] != g)
                idx[kept++] = idx[i];
        }
        *k = kept;
    }
done:
    free(cand);
    free(gidx);
    free(drop);
    free(w.drop);
    free(w.run);
    free(w.run_idx);
    return rc;
}

/* This rank's lines of the result: its matched rows, or their global
 * indices, in input order.  Returns: 0 or -1 (no memory). */
static int match_lines(psi_mpi_run *r, const size_t *idx, size_t k, uint8_t **buf, size_t *len)
{
    const psi_app_input *in = &r->s.in;
    size_t cap = 0, at = 0;

    for (size_t i = 0; i < k; i++) {
        size_t add = r->s.o.mode == PSI_APP_OFFLINE_ROWS ? in->values[idx[i]].len + 1 : 21;
        if (cap > SIZE_MAX - add)
            return -1;
        cap += add;
    }
    if ((*buf = psi_app_alloc(cap, 1)) == NULL)
        return -1;
    for (size_t i = 0; i < k; i++) {
        if (r->s.o.mode == PSI_APP_OFFLINE_ROWS) {
            memcpy(*buf + at, in->values[idx[i]].data, in->values[idx[i]].len);
            at += in->values[idx[i]].len;
            (*buf)[at++] = '\n';
        } else {
            at += (size_t)snprintf((char *)*buf + at, 21, "%llu\n",
                                   (unsigned long long)(r->offsets[r->rank] + idx[i]));
        }
    }
    *len = at;
    return 0;
}

/* Matches this rank's unmasked elements: *k indices into them, ascending
 * (count mode of GCS and Bloom: only *k).  Returns: as psi_mpi_agree. */
static int match_local(psi_mpi_run *r, const psi_setup *setup, const uint8_t *un, size_t n,
                       size_t **idx, size_t *k)
{
    int raw = psi_setup_structure(setup) == PSI_STRUCTURE_RAW, prc, rc;

    *k = n;
    if (r->s.o.mode == PSI_APP_OFFLINE_COUNT && !raw) {
        prc = psi_setup_count(setup, k, un, n);
    } else if ((*idx = psi_app_alloc(n, sizeof **idx)) == NULL) {
        prc = PSI_E_NOMEM;
    } else {
        prc = psi_setup_match(setup, *idx, k, un, n);
        if (prc == PSI_OK)
            qsort(*idx, *k, sizeof **idx, match_cmp_size);
    }
    if (prc != PSI_OK)
        psi_app_offline_fail_psi(&r->s, "cannot match", NULL, prc);
    if ((rc = psi_mpi_agree(r, prc != PSI_OK ? PSI_APP_EXIT_FAIL : 0)) != 0 || !raw)
        return rc;
    return match_raw_pairs(r, setup, un, *idx, k);
}

int psi_mpi_match(psi_mpi_run *r)
{
    uint8_t *setup_msg = NULL, *resp = NULL, *un = NULL, *lines = NULL;
    size_t setup_len = 0, n = 0, k = 0, *idx = NULL, len = 0;
    uint64_t total = 0, mine, sum = 0;
    psi_setup *setup = NULL;
    const char *what = r->s.o.mode == PSI_APP_OFFLINE_COUNT ? "cannot count the intersection"
                                                     : "cannot compute the intersection";
    char files[512];
    int rc, prc, status = 0;

    snprintf(files, sizeof files, "setup %s, response %s", r->s.o.setup, r->s.o.response);
    if ((rc = psi_mpi_share_key(r)) != 0 || (rc = psi_mpi_read_input(r)) != 0)
        goto done;
    // Every rank matches against the whole setup.
    if (psi_app_offline_read_msg(&r->s, r->s.o.setup, "setup", &setup_msg, &setup_len) != 0)
        status = PSI_APP_EXIT_USAGE;
    if ((rc = psi_mpi_agree(r, status)) != 0)
        goto done;
    if ((prc = psi_setup_parse_suite(&setup, r->s.o.suite, setup_msg, setup_len)) != PSI_OK)
        psi_app_offline_fail_psi(&r->s, what, files, prc);
    free(setup_msg);
    setup_msg = NULL;
    if ((rc = psi_mpi_agree(r, prc != PSI_OK ? PSI_APP_EXIT_FAIL : 0)) != 0 ||
        (rc = psi_mpi_read_elements(r, r->s.o.response, what, 0, r->counts, &resp, &n, &total,
                                NULL)) != 0 ||
        (rc = psi_mpi_open(r, &r->s.out, r->s.o.output)) != 0 ||
        (rc = psi_mpi_shards(r, PSI_ROLE_CLIENT, r->s.o.mode != PSI_APP_OFFLINE_COUNT)) != 0)
        goto done;
    un = psi_app_alloc(n, PSI_ELEMENT_BYTES);
    len = n * PSI_ELEMENT_BYTES;
    psi_app_progress_begin(&r->s.prog, "unmasking this rank's part of the response", n);
    prc = un == NULL ? PSI_E_NOMEM : psi_shards_unmask(r->s.g, un, &len, resp, n);
    psi_app_progress_end(&r->s.prog);
    if (prc != PSI_OK)
        psi_app_offline_fail_psi(&r->s, what, files, prc);
    if ((rc = psi_mpi_agree(r, prc != PSI_OK ? PSI_APP_EXIT_FAIL : 0)) != 0)
        goto done;
    // A response holds one element per request value (as shardpsi match checks).
    status = 0;
    if (r->rank == 0 && total != r->total) {
        psi_app_offline_fail(&r->s, "response %s (%llu elements) does not answer a request "
                             "of the %llu values of %s: give the response to this input's "
                             "request", r->s.o.response, (unsigned long long)total,
                             (unsigned long long)r->total, r->s.o.input);
        status = PSI_APP_EXIT_FAIL;
    }
    if ((rc = psi_mpi_agree(r, status)) != 0 ||
        (rc = match_local(r, setup, un, n, &idx, &k)) != 0)
        goto done;
    mine = k;
    MPI_Reduce(&mine, &sum, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    status = 0;
    if (r->s.o.mode == PSI_APP_OFFLINE_COUNT) {
        if (r->rank == 0 && fprintf(r->s.out.f, "%llu\n", (unsigned long long)sum) < 0)
            status = -1;
    } else {
        if (match_lines(r, idx, k, &lines, &len) != 0) {
            psi_app_offline_fail(&r->s, "out of memory for this rank's result");
            status = PSI_APP_EXIT_FAIL;
        }
        if ((rc = psi_mpi_agree(r, status)) != 0)
            goto done;
        status = psi_mpi_stream_bytes(r, r->s.out.f, lines, len);
    }
    if (status != 0)
        psi_app_offline_fail(&r->s, "%s: cannot write", r->s.o.output);
    if ((rc = psi_mpi_agree(r, status != 0 ? PSI_APP_EXIT_FAIL : 0)) != 0 ||
        (rc = psi_mpi_commit(r, &r->s.out)) != 0)
        goto done;
    PSI_MPI_NOTE(r, "%llu of %llu values in the intersection (%d ranks, "
                          "suite %s)", (unsigned long long)sum, (unsigned long long)r->total,
                          r->size, psi_app_suite_label(r->s.o.suite));
done:
    psi_setup_free(setup);
    free(setup_msg);
    free(resp);
    free(un);
    free(idx);
    free(lines);
    return rc;
}
