/* Each rank's part of a request or response file (PROTOCOL.md §18.1):
 * read and decoded by the rank itself when the file has the canonical
 * layout, else decoded whole by rank 0 and sent in chunks; a part past the
 * rank's budget is decoded and masked a chunk at a time (§18.5).  See
 * mpi_run.h. */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app_util.h"
#include "mpi_run.h"

/* The slice of m elements rank `rank` decodes: by counts when they add up
 * to m, else by the plan of §14.1. */
static void slice_part(const psi_mpi_run *r, int rank, const uint64_t *counts, uint64_t m,
                       uint64_t *off, uint64_t *cnt)
{
    uint64_t sum = 0, o = 0;
    size_t po, pc;

    for (int k = 0; counts != NULL && k < r->size; k++) {
        if (k == rank)
            o = sum;
        sum += counts[k];
    }
    if (counts != NULL && sum == m) {
        *off = o;
        *cnt = counts[rank];
        return;
    }
    // The cut of §14.1, from an external plan of the library (no input held).
    psi_op_args a = {.op = PSI_OP_STEP, .step = PSI_STEP_MASK, .n_values = (size_t)m,
                     .slices = (size_t)r->size, .external = 1};
    psi_plan *p = NULL;
    psi_step st = {PSI_STEP_MASK, 0, 0, NULL, NULL};
    if (psi_plan_begin(&p, r->s.key, &a) != PSI_OK || psi_plan_step(p, &st, (size_t)rank) != PSI_OK)
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    psi_plan_free(p);
    po = st.offset;
    pc = st.count;
    *off = po;
    *cnt = pc;
}

typedef struct msg_kind {
    int suite, is_request;
    psi_message_kind kind;
    uint8_t p0[PSI_MESSAGE_HEAD_MAX], p1[PSI_MESSAGE_HEAD_MAX]; // the head without and
    size_t p0_len, p1_len;  // with the reveal field (p1: requests only)
    size_t rec;             // bytes per element record
} msg_kind;

/* The bytes before the records (§10.1), from the library. */
static void slice_kind(msg_kind *k, int suite, int is_request)
{
    memset(k, 0, sizeof *k);
    k->suite = suite;
    k->is_request = is_request;
    k->kind = is_request ? PSI_MESSAGE_REQUEST : PSI_MESSAGE_RESPONSE;
    k->p0_len = k->p1_len = PSI_MESSAGE_HEAD_MAX;
    if (psi_message_head(k->p0, &k->p0_len, suite, k->kind, 0, 0) != PSI_OK ||
        (is_request && psi_message_head(k->p1, &k->p1_len, suite, k->kind, 1, 0) != PSI_OK))
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL); // the suite was checked by the parser
    if (!is_request)
        k->p1_len = 0;
    k->rec = 2 + psi_suite_element_bytes(suite);
}

/* Decodes a whole message with the library.  Returns: the psi code. */
static int slice_decode(const msg_kind *k, uint8_t *elems, size_t *n, int *reveal,
                        const uint8_t *msg, size_t len)
{
    if (k->is_request)
        return psi_request_decode(elems, n, reveal, k->suite, msg, len);
    *reveal = 0;
    return psi_response_decode(elems, n, k->suite, msg, len);
}

/* The canonical path: reads the cnt records of this rank at `at` in pieces
 * and decodes them with the library's reader, as the message's head and
 * then those records, into buf (cap elements).  When cap < cnt, each full
 * buf and the last part go to fn (NULL: they are only checked).
 * Returns: 0; 1 when they are not exactly cnt element records (the
 * fallback decides); -1 on an I/O error (reported); -2 when fn failed
 * (its message in r->s.err). */
