/* A ServerSetup read through a psi_read_fn (PROTOCOL.md §10, §20): the
 * rules of setup_parse.c applied field by field through a window of a
 * fixed size, so a raw setup larger than memory is checked without being
 * held, and matched by cursors that read its records again in order.
 *
 * A window always shows PSI_WIRE_GUARD bytes of the field it is at (or
 * the rest of the region), which holds any tag, any length and any
 * element: psi_wire_next then judges a field exactly as it does in a
 * message held whole, except for a length-delimited payload that runs past
 * the window, which is taken here from its length alone.  Every code,
 * field, index and offset is the whole parser's. */
#include <string.h>

#include "messages.h"
#include "setup.h"
#include "suite.h"

/* ------------------------------------------------------------ window */

static int win_open(psi_wire_window *w, psi_read_fn fn, void *arg, size_t cap, uint64_t pos,
                    uint64_t end)
{
    memset(w, 0, sizeof *w);
    w->read = fn;
    w->arg = arg;
    w->pos = w->base = pos;
    w->end = end;
    w->buf = psi_alloc(cap);
    if (w->buf == NULL)
        return PSI_E_NOMEM;
    w->cap = cap;
    return PSI_OK;
}

static void win_close(psi_wire_window *w)
{
    // A raw setup's elements are the server's masked values: public, but
    // wiped as every decoded element is.
    if (w->buf != NULL)
        psi_free_wipe(w->buf, w->cap);
    w->buf = NULL;
}

/* Makes [pos, min(pos + want, end)) present.  Returns: PSI_OK, PSI_E_IO. */
static int win_need(psi_wire_window *w, size_t want)
{
    uint64_t stop = w->end - w->pos < want ? w->end : w->pos + want;
    if (w->pos >= w->base && stop <= w->base + w->have)
        return PSI_OK;
    size_t n = w->end - w->pos < w->cap ? (size_t)(w->end - w->pos) : w->cap;
    w->base = w->pos;
    w->have = 0;
    if (n > 0 && w->read(w->arg, w->pos, w->buf, n) != 0)
        return PSI_E_IO;
    w->have = n;
    return PSI_OK;
}

/* The next field of the region: 1 at its end; PSI_OK with *f (its payload
 * in the window until the next call, or f->data NULL for a payload longer
 * than the window, which is passed over) and *data_at (a length-delimited
 * payload's offset); else psi_wire_next's code for the field, or PSI_E_IO.
 * *at: the field's offset in every case. */
static int win_next(psi_wire_window *w, psi_field *f, uint64_t *at, uint64_t *data_at)
{
    *at = w->pos;
    memset(f, 0, sizeof *f);
    if (w->pos == w->end)
        return 1;
    int rc = win_need(w, PSI_WIRE_GUARD);
    if (rc != PSI_OK)
        return rc;
    uint64_t shown = w->base + w->have < w->end ? w->base + w->have : w->end;
    const uint8_t *start = w->buf + (w->pos - w->base), *p = start;
    const uint8_t *stop = w->buf + (shown - w->base);
    rc = psi_wire_next(&p, stop, f);
    if (rc == PSI_OK) {
        if (f->wire_type == PSI_WIRE_LEN)
            *data_at = w->pos + (uint64_t)(f->data - start);
        w->pos += (uint64_t)(p - start);
        return PSI_OK;
    }
    // Cut by the window's end: only a length-delimited payload can be (the
    // guard holds the tag and the length whole).
    if (shown == w->end || rc != PSI_E_MSG_TRUNCATED)
        return rc;
    const uint8_t *q = start;
    uint64_t tag, len;
    if (psi_wire_varint(&q, stop, &tag) != PSI_OK || (tag & 7) != PSI_WIRE_LEN ||
        psi_wire_varint(&q, stop, &len) != PSI_OK)
        return rc;
    uint64_t body = w->pos + (uint64_t)(q - start);
    if (len > w->end - body || len > SIZE_MAX)
        return rc;
    memset(f, 0, sizeof *f);
    f->number = (uint32_t)(tag >> 3);
    f->wire_type = PSI_WIRE_LEN;
    f->len = (size_t)len;
    *data_at = body;
    w->pos = body + len;
    return PSI_OK;
}

/* ------------------------------------------------------------- parsing */

