/* ristretto255 eight lanes at a time, the plain C build (r255_x8.h): the
 * same source over uint64_t[8] loops, the same bytes.  It runs anywhere,
 * and is the form the constant-time test runs under valgrind. */
#include "r255_x8.h"

#include "lanes.h"
#include "r255_x8_impl.h"
