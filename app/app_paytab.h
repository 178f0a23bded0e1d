/*
 * A payload table read for lookups (PROTOCOL.md §22.4): held in memory, or
 * left in a file, where it is checked as it is read once (its header, its
 * length, the order of its tags) and indexed sparsely: the tag of one
 * record in `stride` stays in memory, so a lookup finds its stretch of
 * stride records in the index and reads only that stretch.  The table
 * then costs 16 bytes per stride records of memory, whatever its size.
 *
 * Thread-safety: none; a table is used by one thread.
 */
#ifndef PSI_APP_PAYTAB_H
#define PSI_APP_PAYTAB_H

#include <stddef.h>
#include <stdint.h>

#include "psi.h"

typedef struct psi_app_paytab {
    int suite;
    uint8_t head[PSI_PAYLOAD_HEAD_BYTES];
    uint64_t n;             // records
    size_t pad_len, rec;    // L, and 36 + L
    const uint8_t *mem;     // in memory: the records (not owned)
    int fd;                 // in a file: its descriptor (not owned) ...
    uint64_t at;            // ... and the offset of the records
    size_t stride;          // records between two index entries
    uint8_t *index;         // the tags of records 0, stride, 2 * stride, ...
    uint64_t n_index;
    uint8_t *block;         // a stretch of stride records, read for a lookup
    uint64_t reads;         // stretches read
} psi_app_paytab;

/** Checks a table held whole (psi_payload_table_check).  Returns: its
 *  code.  Out: *t (psi_app_paytab_free it). */
int psi_app_paytab_mem(psi_app_paytab *t, int suite, const uint8_t *table, size_t len);

/** Checks the table of len bytes at offset `at` of file fd, reading it
 *  once in blocks, and indexes it within `memory` bytes: an eighth for the
 *  reading block, an eighth for the index, an eighth for a stretch.
 *  Returns: PSI_OK; the codes of psi_payload_table_check (detail set, its
 *  offsets counted from `at`); PSI_E_IO with the system's reason in err;
 *  PSI_E_NOMEM, or PSI_E_MSG_TOO_LARGE with a message in err when the
 *  index does not fit `memory` (it names the budget that would do).
 *  progress, if not NULL, is told the bytes read so far.  Out: *t. */
int psi_app_paytab_file(psi_app_paytab *t, int suite, int fd, uint64_t at, uint64_t len,
                        uint64_t memory, void (*progress)(void *, uint64_t), void *arg,
                        char *err, size_t err_len);

/** Looks an unmasked element's record up and opens it
 *  (psi_payload_record_open): its payload to out (pad_len bytes), its
 *  length to *len, PSI_PAYLOAD_NONE when no record has its tag.  Returns:
 *  PSI_OK, PSI_E_PAYLOAD_AUTH, PSI_E_PAYLOAD_LENGTH (detail offset: the
 *  record's offset in the table), PSI_E_IO (the file could not be read
 *  back: err), PSI_E_NOMEM. */
int psi_app_paytab_open(psi_app_paytab *t, const uint8_t *element, uint8_t *out, size_t *len,
                        char *err, size_t err_len);

/** Frees the index and buffers (the table itself is the caller's).  Safe on
 *  a zeroed table. */
void psi_app_paytab_free(psi_app_paytab *t);

#endif /* PSI_APP_PAYTAB_H */
