/* The memory budget and the spilled runs; see app_spill.h. */
#define _GNU_SOURCE /* O_TMPFILE */
#include "app_spill.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t psi_app_memory_default(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t quarter = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 4 : 0;
    const uint64_t lo = (uint64_t)64 << 20;
    return quarter < lo ? lo : quarter;
}

const char *psi_app_temp_dir(const char *given, const char *fallback)
{
    const char *env = getenv("TMPDIR");

    if (given != NULL)
        return given;
    return env != NULL && env[0] != '\0' ? env : fallback;
}

void psi_app_output_dir(char *dir, size_t len, const char *out)
{
    const char *slash = out != NULL ? strrchr(out, '/') : NULL;

    if (slash == NULL || strcmp(out, "-") == 0)
        snprintf(dir, len, ".");
    else if (slash == out)
        snprintf(dir, len, "/");
    else
        snprintf(dir, len, "%.*s", (int)(slash - out), out);
}

int psi_app_memory_parse(uint64_t *bytes, const char *text, char *err, size_t err_len)
{
    static const char *const units = "KMGT";
    const char *p = text;
    uint64_t v = 0;
    unsigned shift = 0;

    *bytes = 0;
    if (*p < '0' || *p > '9')
        goto bad;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            goto bad;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (*p != '\0') {
        const char *u = strchr(units, *p & ~0x20);
        if (u == NULL)
            goto bad;
        shift = 10 * (unsigned)(u - units + 1);
        p++;
        if ((*p & ~0x20) == 'I')
            p++;
        if ((*p & ~0x20) == 'B')
            p++;
        if (*p != '\0' || v > (UINT64_MAX >> shift))
            goto bad;
    }
    v <<= shift;
    if (v < PSI_APP_MEMORY_MIN) {
        snprintf(err, err_len, "--memory %s: at least %" PRIu64 " bytes (4K)", text,
                 PSI_APP_MEMORY_MIN);
        return -1;
    }
    *bytes = v;
    return 0;
bad:
    snprintf(err, err_len, "--memory %s: not a size (bytes, or a number with K, M, G or T: "
             "256M)", text);
    return -1;
}

int psi_app_setup_need(uint64_t *need, int suite, const psi_setup_params *p, uint64_t n)
{
    size_t cap = 0;
    int prc = psi_setup_bound(&cap, suite, p, (size_t)n);

    *need = p->structure == PSI_STRUCTURE_RAW ? 0
            : (uint64_t)cap + (p->structure == PSI_STRUCTURE_GCS ? n * 8 : 0);
    return prc;
}

const char *psi_app_setup_need_what(psi_structure structure)
{
    return structure == PSI_STRUCTURE_GCS ? "8 bytes a value for the sorted hashes, and the "
                                            "bit stream"
                                          : "the filter's bit array";
}

void psi_app_budget_init(psi_app_budget *b, uint64_t bytes)
{
    // Half for the chunk's values and step, a quarter for its input bytes,
    // a quarter for a record that needs more than its block and the rest.
    uint64_t v = bytes / 2 / PSI_APP_SPILL_PER_VALUE, l = bytes / 4;
    b->bytes = bytes;
    b->chunk_values = v < 1 ? 1 : v > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)v;
    b->block_bytes = l > SIZE_MAX / 4 ? SIZE_MAX / 4 : (size_t)l;
    b->record_max = b->block_bytes * 2;
    // A sixteenth, however many runs there are, so that the peak stays flat
    // as a set grows from a few runs to thousands (the chunk's half is
    // given back before the runs are read).
    b->read_bytes = bytes / 16;
}

void psi_app_spill_init(psi_app_spill *s, const char *dir)
{
    memset(s, 0, sizeof *s);
    s->dir = dir;
    s->fd = -1;
}

int psi_app_spill_tmpfile(int *out, const char *dir, char *err, size_t err_len)
{
    int fd;

    *out = -1;
#ifdef O_TMPFILE
    do
        fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    while (fd < 0 && errno == EINTR);
    if (fd >= 0) {
        *out = fd;
        return 0;
    }
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
        snprintf(err, err_len, "temporary directory %s: cannot create a file: %s", dir,
                 strerror(errno));
        return -1;
    }
