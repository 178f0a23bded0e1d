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

/* psi_setup_parse, with a GCS stream of more than max_gcs_values
 * distinct values refused (PSI_E_SETUP_MISMATCH) before its values are
 * allocated; psi_setup_parse passes UINT64_MAX. */
int psi_setup_parse_bounded(psi_setup **out, int suite, const uint8_t *msg, size_t len,
                            uint64_t max_gcs_values);

/* The length of the canonical encoding (the one every honest encoder
 * writes, §10) of the parsed setup `s`. */
int psi_setup_canonical_len(size_t *len, const psi_setup *s);

#endif /* PSI_SETUP_H */
