/* Helpers shared by the `shardpsi` commands; see app_util.h. */
#include "app_util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "psi.h"

static const char *app_program = "shardpsi";

void psi_app_set_program(const char *name)
{
    app_program = name;
}

/* Writes all of s[0..n) to stderr, going on after a signal or a short
 * write (which only a line past PIPE_BUF on a pipe can see). */
static void app_stderr_write(const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

void psi_app_stderr_line(const char *pre, const char *who, const char *post, const char *fmt,
                         va_list ap)
{
    char small[1024], *buf = small, *big = NULL;
    size_t cap = sizeof small;
    int head;

    // Anything stdio holds goes first (stderr is unbuffered unless a
    // program changed it).
    fflush(stderr);
    for (int pass = 0; pass < 2; pass++) {
        va_list aq;
        int n = snprintf(buf, cap, "%s%s%s", pre ? pre : "", who ? who : "", who ? ": " : "");
        if (n < 0)
            break;
        head = n;
        va_copy(aq, ap);
        n = (size_t)head < cap ? vsnprintf(buf + head, cap - (size_t)head, fmt, aq) : 0;
        va_end(aq);
        if (n < 0)
            break;
        size_t len = (size_t)head + (size_t)n, tail = post ? strlen(post) : 0;
        if (len + tail < cap) {
            memcpy(buf + len, post ? post : "", tail + 1);
            app_stderr_write(buf, len + tail);
            break;
        }
        // Too long for the stack buffer: once more into one of its size.
        if (pass == 1 || (big = malloc(len + tail + 1)) == NULL)
            break;
        buf = big;
        cap = len + tail + 1;
    }
    free(big);
}

void psi_app_stderr_printf(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    psi_app_stderr_line(NULL, NULL, NULL, fmt, ap);
    va_end(ap);
}

void psi_app_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    psi_app_stderr_line(NULL, app_program, "\n", fmt, ap);
    va_end(ap);
}

int psi_app_opt_value(int argc, char **argv, int *i, const char *name,
                      const char **value)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);

    if (strncmp(arg, name, n) != 0)
        return 0;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        return 1;
    }
    if (arg[n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        psi_app_error("option %s needs a value", name);
        *value = NULL;
        return 1;
    }
    *i += 1;
    *value = argv[*i];
    return 1;
}