/* The oneof member, as find_member of setup_parse.c finds it. */
static int find_member_read(psi_field *member, uint64_t *member_at, psi_wire_window *w)
{
    psi_field f;
    uint64_t at, data_at = 0;
    int rc;
    *member = (psi_field){0};
    while ((rc = win_next(w, &f, &at, &data_at)) == PSI_OK) {
        if (f.number < SETUP_RAW || f.number > SETUP_BLOOM)
            continue;
        if (f.wire_type != PSI_WIRE_LEN)
            return psi_fail_at(PSI_E_MSG_TAG, psi_setup_member_names[f.number], -1,
                               (int64_t)at);
        if (member->number != 0)
            return psi_fail_at(PSI_E_MSG_ONEOF_DOUBLED, psi_setup_member_names[f.number], -1,
                               (int64_t)at);
        *member = f;
        member->data = NULL;
        *member_at = data_at;
    }
    if (rc == PSI_E_IO)
        return rc;
    if (rc != 1)
        return psi_fail_at(rc, "ServerSetup", -1, (int64_t)at);
    if (member->number == 0)
        return psi_fail_at(PSI_E_MSG_ONEOF_MISSING, "ServerSetup", -1, -1);
    return PSI_OK;
}

/* Checks RawInfo's records as walk_raw and parse_raw of setup_parse.c
 * do: every field first (the first bad one is the error), then the order
 * (the first element below its predecessor), in one pass.  Out: *n. */
static int check_raw_read(size_t *n, psi_wire_window *w, size_t elen)
{
    uint8_t prev[PSI_ELEMENT_BYTES], cur[PSI_ELEMENT_BYTES];
    psi_field f;
    uint64_t at, data_at;
    int64_t unsorted = -1;
    int rc;
    *n = 0;
    while ((rc = win_next(w, &f, &at, &data_at)) == PSI_OK) {
        if (f.number != RAW_ELEMENTS)
            continue;
        if ((rc = psi_msg_check_element(&f, elen)) != PSI_OK)
            return psi_fail_at(rc, PSI_RAW_ELEMENTS_NAME, (int64_t)*n, (int64_t)at);
        memset(cur, 0, sizeof cur);
        memcpy(cur, f.data, elen);
        if (*n > 0 && unsorted < 0 && memcmp(prev, cur, sizeof cur) > 0)
            unsorted = (int64_t)*n;
        memcpy(prev, cur, sizeof cur);
        (*n)++;
    }
    if (rc == PSI_E_IO)
        return rc;
    if (rc != 1) {
        // Named as walk_raw names it: by the tag, when it can be read.
        const uint8_t *q = w->buf + (at - w->base), *stop = w->buf + w->have;
        uint64_t tag;
        if (psi_wire_varint(&q, stop, &tag) == PSI_OK && (tag >> 3) == RAW_ELEMENTS)
            return psi_fail_at(rc, PSI_RAW_ELEMENTS_NAME, (int64_t)*n, (int64_t)at);
        return psi_fail_at(rc, "ServerSetup.raw", -1, (int64_t)at);
    }
    if (unsorted >= 0)
        return psi_fail_at(PSI_E_SETUP_UNSORTED, PSI_RAW_ELEMENTS_NAME, unsorted, -1);
    return PSI_OK;
}

/* A GCS or Bloom setup: its message whole, parsed as in memory. */
static int parse_whole_read(psi_setup **out, int suite, psi_read_fn fn, void *arg,
                            uint64_t len, uint64_t max_held, uint64_t max_gcs_values,
                            uint32_t member)
{
    if (len > max_held || len > SIZE_MAX)
        return psi_fail_at(PSI_E_MSG_TOO_LARGE, psi_setup_member_names[member], -1, -1);
    uint8_t *msg = psi_alloc((size_t)len);
    if (msg == NULL)
        return PSI_E_NOMEM;
    int rc = len > 0 && fn(arg, 0, msg, (size_t)len) != 0 ? PSI_E_IO : PSI_OK;
    if (rc == PSI_OK)
        rc = psi_setup_parse_bounded(out, suite, msg, (size_t)len, max_gcs_values);
    psi_free(msg);
    return rc;
}

