/* Fuzzes the client's payload-to-CSV writer (app/app_payload_cells.c,
 * PROTOCOL.md §22.1): byte 0 picks the separator (bit 0: tab, else ','),
 * --raw-cells (bit 1) and the head's rules (bit 2: no line break even
 * quoted); the rest is the payload.  psi_app_payload_check must accept
 * exactly the fragments a reference reading here accepts (RFC 4180 fields,
 * no control byte but the tab, CR and LF only quoted), with its field
 * count; an accepted payload is written after a client cell by
 * psi_app_payload_write and the output, parsed back by a strict RFC 4180
 * reader here, must be exactly one record: the client's cell and the
 * payload's fields, each the reference's value (with a ' before one that
 * begins with =, +, -, @, a tab or CR unless raw).  A refusal has a
 * reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_payload.h"

#define CELLS_MAX (PSI_APP_PAYLOAD_FIELDS_MAX + 1)

static void cells_fail(const char *what)
{
    fprintf(stderr, "fuzz_cells: %s\n", what);
    abort();
}

/* One parsed field: its value in a buffer of its own. */
typedef struct cell {
    uint8_t *v;
    size_t len;
} cell;

/* Returns: 1 if c may stand in a field (quoted: CR and LF too, unless head). */
static int allowed(uint8_t c, int quoted, int head)
{
    if (c == '\r' || c == '\n')
        return quoted && !head;
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* Reads p[0..len) as a record of fields separated by sep, each bare or
 * quoted whole, the bytes checked by `allowed` when strict_bytes.  at_end:
 * the record ends at len (a fragment); else it ends at a '\n' that must be
 * the last byte.  Returns: the number of fields (at most max stored in
 * out, each malloc'd), or -1 if the bytes are not such a record. */
static long parse(const uint8_t *p, size_t len, int sep, int at_end, int strict_bytes,
                  int head, cell *out, size_t max)
{
    size_t i = 0, n = 0;
    uint8_t *buf;
    size_t bl;

    for (;;) {
        buf = malloc(len + 1);
        bl = 0;
        if (buf == NULL)
            cells_fail("out of memory");
        if (i < len && p[i] == '"') {
            for (i++;; i++) {
                if (i >= len)
                    goto bad;
                if (p[i] == '"') {
                    if (i + 1 < len && p[i + 1] == '"') {
                        buf[bl++] = '"';
                        i++;
                        continue;
                    }
                    i++;
                    break;
                }
                if (strict_bytes && !allowed(p[i], 1, head))
                    goto bad;
                buf[bl++] = p[i];
            }
        } else {
            for (; i < len && p[i] != sep && !(!at_end && p[i] == '\n'); i++) {
                if (p[i] == '"' || p[i] == '\r' || p[i] == '\n' ||
                    (strict_bytes && !allowed(p[i], 0, head)))
                    goto bad;
                buf[bl++] = p[i];
            }
        }
        if (n < max)
            out[n] = (cell){buf, bl};
        else
            free(buf);
        n++;
        if (at_end && i == len)
            return (long)n;
        if (!at_end && i + 1 == len && p[i] == '\n')
            return (long)n;
        if (i >= len || p[i] != sep)
            goto bad_kept;
        i++;
    }
bad:
    free(buf);
bad_kept:
    for (size_t k = 0; k < n && k < max; k++)
        free(out[k].v);
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t client[] = "client@example.org";
    cell want[CELLS_MAX + 1], got[CELLS_MAX + 2];
    char why[160] = "";
    size_t fields = 0, olen = 0;
    char *out = NULL;

    if (size < 1)
        return 0;
    int sep = data[0] & 1 ? '\t' : ',', raw = (data[0] >> 1) & 1, head = (data[0] >> 2) & 1;
    const uint8_t *p = data + 1;
    size_t len = size - 1;

    int rc = psi_app_payload_check(p, len, head, &fields, why, sizeof why);
    long ref = parse(p, len, ',', 1, 1, head, want, CELLS_MAX + 1);
    if (ref > PSI_APP_PAYLOAD_FIELDS_MAX) { // refused for its count alone
        for (long k = 0; k < ref && k <= CELLS_MAX; k++)
            free(want[k].v);
        ref = -1;
        if (rc == 0)
            cells_fail("accepted more fields than PSI_APP_PAYLOAD_FIELDS_MAX");
    }
    if (rc != 0) {
        if (why[0] == '\0')
            cells_fail("a refusal without a reason");
        if (ref >= 0)
            cells_fail("refused a payload the reference reads");
        return 0;
    }
    if (ref < 0)
        cells_fail("accepted a payload the reference refuses");
    if ((size_t)ref != fields)
        cells_fail("a field count not the reference's");

    FILE *f = open_memstream(&out, &olen);
    uint8_t *scratch = malloc(len + 1);
    if (f == NULL || scratch == NULL)
        cells_fail("out of memory");
    if (psi_app_cell_write(f, sep, 1, client, sizeof client - 1) != 0 ||
        psi_app_payload_write(f, sep, raw, p, len, scratch) != 0 || fputc('\n', f) == EOF)
        cells_fail("a write failed");
    fclose(f);
    free(scratch);

    // The output read back: one record of the client's cell and the fields.
    long n = parse((const uint8_t *)out, olen, sep, 0, 0, 0, got, CELLS_MAX + 2);
    if (n < 0)
        cells_fail("the output is not one RFC 4180 record ending in a line break");
    if ((size_t)n != fields + 1)
        cells_fail("the output has another number of fields");
    if (got[0].len != sizeof client - 1 || memcmp(got[0].v, client, got[0].len) != 0)
        cells_fail("the client's cell changed");
    for (size_t k = 0; k < fields; k++) {
        const cell *w = &want[k], *g = &got[k + 1];
        int neutral = !raw && w->len > 0 && memchr("=+-@\t\r", w->v[0], 6) != NULL;
        if (g->len != w->len + (size_t)neutral ||
            (neutral && g->v[0] != '\'') ||
            memcmp(g->v + neutral, w->v, w->len) != 0)
            cells_fail("a cell is not its field's value");
        if (!raw && g->len > 0 && memchr("=+-@\t\r", g->v[0], 6) != NULL)
            cells_fail("a formula-like cell was not neutralised");
    }
    for (long k = 0; k < n; k++)
        free(got[k].v);
    for (size_t k = 0; k < fields; k++)
        free(want[k].v);
    free(out);
    return 0;
}
