/* Reading a party's values from a file or stdin: the file, line mode and the
 * CSV guard; see app_input.h (CSV mode: app_input_csv.c). */
#include "app_input.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app_input_priv.h"
#include "app_util.h"

/* First buffer for stdin and pipes, whose size is not known: doubled as
 * often as needed. */
#define INPUT_PIPE_CHUNK ((size_t)1 << 16)

/* Writes "<label>: <message>" into c->err and returns code. */
int app_input_fail(const input_ctx *c, int code, const char *fmt, ...)
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
void *app_input_alloc(const input_ctx *c, size_t n, size_t size)
{
    void *p;

    if (n == 0)
        n = 1;
    if (n > SIZE_MAX / size) {
        app_input_fail(c, PSI_APP_INPUT_ENOMEM, "too large (%zu entries)", n);
        return NULL;
    }
    p = malloc(n * size);
    if (p == NULL)
        app_input_fail(c, PSI_APP_INPUT_ENOMEM, "out of memory (%zu entries of %zu bytes)",
                   n, size);
    return p;
}

/* Doubles the read buffer *buf of capacity *cap. */
static int input_grow(const input_ctx *c, uint8_t **buf, size_t *cap)
{
    uint8_t *p;

    if (*cap > SIZE_MAX / 2)
        return app_input_fail(c, PSI_APP_INPUT_ENOMEM, "too large to read into memory");
    p = realloc(*buf, *cap * 2);
    if (p == NULL)
        return app_input_fail(c, PSI_APP_INPUT_ENOMEM, "out of memory reading %zu bytes",
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
            return app_input_fail(c, PSI_APP_INPUT_EREAD, "cannot read: %s", strerror(errno));
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
        return app_input_fail(c, PSI_APP_INPUT_EREAD, "cannot read: %s", strerror(errno));
    if (S_ISDIR(st.st_mode))
        return app_input_fail(c, PSI_APP_INPUT_EOPEN, "cannot open: %s", strerror(EISDIR));
    *cap = INPUT_PIPE_CHUNK;
    if (S_ISREG(st.st_mode)) {
        if (st.st_size < 0 || (uintmax_t)st.st_size >= SIZE_MAX)
            return app_input_fail(c, PSI_APP_INPUT_ENOMEM, "too large to read into memory");
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
            return app_input_fail(c, PSI_APP_INPUT_EOPEN, "cannot open: %s", strerror(errno));
    }
    rc = input_first_cap(c, fd, &cap);
    if (rc == 0) {
        in->data = app_input_alloc(c, cap, 1);
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
size_t app_input_count_nl(const uint8_t *p, const uint8_t *end)
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
size_t app_input_count_lines(const uint8_t *p, const uint8_t *end)
{
    return app_input_count_nl(p, end) + (p < end && end[-1] != '\n');
}

/* Line mode: one value per line from offset start on (see the header). */
int app_input_lines(const input_ctx *c, psi_app_input *in, size_t start)
{
    const uint8_t *p = in->data + start, *end = in->data + in->data_len;
    size_t n = 0;

    in->values = app_input_alloc(c, app_input_count_lines(p, end), sizeof(psi_value));
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
        return app_input_fail(c, PSI_APP_INPUT_ELOOKS_CSV, "looks like CSV (its name ends "
                          "in .csv); add --column NAME to read a column, or --lines to "
                          "read every line as a value");
    }
    if (nl != NULL && e > p && e[-1] == '\r')
        e--;
    psi_app_clean_text(shown, sizeof shown, p, (size_t)(e - p), PSI_APP_INPUT_EXCERPT);
    return app_input_fail(c, PSI_APP_INPUT_ELOOKS_CSV, "looks like CSV (first line \"%s\"); "
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
    input_ctx c = {strcmp(path, "-") == 0 ? "stdin" : path, err, err_len, 0};
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
            rc = app_input_csv(&c, in, start, column);
        else if (!lines)
            rc = input_guard(&c, path, in->data, start, in->data_len);
        if (rc == 0 && column == NULL)
            rc = app_input_lines(&c, in, start);
    }
    if (rc != 0)
        psi_app_input_free(in);
    return rc;
}

int psi_app_input_guard(const char *path, const uint8_t *data, size_t len, char *err,
                        size_t err_len)
{
    input_ctx c = {strcmp(path, "-") == 0 ? "stdin" : path, err, err_len, 0};

    if (err != NULL && err_len > 0)
        err[0] = '\0';
    return input_guard(&c, path, data, input_bom(data, len), len);
}

int psi_app_input_lines(psi_app_input *in, uint8_t *data, size_t len, int at_start,
                        const char *label, char *err, size_t err_len)
{
    input_ctx c = {label, err, err_len, 0};
    size_t start = 0;
    int rc;

    memset(in, 0, sizeof *in);
    if (err != NULL && err_len > 0)
        err[0] = '\0';
    in->data = data;
    in->data_len = len;
    if (at_start)
        start = input_bom(data, len);
    rc = app_input_lines(&c, in, start);
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
