/* Reading a party's values from a file or stdin; see app_input.h. */
#include "app_input.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app_util.h"

/* First buffer for stdin and pipes, whose size is not known: doubled as
 * often as needed. */
#define INPUT_PIPE_CHUNK ((size_t)1 << 16)

/* How many header names a "column not found" message lists. */
#define CSV_LIST_NAMES 4

/* printf checks for the message functions (format is argument 3). */
#if defined(__GNUC__)
#define INPUT_PRINTF __attribute__((format(printf, 3, 4)))
#else
#define INPUT_PRINTF
#endif

/* Where messages go and how they start. */
typedef struct input_ctx {
    const char *label;  // the path, or "stdin": the start of every message
    char *err;          // may be NULL
    size_t err_len;
} input_ctx;

/* Writes "<label>: <message>" into c->err and returns code. */
INPUT_PRINTF static int input_fail(const input_ctx *c, int code, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (c->err == NULL || c->err_len == 0)
        return code;
    n = snprintf(c->err, c->err_len, "%s: ", c->label);
    if (n >= 0 && (size_t)n < c->err_len) {
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->err_len - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* Returns: n * size bytes from malloc (at least one element, so never NULL
 * on success), or NULL with a message (product overflow or no memory). */
static void *input_alloc(const input_ctx *c, size_t n, size_t size)
{
    void *p;

    if (n == 0)
        n = 1;
    if (n > SIZE_MAX / size) {
        input_fail(c, PSI_APP_INPUT_ENOMEM, "too large (%zu entries)", n);
        return NULL;
    }
    p = malloc(n * size);
    if (p == NULL)
        input_fail(c, PSI_APP_INPUT_ENOMEM, "out of memory (%zu entries of %zu bytes)",
                   n, size);
    return p;
}

/* Doubles the read buffer *buf of capacity *cap. */
static int input_grow(const input_ctx *c, uint8_t **buf, size_t *cap)
{
    uint8_t *p;

    if (*cap > SIZE_MAX / 2)
        return input_fail(c, PSI_APP_INPUT_ENOMEM, "too large to read into memory");
    p = realloc(*buf, *cap * 2);
    if (p == NULL)
        return input_fail(c, PSI_APP_INPUT_ENOMEM, "out of memory reading %zu bytes",
                          *cap * 2);
    *buf = p;
    *cap *= 2;
    return PSI_APP_INPUT_OK;
}

/* Reads fd to its end into *buf (capacity *cap, grown when full).
 * Out: *len, the bytes read. */
static int input_read_fd(const input_ctx *c, int fd, uint8_t **buf, size_t *cap,
                         size_t *len)
{
    size_t n = 0;

    for (;;) {
        size_t want;
        ssize_t r;

        if (n == *cap && input_grow(c, buf, cap) != 0)
            return PSI_APP_INPUT_ENOMEM;
        want = *cap - n;
        if (want > (size_t)SSIZE_MAX)
            want = (size_t)SSIZE_MAX;
        r = read(fd, *buf + n, want);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return input_fail(c, PSI_APP_INPUT_EREAD, "cannot read: %s", strerror(errno));
        if (r == 0)
            break;
        n += (size_t)r;
    }
    *len = n;
    return PSI_APP_INPUT_OK;
}

/* Picks the first buffer size: a regular file's size plus one (so the read
 * that sees its end needs no second buffer), else a pipe chunk.  Refuses
 * directories. */
static int input_first_cap(const input_ctx *c, int fd, size_t *cap)
{
    struct stat st;

    if (fstat(fd, &st) != 0)
        return input_fail(c, PSI_APP_INPUT_EREAD, "cannot read: %s", strerror(errno));
    if (S_ISDIR(st.st_mode))
        return input_fail(c, PSI_APP_INPUT_EOPEN, "cannot open: %s", strerror(EISDIR));
    *cap = INPUT_PIPE_CHUNK;
    if (S_ISREG(st.st_mode)) {
        if (st.st_size < 0 || (uintmax_t)st.st_size >= SIZE_MAX)
            return input_fail(c, PSI_APP_INPUT_ENOMEM, "too large to read into memory");
        *cap = (size_t)st.st_size + 1;
    }
    return PSI_APP_INPUT_OK;
}

/* Reads path ("-": stdin) whole into in->data, in->data_len. */
static int input_load(const input_ctx *c, const char *path, psi_app_input *in)
{
    int fd = 0, rc;
    size_t cap = 0;

    if (strcmp(path, "-") != 0) {
        do
            fd = open(path, O_RDONLY | O_CLOEXEC);
        while (fd < 0 && errno == EINTR);
        if (fd < 0)
            return input_fail(c, PSI_APP_INPUT_EOPEN, "cannot open: %s", strerror(errno));
    }
    rc = input_first_cap(c, fd, &cap);
    if (rc == 0) {
        in->data = input_alloc(c, cap, 1);
        rc = in->data == NULL ? PSI_APP_INPUT_ENOMEM
                              : input_read_fd(c, fd, &in->data, &cap, &in->data_len);
    }
    if (fd != 0)
        close(fd);
    // A pipe's last doubling may have left up to half the buffer unused.
    if (rc == 0 && cap - in->data_len > cap / 4) {
        uint8_t *p = realloc(in->data, in->data_len + 1);
        if (p != NULL)
            in->data = p;
    }
    return rc;
}

/* Returns: the number of '\n' in [p, end). */
static size_t input_count_nl(const uint8_t *p, const uint8_t *end)
{
    size_t n = 0;

    while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        n++;
        p++;
    }
    return n;
}

/* Returns: the number of lines in [p, end), the last one with or without
 * its '\n'; an upper bound of the CSV records there too. */
static size_t input_count_lines(const uint8_t *p, const uint8_t *end)
{
    return input_count_nl(p, end) + (p < end && end[-1] != '\n');
}

/* Line mode: one value per line from offset start on (see the header). */
static int input_lines(const input_ctx *c, psi_app_input *in, size_t start)
{
    const uint8_t *p = in->data + start, *end = in->data + in->data_len;
    size_t n = 0;

    in->values = input_alloc(c, input_count_lines(p, end), sizeof(psi_value));
    if (in->values == NULL)
        return PSI_APP_INPUT_ENOMEM;
    while (p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        const uint8_t *e = nl != NULL ? nl : end;
        size_t len = (size_t)(e - p);

        if (nl != NULL && len > 0 && e[-1] == '\r')
            len--;
        in->values[n].data = p;
        in->values[n].len = len;
        n++;
        p = nl != NULL ? nl + 1 : end;
    }
    in->n = n;
    return PSI_APP_INPUT_OK;
}

/* ---- CSV mode ---------------------------------------------------------- */

/* The CSV parser's position.  Invariant: line is the 1-based line number of
 * d[pos] (the count of '\n' before it, plus one). */
typedef struct csv_parser {
    const input_ctx *c;
    const uint8_t *d;
    size_t pos, end;
    size_t line;
    size_t rec_line;    // line where the current record starts
    size_t field;       // 1-based number of the current field in its record
} csv_parser;

/* One field's content: for a quoted field, between the quotes. */
typedef struct csv_field {
    size_t off, len;
    size_t quotes;      // "" pairs in it; 0: the content is the value as is
} csv_field;

/* The bytes that end a bare field's fast scan. */
static const uint8_t csv_stop[256] = {[','] = 1, ['\n'] = 1, ['\r'] = 1, ['"'] = 1};

/* Sets "<label>: line L: field F: <message>" and returns PSI_APP_INPUT_ECSV. */
INPUT_PRINTF static int csv_fail(const csv_parser *cp, size_t line, const char *fmt, ...)
{
    char msg[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return input_fail(cp->c, PSI_APP_INPUT_ECSV, "line %zu: field %zu: %s", line,
                      cp->field, msg);
}

/* Returns: 1 if d[i] starts a line break ("\n" or "\r\n") or the input ends
 * there. */
static int csv_at_line_end(const csv_parser *cp, size_t i)
{
    return i == cp->end || cp->d[i] == '\n' ||
           (cp->d[i] == '\r' && i + 1 < cp->end && cp->d[i + 1] == '\n');
}

/* Parses a bare field at pos, leaving pos on the ',' or line break after it.
 * A '"' in it, or a '\r' not followed by '\n', is an error. */
static int csv_bare(csv_parser *cp, csv_field *f)
{
    size_t i = cp->pos;

    while (i < cp->end && !csv_stop[cp->d[i]])
        i++;
    if (i < cp->end && cp->d[i] == '"')
        return csv_fail(cp, cp->rec_line, "'\"' in an unquoted field "
                        "(quote the whole field and double the '\"')");
    if (i < cp->end && cp->d[i] == '\r' && !csv_at_line_end(cp, i))
        return csv_fail(cp, cp->rec_line, "bare carriage return (\\r not followed "
                        "by \\n) outside quotes");
    f->off = cp->pos;
    f->len = i - cp->pos;
    f->quotes = 0;
    cp->pos = i;
    return PSI_APP_INPUT_OK;
}

/* Parses a quoted field (pos on its opening quote), leaving pos after the
 * closing quote, which must be followed by ',', a line break or the end. */
static int csv_quoted(csv_parser *cp, csv_field *f)
{
    const uint8_t *d = cp->d;
    size_t i = cp->pos + 1, open_line = cp->line;

    f->off = i;
    f->quotes = 0;
    for (;;) {
        const uint8_t *q = memchr(d + i, '"', cp->end - i);

        if (q == NULL)
            return csv_fail(cp, open_line, "quoted field not closed before the end "
                            "of the input (its quote opens on this line)");
        cp->line += input_count_nl(d + i, q);
        i = (size_t)(q - d) + 1;
        if (i == cp->end || d[i] != '"')
            break;
        f->quotes++;    // "" stands for one '"'
        i++;
    }
    f->len = i - 1 - f->off;
    cp->pos = i;
    if (i < cp->end && d[i] == '\r' && !csv_at_line_end(cp, i))
        return csv_fail(cp, cp->rec_line, "bare carriage return (\\r not followed "
                        "by \\n) outside quotes");
    if (i < cp->end && d[i] != ',' && !csv_at_line_end(cp, i))
        return csv_fail(cp, cp->rec_line, "'%c' after the closing quote (expected "
                        "',' or the end of the line)",
                        d[i] >= 0x20 && d[i] < 0x7f ? d[i] : '?');
    return PSI_APP_INPUT_OK;
}

/* Steps over what follows a field.  Returns: 1 after a ',' (the record goes
 * on), 0 after a line break or at the end of the input (it ends). */
static int csv_delim(csv_parser *cp)
{
    if (cp->pos == cp->end)
        return 0;
    if (cp->d[cp->pos] == ',') {
        cp->pos++;
        return 1;
    }
    cp->pos += cp->d[cp->pos] == '\r' ? 2 : 1;
    cp->line++;
    return 0;
}

/* Called on each header field; see csv_header_field. */
typedef int (*csv_visit)(csv_parser *cp, const csv_field *f, void *arg);

/* Parses the record at pos and steps over its line break.  Out: *rec, its
 * raw span; *nf, its field count; *want_f, field number want + 1 (0-based
 * want) if want_f is not NULL and the record has that many fields.  visit,
 * if not NULL, is called on every field. */
static int csv_record(csv_parser *cp, size_t want, csv_field *want_f, size_t *nf,
                      psi_app_span *rec, csv_visit visit, void *arg)
{
    size_t start = cp->pos, stop;
    csv_field f;
    int rc;

    cp->rec_line = cp->line;
    cp->field = 0;
    do {
        cp->field++;
        if (cp->pos < cp->end && cp->d[cp->pos] == '"')
            rc = csv_quoted(cp, &f);
        else
            rc = csv_bare(cp, &f);
        if (rc == 0 && visit != NULL)
            rc = visit(cp, &f, arg);
        if (rc != 0)
            return rc;
        if (want_f != NULL && cp->field == want + 1)
            *want_f = f;
        stop = cp->pos;
    } while (csv_delim(cp));
    *nf = cp->field;
    rec->off = start;
    rec->len = stop - start;
    return PSI_APP_INPUT_OK;
}

/* The header's column search. */
typedef struct csv_header {
    const char *column;     // the name looked for
    size_t col;             // its 0-based index, SIZE_MAX until found
    char names[160];        // the first CSV_LIST_NAMES names, for a message
    size_t names_len;
} csv_header;

/* Returns: 1 if field f (unescaped) is exactly the NUL-terminated name. */
static int csv_field_is(const uint8_t *d, const csv_field *f, const char *name)
{
    const uint8_t *p = d + f->off, *end = p + f->len;
    size_t len = strlen(name), i = 0;

    if (f->len - f->quotes != len)
        return 0;
    for (; p < end; p++, i++) {
        if ((uint8_t)name[i] != *p)
            return 0;
        if (*p == '"')
            p++;    // the second quote of a "" pair
    }
    return 1;
}

/* Appends field f, unescaped, quoted and shortened, to h->names; bytes that
 * are not printable ASCII become '?' so the message stays one line. */
static void csv_list_name(csv_header *h, const uint8_t *d, const csv_field *f)
{
    const size_t cap = sizeof h->names - 1;
    size_t i, shown = 0;

    if (h->names_len + 8 > cap)
        return;
    if (h->names_len > 0) {
        h->names[h->names_len++] = ',';
        h->names[h->names_len++] = ' ';
    }
    h->names[h->names_len++] = '"';
    for (i = 0; i < f->len && shown < 24 && h->names_len + 5 < cap; i++, shown++) {
        uint8_t b = d[f->off + i];

        h->names[h->names_len++] = b >= 0x20 && b < 0x7f ? (char)b : '?';
        i += b == '"';
    }
    if (i < f->len) {
        h->names[h->names_len++] = '.';
        h->names[h->names_len++] = '.';
    }
    h->names[h->names_len++] = '"';
    h->names[h->names_len] = '\0';
}

/* csv_visit for the header: finds the column, refusing a second match. */
static int csv_header_field(csv_parser *cp, const csv_field *f, void *arg)
{
    csv_header *h = arg;

    if (cp->field <= CSV_LIST_NAMES)
        csv_list_name(h, cp->d, f);
    if (!csv_field_is(cp->d, f, h->column))
        return PSI_APP_INPUT_OK;
    if (h->col != SIZE_MAX)
        return csv_fail(cp, cp->rec_line, "column \"%s\" is named twice in the "
                        "header (fields %zu and %zu)", h->column, h->col + 1, cp->field);
    h->col = cp->field - 1;
    return PSI_APP_INPUT_OK;
}

/* Parses the header record into in->header.  Out: *col, the column's 0-based
 * index; *n_cols, the header's field count. */
static int csv_read_header(csv_parser *cp, psi_app_input *in, const char *column,
                           size_t *col, size_t *n_cols)
{
    csv_header h = {.column = column, .col = SIZE_MAX};
    int rc;

    if (cp->pos == cp->end)
        return input_fail(cp->c, PSI_APP_INPUT_ECSV, "no header row (the input is "
                          "empty)");
    rc = csv_record(cp, 0, NULL, n_cols, &in->header, csv_header_field, &h);
    if (rc != 0)
        return rc;
    if (h.col == SIZE_MAX)
        return input_fail(cp->c, PSI_APP_INPUT_ECSV, "line %zu: no column \"%s\" in "
                          "the header; its columns: %s%s (%zu in all)", cp->rec_line,
                          column, h.names, *n_cols > CSV_LIST_NAMES ? ", ..." : "",
                          *n_cols);
    *col = h.col;
    return PSI_APP_INPUT_OK;
}

/* The message for a record of nf fields under a header of n_cols. */
static int csv_count_error(const csv_parser *cp, const psi_app_span *rec, size_t nf,
                           size_t n_cols)
{
    if (rec->len == 0)
        return input_fail(cp->c, PSI_APP_INPUT_ECSV, "line %zu: empty line, the header "
                          "has %zu fields", cp->rec_line, n_cols);
    return input_fail(cp->c, PSI_APP_INPUT_ECSV, "line %zu: %zu field%s, the header "
                      "has %zu", cp->rec_line, nf, nf == 1 ? "" : "s", n_cols);
}

/* Parses the records after the header into in->values and in->records
 * (sized for `cap` records).  Values with "" escapes are left raw (content
 * between the quotes) for csv_unescape.  Out: *extra_len, the total of their
 * unescaped lengths. */
static int csv_rows(csv_parser *cp, psi_app_input *in, size_t cap, size_t col,
                    size_t n_cols, size_t *extra_len)
{
    (void)cap;  // only asserted
    while (cp->pos < cp->end) {
        csv_field f = {0, 0, 0};
        psi_app_span rec;
        size_t nf;
        int rc = csv_record(cp, col, &f, &nf, &rec, NULL, NULL);

        if (rc != 0)
            return rc;
        if (nf != n_cols)
            return csv_count_error(cp, &rec, nf, n_cols);
        // Every record but the last ends in its own '\n'.
        assert(in->n < cap);
        in->values[in->n].data = cp->d + f.off;
        in->values[in->n].len = f.len;
        if (f.quotes != 0)
            *extra_len += f.len - f.quotes;
        in->records[in->n++] = rec;
    }
    return PSI_APP_INPUT_OK;
}

/* Copies len escaped bytes (each '"' doubled) from src to dst, undoubling.
 * Returns: the bytes written. */
static size_t csv_undouble(uint8_t *dst, const uint8_t *src, size_t len)
{
    size_t i, n = 0;

    for (i = 0; i < len; i++) {
        dst[n++] = src[i];
        i += src[i] == '"';
    }
    return n;
}

/* Moves the values with "" escapes, unescaped, into in->extra, allocated once
 * at its final size so pointers into it stay valid.  A raw value has a '"'
 * exactly when it has escapes: quotes elsewhere are refused by the parser. */
static int csv_unescape(const input_ctx *c, psi_app_input *in, size_t extra_len)
{
    size_t i, at = 0;

    if (extra_len == 0)
        return PSI_APP_INPUT_OK;    // an escaped value holds at least one '"'
    in->extra = input_alloc(c, extra_len, 1);
    if (in->extra == NULL)
        return PSI_APP_INPUT_ENOMEM;
    for (i = 0; i < in->n && at < extra_len; i++) {
        psi_value *v = &in->values[i];

        if (memchr(v->data, '"', v->len) == NULL)
            continue;
        v->len = csv_undouble(in->extra + at, v->data, v->len);
        v->data = in->extra + at;
        at += v->len;
    }
    assert(at == extra_len);
    in->extra_len = at;
    return PSI_APP_INPUT_OK;
}

/* CSV mode from offset start on: the header, then column `column` of every
 * record. */
static int input_csv(const input_ctx *c, psi_app_input *in, size_t start,
                     const char *column)
{
    csv_parser cp = {.c = c, .d = in->data, .pos = start, .end = in->data_len,
                     .line = 1};
    size_t col = 0, n_cols = 0, cap, extra_len = 0;
    int rc = csv_read_header(&cp, in, column, &col, &n_cols);

    if (rc != 0)
        return rc;
    cap = input_count_lines(cp.d + cp.pos, cp.d + cp.end);
    in->values = input_alloc(c, cap, sizeof(psi_value));
    in->records = input_alloc(c, cap, sizeof(psi_app_span));
    if (in->values == NULL || in->records == NULL)
        return PSI_APP_INPUT_ENOMEM;
    rc = csv_rows(&cp, in, cap, col, n_cols, &extra_len);
    if (rc != 0)
        return rc;
    return csv_unescape(c, in, extra_len);
}

/* ---- The CSV guard of line mode ---------------------------------------- */

/* Returns: 1 if path ends in ".csv", in any case. */
static int input_named_csv(const char *path)
{
    size_t n = strlen(path);

    if (n < 4 || path[n - 4] != '.')
        return 0;
    for (size_t i = 0; i < 3; i++)
        if ((path[n - 3 + i] | 0x20) != "csv"[i])
            return 0;
    return 1;
}

/* Refuses data[start, len) as lines if it looks like CSV (see the header). */
static int input_guard(const input_ctx *c, const char *path, const uint8_t *data,
                       size_t start, size_t len)
{
    const uint8_t *p = data + start, *end = data + len;
    const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
    const uint8_t *e = nl != NULL ? nl : end;
    char shown[PSI_APP_INPUT_EXCERPT + 4];

    if (memchr(p, ',', (size_t)(e - p)) == NULL) {
        if (strcmp(path, "-") == 0 || !input_named_csv(path))
            return PSI_APP_INPUT_OK;
        return input_fail(c, PSI_APP_INPUT_ELOOKS_CSV, "looks like CSV (its name ends "
                          "in .csv); add --column NAME to read a column, or --lines to "
                          "read every line as a value");
    }
    if (nl != NULL && e > p && e[-1] == '\r')
        e--;
    psi_app_clean_text(shown, sizeof shown, p, (size_t)(e - p), PSI_APP_INPUT_EXCERPT);
    return input_fail(c, PSI_APP_INPUT_ELOOKS_CSV, "looks like CSV (first line \"%s\"); "
                      "add --column NAME to read a column, or --lines to read every "
                      "line as a value", shown);
}

/* Returns: 3 if data[0, len) starts with a UTF-8 byte order mark, else 0. */
static size_t input_bom(const uint8_t *data, size_t len)
{
    return len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
}

/* ---- Public functions -------------------------------------------------- */

int psi_app_input_read(psi_app_input *in, const char *path, const char *column,
                       int lines, char *err, size_t err_len)
{
    input_ctx c = {strcmp(path, "-") == 0 ? "stdin" : path, err, err_len};
    size_t start = 0;
    int rc;

    memset(in, 0, sizeof *in);
    if (err != NULL && err_len > 0)
        err[0] = '\0';
    rc = input_load(&c, path, in);
    if (rc == 0) {
        // A UTF-8 byte order mark is not part of the first value or name.
        start = input_bom(in->data, in->data_len);
        if (column != NULL)
            rc = input_csv(&c, in, start, column);
        else if (!lines)
            rc = input_guard(&c, path, in->data, start, in->data_len);
        if (rc == 0 && column == NULL)
            rc = input_lines(&c, in, start);
    }
    if (rc != 0)
        psi_app_input_free(in);
    return rc;
}

int psi_app_input_guard(const char *path, const uint8_t *data, size_t len, char *err,
                        size_t err_len)
{
    input_ctx c = {strcmp(path, "-") == 0 ? "stdin" : path, err, err_len};

    if (err != NULL && err_len > 0)
        err[0] = '\0';
    return input_guard(&c, path, data, input_bom(data, len), len);
}

int psi_app_input_lines(psi_app_input *in, uint8_t *data, size_t len, int at_start,
                        const char *label, char *err, size_t err_len)
{
    input_ctx c = {label, err, err_len};
    size_t start = 0;
    int rc;

    memset(in, 0, sizeof *in);
    if (err != NULL && err_len > 0)
        err[0] = '\0';
    in->data = data;
    in->data_len = len;
    if (at_start)
        start = input_bom(data, len);
    rc = input_lines(&c, in, start);
    if (rc != 0)
        psi_app_input_free(in);
    return rc;
}

void psi_app_input_free(psi_app_input *in)
{
    if (in == NULL)
        return;
    free(in->data);
    free(in->values);
    free(in->records);
    free(in->extra);
    memset(in, 0, sizeof *in);
}

/* Writes len bytes and "\n".  Returns: 0 or -1. */
static int input_write_line(FILE *f, const uint8_t *p, size_t len)
{
    if (len > 0 && fwrite(p, 1, len, f) != len)
        return -1;
    if (putc('\n', f) == EOF)
        return -1;
    return ferror(f) ? -1 : 0;
}

int psi_app_input_write_row(FILE *f, const psi_app_input *in, size_t i)
{
    if (i >= in->n)
        return -1;
    // records is non-NULL exactly in CSV mode (allocated even for 0 rows).
    if (in->records != NULL)
        return input_write_line(f, in->data + in->records[i].off, in->records[i].len);
    return input_write_line(f, in->values[i].data, in->values[i].len);
}

int psi_app_input_write_header(FILE *f, const psi_app_input *in)
{
    if (in->records == NULL)
        return 0;
    return input_write_line(f, in->data + in->header.off, in->header.len);
}
