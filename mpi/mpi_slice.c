/* Each rank's slice of the input file and of a message file (PROTOCOL.md
 * §18.1); see mpi_run.h. */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app_util.h"
#include "mpi_run.h"

/* Reads len bytes at off.  Returns: 0, or -1 with errno (0: end of file). */
static int slice_pread(int fd, uint8_t *buf, size_t len, uint64_t off)
{
    while (len > 0) {
        ssize_t got = pread(fd, buf, len, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            if (got == 0)
                errno = 0;
            return -1;
        }
        buf += got;
        len -= (size_t)got;
        off += (uint64_t)got;
    }
    return 0;
}

/* The start of the line holding byte cut - 1's successor: the least s >= cut
 * with s == 0 or byte s - 1 a '\n' (size if there is none).
 * Returns: 0 or -1 (errno). */
static int slice_line_start(int fd, uint64_t size, uint64_t cut, uint64_t *start)
{
    uint8_t buf[1 << 16];
    uint64_t pos;

    if (cut == 0 || cut >= size) {
        *start = cut == 0 ? 0 : size;
        return 0;
    }
    for (pos = cut - 1; pos < size;) {
        size_t want = size - pos < sizeof buf ? (size_t)(size - pos) : sizeof buf;
        const uint8_t *nl;

        if (slice_pread(fd, buf, want, pos) != 0)
            return -1;
        if ((nl = memchr(buf, '\n', want)) != NULL) {
            *start = pos + (uint64_t)(nl - buf) + 1;
            return 0;
        }
        pos += want;
    }
    *start = size;
    return 0;
}

/* Byte k * size / ranks, without overflow. */
static uint64_t slice_cut(uint64_t size, int ranks, int k)
{
    return size / (uint64_t)ranks * (uint64_t)k + size % (uint64_t)ranks * (uint64_t)k /
                                                      (uint64_t)ranks;
}

/* Opens path as a regular file.  Returns: the fd, or -1 (reported). */
static int slice_open(psi_mpi_run *r, const char *what, const char *path, uint64_t *size)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        psi_app_offline_fail(&r->s, "%s %s: cannot open: %s", what, path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        psi_app_offline_fail(&r->s, "%s %s: not a regular file (shardpsi-mpi reads each "
                             "rank's part by its byte offsets)", what, path);
        return -1;
    }
    *size = (uint64_t)st.st_size;
    return fd;
}

/* Rank 0's part of shardpsi's CSV guard (app_input.h): the file's first line,
 * bytes [0, e), is refused if it looks like a CSV header, unless --lines.
 * head: the rank's own slice [0, head_len), which holds that line unless the
 * file is smaller than the ranks (then it is read here).  Returns: 0, or an
 * exit code with the message in r->s.err. */
static int slice_guard(psi_mpi_run *r, int fd, uint64_t size, const uint8_t *head,
                       size_t head_len)
{
    uint64_t e = 0;
    uint8_t *line = NULL;
    int rc;

    if (r->s.o.lines)
        return 0;
    if (slice_line_start(fd, size, 1, &e) != 0) {
        psi_app_offline_fail(&r->s, "%s: cannot read: %s", r->s.o.input,
                             errno ? strerror(errno) : "the file shrank");
        return PSI_APP_EXIT_USAGE;
    }
    if (e > head_len) {
        if (e > SIZE_MAX - 1 || (line = psi_app_alloc((size_t)e, 1)) == NULL) {
            psi_app_offline_fail(&r->s, "%s: out of memory for its first line",
                                 r->s.o.input);
            return PSI_APP_EXIT_FAIL;
        }
        if (slice_pread(fd, line, (size_t)e, 0) != 0) {
            psi_app_offline_fail(&r->s, "%s: cannot read: %s", r->s.o.input,
                                 errno ? strerror(errno) : "the file shrank");
            free(line);
            return PSI_APP_EXIT_USAGE;
        }
        head = line;
    }
    rc = psi_app_input_guard(r->s.o.input, head, (size_t)e, r->s.err, sizeof r->s.err);
    free(line);
    return rc == PSI_APP_INPUT_OK ? 0 : PSI_APP_EXIT_USAGE;
}