#endif
    // No O_TMPFILE here: a name that lives only until the unlink below.
    size_t n = strlen(dir) + sizeof "/shardpsi-spill.XXXXXX";
    char *name = malloc(n);
    if (name == NULL) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    snprintf(name, n, "%s/shardpsi-spill.XXXXXX", dir);
    fd = mkstemp(name);
    if (fd >= 0)
        unlink(name);
    free(name);
    if (fd < 0) {
        snprintf(err, err_len, "temporary directory %s: cannot create a file: %s", dir,
                 strerror(errno));
        return -1;
    }
    *out = fd;
    return 0;
}

/* The nameless file in s->dir. */
static int spill_create(psi_app_spill *s)
{
    return psi_app_spill_tmpfile(&s->fd, s->dir, s->err, sizeof s->err);
}

/* Writes len bytes at offset at.  Returns: 0 or -1 (message set). */
int psi_app_spill_write(psi_app_spill *s, const void *buf, size_t len, uint64_t at)
{
    const uint8_t *p = buf;
    if (s->fd < 0 && spill_create(s) != 0)
        return -1;
    while (len > 0) {
        ssize_t w = pwrite(s->fd, p, len, (off_t)at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            snprintf(s->err, sizeof s->err, "temporary directory %s: cannot write the "
                     "sorted runs (%" PRIu64 " bytes written so far, in %zu runs): %s%s",
                     s->dir, s->size, s->n_runs, strerror(e),
                     e == ENOSPC || e == EDQUOT ? "; give --temp-dir a directory with more "
                                                 "free space" : "");
            return -1;
        }
        p += w;
        len -= (size_t)w;
        at += (uint64_t)w;
    }
    return 0;
}

int psi_app_spill_put(psi_app_spill *s, const uint8_t *elements, const size_t *idx,
                      size_t base, size_t n)
{
    uint64_t idx_le[512];
    if (s->fd < 0 && spill_create(s) != 0)
        return -1;
    if (s->n_runs == s->cap_runs) {
        size_t cap = s->cap_runs ? s->cap_runs * 2 : 16;
        psi_app_run *r = realloc(s->runs, cap * sizeof *r);
        if (r == NULL) {
            snprintf(s->err, sizeof s->err, "out of memory for the list of runs");
            goto fail;
        }
        s->runs = r;
        s->cap_runs = cap;
    }
    uint64_t at = s->size;
    if (psi_app_spill_write(s, elements, n * PSI_ELEMENT_BYTES, at) != 0)
        goto fail;
    uint64_t ip = at + (uint64_t)n * PSI_ELEMENT_BYTES;
    for (size_t i = 0; i < n;) {
        size_t m = n - i < 512 ? n - i : 512;
        for (size_t j = 0; j < m; j++) {
            uint64_t v = (uint64_t)base + (idx != NULL ? idx[i + j] : i + j);
            uint8_t *b = (uint8_t *)&idx_le[j];
            for (int q = 0; q < 8; q++)
                b[q] = (uint8_t)(v >> (8 * q));
        }
        if (psi_app_spill_write(s, idx_le, m * 8, ip) != 0)
            goto fail;
        ip += m * 8;
        i += m;
    }
    s->runs[s->n_runs++] = (psi_app_run){at, n, 0, 0, 0};
    s->size = ip;
    s->n_values += n;
    return 0;
fail:
    psi_app_spill_close(s);
    return -1;
}

