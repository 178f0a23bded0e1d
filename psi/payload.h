/* What the two payload files share (payload.c, payload_table.c). */
#ifndef PSI_PAYLOAD_INTERNAL_H
#define PSI_PAYLOAD_INTERNAL_H

#include <stdint.h>

#include "psi.h"

#define PSI_PAYLOAD_FIELD "PayloadTable.records"

/* The tag and (key not NULL) the key of element e (PSI_ELEMENT_BYTES, the
 * suite's encoding first) under a table's salt. */
void psi_pay_derive(uint8_t tag[PSI_PAYLOAD_TAG_BYTES], uint8_t key[32], int suite,
                    const uint8_t salt[PSI_PAYLOAD_SALT_BYTES], const uint8_t *e);

#endif /* PSI_PAYLOAD_INTERNAL_H */