int psi_mpi_read_input(psi_mpi_run *r)
{
    const char *path = r->s.o.input;
    uint64_t size = 0, a = 0, b = 0;
    uint8_t *buf = NULL;
    int status = PSI_APP_EXIT_USAGE, fd = slice_open(r, "input", path, &size);

    if (fd < 0)
        goto done;
    if (slice_line_start(fd, size, slice_cut(size, r->size, r->rank), &a) != 0 ||
        slice_line_start(fd, size, slice_cut(size, r->size, r->rank + 1), &b) != 0) {
        psi_app_offline_fail(&r->s, "%s: cannot read: %s", path,
                             errno ? strerror(errno) : "the file shrank");
        goto done;
    }
    if (b - a > SIZE_MAX - 1 || (buf = psi_app_alloc((size_t)(b - a), 1)) == NULL) {
        psi_app_offline_fail(&r->s, "%s: out of memory for this rank's %llu bytes", path,
                             (unsigned long long)(b - a));
        status = PSI_APP_EXIT_FAIL;
        goto done;
    }
    if (slice_pread(fd, buf, (size_t)(b - a), a) != 0) {
        psi_app_offline_fail(&r->s, "%s: cannot read bytes %llu to %llu: %s", path,
                             (unsigned long long)a, (unsigned long long)b,
                             errno ? strerror(errno) : "the file shrank");
        free(buf);
        goto done;
    }
    if (r->rank == 0 && (status = slice_guard(r, fd, size, buf, (size_t)(b - a))) != 0) {
        free(buf);
        goto done;
    }
    if (psi_app_input_lines(&r->s.in, buf, (size_t)(b - a), a == 0, path, r->s.err,
                            sizeof r->s.err) != PSI_APP_INPUT_OK) {
        status = PSI_APP_EXIT_FAIL;
        goto done;
    }
    status = 0;
done:
    if (fd >= 0)
        close(fd);
    status = psi_mpi_agree(r, status);
    if (status == 0)
        psi_mpi_share_counts(r, r->s.in.n);
    return status;
}

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

/* The canonical path: reads this rank's records in pieces and decodes them
 * with the library's reader, as the message's head and then those records.
 * Returns: 0, 1 when they are not exactly cnt element records (the
 * fallback decides), -1 on an I/O error or no memory (reported). */
static int slice_records(psi_mpi_run *r, const msg_kind *k, const char *path, uint64_t base,
                         uint64_t off, uint64_t cnt, uint8_t **elems)
{
    uint8_t buf[1 << 16];
    uint64_t size, at = base + off * k->rec, end = at + cnt * k->rec, total = 0;
    size_t got = 0, c, used;
    psi_reader *rd = NULL;
    int fd = -1, rv = 0, rc = -1, ok;

    *elems = psi_app_alloc((size_t)cnt, PSI_ELEMENT_BYTES);
    if (*elems == NULL || psi_reader_create(&rd, k->suite, k->kind) != PSI_OK) {
        psi_app_offline_fail(&r->s, "out of memory for this rank's %llu elements of %s",
                             (unsigned long long)cnt, path);
        goto done;
    }
    if ((fd = slice_open(r, "message", path, &size)) < 0)
        goto done;
    c = (size_t)cnt;
    ok = psi_reader_feed(rd, *elems, &c, &used, k->p0, k->p0_len) == PSI_OK &&
         used == k->p0_len;
    got = c;
    while (ok && at < end) {
        size_t want = end - at < sizeof buf ? (size_t)(end - at) : sizeof buf;
        if (slice_pread(fd, buf, want, at) != 0) {
            psi_app_offline_fail(&r->s, "%s: cannot read: %s", path,
                                 errno ? strerror(errno) : "the file shrank");
            goto done;
        }
        c = (size_t)cnt - got;
        // All of it taken, or the slice holds more elements than its count.
        ok = psi_reader_feed(rd, *elems + got * PSI_ELEMENT_BYTES, &c, &used, buf, want) ==
                 PSI_OK && used == want;
        got += c;
        at += want;
    }
    rc = ok && psi_reader_end(rd, &rv, &total) == PSI_OK && total == cnt && rv == 0 ? 0 : 1;
done:
    if (fd >= 0)
        close(fd);
    psi_reader_free(rd);
    if (rc != 0) {
        free(*elems);
        *elems = NULL;
    }
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
                      uint64_t *total, int *reveal)
{
    msg_kind k;
    uint64_t info[4] = {0, 0, 0, 0}, size = 0, off, cnt; // canonical, base, count, reveal
    uint8_t head[PSI_MESSAGE_HEAD_MAX];
    int status = 0, flag, any, rv = 0, fd;

    *elems = NULL;
    *n = 0;
    slice_kind(&k, r->s.o.suite, is_request);
    if (r->rank == 0) {
        if ((fd = slice_open(r, is_request ? "request" : "response", path, &size)) < 0) {
            status = PSI_APP_EXIT_USAGE;
        } else {
            size_t h = size < sizeof head ? (size_t)size : sizeof head;
            if (slice_pread(fd, head, h, 0) == 0) {
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
        slice_part(r, r->rank, counts, info[2], &off, &cnt);
        flag = slice_records(r, &k, path, info[1], off, cnt, elems);
        if ((status = psi_mpi_agree(r, flag < 0 ? PSI_APP_EXIT_FAIL : 0)) != 0)
            return status;
        MPI_Allreduce(&flag, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any == 0) {
            *n = (size_t)cnt;
            *total = info[2];
            if (reveal != NULL)
                *reveal = (int)info[3];
            return 0;
        }
        free(*elems);
        *elems = NULL;
    }
    status = slice_scatter(r, &k, path, what, counts, elems, n, total, &rv);
    if (reveal != NULL)
        *reveal = rv;
    return status;
}
