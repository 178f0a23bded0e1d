/* The parts of the P-256 field code that do not depend on the limb size:
 * byte conversion, the constant-time masks and selects.  Included by
 * p256_field_8x32.h and p256_field_4x64.h after they define fe_limb,
 * FE_LIMBS and FE_LIMB_BITS; included nowhere else. */
#ifndef PSI_P256_FIELD_CT_H
#define PSI_P256_FIELD_CT_H

#include <stdint.h>

#define FE_LIMB_BYTES (FE_LIMB_BITS / 8)

/* r = the 32-byte big-endian integer b, little-endian limbs. */
static void fe_from_bytes(fe_limb r[FE_LIMBS], const uint8_t b[32])
{
    for (int i = 0; i < FE_LIMBS; i++) {
        const uint8_t *q = b + 32 - FE_LIMB_BYTES * (i + 1);
        fe_limb v = 0;
        for (int j = 0; j < FE_LIMB_BYTES; j++)
            v = v << 8 | q[j];
        r[i] = v;
    }
}

static void fe_to_bytes(uint8_t b[32], const fe_limb a[FE_LIMBS])
{
    for (int i = 0; i < FE_LIMBS; i++) {
        uint8_t *q = b + 32 - FE_LIMB_BYTES * (i + 1);
        for (int j = 0; j < FE_LIMB_BYTES; j++)
            q[j] = (uint8_t)(a[i] >> (FE_LIMB_BITS - 8 - 8 * j));
    }
}

/* Zero, read through a volatile lvalue: XORed into every mask before it is
 * used, so that the compiler cannot see that the mask is 0 or all ones and
 * turn a masked select into a branch on a secret.  clang -O3 (and so emcc)
 * does exact that to table_lookup without it: valgrind reported the key
 * reaching a conditional jump.  libsecp256k1 guards its selects the same way. */
static volatile fe_limb ct_opaque_zero;

static fe_limb ct_barrier(fe_limb mask)
{
    return mask ^ ct_opaque_zero;
}

/* All ones when a == 0, else 0. */
static fe_limb mask_is_zero(fe_limb a)
{
    return ct_barrier(((a | ((fe_limb)0 - a)) >> (FE_LIMB_BITS - 1)) - 1u);
}

/* r = mask ? b : a, limb by limb; mask is 0 or all ones. */
static void fe_select(fe_limb r[FE_LIMBS], const fe_limb a[FE_LIMBS], const fe_limb b[FE_LIMBS],
                      fe_limb mask)
{
    mask = ct_barrier(mask);
    for (int i = 0; i < FE_LIMBS; i++)
        r[i] = (a[i] & ~mask) | (b[i] & mask);
}

static fe_limb fe_mask_zero(const fe_limb a[FE_LIMBS])
{
    fe_limb acc = 0;
    for (int i = 0; i < FE_LIMBS; i++)
        acc |= a[i];
    return mask_is_zero(acc);
}

static fe_limb fe_mask_equal(const fe_limb a[FE_LIMBS], const fe_limb b[FE_LIMBS])
{
    fe_limb acc = 0;
    for (int i = 0; i < FE_LIMBS; i++)
        acc |= a[i] ^ b[i];
    return mask_is_zero(acc);
}

#endif /* PSI_P256_FIELD_CT_H */
