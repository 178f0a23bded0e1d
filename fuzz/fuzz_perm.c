/* Fuzzes the association permutation decoder (app/app_perm.c,
 * PROTOCOL.md §15.5): the first two bytes give n (little-endian, below
 * 4096), the rest is the file.  The result is compared with a reference
 * that reads each line's number without any fixed-width arithmetic (a
 * number is compared with n by its digits), so a wrapped size or row
 * shows as a disagreement; an accepted file gives a permutation of
 * [0, n).  The streaming parser the server uses (psi_app_perm_parse) is
 * fed the same file in two pieces, cut at a point the input picks, and
 * must agree too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_perm.h"

#define PERM_MAX_N 4096

static void perm_fail(const char *what)
{
    fprintf(stderr, "fuzz_perm: %s\n", what);
    abort();
}

/* The value of digits d[0, len) if below n, else n (saturated). */
static size_t digits_value(const uint8_t *d, size_t len, size_t n)
{
    size_t i = 0, v = 0;
    while (i < len && d[i] == '0')
        i++;
    if (len - i > 6)
        return n;
    for (; i < len; i++)
        v = v * 10 + (size_t)(d[i] - '0');
    return v < n ? v : n;
}

static int reference(const uint8_t *buf, size_t len, size_t n, size_t *line)
{
    static uint8_t seen[PERM_MAX_N];
    size_t pos = 0, l = 0;
    memset(seen, 0, n);
    *line = 0;
    while (pos < len) {
        size_t start = pos;
        while (pos < len && buf[pos] >= '0' && buf[pos] <= '9')
            pos++;
        size_t sig = start; /* leading zeros are allowed and never overflow */
        while (sig + 1 < pos && buf[sig] == '0')
            sig++;
        if (pos == start || (pos < len && buf[pos] != '\n') || pos - sig > 20 ||
            (pos - sig == 20 && memcmp(buf + sig, "18446744073709551615", 20) > 0)) {
            *line = l;
            return PSI_APP_PERM_SYNTAX;
        }
        size_t v = digits_value(buf + start, pos - start, n);
        *line = l;
        if (l >= n)
            return PSI_APP_PERM_EXTRA;
        if (v >= n)
            return PSI_APP_PERM_RANGE;
        if (seen[v])
            return PSI_APP_PERM_TWICE;
        seen[v] = 1;
        l++;
        pos++;
    }
    *line = l;
    return l == n ? PSI_APP_PERM_OK : PSI_APP_PERM_SHORT;
}

static uint8_t split_seen[PERM_MAX_N];

static int split_row(void *arg, uint64_t line, uint64_t row)
{
    (void)arg;
    (void)line;
    if (split_seen[row])
        return PSI_APP_PERM_TWICE;
    split_seen[row] = 1;
    return PSI_APP_PERM_OK;
}

/* The file fed in two pieces, cut at `cut`.  Returns: the status. */
static int split_parse(const uint8_t *buf, size_t len, size_t n, size_t cut, size_t *line)
{
    psi_app_perm_parse p;

    memset(split_seen, 0, n);
    psi_app_perm_parse_init(&p, n);
    psi_app_perm_parse_feed(&p, buf, cut, split_row, NULL);
    psi_app_perm_parse_feed(&p, buf + cut, len - cut, split_row, NULL);
    int st = psi_app_perm_parse_end(&p, split_row, NULL);
    *line = (size_t)p.line;
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static size_t perm[PERM_MAX_N];
    static uint8_t hit[PERM_MAX_N];
    if (size < 2)
        return 0;
    size_t n = ((size_t)data[0] | (size_t)data[1] << 8) % PERM_MAX_N, line, want_line;
    const uint8_t *buf = data + 2;
    size_t len = size - 2;
    int st = psi_app_perm_decode(perm, &line, len > 0 ? buf : NULL, len, n);
    int want = reference(buf, len, n, &want_line);
    if (st != want)
        perm_fail("status differs from the reference");
    if (line != want_line)
        perm_fail("line differs from the reference");
    size_t cut = len > 0 ? ((size_t)data[1] * 257 + data[0]) % (len + 1) : 0, split_line;
    if (split_parse(buf, len, n, cut, &split_line) != want || split_line != want_line)
        perm_fail("the file fed in two pieces differs from the reference");
    if (st != PSI_APP_PERM_OK)
        return 0;
    memset(hit, 0, n);
    for (size_t i = 0; i < n; i++) {
        if (perm[i] >= n || hit[perm[i]])
            perm_fail("accepted a file that is not a permutation");
        hit[perm[i]] = 1;
    }
    return 0;
}
