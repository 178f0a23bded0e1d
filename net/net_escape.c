/* Text from the peer made safe for a terminal; see psi_net_escape in net.h. */
#include "net.h"

#include <stdio.h>
#include <string.h>

/* Decodes one UTF-8 character at s (len > 0 bytes left): the shortest form
 * only, no surrogates, at most U+10FFFF.  Returns: its length (1-4), or 0
 * when s does not start a valid character.  Out: *cp. */
static size_t esc_utf8(const uint8_t *s, size_t len, uint32_t *cp)
{
    uint32_t c = s[0], min;
    size_t n;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, c &= 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, c &= 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, c &= 0x07, min = 0x10000;
    else
        return 0;
    if (len < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return n;
}

/* Returns: whether code point c is shown escaped (a control or a format
 * character that can change how a terminal shows the text around it). */
static int esc_hidden(uint32_t c)
{
    return (c >= 0x80 && c <= 0x9f) || c == 0x061c || (c >= 0x200b && c <= 0x200f) ||
           (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0xfeff;
}

void psi_net_escape(char *out, size_t cap, const uint8_t *s, size_t len)
{
    size_t o = 0, i = 0;

    if (cap == 0)
        return;
    while (i < len) {
        char piece[16];
        size_t plen;
        uint32_t cp = 0;
        size_t n = esc_utf8(s + i, len - i, &cp);

        if (n == 0 || cp < 0x20 || cp == 0x7f) {
            snprintf(piece, sizeof piece, "\\x%02X", s[i]);
            n = 1;
        } else if (cp == '\\') {
            memcpy(piece, "\\\\", 3);
        } else if (esc_hidden(cp)) {
            snprintf(piece, sizeof piece, "\\u{%04X}", (unsigned)cp);
        } else {
            memcpy(piece, s + i, n);
            piece[n] = '\0';
        }
        plen = strlen(piece);
        if (o + plen >= cap) // the piece would not fit whole with the NUL
            break;
        memcpy(out + o, piece, plen);
        o += plen;
        i += n;
    }
    out[o] = '\0';
}
