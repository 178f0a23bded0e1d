/* Input indices in ascending order within a budget; see app_index_runs.h. */
#include "app_index_runs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"

void psi_app_index_runs_init(psi_app_index_runs *r, const char *dir, uint64_t memory)
{
    memset(r, 0, sizeof *r);
    psi_app_spill_init(&r->file, dir);
    r->memory = memory;
    r->w = 1;
}

void psi_app_index_runs_init_pairs(psi_app_index_runs *r, const char *dir, uint64_t memory)
{
    psi_app_index_runs_init(r, dir, memory);
    r->w = 2;
}

/* Orders pairs by their index (distinct). */
static int pair_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Sorts n records of the buffer. */
static void runs_sort(psi_app_index_runs *r, size_t n)
{
    if (r->w == 1)
        psi_app_sort_indices(r->buf, n);
    else
        qsort(r->buf, n, r->w * sizeof *r->buf, pair_cmp);
}

/* Sorts the buffer and writes it as a run.  Returns: 0 or -1. */
static int runs_flush(psi_app_index_runs *r)
{
    if (r->have == 0)
        return 0;
    if (r->n_runs == r->cap_runs) {
        size_t cap = r->cap_runs ? r->cap_runs * 2 : 16;
        psi_app_index_run *n = realloc(r->runs, cap * sizeof *n);
        if (n == NULL) {
            snprintf(r->file.err, sizeof r->file.err, "out of memory for the list of runs");
            return -1;
        }
        r->runs = n;
        r->cap_runs = cap;
    }
    runs_sort(r, r->have);
    r->file.n_runs = r->n_runs; // named in a failed write's message
    size_t bytes = r->have * r->w * sizeof *r->buf;
    if (psi_app_spill_write(&r->file, r->buf, bytes, r->file.size) != 0)
        return -1;
    r->runs[r->n_runs++] = (psi_app_index_run){r->file.size, r->have, 0, 0, 0};
    r->file.size += bytes;
    r->have = 0;
    return 0;
}

/* Allocates the gathering buffer.  Returns: 0, or 1 (message set). */
static int runs_buffer(psi_app_index_runs *r)
{
    if (r->buf != NULL)
        return 0;
    uint64_t cap = r->memory / (r->w * sizeof *r->buf);
    r->cap = cap < 16 ? 16 : cap > SIZE_MAX / 16 ? SIZE_MAX / 16 : (size_t)cap;
    if ((r->buf = psi_app_alloc(r->cap, r->w * sizeof *r->buf)) == NULL) {
        snprintf(r->file.err, sizeof r->file.err, "out of memory for %zu indices", r->cap);
        return 1;
    }
    return 0;
}

int psi_app_index_runs_add_pair(psi_app_index_runs *r, size_t index, size_t value)
{
    if (runs_buffer(r) != 0)
        return 1;
    r->buf[2 * r->have] = index;
    r->buf[2 * r->have + 1] = value;
    r->have++;
    r->total++;
    return r->have == r->cap && runs_flush(r) != 0 ? 1 : 0;
}

int psi_app_index_runs_add(void *arg, const size_t *index, size_t n)
{
    psi_app_index_runs *r = arg;
    if (runs_buffer(r) != 0)
        return 1;
    while (n > 0) {
        size_t m = r->cap - r->have < n ? r->cap - r->have : n;
        memcpy(r->buf + r->have, index, m * sizeof *index);
        r->have += m;
        r->total += m;
        index += m;
        n -= m;
        if (r->have == r->cap && runs_flush(r) != 0)
            return 1;
    }
    return 0;
}

/* Run k's next record. */
static const size_t *run_rec(const psi_app_index_runs *r, size_t k)
{
    const psi_app_index_run *u = &r->runs[k];
    return r->buf + (k * r->per + u->pos) * r->w;
}

/* Run k's next index. */
static size_t run_head(const psi_app_index_runs *r, size_t k)
{
    return run_rec(r, k)[0];
}

