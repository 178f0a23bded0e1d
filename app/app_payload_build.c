/* The payload file of a CSV input past the memory budget (PROTOCOL.md
 * §22.4): read twice a chunk at a time, never held whole.
 *
 * The first reading counts the rows and finds L (the longest payload, or
 * checks --pad-to), since every record authenticates the header, which
 * holds n and L.  The second masks each chunk's values on the shards,
 * seals their records (psi_payload_seal), orders them by tag and writes
 * them as a run, with each record's input row, to a nameless file.  A
 * merge of the runs by tag writes the table: the order of
 * psi_payload_table_build, so the same bytes for a given salt.  Two equal
 * values have equal elements and so equal tags, which the merge finds side
 * by side.  The runs hold sealed records and row numbers, never a payload
 * in the clear or a key. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_payload.h"
#include "app_util.h"

/* A run: its records and their rows in the spill file, and its reading. */
typedef struct pb_run {
    uint64_t at;            // records, then as many u64 rows (little-endian)
    size_t count, done;     // records, and read so far
    size_t pos, avail;      // its buffer's next record and records held
} pb_run;

typedef struct pb {
    const psi_app_paybuild *o;
    size_t rec;             // 36 + L
    psi_app_spill sp;
    pb_run *runs;
    size_t n_runs, cap_runs;
    uint64_t size;          // bytes written to the spill
    // merging: a buffer of `per` records and rows a run, and a heap of runs
    size_t per;
    uint8_t *rbuf;
    uint64_t *ibuf;
    size_t *heap, heap_n;
    char *err;
    size_t err_len;
} pb;

