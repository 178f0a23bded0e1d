/* The decoded ServerSetup (PROTOCOL.md §10) shared by the codec
 * (messages.c fills it), and the matchers (setup.c, gcs.c, bloom.c). */
#ifndef PSI_SETUP_H
#define PSI_SETUP_H

#include "common.h"

struct psi_setup {
    psi_suite suite;
    size_t elen; /* bytes of an element of the suite on the wire (§16) */
    psi_structure structure;
    /* raw: raw_count elements of PSI_ELEMENT_BYTES, contiguous, in byte
     * order (checked by psi_setup_parse). */
    uint8_t *raw;
    size_t raw_count;
    /* raw read through a psi_read_fn (psi_setup_parse_read): raw is NULL
     * and the elements are the RawInfo records at [raw_at, raw_end) of the
     * message, read again by each raw cursor. */
    psi_read_fn read;
    void *read_arg;
    uint64_t raw_at, raw_end;
    /* GCS: the parameters as received, and the stream decoded into its
     * distinct values, ascending, each < hash_range. */
    int64_t gcs_hash_range;
    int32_t gcs_div;
    uint64_t *gcs_values;
    size_t gcs_count;
    size_t gcs_bits_len;   /* the stream's bytes as received */
    uint64_t gcs_end_bit;  /* stream position past the last value */
    /* Bloom: k >= 1 hash functions over bloom_bytes >= 1 bytes. */
    int32_t bloom_k;
    uint8_t *bloom_bits;
    size_t bloom_bytes;
};

/* Field names for error details, by oneof member (0: the message), and
 * the raw setup's element field. */
extern const char *const psi_setup_member_names[4];
#define PSI_RAW_ELEMENTS_NAME "ServerSetup.raw.encrypted_elements"

/* An empty setup of `suite` (its element length set), or NULL. */
psi_setup *psi_setup_new(int suite);

/* psi_setup_parse, with a GCS stream of more than max_gcs_values
 * distinct values refused (PSI_E_SETUP_MISMATCH) before its values are
 * allocated; psi_setup_parse passes UINT64_MAX. */
int psi_setup_parse_bounded(psi_setup **out, int suite, const uint8_t *msg, size_t len,
                            uint64_t max_gcs_values);

/* psi_setup_parse_read with a GCS stream bounded as above and windows of
 * `window` bytes (at least PSI_WIRE_WINDOW_MIN; the tests' small windows
 * cut fields where a file's would). */
int psi_setup_parse_read_bounded(psi_setup **out, int suite, psi_read_fn fn, void *arg,
                                 uint64_t len, uint64_t max_held, uint64_t max_gcs_values,
                                 size_t window);

/* The window of a message read through a psi_read_fn: the fields of the
 * region [pos, end), read in pieces of at most `cap` bytes. */
typedef struct psi_wire_window {
    psi_read_fn read;
    void *arg;
    uint8_t *buf;
    size_t cap, have; /* buf holds `have` bytes from `base` */
    uint64_t base, pos, end;
} psi_wire_window;

/* Bytes of a field's start a window always shows (more than a tag, a
 * length and an element), and the smallest window. */
#define PSI_WIRE_GUARD 128
#define PSI_WIRE_WINDOW_MIN 256
/* The window of a file's setup (psi_setup_parse_read, every cursor). */
#define PSI_WIRE_WINDOW (256 * 1024)

/* The elements of a raw setup in order, from memory or read again through
 * the setup's reader. */
typedef struct psi_raw_cursor {
    const psi_setup *s;
    size_t next; /* reader: the index of the element the next record gives */
    psi_wire_window w;
    uint8_t elem[PSI_ELEMENT_BYTES], prev[PSI_ELEMENT_BYTES];
} psi_raw_cursor;

/* Returns: PSI_OK, PSI_E_NOMEM.  psi_raw_cursor_free frees it either way. */
int psi_raw_cursor_init(psi_raw_cursor *c, const psi_setup *s);

/* Out: *elem, element b (< raw_count, and no smaller than the b of the
 * last call), valid until the next call.  Returns: PSI_OK, PSI_E_IO (the
 * reader failed, or the records changed since the parse). */
int psi_raw_cursor_at(psi_raw_cursor *c, size_t b, const uint8_t **elem);

void psi_raw_cursor_free(psi_raw_cursor *c);

/* The length of the canonical encoding (the one every honest encoder
 * writes, §10) of the parsed setup `s`. */
int psi_setup_canonical_len(size_t *len, const psi_setup *s);

#endif /* PSI_SETUP_H */