static void heap_down(psi_app_index_runs *r, size_t i)
{
    for (;;) {
        size_t least = i, l = 2 * i + 1, h = l + 1;
        if (l < r->heap_size && run_head(r, r->heap[l]) < run_head(r, r->heap[least]))
            least = l;
        if (h < r->heap_size && run_head(r, r->heap[h]) < run_head(r, r->heap[least]))
            least = h;
        if (least == i)
            return;
        size_t t = r->heap[i];
        r->heap[i] = r->heap[least];
        r->heap[least] = t;
        i = least;
    }
}

/* Refills run k's buffer.  Returns: 1 (it has indices), 0 (the run is
 * done), -1. */
static int run_fill(psi_app_index_runs *r, size_t k)
{
    psi_app_index_run *u = &r->runs[k];
    if (u->pos < u->avail)
        return 1;
    if (u->done == u->count)
        return 0;
    size_t m = u->count - u->done < r->per ? u->count - u->done : r->per;
    size_t rec = r->w * sizeof *r->buf;
    if (psi_app_spill_read(&r->file, r->buf + k * r->per * r->w, m * rec,
                           u->at + (uint64_t)u->done * rec) != 0)
        return -1;
    u->done += m;
    u->pos = 0;
    u->avail = m;
    return 1;
}

int psi_app_index_runs_read_begin(psi_app_index_runs *r)
{
    r->reading = 1;
    if (r->n_runs == 0) {
        // All in the buffer: sorted where it is, read as one run.
        if (r->have > 0)
            runs_sort(r, r->have);
        return 0;
    }
    if (runs_flush(r) != 0)
        return -1;
    free(r->buf);
    uint64_t per = r->memory / r->n_runs / (r->w * sizeof *r->buf);
    r->per = per < 64 ? 64 : per > 65536 ? 65536 : (size_t)per;
    r->buf = psi_app_alloc(r->n_runs, r->per * r->w * sizeof *r->buf);
    r->heap = psi_app_alloc(r->n_runs, sizeof *r->heap);
    if (r->buf == NULL || r->heap == NULL) {
        snprintf(r->file.err, sizeof r->file.err, "out of memory for reading %zu runs of "
                 "indices back", r->n_runs);
        return -1;
    }
    for (size_t k = 0; k < r->n_runs; k++) {
        int f = run_fill(r, k);
        if (f < 0)
            return -1;
        if (f > 0)
            r->heap[r->heap_size++] = k;
    }
    for (size_t i = r->heap_size / 2; i-- > 0;)
        heap_down(r, i);
    return 0;
}

int psi_app_index_runs_next_pair(psi_app_index_runs *r, size_t *index, size_t *value)
{
    const size_t *rec;
    if (r->n_runs == 0) {
        if (r->read_at >= r->have)
            return 0;
        rec = r->buf + r->read_at++ * r->w;
        *index = rec[0];
        if (value != NULL)
            *value = r->w > 1 ? rec[1] : 0;
        return 1;
    }
    if (r->heap_size == 0)
        return 0;
    size_t k = r->heap[0];
    rec = run_rec(r, k);
    *index = rec[0];
    if (value != NULL)
        *value = r->w > 1 ? rec[1] : 0;
    r->runs[k].pos++;
    int f = run_fill(r, k);
    if (f < 0)
        return -1;
    if (f == 0)
        r->heap[0] = r->heap[--r->heap_size];
    heap_down(r, 0);
    return 1;
}

int psi_app_index_runs_next(psi_app_index_runs *r, size_t *index)
{
    return psi_app_index_runs_next_pair(r, index, NULL);
}

void psi_app_index_runs_close(psi_app_index_runs *r)
{
    psi_app_spill_close(&r->file);
    free(r->buf);
    free(r->runs);
    free(r->heap);
    r->buf = NULL;
    r->runs = NULL;
    r->heap = NULL;
    r->n_runs = r->cap_runs = r->have = r->heap_size = 0;
}