static void pb_put_le(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t pb_get_le(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int pb_fail(pb *b, const char *fmt, const char *what)
{
    snprintf(b->err, b->err_len, fmt, what);
    return -1;
}

/* Opens the input for reading in chunks of at most max_values values. */
static int pb_open(pb *b, psi_app_input_stream *in, size_t max_values)
{
    const psi_app_paybuild *o = b->o;
    if (psi_app_input_stream_open(in, o->input, o->column, 0, o->budget.block_bytes,
                                  max_values, o->budget.record_max, b->err, b->err_len) != 0)
        return -1;
    return 0;
}

/* The next chunk of the input and its payloads (the chunk's rows'; *head
 * the columns' header line).  Returns: 0, or -1 with a message naming the
 * input. */
static int pb_next(pb *b, psi_app_input_stream *in, psi_value **pays, uint8_t **pbuf,
                   char **head)
{
    char why[512];

    if (psi_app_input_stream_next(in, b->err, b->err_len) != 0)
        return -1;
    if (psi_app_payloads_at(&in->chunk, in->values, b->o->columns, pays, pbuf, head, why,
                            sizeof why) != 0) {
        snprintf(b->err, b->err_len, "%s: %s", b->o->input, why);
        return -1;
    }
    return 0;
}

/* The first reading, progress under `step`: the rows, the header line, L. */
static int pb_count(pb *b, const char *step, uint64_t *n, size_t *L, char **head)
{
    const psi_app_paybuild *o = b->o;
    psi_app_input_stream in;
    size_t longest = 0;
    int rc = -1;

    *n = 0;
    *head = NULL;
    memset(&in, 0, sizeof in);
    in.fd = -1;
    if (pb_open(b, &in, o->budget.chunk_values) != 0)
        goto done;
    psi_app_progress_begin(o->prog, step, 0);
    for (;;) {
        psi_value *pays = NULL;
        uint8_t *pbuf = NULL;
        char *h = NULL;
        if (pb_next(b, &in, &pays, &pbuf, &h) != 0)
            goto done;
        for (size_t i = 0; i < in.chunk.n; i++) {
            if (o->pad_len != 0 && pays[i].len > o->pad_len) {
                snprintf(b->err, b->err_len, "%s: the payload of row %" PRIu64 " is %zu bytes, "
                         "longer than --pad-to %zu", o->input, in.values + i + 1, pays[i].len,
                         o->pad_len);
                free(pays), free(pbuf), free(h);
                goto done;
            }
            if (pays[i].len > longest)
                longest = pays[i].len;
        }
        free(pays);
        free(pbuf);
        if (*head == NULL)
            *head = h;
        else
            free(h);
        *n += in.chunk.n;
        psi_app_progress_update(o->prog, *n, psi_app_input_stream_estimate(&in));
        if (in.chunk.n == 0)
            break;
    }
    o->prog->total = *n; // the summary line's count
    *L = o->pad_len != 0 ? o->pad_len : longest;
    if (*L > PSI_PAYLOAD_MAX) {
        snprintf(b->err, b->err_len, "%s: a payload is longer than %zu bytes, the most a table "
                 "pads to", o->input, (size_t)PSI_PAYLOAD_MAX);
        goto done;
    }
    rc = 0;
done:
    psi_app_progress_end(o->prog);
    psi_app_input_stream_close(&in);
    if (rc != 0) {
        free(*head);
        *head = NULL;
    }
    return rc;
}

/* Sorting a chunk's records by tag: each record's tag and position in the
 * chunk, so the comparison needs no context; equal tags (a value twice)
 * keep their input order, so the merge names the same rows on every run. */
typedef struct pb_key {
    uint8_t tag[PSI_PAYLOAD_TAG_BYTES];
    size_t i;
} pb_key;

static int pb_cmp(const void *x, const void *y)
{
    const pb_key *a = x, *c = y;
    int d = memcmp(a->tag, c->tag, PSI_PAYLOAD_TAG_BYTES);
    return d != 0 ? d : (a->i > c->i) - (a->i < c->i);
}

/* Appends a run: the chunk's k records (recs, in input order, rows from
 * base) in tag order. */
static int pb_put(pb *b, const uint8_t *recs, size_t k, uint64_t base, pb_key *ord,
                  uint8_t *out)
{
    if (b->n_runs == b->cap_runs) {
        size_t cap = b->cap_runs ? b->cap_runs * 2 : 64;
        pb_run *r = realloc(b->runs, cap * sizeof *r);
        if (r == NULL)
            return pb_fail(b, "%s", "out of memory for the runs");
        b->runs = r;
        b->cap_runs = cap;
    }
    for (size_t i = 0; i < k; i++) {
        memcpy(ord[i].tag, recs + i * b->rec, PSI_PAYLOAD_TAG_BYTES);
        ord[i].i = i;
    }
    qsort(ord, k, sizeof *ord, pb_cmp);
    for (size_t i = 0; i < k; i++)
        memcpy(out + i * b->rec, recs + ord[i].i * b->rec, b->rec);
    uint64_t at = b->size;
    if (psi_app_spill_write(&b->sp, out, k * b->rec, at) != 0)
        return pb_fail(b, "%s", b->sp.err);
    for (size_t i = 0; i < k; i++)
        pb_put_le(out + i * 8, base + ord[i].i);
    if (psi_app_spill_write(&b->sp, out, k * 8, at + k * b->rec) != 0)
        return pb_fail(b, "%s", b->sp.err);
    b->runs[b->n_runs++] = (pb_run){at, k, 0, 0, 0};
    b->size = at + k * (b->rec + 8);
    return 0;
}

/* The second reading: every chunk masked, sealed and spilled as a run. */
static int pb_runs(pb *b, const uint8_t head[PSI_PAYLOAD_HEAD_BYTES], uint64_t n)
{
    const psi_app_paybuild *o = b->o;
    psi_app_input_stream in;
    uint64_t per_value = b->rec * 2 + PSI_ELEMENT_BYTES + 64;
    size_t max = o->budget.chunk_values, el_len;
    if (o->budget.bytes / 2 / per_value < max)
        max = (size_t)(o->budget.bytes / 2 / per_value);
    max = max < 1 ? 1 : max;
    uint8_t *el = psi_app_alloc(max, PSI_ELEMENT_BYTES), *recs = psi_app_alloc(max, b->rec);
    uint8_t *out = psi_app_alloc(max, b->rec < 8 ? 8 : b->rec);
    pb_key *ord = psi_app_alloc(max, sizeof *ord);
    int rc = -1, prc;

    memset(&in, 0, sizeof in);
    in.fd = -1;
    if (el == NULL || recs == NULL || out == NULL || ord == NULL) {
        pb_fail(b, "%s", "out of memory for a chunk of the payload table");
        goto done;
    }
    if (pb_open(b, &in, max) != 0)
        goto done;
    psi_app_progress_begin(o->prog, "masking and sealing", n);
    for (;;) {
        psi_value *pays = NULL;
        uint8_t *pbuf = NULL;
        char *h = NULL;
        if (pb_next(b, &in, &pays, &pbuf, &h) != 0)
            goto done;
        size_t k = in.chunk.n;
        free(h);
        if (k == 0 || in.values + k > n) {
            free(pays);
            free(pbuf);
            if (k == 0)
                break;
            pb_fail(b, "%s: the input changed while it was read", o->input);
            goto done;
        }
        el_len = k * PSI_ELEMENT_BYTES;
        prc = psi_shards_mask(o->g, el, &el_len, in.chunk.values, k);
        if (prc == PSI_OK)
            prc = psi_payload_seal(o->suite, head, el, pays, k, recs);
        free(pays);
        free(pbuf);
        if (prc != PSI_OK) {
            psi_app_payload_build_error(b->err, b->err_len, o->input, prc, NULL, o->pad_len);
            goto done;
        }
        if (pb_put(b, recs, k, in.values, ord, out) != 0)
            goto done;
        psi_app_progress_update(o->prog, in.values + k, n);
    }
    rc = 0;
done:
    psi_app_progress_end(o->prog);
    psi_app_input_stream_close(&in);
    free(el);
    free(recs);
    free(out);
    free(ord);
    return rc;
}

/* Refills run r's buffer.  Returns: 0 or -1. */
static int pb_fill(pb *b, size_t r)
{
    pb_run *x = &b->runs[r];
    size_t m = x->count - x->done < b->per ? x->count - x->done : b->per;
    uint8_t *rb = b->rbuf + r * b->per * b->rec;
    uint64_t *ib = b->ibuf + r * b->per;

    if (psi_app_spill_read(&b->sp, rb, m * b->rec, x->at + (uint64_t)x->done * b->rec) != 0 ||
        psi_app_spill_read(&b->sp, ib, m * 8,
                           x->at + (uint64_t)x->count * b->rec + x->done * 8) != 0)
        return pb_fail(b, "%s", b->sp.err);
    for (size_t i = 0; i < m; i++)
        ib[i] = pb_get_le((const uint8_t *)&ib[i]);
    x->done += m;
    x->pos = 0;
    x->avail = m;
    return 0;
}

static const uint8_t *pb_head_rec(const pb *b, size_t r)
{
    return b->rbuf + (r * b->per + b->runs[r].pos) * b->rec;
}

static int pb_less(const pb *b, size_t r, size_t s)
{
    int c = memcmp(pb_head_rec(b, r), pb_head_rec(b, s), PSI_PAYLOAD_TAG_BYTES);
    if (c != 0)
        return c < 0;
    return b->ibuf[r * b->per + b->runs[r].pos] < b->ibuf[s * b->per + b->runs[s].pos];
}

static void pb_sift(pb *b, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < b->heap_n && pb_less(b, b->heap[l], b->heap[m]))
            m = l;
        if (l + 1 < b->heap_n && pb_less(b, b->heap[l + 1], b->heap[m]))
            m = l + 1;
        if (m == i)
            return;
        size_t t = b->heap[i];
        b->heap[i] = b->heap[m];
        b->heap[m] = t;
        i = m;
    }
}

