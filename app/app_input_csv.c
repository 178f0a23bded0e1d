/* CSV mode of the input reader (RFC 4180 records, one column kept); see
 * app_input.h. */
#include <assert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_input_priv.h"
#include "app_util.h"

/* How many header names a "column not found" message lists. */
#define CSV_LIST_NAMES 4

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
    return app_input_fail(cp->c, PSI_APP_INPUT_ECSV, "line %zu: field %zu: %s", line,
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
        cp->line += app_input_count_nl(d + i, q);
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
        return app_input_fail(cp->c, PSI_APP_INPUT_ECSV, "no header row (the input is "
                          "empty)");
    rc = csv_record(cp, 0, NULL, n_cols, &in->header, csv_header_field, &h);
    if (rc != 0)
        return rc;
    if (h.col == SIZE_MAX)
        return app_input_fail(cp->c, PSI_APP_INPUT_ECSV, "line %zu: no column \"%s\" in "
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
        return app_input_fail(cp->c, PSI_APP_INPUT_ECSV, "line %zu: empty line, the header "
                          "has %zu fields", cp->rec_line, n_cols);
    return app_input_fail(cp->c, PSI_APP_INPUT_ECSV, "line %zu: %zu field%s, the header "
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
    in->extra = app_input_alloc(c, extra_len, 1);
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
int app_input_csv(const input_ctx *c, psi_app_input *in, size_t start,
                     const char *column)
{
    csv_parser cp = {.c = c, .d = in->data, .pos = start, .end = in->data_len,
                     .line = 1};
    size_t col = 0, n_cols = 0, cap, extra_len = 0;
    int rc = csv_read_header(&cp, in, column, &col, &n_cols);

    if (rc != 0)
        return rc;
    if (c->rows_line != 0)
        cp.line = c->rows_line;
    cap = app_input_count_lines(cp.d + cp.pos, cp.d + cp.end);
    in->values = app_input_alloc(c, cap, sizeof(psi_value));
    in->records = app_input_alloc(c, cap, sizeof(psi_app_span));
    if (in->values == NULL || in->records == NULL)
        return PSI_APP_INPUT_ENOMEM;
    rc = csv_rows(&cp, in, cap, col, n_cols, &extra_len);
    if (rc != 0)
        return rc;
    return csv_unescape(c, in, extra_len);
}
