/* P-256 on eight lanes in plain C (p256_x8_impl.h over lanes.h's loops):
 * the form valgrind checks for constant time, and the reference the IFMA
 * form must match bit for bit. */
#include <sodium.h>

#include "p256_x8.h"
#include "p256_x8_impl.h"

_Static_assert(PSI_X8_COMPRESS_MAX == X8_COMPRESS_GROUPS * PSI_X8_LANES,
               "p256_x8.h and p256_x8_impl.h agree on the batch");

void psi_p256_x8_mul_c(uint8_t xyz[PSI_X8_LANES][96], const uint8_t k[PSI_X8_LANES][32],
                       const uint8_t x[PSI_X8_LANES][32], const uint8_t y[PSI_X8_LANES][32])
{
    x8_mul_ws ws;
    x8_scalar_mul(&ws, xyz, k, x, y);
    sodium_memzero(&ws, sizeof ws);
    lv_burn_stack();
}

void psi_p256_x8_decompress_c(uint8_t y[PSI_X8_LANES][32], uint8_t ok[PSI_X8_LANES],
                              const uint8_t x[PSI_X8_LANES][32], const uint8_t odd[PSI_X8_LANES])
{
    x8_decompress(y, ok, x, odd);
    lv_burn_stack();
}

void psi_p256_x8_sswu_c(uint8_t x[PSI_X8_LANES][32], uint8_t y[PSI_X8_LANES][32],
                        uint8_t inf[PSI_X8_LANES], const uint8_t u0[PSI_X8_LANES][32],
                        const uint8_t u1[PSI_X8_LANES][32])
{
    x8_sswu_hash(x, y, inf, u0, u1);
    lv_burn_stack();
}

int psi_p256_x8_compress_c(uint8_t *out, const uint8_t *xyz, size_t n)
{
    if (n % PSI_X8_LANES != 0 || n > PSI_X8_COMPRESS_MAX)
        return 0;
    if (n == 0)
        return 1;
    x8_compress_ws ws;
    int r = x8_compress(&ws, out, xyz, n / PSI_X8_LANES);
    sodium_memzero(&ws, sizeof ws);
    lv_burn_stack();
    return r;
}

void psi_p256_x8_fe_op_c(uint8_t r[PSI_X8_LANES][32], const uint8_t a[PSI_X8_LANES][32],
                         const uint8_t b[PSI_X8_LANES][32], int op)
{
    x8_fe_op(r, a, b, op);
}
