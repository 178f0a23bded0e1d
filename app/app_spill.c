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
    s->runs[s->n_runs++] = (psi_app_run){at, n, 0};
    s->size = ip;
    s->n_values += n;
    return 0;
fail:
    psi_app_spill_close(s);
    return -1;
}

int psi_app_spill_read_begin(psi_app_spill *s, uint64_t memory)
{
    uint64_t per = s->n_runs > 0 ? memory / s->n_runs / (PSI_APP_SPILL_RECORD + 8) : 1;
    s->read_values = per < 1 ? 1 : per > 65536 ? 65536 : (size_t)per;
    s->elem_buf = calloc(s->n_runs ? s->n_runs : 1, s->read_values * PSI_ELEMENT_BYTES);
    s->idx_buf = calloc(s->n_runs ? s->n_runs : 1, s->read_values * sizeof(size_t));
    if (s->elem_buf == NULL || s->idx_buf == NULL) {
        snprintf(s->err, sizeof s->err, "out of memory for reading %zu runs back", s->n_runs);
        return -1;
    }
    for (size_t k = 0; k < s->n_runs; k++)
        s->runs[k].done = 0;
    s->read_done = 0;
    return 0;
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

int psi_app_spill_source(void *arg, size_t k, const uint8_t **elements, const size_t **index,
                         size_t *count)
{
    psi_app_spill *s = arg;
    if (k >= s->n_runs || s->runs[k].done >= s->runs[k].count)
        return PSI_E_INVALID_ARG;
    psi_app_run *r = &s->runs[k];
    size_t m = r->count - r->done < s->read_values ? r->count - r->done : s->read_values;
    uint8_t *eb = s->elem_buf + k * s->read_values * PSI_ELEMENT_BYTES;
    size_t *ib = s->idx_buf + k * s->read_values;
    uint8_t raw[8 * 512]; // as psi_app_spill_put writes them: 512 at a time
    if (psi_app_spill_read(s, eb, m * PSI_ELEMENT_BYTES,
                   r->at + (uint64_t)r->done * PSI_ELEMENT_BYTES) != 0)
        return PSI_E_IO;
    uint64_t ip = r->at + (uint64_t)r->count * PSI_ELEMENT_BYTES + (uint64_t)r->done * 8;
    for (size_t i = 0; i < m;) {
        size_t q = m - i < 512 ? m - i : 512;
        if (psi_app_spill_read(s, raw, q * 8, ip + (uint64_t)i * 8) != 0)
            return PSI_E_IO;
        for (size_t j = 0; j < q; j++) {
            uint64_t v = 0;
            for (int b = 7; b >= 0; b--)
                v = v << 8 | raw[8 * j + (size_t)b];
            ib[i + j] = (size_t)v;
        }
        i += q;
    }
    r->done += m;
    s->read_done += m;
    if (s->on_read != NULL)
        s->on_read(s->on_read_arg, s->read_done);
    *elements = eb;
    *index = ib;
    *count = m;
    return PSI_OK;
}

size_t *psi_app_spill_counts(const psi_app_spill *s)
{
    size_t *c = calloc(s->n_runs ? s->n_runs : 1, sizeof *c);
    for (size_t k = 0; c != NULL && k < s->n_runs; k++)
        c[k] = s->runs[k].count;
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
    s->runs = NULL;
    s->elem_buf = NULL;
    s->idx_buf = NULL;
    s->n_runs = s->cap_runs = 0;
}
