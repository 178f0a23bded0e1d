/* Streams from every rank to rank 0, in bounded chunks (PROTOCOL.md
 * §18.3); see mpi_run.h.  Rank 0 receives a rank's next chunk only when it
 * needs it, and a sender's MPI_Send waits for that, so no rank ever holds
 * more than its own part plus one chunk per rank on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"
#include "mpi_run.h"

#define STREAM_BYTES_CHUNK ((size_t)4 << 20)

size_t psi_mpi_record(uint8_t *out, uint8_t tag, int suite, const uint8_t *elem)
{
    size_t eb = psi_suite_element_bytes(suite);

    out[0] = tag;
    out[1] = (uint8_t)eb;
    memcpy(out + 2, elem, eb);
    return 2 + eb;
}

size_t psi_mpi_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;

    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

/* Rank 0 learns how many elements each rank will send.  Returns: the counts
 * (size entries, malloc'd) on rank 0, NULL on the others. */
static uint64_t *stream_counts(psi_mpi_run *r, size_t n)
{
    uint64_t mine = n, *counts = NULL;

    if (r->rank == 0 && (counts = calloc((size_t)r->size, sizeof *counts)) == NULL)
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    MPI_Gather(&mine, 1, MPI_UINT64_T, counts, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    return counts;
}

/* Encodes c elements as records into buf.  Returns: the bytes. */
static size_t stream_encode(uint8_t *buf, uint8_t tag, int suite, const uint8_t *elems,
                            size_t c)
{
    size_t len = 0;

    for (size_t i = 0; i < c; i++)
        len += psi_mpi_record(buf + len, tag, suite, elems + i * PSI_ELEMENT_BYTES);
    return len;
}

int psi_mpi_stream_records(psi_mpi_run *r, FILE *f, uint8_t tag, const uint8_t *elems, size_t n)
{
    int suite = r->s.o.suite, bad = 0;
    size_t rec = 2 + psi_suite_element_bytes(suite);
    uint64_t *counts = stream_counts(r, n);
    uint8_t *buf = malloc(r->chunk * rec);

    if (buf == NULL) // r->chunk * rec is a few MiB: give up the whole job
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    if (r->rank != 0) {
        for (size_t i = 0; i < n; i += r->chunk) {
            size_t c = n - i < r->chunk ? n - i : r->chunk;
            size_t len = stream_encode(buf, tag, suite, elems + i * PSI_ELEMENT_BYTES, c);
            MPI_Send(buf, (int)len, MPI_BYTE, 0, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD);
        }
        free(buf);
        return 0;
    }
    for (int q = 0; q < r->size; q++) {
        for (uint64_t i = 0; i < counts[q]; i += r->chunk) {
            size_t c = counts[q] - i < r->chunk ? (size_t)(counts[q] - i) : r->chunk;
            size_t len = c * rec;
            if (q == 0)
                stream_encode(buf, tag, suite, elems + i * PSI_ELEMENT_BYTES, c);
            else
                MPI_Recv(buf, (int)len, MPI_BYTE, q, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            if (!bad && fwrite(buf, 1, len, f) != len)
                bad = 1;
        }
    }
    free(buf);
    free(counts);
    return bad ? -1 : 0;
}

int psi_mpi_stream_bytes(psi_mpi_run *r, FILE *f, const uint8_t *bytes, size_t len)
{
    uint64_t total = len;
    uint8_t *buf;
    int bad = 0;

    if (r->rank != 0) {
        MPI_Send(&total, 1, MPI_UINT64_T, 0, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD);
        for (size_t i = 0; i < len; i += STREAM_BYTES_CHUNK) {
            size_t c = len - i < STREAM_BYTES_CHUNK ? len - i : STREAM_BYTES_CHUNK;
            MPI_Send(bytes + i, (int)c, MPI_BYTE, 0, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD);
        }
        return 0;
    }
    if (len > 0 && fwrite(bytes, 1, len, f) != len)
        bad = 1;
    if ((buf = malloc(STREAM_BYTES_CHUNK)) == NULL)
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    for (int q = 1; q < r->size; q++) {
        MPI_Recv(&total, 1, MPI_UINT64_T, q, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (uint64_t i = 0; i < total; i += STREAM_BYTES_CHUNK) {
            size_t c = total - i < STREAM_BYTES_CHUNK ? (size_t)(total - i) : STREAM_BYTES_CHUNK;
            MPI_Recv(buf, (int)c, MPI_BYTE, q, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (!bad && fwrite(buf, 1, c, f) != c)
                bad = 1;
        }
    }
    free(buf);
    return bad ? -1 : 0;
}

/* One rank's stream in the merge on rank 0. */
typedef struct merge_src {
    const uint8_t *elems;    // the current chunk's elements
    const uint64_t *idx;     // and their indices (NULL: merging by bytes alone)
    size_t pos, cnt;         // next element, elements in the chunk
    uint64_t left;           // elements not yet received
    uint8_t *buf;            // the receive buffer (ranks > 0)
} merge_src;

/* Returns: whether a's head comes before b's (ranks qa < qb break ties). */
static int merge_less(const merge_src *s, int qa, int qb)
{
    const merge_src *a = &s[qa], *b = &s[qb];
    int c = memcmp(a->elems + a->pos * PSI_ELEMENT_BYTES,
                   b->elems + b->pos * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES);

    if (c != 0)
        return c < 0;
    if (a->idx != NULL && a->idx[a->pos] != b->idx[b->pos])
        return a->idx[a->pos] < b->idx[b->pos];
    return qa < qb;
}

/* Receives rank q's next chunk: [c indices][c elements] (indices first, so
 * that they are aligned).  Returns: c. */
static size_t merge_recv(psi_mpi_run *r, merge_src *s, int q, int with_idx)
{
    size_t c = s->left < r->chunk ? (size_t)s->left : r->chunk;
    size_t each = PSI_ELEMENT_BYTES + (with_idx ? sizeof(uint64_t) : 0);

    MPI_Recv(s->buf, (int)(c * each), MPI_BYTE, q, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    s->idx = with_idx ? (const uint64_t *)(void *)s->buf : NULL;
    s->elems = s->buf + (with_idx ? c * sizeof(uint64_t) : 0);
    s->pos = 0;
    s->cnt = c;
    s->left -= c;
    return c;
}

static void heap_down(const merge_src *s, int *h, int n, int i)
{
    for (;;) {
        int l = 2 * i + 1, m = i;
        if (l < n && merge_less(s, h[l], h[m]))
            m = l;
        if (l + 1 < n && merge_less(s, h[l + 1], h[m]))
            m = l + 1;
        if (m == i)
            return;
        int t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* The senders' side: chunks of [indices][elements]. */
static void merge_send(psi_mpi_run *r, const uint8_t *elems, const uint64_t *idx, size_t n)
{
    size_t each = PSI_ELEMENT_BYTES + (idx != NULL ? sizeof(uint64_t) : 0);
    uint8_t *buf = malloc(r->chunk * each);

    if (buf == NULL)
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    for (size_t i = 0; i < n; i += r->chunk) {
        size_t c = n - i < r->chunk ? n - i : r->chunk;
        size_t skip = idx != NULL ? c * sizeof(uint64_t) : 0;
        if (idx != NULL)
            memcpy(buf, idx + i, skip);
        memcpy(buf + skip, elems + i * PSI_ELEMENT_BYTES, c * PSI_ELEMENT_BYTES);
        MPI_Send(buf, (int)(c * each), MPI_BYTE, 0, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD);
    }
    free(buf);
}

int psi_mpi_stream_merge(psi_mpi_run *r, const uint8_t *elems, const uint64_t *idx, size_t n,
                     psi_mpi_emit_fn emit, void *arg)
{
    int with_idx = idx != NULL, hn = 0, rc = 0;
    size_t each = PSI_ELEMENT_BYTES + (with_idx ? sizeof(uint64_t) : 0);
    uint64_t *counts = stream_counts(r, n);
    merge_src *s;
    int *h;

    if (r->rank != 0) {
        merge_send(r, elems, idx, n);
        return 0;
    }
    s = calloc((size_t)r->size, sizeof *s);
    h = calloc((size_t)r->size, sizeof *h);
    if (s == NULL || h == NULL)
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    s[0].elems = elems;
    s[0].idx = idx;
    s[0].cnt = n;
    for (int q = 1; q < r->size; q++) {
        s[q].left = counts[q];
        if (s[q].left > 0 && (s[q].buf = malloc(r->chunk * each)) == NULL)
            MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
        if (s[q].left > 0)
            merge_recv(r, &s[q], q, with_idx);
    }
    for (int q = 0; q < r->size; q++)
        if (s[q].cnt > 0)
            h[hn++] = q;
    for (int i = hn / 2 - 1; i >= 0; i--)
        heap_down(s, h, hn, i);
    while (hn > 0) {
        merge_src *t = &s[h[0]];
        if (rc == 0)
            rc = emit(arg, t->elems + t->pos * PSI_ELEMENT_BYTES,
                      t->idx != NULL ? t->idx[t->pos] : 0);
        if (++t->pos == t->cnt) {
            if (t->left > 0)
                merge_recv(r, t, h[0], with_idx);
            else
                h[0] = h[--hn];
        }
        heap_down(s, h, hn, 0);
    }
    for (int q = 0; q < r->size; q++)
        free(s[q].buf);
    free(s);
    free(h);
    free(counts);
    return rc;
}

int psi_mpi_gather_elements(psi_mpi_run *r, const uint8_t *elems, size_t n, uint8_t **out)
{
    uint8_t *all = NULL;
    int status = 0;

    *out = NULL;
    if (r->rank == 0 && (r->total > SIZE_MAX / PSI_ELEMENT_BYTES ||
                         (all = psi_app_alloc((size_t)r->total, PSI_ELEMENT_BYTES)) == NULL)) {
        psi_app_offline_fail(&r->s, "out of memory for the %llu elements of the setup "
                             "(rank 0 holds them all for gcs and bloom_filter)",
                             (unsigned long long)r->total);
        status = PSI_APP_EXIT_FAIL;
    }
    if ((status = psi_mpi_agree(r, status)) != 0)
        return status;
    if (r->rank != 0) {
        for (size_t i = 0; i < n; i += r->chunk) {
            size_t c = n - i < r->chunk ? n - i : r->chunk;
            MPI_Send(elems + i * PSI_ELEMENT_BYTES, (int)(c * PSI_ELEMENT_BYTES), MPI_BYTE, 0,
                     PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD);
        }
        return 0;
    }
    memcpy(all, elems, n * PSI_ELEMENT_BYTES);
    for (int q = 1; q < r->size; q++) {
        for (uint64_t i = 0; i < r->counts[q]; i += r->chunk) {
            size_t c = r->counts[q] - i < r->chunk ? (size_t)(r->counts[q] - i) : r->chunk;
            MPI_Recv(all + (r->offsets[q] + i) * PSI_ELEMENT_BYTES, (int)(c * PSI_ELEMENT_BYTES),
                     MPI_BYTE, q, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    *out = all;
    return 0;
}
