/* Match's rows (PROTOCOL.md §18.4, §18.5): rank 0 reads the matched indices
 * in ascending order from its runs and, a rank at a time in rank order,
 * sends the rank a piece of its indices and writes the rows it sends
 * back, before it sends the next piece.  Each rank takes its rows from its
 * part of the input as it walks it (held, or read again a chunk at a time),
 * so that no rank holds more than a piece of indices, a chunk of its input
 * and a buffer of rows, whatever the intersection's size.  See mpi_run.h. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"
#include "mpi_run.h"

/* The MPI type of the library's indices. */
#define ROWS_MPI_SIZE_T (sizeof(size_t) == 8 ? MPI_UINT64_T : MPI_UINT32_T)

/* Indices a piece holds at most, and bytes of rows a message. */
#define ROWS_PIECE 65536
#define ROWS_BYTES ((size_t)1 << 20)

/* The header of a message of rows: its bytes, or one of these. */
#define ROWS_END 0                  // the piece's rows are all sent
#define ROWS_FAILED UINT64_MAX      // the rank failed (its message in its r->s.err)

/* Sends rank q a piece of its indices (a count, then the indices; a count
 * of 0 ends its list). */
static void rows_send_piece(int q, const size_t *piece, size_t c)
{
    uint64_t cnt = c;
    MPI_Send(&cnt, 1, MPI_UINT64_T, q, PSI_MPI_TAG_LIST, MPI_COMM_WORLD);
    if (c > 0)
        MPI_Send(piece, (int)c, ROWS_MPI_SIZE_T, q, PSI_MPI_TAG_LIST, MPI_COMM_WORLD);
}

static void rows_send_head(uint64_t head)
{
    MPI_Send(&head, 1, MPI_UINT64_T, 0, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD);
}

/* A rank's buffer of rows on its way to rank 0. */
typedef struct rows_out {
    uint8_t *buf;
    size_t len;
} rows_out;

static void rows_flush(rows_out *o)
{
    if (o->len == 0)
        return;
    rows_send_head(o->len);
    MPI_Send(o->buf, (int)o->len, MPI_BYTE, 0, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD);
    o->len = 0;
}

/* Appends len bytes, sending each full buffer (a value may be longer). */
static void rows_put(rows_out *o, const uint8_t *p, size_t len)
{
    while (len > 0) {
        size_t c = ROWS_BYTES - o->len < len ? ROWS_BYTES - o->len : len;
        memcpy(o->buf + o->len, p, c);
        o->len += c;
        p += c;
        len -= c;
        if (o->len == ROWS_BYTES)
            rows_flush(o);
    }
}

/* A rank other than 0: answers each piece of its indices with its rows,
 * until the end of its list.  After a failure it answers ROWS_FAILED to
 * every piece.  Returns: 0, or an exit code (its message in r->s.err). */
/* The rows of a piece with their payloads, appended to o through a
 * memory stream.  Returns: 0 or an exit code (message in r->s.err). */
static int rows_pay_piece(psi_mpi_run *r, psi_mpi_pay *pay, psi_mpi_part *pt,
                          const size_t *piece, size_t cnt, rows_out *o)
{
    char *mb = NULL;
    size_t ml = 0;
    FILE *mf = open_memstream(&mb, &ml);
    int status;

    if (mf == NULL) {
        psi_app_offline_fail(&r->s, "out of memory for a piece of rows");
        return PSI_APP_EXIT_FAIL;
    }
    status = psi_mpi_pay_rows(r, pay, pt, piece, cnt, mf);
    if (fclose(mf) != 0 && status == 0) {
        psi_app_offline_fail(&r->s, "out of memory for a piece of rows");
        status = PSI_APP_EXIT_FAIL;
    }
    if (status == 0)
        rows_put(o, (const uint8_t *)mb, ml);
    free(mb);
    return status;
}

