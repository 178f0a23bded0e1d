/* ristretto255 eight lanes at a time, the AVX-512 IFMA build (r255_x8.h).
 * Compiled with -mavx512f -mavx512ifma; its functions may be called only
 * where the CPU and the OS allow AVX-512 IFMA. */
#define PSI_LANES_IFMA
#include "r255_x8.h"

#include "lanes.h"
#include "r255_x8_impl.h"
