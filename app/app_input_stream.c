/* Reading a party's values a chunk at a time (sets larger than memory,
 * PROTOCOL.md §20); see app_input.h.  Each chunk is parsed by the same
 * line and CSV code as a whole input: a chunk is cut only where a record
 * ends, and in CSV mode it is parsed behind a copy of the file's header,
 * with its line numbers counted from where it starts in the file. */
#include "app_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app_input_priv.h"

int psi_app_input_stream_open(psi_app_input_stream *s, const char *path, const char *column,
                              int lines, size_t block_bytes, size_t max_values,
                              size_t record_max, char *err, size_t err_len)
{
    struct stat st;

    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->path = path;
    s->column = column;
    s->lines = lines;
    s->first = 1;
    s->line = 1;
    s->left = UINT64_MAX;
    s->block_bytes = block_bytes < 64 ? 64 : block_bytes;
    s->max_values = max_values < 1 ? 1 : max_values;
    s->record_max = record_max < s->block_bytes ? s->block_bytes : record_max;
    snprintf(s->label, sizeof s->label, "%s", strcmp(path, "-") == 0 ? "stdin" : path);
    input_ctx c = {s->label, err, err_len, 0};
    if (err != NULL && err_len > 0)
        err[0] = '\0';
    if (strcmp(path, "-") == 0) {
        s->fd = 0;
    } else {
        do
            s->fd = open(path, O_RDONLY | O_CLOEXEC);
        while (s->fd < 0 && errno == EINTR);
        if (s->fd < 0)
            return app_input_fail(&c, PSI_APP_INPUT_EOPEN, "cannot open: %s", strerror(errno));
    }
    if (fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        s->size = (uint64_t)st.st_size;
    if (fstat(s->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        psi_app_input_stream_close(s);
        return app_input_fail(&c, PSI_APP_INPUT_EOPEN, "cannot open: %s", strerror(EISDIR));
    }
    return PSI_APP_INPUT_OK;
}

int psi_app_input_stream_range(psi_app_input_stream *s, uint64_t start, uint64_t end,
                               char *err, size_t err_len)
{
    input_ctx c = {s->label, err, err_len, 0};

    if (end < start || s->buf != NULL || s->fd <= 0 ||
        lseek(s->fd, (off_t)start, SEEK_SET) != (off_t)start)
        return app_input_fail(&c, PSI_APP_INPUT_EREAD, "cannot read from byte %llu: %s",
                              (unsigned long long)start,
                              errno ? strerror(errno) : "not a regular file");
    s->left = end - start;
    s->size = end - start;
    s->first = start == 0;
    return PSI_APP_INPUT_OK;
}

/* Frees the current chunk's arrays (its data is the stream's buffer). */
static void stream_release(psi_app_input_stream *s)
{
    free(s->chunk.values);
    free(s->chunk.records);
    free(s->chunk.extra);
    memset(&s->chunk, 0, sizeof s->chunk);
}

/* Reads until the block holds `want` bytes after start, the buffer is full
 * or the input ends. */
static int stream_fill(psi_app_input_stream *s, const input_ctx *c, size_t want)
{
    while (!s->eof && s->len - s->start < want && s->len < s->cap) {
        size_t room = s->cap - s->len;
        if (room > s->left)
            room = (size_t)s->left;
        ssize_t r = room > 0 ? read(s->fd, s->buf + s->len, room) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return app_input_fail(c, PSI_APP_INPUT_EREAD, "cannot read: %s", strerror(errno));
        if (r == 0)
            s->eof = 1;
        s->len += (size_t)r;
        if (s->left != UINT64_MAX)
            s->left -= (uint64_t)r;
    }
    return PSI_APP_INPUT_OK;
}

/* Doubles the buffer, to at most `most` bytes. */
static int stream_grow(psi_app_input_stream *s, const input_ctx *c, size_t most)
{
    size_t ncap = s->cap * 2 < most ? s->cap * 2 : most;
    uint8_t *nb;

    if (ncap <= s->cap)
        return app_input_fail(c, PSI_APP_INPUT_ENOMEM, "out of memory reading %zu bytes",
                              s->cap);
    if ((nb = realloc(s->buf, ncap)) == NULL)
        return app_input_fail(c, PSI_APP_INPUT_ENOMEM, "out of memory reading %zu bytes",
                              ncap);
    s->buf = nb;
    s->cap = ncap;
    return PSI_APP_INPUT_OK;
}

/* The length of the longest prefix of p[0, n) made of at most `want` whole
 * records; *recs gets their number.  A record ends at a '\n' (in CSV mode
 * one outside quotes); at the end of the input the rest is one more. */
static size_t stream_cut(const uint8_t *p, size_t n, int csv, size_t want, int eof,
                         size_t *recs)
{
    size_t r = 0, cut = 0, i = 0;
    int quoted = 0;

    while (i < n && r < want) {
        if (!csv) {
            const uint8_t *nl = memchr(p + i, '\n', n - i);
            if (nl == NULL)
                break;
            i = (size_t)(nl - p) + 1;
            cut = i;
            r++;
            continue;
        }
        if (p[i] == '"')
            quoted ^= 1;
        else if (p[i] == '\n' && !quoted)
            cut = i + 1, r++;
        i++;
    }
    if (eof && r < want && cut < n) {
        cut = n;
        r++;
    }
    *recs = r;
    return cut;
}

/* Moves what is left after the last chunk to the front (behind the CSV
 * header's copy). */
static void stream_compact(psi_app_input_stream *s, size_t consumed_to)
{
    if (s->column != NULL && s->first && s->chunk.records != NULL) {
        // The file's header, once, ahead of every later chunk.
        psi_app_span h = s->chunk.header;
        memmove(s->buf, s->buf + h.off, h.len);
        s->buf[h.len] = '\n';
        s->keep = h.len + 1;
    }
    size_t rest = s->len - consumed_to;
    memmove(s->buf + s->keep, s->buf + consumed_to, rest);
    s->start = s->keep;
    s->len = s->keep + rest;
}

int psi_app_input_stream_next(psi_app_input_stream *s, char *err, size_t err_len)
{
    input_ctx c = {s->label, err, err_len, 0};
    int csv = s->column != NULL, rc;
    size_t recs = 0, cut;

    if (err != NULL && err_len > 0)
        err[0] = '\0';
    if (s->fd < 0)
        return app_input_fail(&c, PSI_APP_INPUT_EREAD, "cannot read: closed");
    if (s->chunk.data != NULL) {
        // The last chunk ended at data_len: drop it.
        size_t end = s->chunk.data_len;
        s->line += app_input_count_nl(s->buf + s->start, s->buf + end);
        s->values += s->chunk.n;
        s->consumed += end - s->start;
        stream_compact(s, end);
        stream_release(s);
        s->first = 0;
    }
    if (s->buf == NULL) {
        // Sized by what there is to read: a small file never costs a block.
        size_t first = s->size != 0 && s->size < s->block_bytes ? (size_t)s->size
                       : s->size == 0 && s->block_bytes > 65536 ? 65536 : s->block_bytes;
        s->cap = first + 4096;
        if ((s->buf = app_input_alloc(&c, s->cap, 1)) == NULL)
            return PSI_APP_INPUT_ENOMEM;
    }
    // The first CSV chunk holds the header as one more record.
    size_t want = s->max_values + (csv && s->first ? 1 : 0), most;
    for (;;) {
        if ((rc = stream_fill(s, &c, s->block_bytes)) != 0)
            return rc;
        most = s->keep + (s->block_bytes > s->record_max ? s->block_bytes : s->record_max) + 4096;
        if (!s->eof && s->len - s->start < s->block_bytes && s->len == s->cap &&
            s->cap < most) {
            // A pipe, or a file that grew: a larger buffer, up to a block.
            if ((rc = stream_grow(s, &c, most)) != 0)
                return rc;
            continue;
        }
        cut = stream_cut(s->buf + s->start, s->len - s->start, csv, want, s->eof, &recs);
        if (s->eof || (cut > 0 && !(csv && s->first && recs < 2)))
            break;
        // No whole record (besides a CSV header) yet: a longer one, read on.
        if (s->len - s->start >= s->record_max)
            return app_input_fail(&c, PSI_APP_INPUT_ETOOLONG, "line %zu: a record longer "
                                  "than %zu bytes (or a quote that is never closed): it "
                                  "does not fit the memory budget (raise --memory)",
                                  s->line, s->record_max);
        if (s->len == s->cap && (rc = stream_grow(s, &c, most)) != 0)
            return rc;
        if ((rc = stream_fill(s, &c, s->len - s->start + 1)) != 0)
            return rc;
    }
    s->chunk.data = s->buf;
    s->chunk.data_len = s->start + cut;
    if (s->first && !csv && !s->lines &&
        (rc = psi_app_input_guard(s->path, s->buf, s->chunk.data_len, err, err_len)) != 0)
        return rc;
    size_t bom = s->first && s->len >= 3 && memcmp(s->buf, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    if (!csv) {
        rc = app_input_lines(&c, &s->chunk, s->start + bom);
    } else {
        c.rows_line = s->first ? 0 : s->line;
        rc = app_input_csv(&c, &s->chunk, s->first ? bom : 0, s->column);
    }
    if (rc != 0) {
        stream_release(s);
        return rc;
    }
    return PSI_APP_INPUT_OK;
}

int psi_app_input_stream_at_end(const psi_app_input_stream *s)
{
    return s->eof && s->chunk.data_len == s->len;
}

uint64_t psi_app_input_stream_estimate(const psi_app_input_stream *s)
{
    uint64_t have = s->values + s->chunk.n;
    uint64_t bytes = s->consumed + (s->chunk.data_len - s->start);
    if (psi_app_input_stream_at_end(s) || s->size == 0 || bytes == 0 || have == 0)
        return have;
    double est = (double)have * (double)s->size / (double)bytes;
    return est > (double)have ? (uint64_t)est : have;
}

void psi_app_input_stream_close(psi_app_input_stream *s)
{
    stream_release(s);
    if (s->fd > 0)
        close(s->fd);
    s->fd = -1;
    free(s->buf);
    s->buf = NULL;
}
