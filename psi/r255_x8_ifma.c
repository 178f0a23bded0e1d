/* ristretto255 eight lanes at a time, the AVX-512 IFMA build (r255_x8.h).
 * Compiled with -mavx512f -mavx512ifma; its functions may be called only
 * where the CPU and the OS allow AVX-512 IFMA. */
#define PSI_LANES_IFMA
#include "r255_x8.h"

#include "lanes.h"
#include "r255_x8_impl.h"

int psi_r255_x8_mul_ifma(uint8_t out[8][32], const uint8_t k[8][32], const uint8_t p[8][32])
{
    int failed = r255_x8_mul(out, k, p);
    lv_burn_stack();
    return failed;
}

int psi_r255_x8_mask_ifma(uint8_t out[8][32], const uint8_t k[8][32], const uint8_t h[8][64])
{
    int failed = r255_x8_mask(out, k, h);
    lv_burn_stack();
    return failed;
}

void psi_r255_x8_from_hash_ifma(uint8_t out[8][32], const uint8_t h[8][64])
{
    r255_x8_from_hash(out, h);
    lv_burn_stack();
}

void psi_r255_x8_fe_mul_ifma(uint8_t r[8][32], const uint8_t a[8][32], const uint8_t b[8][32])
{
    r255_x8_fe_mul(r, a, b);
}

void psi_r255_x8_fe_sqr_ifma(uint8_t r[8][32], const uint8_t a[8][32])
{
    r255_x8_fe_sqr(r, a);
}