int psi_app_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int psi_app_parse_u64(uint64_t *out, const char *text, const char *what)
{
    char *end = NULL;
    unsigned long long v;

    // strtoull accepts a sign and leading blanks; we do not.
    if (text[0] < '0' || text[0] > '9') {
        psi_app_error("%s: '%s' is not a non-negative integer", what, text);
        return -1;
    }
    errno = 0;
    v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0') {
        psi_app_error("%s: '%s' is not a non-negative integer (or too large)",
                      what, text);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

int psi_app_parse_size(size_t *out, const char *text, size_t max, const char *what)
{
    uint64_t v;

    if (psi_app_parse_u64(&v, text, what) != 0)
        return -1;
    if (v > (uint64_t)max) {
        psi_app_error("%s: %s is larger than the limit %zu", what, text, max);
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

int psi_app_parse_count(size_t *out, const char *text, size_t max, const char *what)
{
    if (psi_app_parse_size(out, text, max, what) != 0)
        return -1;
    if (*out == 0) {
        psi_app_error("%s: 0 is not allowed, give 1 to %zu", what, max);
        return -1;
    }
    return 0;
}

int psi_app_parse_suite(int *out, const char *text, const char *what)
{
    psi_suite s;

    if (psi_suite_from_name(&s, text) != PSI_OK) {
        psi_app_error("%s: unknown suite '%s' (" PSI_APP_SUITE_NAMES ")", what, text);
        return -1;
    }
    *out = (int)s;
    return 0;
}

int psi_app_parse_double(double *out, const char *text, double lo, int lo_open,
                         double hi, int hi_open, const char *what)
{
    char *end = NULL;
    double v;

    errno = 0;
    v = strtod(text, &end);
    if (text[0] == '\0' || *end != '\0' || errno == ERANGE || !isfinite(v)) {
        psi_app_error("%s: '%s' is not a number", what, text);
        return -1;
    }
    if (v < lo || v > hi || (lo_open && v == lo) || (hi_open && v == hi)) {
        psi_app_error("%s: %s is outside %c%g, %g%c", what, text,
                      lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']');
        return -1;
    }
    *out = v;
    return 0;
}

static int cli_hex_nibble(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int psi_app_hex_decode(uint8_t **out, size_t *out_len, const char *hex,
                       size_t len, char *err, size_t err_len)
{
    uint8_t *buf;

    *out = NULL;
    *out_len = 0;
    if (len % 2 != 0) {
        snprintf(err, err_len, "odd number of hex digits (%zu)", len);
        return -1;
    }
    buf = psi_app_alloc(len / 2, 1);
    if (buf == NULL) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < len; i += 2) {
        int hi = cli_hex_nibble(hex[i]), lo = cli_hex_nibble(hex[i + 1]);
        if (hi < 0 || lo < 0) {
            snprintf(err, err_len, "bad hex digit at position %zu",
                     hi < 0 ? i : i + 1);
            free(buf);
            return -1;
        }
        buf[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    *out = buf;
    *out_len = len / 2;
    return 0;
}

void psi_app_store_be(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

uint64_t psi_app_load_be(const uint8_t *p, int bytes)
{
    uint64_t v = 0;

    for (int i = 0; i < bytes; i++)
        v = v << 8 | p[i];
    return v;
}

int psi_app_check_input_mode(const char *cmd, const char *column, int lines)
{
    if (!lines || column == NULL)
        return 0;
    psi_app_error("%s: give --column NAME (read a CSV column) or --lines (read every "
                  "line as a value), not both", cmd);
    return -1;
}

size_t psi_app_clean_text(char *dst, size_t cap, const uint8_t *src, size_t len,
                          size_t max)
{
    size_t keep = len, n;
    int cut = 0;

    if (cap == 0)
        return 0;
    if (keep > max || keep > cap - 1) {
        cut = 1;
        keep = max < cap - 1 ? max : cap - 1;
        keep = keep > 3 ? keep - 3 : 0;     // room for "..."
        // Not inside a UTF-8 sequence: back to its lead byte (at most 3).
        for (int k = 0; k < 3 && keep > 0 && (src[keep] & 0xC0) == 0x80; k++)
            keep--;
    }
    for (n = 0; n < keep; n++)
        dst[n] = src[n] < 0x20 || src[n] == 0x7f ? '?' : (char)src[n];
    if (cut)
        for (int k = 0; k < 3 && n + 1 < cap; k++)
            dst[n++] = '.';
    dst[n] = '\0';
    return n;
}

void *psi_app_alloc(size_t n, size_t size)
{
    if (n == 0)
        n = 1;
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    return malloc(n * size);
}

static int util_cmp_index(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;

    return (x > y) - (x < y);
}

void psi_app_sort_indices(size_t *idx, size_t n)
{
    if (n > 1)
        qsort(idx, n, sizeof *idx, util_cmp_index);
}

const char *psi_app_suite_label(int suite)
{
    static char buf[32];
    const char *name = psi_suite_name(suite);

    if (name != NULL)
        return name;
    snprintf(buf, sizeof buf, "suite %d", suite);
    return buf;
}

const char *psi_app_structure_name(int structure)
{
    switch (structure) {
    case PSI_STRUCTURE_RAW: return "raw";
    case PSI_STRUCTURE_GCS: return "gcs";
    case PSI_STRUCTURE_BLOOM_FILTER: return "bloom";
    default: return "any";
    }
}

void psi_app_malloc_setup(void)
{
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD)
    mallopt(M_MMAP_THRESHOLD, 1 << 20); // also turns the dynamic threshold off
#endif
}
