/* Protocol-buffers primitives (PROTOCOL.md §10).  The writer counts what it
 * could not store so one routine serves both for sizing and for writing;
 * the reader never looks at a byte at or past `end`. */
#include <string.h>

#include "wire.h"

/* The largest field number protobuf allows (2^29 - 1). */
#define FIELD_NUMBER_MAX 0x1FFFFFFFu
/* A 64-bit value needs at most 10 LEB128 bytes; the 10th carries bit 63. */
#define VARINT_MAX_BYTES 10

size_t psi_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Adds to the count without wrapping: a saturated count can never be
 * mistaken for a small message that fits. */
static void wbuf_advance(psi_wbuf *w, size_t n)
{
    w->len = (n > SIZE_MAX - w->len) ? SIZE_MAX : w->len + n;
}

void psi_wbuf_varint(psi_wbuf *w, uint64_t v)
{
    uint8_t tmp[VARINT_MAX_BYTES];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    psi_wbuf_bytes(w, tmp, n);
}

void psi_wbuf_bytes(psi_wbuf *w, const uint8_t *data, size_t len)
{
    // All or nothing: a message that does not fit is discarded anyway.
    if (len != 0 && w->len <= w->cap && len <= w->cap - w->len)
        memcpy(w->p + w->len, data, len);
    wbuf_advance(w, len);
}

void psi_wbuf_tag(psi_wbuf *w, uint32_t field, int wire_type)
{
    psi_wbuf_varint(w, ((uint64_t)field << 3) | (uint64_t)(wire_type & 7));
}

int psi_wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    const uint8_t *q = *p;
    uint64_t acc = 0;
    for (unsigned i = 0; i < VARINT_MAX_BYTES; i++) {
        if (q == end)
            return PSI_E_MSG_TRUNCATED;
        uint8_t b = *q++;
        /* The 10th byte holds only bit 63; anything above 1 there is
         * either an 11th byte or bits past 64. */
        if (i == VARINT_MAX_BYTES - 1 && b > 1)
            return PSI_E_MSG_VARINT;
        acc |= (uint64_t)(b & 0x7F) << (7 * i);
        if ((b & 0x80) == 0) {
            *v = acc;
            *p = q;
            return PSI_OK;
        }
    }
    return PSI_E_MSG_VARINT; /* not reached: the 10th byte is <= 1 */
}

/* Claims `n` bytes at *q for the field, or reports they run past the end. */
static int take_bytes(const uint8_t **q, const uint8_t *end, uint64_t n, psi_field *f)
{
    if (n > (uint64_t)(size_t)(end - *q))
        return PSI_E_MSG_TRUNCATED;
    f->data = *q;
    f->len = (size_t)n;
    *q += (size_t)n;
    return PSI_OK;
}

static int read_payload(const uint8_t **q, const uint8_t *end, psi_field *f)
{
    uint64_t n;
    int rc;
    switch (f->wire_type) {
    case PSI_WIRE_VARINT:
        return psi_wire_varint(q, end, &f->varint);
    case PSI_WIRE_I64:
        return take_bytes(q, end, 8, f);
    case PSI_WIRE_I32:
        return take_bytes(q, end, 4, f);
    case PSI_WIRE_LEN:
        rc = psi_wire_varint(q, end, &n);
        return rc != PSI_OK ? rc : take_bytes(q, end, n, f);
    default:
        // Groups (3, 4) are gone from proto3; 6 and 7 were never defined.
        return PSI_E_MSG_TAG;
    }
}

int psi_wire_next(const uint8_t **p, const uint8_t *end, psi_field *f)
{
    const uint8_t *q = *p;
    uint64_t tag;
    int rc;

    memset(f, 0, sizeof *f);
    if (q == end)
        return 1;
    rc = psi_wire_varint(&q, end, &tag);
    if (rc != PSI_OK)
        return rc;
    if ((tag >> 3) == 0 || (tag >> 3) > FIELD_NUMBER_MAX)
        return PSI_E_MSG_TAG;
    f->number = (uint32_t)(tag >> 3);
    f->wire_type = (int)(tag & 7);
    rc = read_payload(&q, end, f);
    if (rc != PSI_OK)
        return rc;
    *p = q;
    return PSI_OK;
}
