/* See test_msg.h. */
#include "test_msg.h"

int tm_encode(uint8_t *out, size_t *len, int suite, psi_message_kind kind, int reveal,
              const uint8_t *elements, size_t n)
{
    size_t cap = *len, head = cap, body;
    *len = 0;
    int rc = psi_message_head(out, &head, suite, kind, reveal, n);
    if (rc != PSI_OK)
        return rc;
    body = cap - head;
    rc = psi_message_records(out + head, &body, suite, kind, elements, n);
    if (rc == PSI_OK)
        *len = head + body;
    return rc;
}
