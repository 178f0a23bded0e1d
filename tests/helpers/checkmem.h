/* Marking memory secret or public for the constant-time test
 * (tests/psi/ctime_psi.c), after libsecp256k1's checkmem.h.  Under valgrind
 * memcheck a secret byte is "undefined": a branch or a memory index that
 * depends on it is reported as a use of an uninitialised value (Adam
 * Langley's ctgrind method).  Declassifying marks bytes defined again, for
 * values that are public by design (what goes on the wire).  Only valgrind
 * is supported: MSan would need an instrumented OpenSSL and libsodium.
 *
 * The library's own annotations are psi/ctcheck.h's PSI_DECLASSIFY, which
 * is active only when psi/ is compiled with -DPSI_CTCHECK. */
#ifndef PSI_TESTS_CHECKMEM_H
#define PSI_TESTS_CHECKMEM_H

#include <valgrind/memcheck.h>

/* The n bytes at p are secret from now on (their values are unchanged). */
#define PSI_CHECKMEM_SECRET(p, n) ((void)VALGRIND_MAKE_MEM_UNDEFINED((p), (n)))
/* The n bytes at p are public from now on. */
#define PSI_CHECKMEM_DECLASSIFY(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
/* Non-zero when the program runs under valgrind. */
#define PSI_CHECKMEM_RUNNING() (RUNNING_ON_VALGRIND)
/* The number of errors valgrind has reported so far. */
#define PSI_CHECKMEM_ERRORS() ((unsigned)VALGRIND_COUNT_ERRORS)

#endif /* PSI_TESTS_CHECKMEM_H */