static int rows_serve(psi_mpi_run *r, psi_mpi_part *pt, psi_mpi_pay *pay)
{
    size_t *piece = malloc(ROWS_PIECE * sizeof *piece);
    rows_out o = {malloc(ROWS_BYTES), 0};
    const psi_value *v;
    int status = 0;

    if (piece == NULL || o.buf == NULL) // a few hundred KiB: give up the job
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    for (;;) {
        uint64_t cnt = 0;
        MPI_Recv(&cnt, 1, MPI_UINT64_T, 0, PSI_MPI_TAG_LIST, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (cnt == 0)
            break;
        MPI_Recv(piece, (int)cnt, ROWS_MPI_SIZE_T, 0, PSI_MPI_TAG_LIST, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        if (status == 0 && pay != NULL)
            status = rows_pay_piece(r, pay, pt, piece, cnt, &o);
        for (size_t i = 0; status == 0 && pay == NULL && i < cnt; i++) {
            if ((status = psi_mpi_part_value(r, pt, piece[i], &v)) == 0) {
                rows_put(&o, v->data, v->len);
                rows_put(&o, (const uint8_t *)"\n", 1);
            }
        }
        if (status == 0)
            rows_flush(&o);
        rows_send_head(status == 0 ? ROWS_END : ROWS_FAILED);
    }
    free(piece);
    free(o.buf);
    return status;
}

/* Rank 0: the rows of rank q (q > 0) for its indices below `end`, the
 * next of which is *v (have > 0), written to the output (*done: the
 * indices written so far, for progress).  Returns: have, as
 * psi_app_index_runs_next left it past q's indices (-1: a failed read,
 * message in runs->file.err).  Out: *bad (a write failed).  A failure of
 * q's ends its list early; q reports it. */
static int rows_of_rank(psi_mpi_run *r, psi_app_index_runs *runs, int q, uint64_t end,
                        size_t *v, int have, size_t *piece, uint8_t *buf, uint64_t *done,
                        int *bad)
{
    size_t c;
    int failed = 0;

    do {
        for (c = 0; have > 0 && *v < end && c < ROWS_PIECE;
             have = psi_app_index_runs_next(runs, v))
            piece[c++] = *v - (size_t)r->offsets[q];
        rows_send_piece(q, piece, c);
        for (uint64_t head = 1; c > 0;) {
            MPI_Recv(&head, 1, MPI_UINT64_T, q, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            if (head == ROWS_END || head == ROWS_FAILED) {
                failed = head == ROWS_FAILED;
                break;
            }
            MPI_Recv(buf, (int)head, MPI_BYTE, q, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            if (!*bad && fwrite(buf, 1, (size_t)head, r->s.out.f) != head)
                *bad = 1;
        }
        *done += c;
        psi_app_progress_update(&r->s.prog, *done, runs->total);
    } while (c > 0 && !failed);
    if (failed) { // the rest of q's indices are skipped, and its list ended
        while (have > 0 && *v < end)
            have = psi_app_index_runs_next(runs, v);
        rows_send_piece(q, NULL, 0);
    }
    return have;
}

int psi_mpi_rows_write(psi_mpi_run *r, psi_mpi_part *pt, psi_app_index_runs *runs,
                       psi_mpi_pay *pay)
{
    size_t *piece = NULL, v = 0;
    uint64_t done = 0;
    uint8_t *buf = NULL;
    const psi_value *val;
    int status = 0, bad = 0, have;

    if (r->rank != 0)
        return psi_mpi_agree(r, rows_serve(r, pt, pay));
    piece = malloc(ROWS_PIECE * sizeof *piece);
    buf = malloc(ROWS_BYTES);
    if (piece == NULL || buf == NULL)
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    have = psi_app_index_runs_read_begin(runs) != 0 ? -1 : psi_app_index_runs_next(runs, &v);
    psi_app_progress_begin(&r->s.prog, "writing the rows", runs->total);
    // Rank 0's own rows, from its part (with payloads: a piece at a time).
    while (pay != NULL && have > 0 && v < r->counts[0] && status == 0) {
        size_t c = 0;
        for (; have > 0 && v < r->counts[0] && c < ROWS_PIECE;
             have = psi_app_index_runs_next(runs, &v))
            piece[c++] = v;
        status = psi_mpi_pay_rows(r, pay, pt, piece, c, r->s.out.f);
        done += c;
        psi_app_progress_update(&r->s.prog, done, runs->total);
    }
    for (; pay == NULL && have > 0 && v < r->counts[0] && status == 0;
         have = psi_app_index_runs_next(runs, &v)) {
        if ((status = psi_mpi_part_value(r, pt, v, &val)) == 0 && !bad)
            bad = fwrite(val->data, 1, val->len, r->s.out.f) != val->len ||
                  fputc('\n', r->s.out.f) == EOF;
        if (++done % 4096 == 0)
            psi_app_progress_update(&r->s.prog, done, runs->total);
    }
    // After a failure here, every other rank is only sent the end of its list.
    if (status != 0 && have > 0)
        have = 0;
    for (int q = 1; q < r->size; q++)
        have = rows_of_rank(r, runs, q, r->offsets[q] + r->counts[q], &v, have, piece, buf,
                            &done, &bad);
    psi_app_progress_end(&r->s.prog);
    free(piece);
    free(buf);
    if (have < 0 && status == 0) {
        psi_app_offline_fail(&r->s, "%s", runs->file.err);
        status = PSI_APP_EXIT_FAIL;
    }
    // A rank that failed reports its own message (the lowest such rank's).
    status = psi_mpi_agree(r, status);
    return status != 0 ? status : bad ? -1 : 0;
}
