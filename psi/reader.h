/* The one decoder of Request and Response (reader.c, PROTOCOL.md §10.1),
 * fed bytes as they arrive.  psi_reader_create puts one on the heap for
 * the public API; the whole-message decoders of messages.c run one on
 * their stack, so they allocate nothing.  Not installed. */
#ifndef PSI_READER_H
#define PSI_READER_H

#include "common.h"

struct psi_reader {
    int suite;
    psi_message_kind kind;
    uint32_t elements_field; /* the element records' field number */
    uint32_t reveal_field;   /* 1 for a Request; 0 (no field) for a Response */
    size_t elen;             /* the suite's element bytes */
    int state;               /* what the next byte is (reader.c) */
    unsigned header_seen;    /* bytes of the suite header read */
    uint64_t pos;            /* bytes taken since the message's start */
    uint64_t field_at;       /* where the current field starts */
    uint64_t n;              /* elements read so far */
    int flag;                /* the reveal flag so far */
    /* the current field */
    uint32_t number;
    int wire_type;
    uint64_t acc;    /* the varint being read */
    unsigned vbytes; /* its bytes read */
    uint64_t left;   /* payload bytes still to skip */
    size_t held;     /* element bytes held in hold */
    uint8_t hold[PSI_ELEMENT_BYTES];
    /* the first error, returned by every later call */
    int err;
    const char *err_field;
    int64_t err_index, err_offset;
};

/* Sets up r for one message: PSI_OK, PSI_E_SUITE or PSI_E_INVALID_ARG (a
 * kind other than Request or Response). */
int psi_reader_init(psi_reader *r, int suite, psi_message_kind kind);

/* psi_reader_feed without its argument checks and without clearing the
 * detail: writes at most cap elements, *count of them, and takes *used
 * bytes of bytes[0 .. len) (bytes non-NULL). */
int psi_reader_run(psi_reader *r, uint8_t *elements, size_t cap, size_t *count, size_t *used,
                   const uint8_t *bytes, size_t len);

/* psi_reader_end without its argument checks and without clearing the
 * detail. */
int psi_reader_finish(psi_reader *r, int *reveal, uint64_t *total);

/* Wipes the held element bytes and the rest of r. */
void psi_reader_wipe(psi_reader *r);

#endif /* PSI_READER_H */
