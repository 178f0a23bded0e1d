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
    /* Bloom: k >= 1 hash functions over bloom_bytes >= 1 bytes. */
    int32_t bloom_k;
    uint8_t *bloom_bits;
    size_t bloom_bytes;
};

#endif /* PSI_SETUP_H */