/* The merge of the runs into f, by tag. */
static int pb_merge(pb *b, FILE *f, uint64_t n)
{
    const psi_app_paybuild *o = b->o;
    uint8_t last[PSI_PAYLOAD_TAG_BYTES];
    uint64_t last_row = 0, written = 0;
    uint64_t share = o->budget.bytes / 4;

    b->per = b->n_runs > 0 ? (size_t)(share / b->n_runs / (b->rec + 8)) : 1;
    b->per = b->per < 1 ? 1 : b->per > 65536 ? 65536 : b->per;
    if ((b->rbuf = psi_app_alloc(b->n_runs * b->per + 1, b->rec)) == NULL ||
        (b->ibuf = psi_app_alloc(b->n_runs * b->per + 1, 8)) == NULL ||
        (b->heap = psi_app_alloc(b->n_runs + 1, sizeof *b->heap)) == NULL)
        return pb_fail(b, "%s", "out of memory for merging the runs");
    for (size_t r = 0; r < b->n_runs; r++) {
        if (pb_fill(b, r) != 0)
            return -1;
        b->heap[b->heap_n++] = r;
    }
    for (size_t i = b->heap_n; i-- > 0;)
        pb_sift(b, i);
    psi_app_progress_begin(o->prog, "ordering the table", n);
    while (b->heap_n > 0) {
        size_t r = b->heap[0];
        const uint8_t *rec = pb_head_rec(b, r);
        uint64_t row = b->ibuf[r * b->per + b->runs[r].pos];
        if (written > 0 && memcmp(rec, last, PSI_PAYLOAD_TAG_BYTES) == 0) {
            // Equal tags: equal elements, so the same value twice.
            snprintf(b->err, b->err_len, "%s: the value of row %" PRIu64 " is there twice (first "
                     "at row %" PRIu64 "): a payload table holds one payload a value (join "
                     "the rows first)", o->input, (row > last_row ? row : last_row) + 1,
                     (row < last_row ? row : last_row) + 1);
            psi_app_progress_end(o->prog);
            return -1;
        }
        if (fwrite(rec, 1, b->rec, f) != b->rec) {
            psi_app_progress_end(o->prog);
            return pb_fail(b, "%s", "cannot write the payload table");
        }
        memcpy(last, rec, sizeof last);
        last_row = row;
        written++;
        if (written % 65536 == 0)
            psi_app_progress_update(o->prog, written, n);
        if (++b->runs[r].pos == b->runs[r].avail) {
            if (b->runs[r].done == b->runs[r].count) {
                b->heap[0] = b->heap[--b->heap_n];
            } else if (pb_fill(b, r) != 0) {
                psi_app_progress_end(o->prog);
                return -1;
            }
        }
        pb_sift(b, 0);
    }
    psi_app_progress_end(o->prog);
    return written == n ? 0 : pb_fail(b, "%s", "the runs do not hold every row");
}

