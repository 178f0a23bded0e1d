/* Protocol-buffers primitives for the three psi_proto messages
 * (PROTOCOL.md §10): a bounded writer and a strict, never-overreading
 * field reader. */
#ifndef PSI_WIRE_H
#define PSI_WIRE_H

#include "common.h"

enum {
    PSI_WIRE_VARINT = 0,
    PSI_WIRE_I64 = 1,
    PSI_WIRE_LEN = 2,
    PSI_WIRE_I32 = 5
};

/* A writer into a caller buffer.  Writes past `cap` are not performed but
 * still counted in `len`, so a caller can compare len with cap at the end. */
typedef struct psi_wbuf {
    uint8_t *p;
    size_t cap;
    size_t len;
} psi_wbuf;

/* Bytes the LEB128 encoding of v takes (1..10). */
size_t psi_varint_size(uint64_t v);
void psi_wbuf_varint(psi_wbuf *w, uint64_t v);
void psi_wbuf_bytes(psi_wbuf *w, const uint8_t *data, size_t len);
/* tag = field number << 3 | wire type */
void psi_wbuf_tag(psi_wbuf *w, uint32_t field, int wire_type);

/* One field read from a message.  For PSI_WIRE_VARINT, `varint` holds the
 * value; for PSI_WIRE_LEN, data/len point into the message; for the fixed
 * types data/len cover the 8 or 4 bytes. */
typedef struct psi_field {
    uint32_t number;
    int wire_type;
    uint64_t varint;
    const uint8_t *data;
    size_t len;
} psi_field;

/* Reads one varint at *p (< end), advancing *p.
 * Returns PSI_OK, PSI_E_MSG_TRUNCATED or PSI_E_MSG_VARINT. */
int psi_wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

/* Reads the next field at *p, advancing *p past it.  Returns PSI_OK with a
 * field, 1 when *p == end (no more fields), or PSI_E_MSG_TRUNCATED,
 * PSI_E_MSG_VARINT, PSI_E_MSG_TAG (field number 0 or above 2^29-1, wire
 * types 3, 4, 6, 7). */
int psi_wire_next(const uint8_t **p, const uint8_t *end, psi_field *f);

#endif /* PSI_WIRE_H */
