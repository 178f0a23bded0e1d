/* Declassification for the constant-time test (tests/psi/ctime_psi.c), which
 * runs the engine under valgrind memcheck with the key marked undefined.
 * PSI_DECLASSIFY(p, n) marks n bytes at p as public where a value derived
 * from the key becomes public by design before a call returns (a masked
 * element about to be sorted or encoded, a result that is reported); each
 * use says why.  Active only in the test's copy of the library, compiled
 * with -DPSI_CTCHECK; everywhere else it compiles to nothing.  Not
 * installed. */
#ifndef PSI_CTCHECK_H
#define PSI_CTCHECK_H

#if defined(PSI_CTCHECK) && defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define PSI_DECLASSIFY(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#endif
#endif

#ifndef PSI_DECLASSIFY
#define PSI_DECLASSIFY(p, n) ((void)(p), (void)(n))
#endif

#endif /* PSI_CTCHECK_H */
