/* Messages made from given elements, for tests that build a partner's
 * message by hand (a hostile peer, a message of chosen points): the
 * library's head and records (psi.h, PROTOCOL.md §10.1).  Public API only. */
#ifndef PSI_TEST_MSG_H
#define PSI_TEST_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "psi.h"

/* A Request (reveal 0 or 1), Response or raw ServerSetup of `suite` from n
 * PSI_ELEMENT_BYTES slots (a raw setup's in byte order).  (out, *len) as
 * psi.h's rules.  Returns: PSI_OK or the library's code. */
int tm_encode(uint8_t *out, size_t *len, int suite, psi_message_kind kind, int reveal,
              const uint8_t *elements, size_t n);

#endif
