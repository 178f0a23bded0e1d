/* The payloads' cells: the encoding a payload must have and the one writer
 * of the cells the client outputs (PROTOCOL.md §22.1); see app_payload.h. */
#include <stdio.h>
#include <string.h>

#include "app_payload.h"

/* Returns: 1 if byte c is a control byte a payload may never hold: C0
 * controls (0x00-0x1f) but the tab, and DEL (0x7f).  CR and LF are
 * judged apart: only inside a quoted field of a payload. */
static int cell_control(uint8_t c)
{
    return (c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f;
}

int psi_app_payload_check(const uint8_t *p, size_t len, int head, size_t *fields, char *why,
                          size_t why_len)
{
    size_t n = 1, i = 0;

    *fields = 0;
    for (;;) {
        // One field from p[i]: quoted (RFC 4180: "" for a quote) or bare.
        if (i < len && p[i] == '"') {
            size_t open = i++;
            for (;; i++) {
                if (i == len) {
                    snprintf(why, why_len, "the quoted field opened at byte %zu is not closed",
                             open + 1);
                    return -1;
                }
                if (p[i] == '"') {
                    if (i + 1 < len && p[i + 1] == '"') {
                        i++;
                        continue;
                    }
                    break;
                }
                if (cell_control(p[i]) || (head && (p[i] == '\r' || p[i] == '\n'))) {
                    snprintf(why, why_len, "byte %zu is the control byte 0x%02x", i + 1, p[i]);
                    return -1;
                }
            }
            i++; // past the closing quote
            if (i < len && p[i] != ',') {
                snprintf(why, why_len, "byte %zu: '%c' after a closing quote (a field is "
                         "quoted whole)", i + 1, p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '?');
                return -1;
            }
        } else {
            for (; i < len && p[i] != ','; i++) {
                if (p[i] == '"') {
                    snprintf(why, why_len, "byte %zu: '\"' in an unquoted field", i + 1);
                    return -1;
                }
                if (p[i] == '\r' || p[i] == '\n') {
                    snprintf(why, why_len, "byte %zu: a line break outside quotes", i + 1);
                    return -1;
                }
                if (cell_control(p[i])) {
                    snprintf(why, why_len, "byte %zu is the control byte 0x%02x", i + 1, p[i]);
                    return -1;
                }
            }
        }
        if (i == len)
            break;
        // p[i] is a separator: another field follows.
        if (++n > PSI_APP_PAYLOAD_FIELDS_MAX) {
            snprintf(why, why_len, "more than %d fields", PSI_APP_PAYLOAD_FIELDS_MAX);
            return -1;
        }
        i++;
    }
    *fields = n;
    return 0;
}

size_t psi_app_payload_field(const uint8_t *p, size_t len, size_t *pos, uint8_t *out)
{
    size_t i = *pos, n = 0;

    if (i < len && p[i] == '"') {
        for (i++; i < len; i++) {
            if (p[i] == '"') {
                if (i + 1 < len && p[i + 1] == '"') {
                    out[n++] = '"';
                    i++;
                    continue;
                }
                i++;
                break;
            }
            out[n++] = p[i];
        }
    } else {
        for (; i < len && p[i] != ','; i++)
            out[n++] = p[i];
    }
    *pos = i < len ? i + 1 : len + 1; // past the separator; len + 1: the last field
    return n;
}

int psi_app_cell_write(FILE *f, int sep, int raw, const uint8_t *v, size_t len)
{
    // OWASP's CSV injection rule: a cell a spreadsheet reads as a formula
    // (or whose first byte a spreadsheet skips before one) starts with '.
    int neutral = !raw && len > 0 && memchr("=+-@\t\r", v[0], 6) != NULL;
    int quote = 0, bad = 0;

    for (size_t i = 0; i < len && !quote; i++)
        quote = v[i] == sep || v[i] == '"' || v[i] == '\r' || v[i] == '\n';
    if (quote)
        bad |= fputc('"', f) == EOF;
    if (neutral)
        bad |= fputc('\'', f) == EOF;
    for (size_t i = 0, run = 0; i <= len && !bad; i++) {
        // Runs between quotes are written whole; a quote is doubled.
        if (i == len || (quote && v[i] == '"')) {
            bad |= i > run && fwrite(v + run, 1, i - run, f) != i - run;
            if (i < len)
                bad |= fputs("\"\"", f) == EOF;
            run = i + 1;
        }
    }
    if (quote)
        bad |= fputc('"', f) == EOF;
    return bad ? -1 : 0;
}

int psi_app_payload_write(FILE *f, int sep, int raw, const uint8_t *p, size_t len,
                          uint8_t *scratch)
{
    size_t pos = 0;
    int bad = 0;

    // A checked payload's fields, each a cell after a separator.
    while (pos <= len && !bad) {
        size_t vl = psi_app_payload_field(p, len, &pos, scratch);
        bad |= fputc(sep, f) == EOF;
        bad |= psi_app_cell_write(f, sep, raw, scratch, vl) != 0;
    }
    return bad ? -1 : 0;
}

int psi_app_payload_line_write(FILE *f, int raw, const uint8_t *v, size_t vlen,
                               const uint8_t *p, size_t plen, uint8_t *scratch)
{
    if (psi_app_cell_write(f, '\t', 1, v, vlen) != 0 ||
        psi_app_payload_write(f, '\t', raw, p, plen, scratch) != 0)
        return -1;
    return fputc('\n', f) == EOF ? -1 : 0;
}
