/* P-256 on eight lanes in plain C (p256_x8_impl.h over lanes.h's loops):
 * the form valgrind checks for constant time, and the reference the IFMA
 * form must match bit for bit. */
#include <sodium.h>

#include "p256_x8.h"
#include "p256_x8_impl.h"