int psi_app_spill_read_begin(psi_app_spill *s, uint64_t memory, size_t max_slices,
                             int sorted)
{
    size_t n = s->n_runs ? s->n_runs : 1;

    free(s->groups);
    s->groups = NULL;
    s->n_groups = 0;
    s->sorted = sorted;
    if (max_slices == 0)
        max_slices = 1;
    if (s->n_runs > max_slices) {
        // Consecutive runs, as even as may be: per or per + 1 a group.
        size_t g = max_slices, per = s->n_runs / g, extra = s->n_runs % g, at = 0;
        if ((s->groups = calloc(g, sizeof *s->groups)) == NULL) {
            snprintf(s->err, sizeof s->err, "out of memory for %zu groups of runs", g);
            return -1;
        }
        for (size_t k = 0; k < g; k++) {
            psi_app_group *q = &s->groups[k];
            q->first = at;
            q->end = at + per + (k < extra);
            for (size_t j = q->first; j < q->end; j++)
                q->count += s->runs[j].count;
            at = q->end;
        }
        s->n_groups = g;
        // Sorted groups are merged into buffers of their own: half the
        // memory for the runs' buffers, half for the groups'.
        if (sorted)
            memory /= 2;
    }
    uint64_t per = memory / n / (PSI_APP_SPILL_RECORD + 8);
    s->read_values = per < 1 ? 1 : per > 65536 ? 65536 : (size_t)per;
    s->elem_buf = calloc(n, s->read_values * PSI_ELEMENT_BYTES);
    s->idx_buf = calloc(n, s->read_values * sizeof(size_t));
    if (s->elem_buf == NULL || s->idx_buf == NULL) {
        snprintf(s->err, sizeof s->err, "out of memory for reading %zu runs back", s->n_runs);
        return -1;
    }
    if (s->n_groups > 0 && sorted) {
        uint64_t out = memory / s->n_groups / (PSI_APP_SPILL_RECORD + 8);
        s->out_values = out < 1 ? 1 : out > 65536 ? 65536 : (size_t)out;
        s->out_elem = calloc(s->n_groups, s->out_values * PSI_ELEMENT_BYTES);
        s->out_idx = calloc(s->n_groups, s->out_values * sizeof(size_t));
        s->heap = calloc(n, sizeof *s->heap);
        if (s->out_elem == NULL || s->out_idx == NULL || s->heap == NULL) {
            snprintf(s->err, sizeof s->err, "out of memory for merging %zu runs in %zu groups",
                     s->n_runs, s->n_groups);
            return -1;
        }
    }
    for (size_t k = 0; k < s->n_runs; k++)
        s->runs[k].done = s->runs[k].pos = s->runs[k].avail = 0;
    s->read_done = 0;
    return 0;
}

size_t psi_app_spill_slices(const psi_app_spill *s)
{
    return s->n_groups > 0 ? s->n_groups : s->n_runs;
}

/* Reads len bytes at offset at.  Returns: 0 or -1 (message set). */
int psi_app_spill_read(psi_app_spill *s, void *buf, size_t len, uint64_t at)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t r = pread(s->fd, p, len, (off_t)at);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(s->err, sizeof s->err, "temporary directory %s: cannot read the sorted "
                     "runs back: %s", s->dir, r < 0 ? strerror(errno) : "the file shrank");
            return -1;
        }
        p += r;
        len -= (size_t)r;
        at += (uint64_t)r;
    }
    return 0;
}

/* Reads run j's next values into its buffer (at most read_values).
 * Returns: how many, or 0 with s->err set on a failed read. */
static size_t run_fill(psi_app_spill *s, size_t j)
{
    psi_app_run *r = &s->runs[j];
    size_t m = r->count - r->done < s->read_values ? r->count - r->done : s->read_values;
    uint8_t *eb = s->elem_buf + j * s->read_values * PSI_ELEMENT_BYTES;
    size_t *ib = s->idx_buf + j * s->read_values;
    uint8_t raw[8 * 512]; // as psi_app_spill_put writes them: 512 at a time
    if (psi_app_spill_read(s, eb, m * PSI_ELEMENT_BYTES,
                           r->at + (uint64_t)r->done * PSI_ELEMENT_BYTES) != 0)
        return 0;
    uint64_t ip = r->at + (uint64_t)r->count * PSI_ELEMENT_BYTES + (uint64_t)r->done * 8;
    for (size_t i = 0; i < m;) {
        size_t q = m - i < 512 ? m - i : 512;
        if (psi_app_spill_read(s, raw, q * 8, ip + (uint64_t)i * 8) != 0)
            return 0;
        for (size_t t = 0; t < q; t++) {
            uint64_t v = 0;
            for (int b = 7; b >= 0; b--)
                v = v << 8 | raw[8 * t + (size_t)b];
            ib[i + t] = (size_t)v;
        }
        i += q;
    }
    r->done += m;
    r->pos = 0;
    r->avail = m;
    return m;
}

/* Whether run a's next value comes before run b's in the plan's order of
 * the _SORT steps: element bytes, then input index. */
static int run_before(const psi_app_spill *s, size_t a, size_t b)
{
    const psi_app_run *x = &s->runs[a], *y = &s->runs[b];
    int c = memcmp(s->elem_buf + (a * s->read_values + x->pos) * PSI_ELEMENT_BYTES,
                   s->elem_buf + (b * s->read_values + y->pos) * PSI_ELEMENT_BYTES,
                   PSI_ELEMENT_BYTES);
    if (c != 0)
        return c < 0;
    return s->idx_buf[a * s->read_values + x->pos] < s->idx_buf[b * s->read_values + y->pos];
}