static int records_each(psi_mpi_run *r, const msg_kind *k, const char *path, uint64_t at,
                        uint64_t cnt, uint8_t *buf, size_t cap, psi_mpi_records_fn fn,
                        void *arg)
{
    uint8_t piece[1 << 16];
    uint64_t size, end = at + cnt * k->rec, total = 0, done = 0;
    size_t got = 0, c, used;
    psi_reader *rd = NULL;
    int fd = -1, rv = 0, rc = -1, ok;

    if (psi_reader_create(&rd, k->suite, k->kind) != PSI_OK) {
        psi_app_offline_fail(&r->s, "out of memory for a reader of %s", path);
        goto done;
    }
    if ((fd = psi_mpi_open_regular(r, "message", path, &size)) < 0)
        goto done;
    c = cap;
    ok = psi_reader_feed(rd, buf, &c, &used, k->p0, k->p0_len) == PSI_OK &&
         used == k->p0_len && c == 0;
    while (ok && at < end) {
        size_t want = end - at < sizeof piece ? (size_t)(end - at) : sizeof piece, p = 0;
        if (psi_mpi_pread(fd, piece, want, at) != 0) {
            psi_app_offline_fail(&r->s, "%s: cannot read: %s", path,
                                 errno ? strerror(errno) : "the file shrank");
            goto done;
        }
        while (ok && p < want) {
            if (got == cap && cap < cnt) {
                // A full piece of a part larger than buf.
                if (fn != NULL && fn(arg, buf, got, done) != 0) {
                    rc = -2;
                    goto done;
                }
                done += got;
                got = 0;
            }
            c = cap - got;
            if (c > cnt - done - got)
                c = (size_t)(cnt - done - got);
            // Nothing more to take, or the slice holds more elements than its count.
            ok = c > 0 && psi_reader_feed(rd, buf + got * PSI_ELEMENT_BYTES, &c, &used,
                                          piece + p, want - p) == PSI_OK &&
                 (used > 0 || c > 0);
            got += c;
            p += used;
        }
        at += want;
    }
    rc = ok && psi_reader_end(rd, &rv, &total) == PSI_OK && total == cnt && rv == 0 ? 0 : 1;
    if (rc == 0 && cap < cnt && got > 0 && fn != NULL && fn(arg, buf, got, done) != 0)
        rc = -2;
done:
    if (fd >= 0)
        close(fd);
    psi_reader_free(rd);
    return rc;
}

/* This rank's cnt records at `at`, decoded whole into *elems (or, with
 * most < cnt, only checked in pieces of `most`).  Returns: as records_each. */
static int slice_records(psi_mpi_run *r, const msg_kind *k, const char *path, uint64_t at,
                         uint64_t cnt, size_t most, uint8_t **elems)
{
    size_t cap = cnt > most ? most : (size_t)cnt;
    uint8_t *buf = psi_app_alloc(cap > 0 ? cap : 1, PSI_ELEMENT_BYTES);
    int rc;

    *elems = NULL;
    if (buf == NULL) {
        psi_app_offline_fail(&r->s, "out of memory for this rank's %zu elements of %s", cap,
                             path);
        return -1;
    }
    rc = records_each(r, k, path, at, cnt, buf, cap, NULL, NULL);
    if (rc == 0 && cnt <= most)
        *elems = buf;
    else
        free(buf);
    return rc;
}

/* The fallback: rank 0 decodes the whole file with the library and sends each
 * rank its part.  Returns: as psi_mpi_agree. */