int psi_setup_parse_read_bounded(psi_setup **out, int suite, psi_read_fn fn, void *arg,
                                 uint64_t len, uint64_t max_held, uint64_t max_gcs_values,
                                 size_t window)
{
    psi_wire_window w = {0};
    psi_setup *s = NULL;
    psi_field member;
    uint64_t member_at = 0;
    uint8_t head[PSI_SUITE_HEADER_BYTES];
    size_t skip, head_len = len < sizeof head ? (size_t)len : sizeof head;
    int rc;
    PSI_CHECK_ARG(out != NULL);
    *out = NULL;
    PSI_CHECK_ARG(fn != NULL && window >= PSI_WIRE_WINDOW_MIN);
    psi_detail_clear();
    if (head_len > 0 && fn(arg, 0, head, head_len) != 0)
        return PSI_E_IO;
    PSI_TRY(psi_msg_header(&skip, suite, head, head_len, "ServerSetup"));
    PSI_TRY(win_open(&w, fn, arg, window, skip, len));
    PSI_TRY(find_member_read(&member, &member_at, &w));
    if (member.number != SETUP_RAW) {
        rc = parse_whole_read(out, suite, fn, arg, len, max_held, max_gcs_values,
                              member.number);
        goto done;
    }
    if ((s = psi_setup_new(suite)) == NULL) {
        rc = PSI_E_NOMEM;
        goto done;
    }
    s->structure = PSI_STRUCTURE_RAW;
    s->read = fn;
    s->read_arg = arg;
    s->raw_at = member_at;
    s->raw_end = member_at + member.len;
    w.pos = w.base = s->raw_at; // the RawInfo region: read afresh, up to its end
    w.end = s->raw_end;
    w.have = 0;
    PSI_TRY(check_raw_read(&s->raw_count, &w, s->elen));
    *out = s;
    s = NULL;
done:
    win_close(&w);
    psi_setup_free(s);
    return rc;
}

int psi_setup_parse_read(psi_setup **out, int suite, psi_read_fn fn, void *arg, uint64_t len,
                         uint64_t max_held)
{
    return psi_setup_parse_read_bounded(out, suite, fn, arg, len, max_held, UINT64_MAX,
                                        PSI_WIRE_WINDOW);
}

/* ------------------------------------------------------------- cursors */

int psi_raw_cursor_init(psi_raw_cursor *c, const psi_setup *s)
{
    memset(c, 0, sizeof *c);
    c->s = s;
    if (s->raw != NULL || s->read == NULL)
        return PSI_OK;
    uint64_t span = s->raw_end - s->raw_at;
    size_t cap = span < PSI_WIRE_WINDOW ? (size_t)span : PSI_WIRE_WINDOW;
    if (cap < PSI_WIRE_WINDOW_MIN)
        cap = PSI_WIRE_WINDOW_MIN;
    return win_open(&c->w, s->read, s->read_arg, cap, s->raw_at, s->raw_end);
}

int psi_raw_cursor_at(psi_raw_cursor *c, size_t b, const uint8_t **elem)
{
    const psi_setup *s = c->s;
    if (s->read == NULL) {
        *elem = s->raw + b * PSI_ELEMENT_BYTES;
        return PSI_OK;
    }
    // The records as the parse found them, or PSI_E_IO: a file changed
    // under the setup is a failure to read it, not a malformed message.
    while (c->next <= b) {
        psi_field f;
        uint64_t at, data_at;
        int rc = win_next(&c->w, &f, &at, &data_at);
        if (rc != PSI_OK) {
            psi_detail_clear();
            return PSI_E_IO;
        }
        if (f.number != RAW_ELEMENTS)
            continue;
        if (psi_msg_check_element(&f, s->elen) != PSI_OK)
            return PSI_E_IO;
        memcpy(c->prev, c->elem, sizeof c->prev);
        memset(c->elem, 0, sizeof c->elem);
        memcpy(c->elem, f.data, s->elen);
        if (c->next > 0 && memcmp(c->prev, c->elem, sizeof c->elem) > 0)
            return PSI_E_IO;
        c->next++;
    }
    *elem = c->elem;
    return PSI_OK;
}

void psi_raw_cursor_free(psi_raw_cursor *c)
{
    win_close(&c->w);
    memset(c->elem, 0, sizeof c->elem);
    memset(c->prev, 0, sizeof c->prev);
}
