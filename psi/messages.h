/* What the message codecs share (PROTOCOL.md §10, §16.1): messages.c
 * writes every message and reads Request and Response, setup_parse.c reads
 * ServerSetup.  Not installed. */
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

/* An encrypted element must be a length-delimited field of exactly elen
 * bytes (the suite's, §16); points themselves are checked only when used. */
int psi_msg_check_element(const psi_field *f, size_t elen);

#endif /* PSI_MESSAGES_H */