int psi_app_payload_scan(const psi_app_paybuild *o, uint64_t *n, size_t *pad_len, char *err,
                         size_t err_len)
{
    pb b;
    char *head = NULL;
    int rc;

    memset(&b, 0, sizeof b);
    err[0] = '\0';
    b.o = o;
    b.err = err;
    b.err_len = err_len;
    rc = pb_count(&b, "checking the payloads", n, pad_len, &head);
    free(head);
    return rc;
}

int psi_app_payload_build_file(const psi_app_paybuild *o, FILE *f, uint64_t *n_out,
                               size_t *pad_out, char *err, size_t err_len)
{
    pb b;
    uint8_t head[PSI_PAYLOAD_HEAD_BYTES];
    uint64_t n = 0;
    size_t L = 0;
    char *line = NULL;
    int rc = -1, prc;

    memset(&b, 0, sizeof b);
    err[0] = '\0';
    b.o = o;
    b.err = err;
    b.err_len = err_len;
    psi_app_spill_init(&b.sp, o->temp_dir);
    if (pb_count(&b, "reading the input", &n, &L, &line) != 0)
        goto done;
    b.rec = PSI_PAYLOAD_RECORD_EXTRA + L;
    if ((prc = psi_payload_head_make(o->suite, head, n, L, o->salt)) != PSI_OK) {
        psi_app_payload_build_error(err, err_len, o->input, prc, NULL, o->pad_len);
        goto done;
    }
    if (pb_runs(&b, head, n) != 0 || fprintf(f, "%s\n", line) < 0 ||
        fwrite(head, 1, sizeof head, f) != sizeof head || pb_merge(&b, f, n) != 0) {
        if (err[0] == '\0')
            snprintf(err, err_len, "cannot write the payload table");
        goto done;
    }
    *n_out = n;
    *pad_out = L;
    rc = 0;
done:
    psi_app_spill_close(&b.sp);
    free(b.runs);
    free(b.rbuf);
    free(b.ibuf);
    free(b.heap);
    free(line);
    return rc;
}
