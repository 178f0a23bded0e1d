/* P-256 on eight lanes with AVX-512 IFMA: p256_x8_impl.h over lanes.h's
 * __m512i form.  Built with -mavx512f -mavx512ifma where the compiler
 * takes them (psi/meson.build) and called only where psi_cpu_ifma() finds
 * the instructions and the OS saving their registers. */
#define PSI_LANES_IFMA 1

#include <sodium.h>

#include "p256_x8.h"
#include "p256_x8_impl.h"