static void heap_down(psi_app_spill *s, size_t *h, size_t size, size_t i)
{
    for (;;) {
        size_t least = i, l = 2 * i + 1, r = l + 1;
        if (l < size && run_before(s, h[l], h[least]))
            least = l;
        if (r < size && run_before(s, h[r], h[least]))
            least = r;
        if (least == i)
            return;
        size_t t = h[i];
        h[i] = h[least];
        h[least] = t;
        i = least;
    }
}

/* Group k's next values, merged from its runs into its output buffer.
 * Returns: how many, or 0 with s->err set. */
static size_t group_merge(psi_app_spill *s, size_t k)
{
    psi_app_group *g = &s->groups[k];
    size_t *h = s->heap + g->first, m = 0;
    uint8_t *oe = s->out_elem + k * s->out_values * PSI_ELEMENT_BYTES;
    size_t *oi = s->out_idx + k * s->out_values;

    if (!g->started) {
        for (size_t j = g->first; j < g->end; j++) {
            if (s->runs[j].count == 0)
                continue;
            if (run_fill(s, j) == 0)
                return 0;
            h[g->heap_size++] = j;
        }
        for (size_t i = g->heap_size / 2; i-- > 0;)
            heap_down(s, h, g->heap_size, i);
        g->started = 1;
    }
    while (m < s->out_values && g->heap_size > 0) {
        size_t j = h[0];
        psi_app_run *r = &s->runs[j];
        memcpy(oe + m * PSI_ELEMENT_BYTES,
               s->elem_buf + (j * s->read_values + r->pos) * PSI_ELEMENT_BYTES,
               PSI_ELEMENT_BYTES);
        oi[m++] = s->idx_buf[j * s->read_values + r->pos];
        if (++r->pos == r->avail) {
            if (r->done == r->count)
                h[0] = h[--g->heap_size];
            else if (run_fill(s, j) == 0)
                return 0;
        }
        heap_down(s, h, g->heap_size, 0);
    }
    return m;
}

int psi_app_spill_source(void *arg, size_t k, const uint8_t **elements, const size_t **index,
                         size_t *count)
{
    psi_app_spill *s = arg;
    size_t m = 0, j = k;

    if (s->n_groups == 0) {
        if (k >= s->n_runs || s->runs[k].done >= s->runs[k].count)
            return PSI_E_INVALID_ARG;
        if ((m = run_fill(s, k)) == 0)
            return PSI_E_IO;
    } else {
        if (k >= s->n_groups || s->groups[k].done >= s->groups[k].count)
            return PSI_E_INVALID_ARG;
        psi_app_group *g = &s->groups[k];
        if (s->sorted) {
            if ((m = group_merge(s, k)) == 0)
                return PSI_E_IO;
            *elements = s->out_elem + k * s->out_values * PSI_ELEMENT_BYTES;
            *index = s->out_idx + k * s->out_values;
        } else {
            // In input order: the group's runs one after another.
            for (j = g->first; j < g->end && s->runs[j].done == s->runs[j].count; j++)
                ;
            if (j == g->end || (m = run_fill(s, j)) == 0)
                return PSI_E_IO;
        }
        g->done += m;
    }
    if (s->n_groups == 0 || !s->sorted) {
        *elements = s->elem_buf + j * s->read_values * PSI_ELEMENT_BYTES;
        *index = s->idx_buf + j * s->read_values;
    }
    s->read_done += m;
    if (s->on_read != NULL)
        s->on_read(s->on_read_arg, s->read_done);
    *count = m;
    return PSI_OK;
}

size_t *psi_app_spill_counts(const psi_app_spill *s)
{
    size_t n = psi_app_spill_slices(s);
    size_t *c = calloc(n ? n : 1, sizeof *c);
    for (size_t k = 0; c != NULL && k < n; k++)
        c[k] = s->n_groups > 0 ? s->groups[k].count : s->runs[k].count;
    return c;
}

void psi_app_spill_close(psi_app_spill *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    free(s->runs);
    free(s->elem_buf);
    free(s->idx_buf);
    free(s->groups);
    free(s->out_elem);
    free(s->out_idx);
    free(s->heap);
    s->runs = NULL;
    s->elem_buf = NULL;
    s->idx_buf = NULL;
    s->groups = NULL;
    s->out_elem = NULL;
    s->out_idx = NULL;
    s->heap = NULL;
    s->n_runs = s->cap_runs = s->n_groups = 0;
}
