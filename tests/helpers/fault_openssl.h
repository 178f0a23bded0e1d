/* OpenSSL's allocator for the fault-injection tests (test_fault,
 * test_shard_fault): it counts OpenSSL's allocations and fails the one the
 * library's countdown reaches (psi_alloc_fail_after, psi/common.h), so the
 * library's and OpenSSL's allocations fail in turn from one count. */
#ifndef PSI_TEST_FAULT_OPENSSL_H
#define PSI_TEST_FAULT_OPENSSL_H

#include <stdint.h>

/* Installs it (CRYPTO_set_mem_functions): call first thing in main.
 * Returns: 1, or 0 when OpenSSL refused (it had already allocated). */
int fault_openssl_install(void);
/* Returns: OpenSSL's allocations since the last call. */
uint64_t fault_openssl_take_count(void);
/* Whether the injected failure was OpenSSL's (since the last clear). */
int fault_openssl_injected(void);
void fault_openssl_clear_injected(void);

#endif
