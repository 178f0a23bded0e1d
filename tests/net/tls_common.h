/* What the parts of the net_tls test (test_tls.c, tls_files.c) share. */
#ifndef TLS_COMMON_H
#define TLS_COMMON_H

#include <stdint.h>

#include "net_tls.h"

/** The pinned form's fingerprints of pin-server.pem and pin-client.pem. */
extern char tt_pin_srv[PSI_NET_TLS_FP_HEX + 1], tt_pin_cli[PSI_NET_TLS_FP_HEX + 1];

/** Returns: "DIR/name" of the test's directory (one of a few rotating
 *  buffers). */
const char *tt_path(const char *name);

/** Fails the test when s does not contain needle. */
void tt_has(const char *s, const char *needle);

void test_tls_escape(void **state);
void test_tls_files(void **state);

#endif /* TLS_COMMON_H */