static int slice_scatter(psi_mpi_run *r, const msg_kind *k, const char *path, const char *what,
                         const uint64_t *counts, uint8_t **elems, size_t *n,
                         uint64_t *total, int *reveal)
{
    uint8_t *msg = NULL, *all = NULL;
    size_t len = 0, m = 0;
    uint64_t info[2] = {0, 0}, off, cnt;
    int status = 0, rv = 0, prc;

    if (r->rank == 0) {
        if (psi_app_offline_read_msg(&r->s, path, k->is_request ? "request" : "response",
                                     &msg, &len) != 0) {
            status = PSI_APP_EXIT_USAGE;
        } else if ((all = psi_app_alloc(m = psi_message_element_bound(k->suite, len),
                                        PSI_ELEMENT_BYTES)) == NULL) {
            psi_app_offline_fail(&r->s, "out of memory for %s", path);
            status = PSI_APP_EXIT_FAIL;
        } else if ((prc = slice_decode(k, all, &m, &rv, msg, len)) != PSI_OK) {
            psi_app_offline_fail_psi(&r->s, what, path, prc);
            status = PSI_APP_EXIT_FAIL;
        }
        free(msg);
        info[0] = m;
        info[1] = (uint64_t)rv;
    }
    if ((status = psi_mpi_agree(r, status)) != 0)
        goto done;
    MPI_Bcast(info, 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    *total = info[0];
    *reveal = (int)info[1];
    slice_part(r, r->rank, counts, *total, &off, &cnt);
    *n = (size_t)cnt;
    *elems = psi_app_alloc(*n, PSI_ELEMENT_BYTES);
    if ((status = psi_mpi_agree(r, *elems == NULL ? PSI_APP_EXIT_FAIL : 0)) != 0)
        goto done;
    if (r->rank != 0) {
        for (size_t got = 0; got < *n;) {
            size_t c = *n - got < r->chunk ? *n - got : r->chunk;
            MPI_Recv(*elems + got * PSI_ELEMENT_BYTES, (int)(c * PSI_ELEMENT_BYTES), MPI_BYTE,
                     0, PSI_MPI_TAG_LIST, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            got += c;
        }
        goto done;
    }
    memcpy(*elems, all + off * PSI_ELEMENT_BYTES, *n * PSI_ELEMENT_BYTES);
    for (int q = 1; q < r->size; q++) {
        uint64_t qo, qc;
        slice_part(r, q, counts, *total, &qo, &qc);
        for (uint64_t sent = 0; sent < qc;) {
            uint64_t c = qc - sent < r->chunk ? qc - sent : r->chunk;
            MPI_Send(all + (qo + sent) * PSI_ELEMENT_BYTES, (int)(c * PSI_ELEMENT_BYTES),
                     MPI_BYTE, q, PSI_MPI_TAG_LIST, MPI_COMM_WORLD);
            sent += c;
        }
    }
done:
    free(all);
    if (status != 0) {
        free(*elems);
        *elems = NULL;
    }
    return status;
}

int psi_mpi_read_elements(psi_mpi_run *r, const char *path, const char *what, int is_request,
                      const uint64_t *counts, uint8_t **elems, size_t *n,
                      uint64_t *total, int *reveal, psi_mpi_records *rec)
{
    msg_kind k;
    uint64_t info[4] = {0, 0, 0, 0}, size = 0, off, cnt; // canonical, base, count, reveal
    uint8_t head[PSI_MESSAGE_HEAD_MAX];
    int status = 0, flag, any, rv = 0, fd;

    *elems = NULL;
    *n = 0;
    if (rec != NULL)
        memset(rec, 0, sizeof *rec);
    slice_kind(&k, r->s.o.suite, is_request);
    if (r->rank == 0) {
        if ((fd = psi_mpi_open_regular(r, is_request ? "request" : "response", path, &size)) < 0) {
            status = PSI_APP_EXIT_USAGE;
        } else {
            size_t h = size < sizeof head ? (size_t)size : sizeof head;
            if (psi_mpi_pread(fd, head, h, 0) == 0) {
                if (k.p1_len > 0 && h >= k.p1_len && memcmp(head, k.p1, k.p1_len) == 0) {
                    info[0] = 1;
                    info[1] = k.p1_len;
                    info[3] = 1;
                } else if (h >= k.p0_len && memcmp(head, k.p0, k.p0_len) == 0) {
                    info[0] = 1;
                    info[1] = k.p0_len;
                }
            }
            close(fd);
            if (info[0] && (size - info[1]) % k.rec != 0)
                info[0] = 0;
            info[2] = info[0] ? (size - info[1]) / k.rec : 0;
        }
    }
    if ((status = psi_mpi_agree(r, status)) != 0)
        return status;
    MPI_Bcast(info, 4, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (info[0]) {
        size_t most = rec != NULL ? r->b.chunk_values : SIZE_MAX;
        slice_part(r, r->rank, counts, info[2], &off, &cnt);
        flag = slice_records(r, &k, path, info[1] + off * k.rec, cnt, most, elems);
        if ((status = psi_mpi_agree(r, flag < 0 ? PSI_APP_EXIT_FAIL : 0)) != 0)
            return status;
        MPI_Allreduce(&flag, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any == 0) {
            *n = (size_t)cnt;
            *total = info[2];
            if (reveal != NULL)
                *reveal = (int)info[3];
            if (rec != NULL) {
                rec->held = *elems != NULL || cnt == 0;
                rec->path = path;
                rec->at = info[1] + off * k.rec;
                rec->count = cnt;
                rec->suite = k.suite;
                rec->is_request = is_request;
            }
            return 0;
        }
        free(*elems);
        *elems = NULL;
    }
    // Another layout: rank 0 decodes the file whole, which a budget may
    // not allow (the message, its elements, and this rank's copy of them).
    if (rec != NULL && r->rank == 0 && size > 0) {
        uint64_t need = size + 2 * (uint64_t)psi_message_element_bound(k.suite, (size_t)size) *
                                   PSI_ELEMENT_BYTES;
        if (need > r->b.bytes) {
            psi_app_offline_fail(&r->s, "%s %s is not of the canonical layout (PROTOCOL.md "
                                 "§10.1), so rank 0 decodes it whole: %llu bytes, more "
                                 "than --memory %llu: raise --memory to at least %llu, or "
                                 "use shardpsi %s, which reads any layout in pieces",
                                 is_request ? "request" : "response", path,
                                 (unsigned long long)need, (unsigned long long)r->b.bytes,
                                 (unsigned long long)need, is_request ? "response" : "match");
            status = PSI_APP_EXIT_FAIL;
        }
    }
    if ((status = psi_mpi_agree(r, status)) != 0)
        return status;
    if (rec != NULL)
        rec->held = 1;
    status = slice_scatter(r, &k, path, what, counts, elems, n, total, &rv);
    if (reveal != NULL)
        *reveal = rv;
    return status;
}

int psi_mpi_records_each(psi_mpi_run *r, const psi_mpi_records *rec, const char *step,
                         psi_mpi_records_fn fn, void *arg)
{
    msg_kind k;
    uint8_t *buf;
    int status;

    slice_kind(&k, rec->suite, rec->is_request);
    if ((buf = psi_app_alloc(r->b.chunk_values, PSI_ELEMENT_BYTES)) == NULL) {
        psi_app_offline_fail(&r->s, "out of memory for a chunk of %zu elements",
                             r->b.chunk_values);
        return PSI_APP_EXIT_FAIL;
    }
    psi_app_progress_begin(&r->s.prog, step, rec->count);
    r->s.prog.chunked = 1;
    status = records_each(r, &k, rec->path, rec->at, rec->count, buf, r->b.chunk_values, fn,
                          arg);
    psi_app_progress_end(&r->s.prog);
    free(buf);
    if (status == 1) { // checked when it was first read: the file changed since
        psi_app_offline_fail(&r->s, "%s: the file changed while it was read", rec->path);
        status = PSI_APP_EXIT_FAIL;
    } else if (status < 0) { // the file (-1) or fn (-2), reported
        status = PSI_APP_EXIT_FAIL;
    }
    return status;
}

/* psi_mpi_records_run's chunks. */
typedef struct records_job {
    psi_mpi_run *r;
    psi_mpi_plan *mp;
    const char *what, *file;
} records_job;

static int records_chunk(void *arg, const uint8_t *elems, size_t n, uint64_t first)
{
    records_job *j = arg;
    return psi_mpi_plan_chunk(j->r, j->mp, NULL, elems, n, first, j->what, j->file);
}

int psi_mpi_records_run(psi_mpi_run *r, psi_mpi_plan *mp, const psi_mpi_records *rec,
                        const uint8_t *elems, const char *step, const char *what,
                        const char *file)
{
    records_job j = {r, mp, what, file};

    if (rec->held)
        return psi_mpi_plan_run(r, mp, step, NULL, elems, what, file);
    return psi_mpi_agree(r, psi_mpi_records_each(r, rec, step, records_chunk, &j));
}
