/* ristretto255 eight lanes at a time, the plain C build (r255_x8.h): the
 * same source over uint64_t[8] loops, the same bytes.  It runs anywhere,
 * and is the form the constant-time test runs under valgrind. */
#include "r255_x8.h"

#include "lanes.h"
#include "r255_x8_impl.h"

int psi_r255_x8_mul_c(uint8_t out[8][32], const uint8_t k[8][32], const uint8_t p[8][32])
{
    int failed = r255_x8_mul(out, k, p);
    lv_burn_stack();
    return failed;
}

int psi_r255_x8_mask_c(uint8_t out[8][32], const uint8_t k[8][32], const uint8_t h[8][64])
{
    int failed = r255_x8_mask(out, k, h);
    lv_burn_stack();
    return failed;
}

void psi_r255_x8_from_hash_c(uint8_t out[8][32], const uint8_t h[8][64])
{
    r255_x8_from_hash(out, h);
    lv_burn_stack();
}

void psi_r255_x8_fe_mul_c(uint8_t r[8][32], const uint8_t a[8][32], const uint8_t b[8][32])
{
    r255_x8_fe_mul(r, a, b);
}

void psi_r255_x8_fe_sqr_c(uint8_t r[8][32], const uint8_t a[8][32])
{
    r255_x8_fe_sqr(r, a);
}
