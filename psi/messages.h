/* What the message codecs share (PROTOCOL.md §10, §16.1): chunks.c writes
 * the messages made of element records (Request, Response, raw
 * ServerSetup), messages.c the GCS and Bloom setups and the whole-message
 * calls, reader.c reads Request and Response, setup_parse.c ServerSetup.
 * Not installed. */
#ifndef PSI_MESSAGES_H
#define PSI_MESSAGES_H

#include "common.h"
#include "wire.h"

/* Field numbers of psi.proto (§10). */
enum {
    REQUEST_REVEAL = 1, REQUEST_ELEMENTS = 2,
    RESPONSE_ELEMENTS = 1,
    SETUP_RAW = 1, SETUP_GCS = 2, SETUP_BLOOM = 3,
    RAW_ELEMENTS = 1,
    GCS_DIV = 1, GCS_HASH_RANGE = 2, GCS_BITS = 3,
    BLOOM_HASHES = 1, BLOOM_BITS = 2
};

/* Stands in for a NULL message of length 0, so that `msg + len` is never
 * computed on a null pointer. */
extern const uint8_t psi_msg_empty[1];

/* Reads the suite header of a message of `suite` (§16.1): *skip gets its
 * length (0 for the OpenMined suite, which has none).  A message of
 * another suite fails with PSI_E_SUITE_MISMATCH, recorded on `name`
 * ("Request", ...); an unknown suite with PSI_E_SUITE. */
int psi_msg_header(size_t *skip, int suite, const uint8_t *msg, size_t len, const char *name);

/* Clears the output as psi.h's rules require (*cap gets the capacity,
 * *out_len 0) and checks the buffer: PSI_OK or PSI_E_INVALID_ARG. */
int psi_msg_take_output(uint8_t *out, size_t *out_len, size_t *cap);

/* Writes the suite header of `suite` (nothing for the OpenMined suite). */
void psi_msg_put_header(psi_wbuf *w, int suite);

/* The one encoder of a Request, a Response or a raw ServerSetup: its head,
 * then its n records (psi_message_head, psi_message_records), into out of
 * capacity cap, all or nothing.  The caller has checked the arguments and
 * the suite.  Returns PSI_OK, PSI_E_MSG_TOO_LARGE, PSI_E_BUFFER_TOO_SMALL. */
int psi_msg_encode(uint8_t *out, size_t *out_len, size_t cap, int suite, psi_message_kind kind,
                   int reveal, const uint8_t *elements, size_t n);

/* An encrypted element must be a length-delimited field of exactly elen
 * bytes (the suite's, §16); points themselves are checked only when used. */
int psi_msg_check_element(const psi_field *f, size_t elen);

#endif /* PSI_MESSAGES_H */
