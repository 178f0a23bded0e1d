/* The P-256 field as p256.c and p256_sswu.c share it: the choice of limb
 * size, the Montgomery conversions, inversion, and the stack wipe after a
 * secret computation.  Included by those two files only.
 *
 * Field: p256_field_4x64.h (4 x 64-bit limbs, 128-bit products) where the
 * compiler has unsigned __int128 on a 64-bit target, p256_field_8x32.h
 * (8 x 32-bit limbs) elsewhere, notably wasm32; PSI_P256_FIELD_8X32 forces
 * the latter so the tests can check both on one machine.  Both give
 * fe, fe_limb, FE_LIMBS, the constants fe_p, fe_r2, fe_r3, fe_one,
 * fe_three, fe_b, fe_zero, and fe_add, fe_sub, fe_mul, fe_sqr, all
 * constant time; the limb-size-free helpers (fe_from_bytes, fe_to_bytes,
 * ct_barrier, mask_is_zero, fe_select, fe_mask_zero, fe_mask_equal) are
 * in p256_field_ct.h, which both include.  Values are in Montgomery form
 * (R = 2^256) unless a comment says otherwise. */
#ifndef PSI_P256_FIELD_OPS_H
#define PSI_P256_FIELD_OPS_H

#include <stdint.h>

#include <sodium.h>

#if defined(__clang__)
#define UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__) && __GNUC__ >= 8
#define UNROLL _Pragma("GCC unroll 16")
#else
#define UNROLL
#endif

#if defined(__SIZEOF_INT128__) && UINTPTR_MAX > 0xffffffffu && !defined(PSI_P256_FIELD_8X32)
#include "p256_field_4x64.h"
#else
#include "p256_field_8x32.h"
#endif

static void fe_to_mont(fe r, const fe a)
{
    fe_mul(r, a, fe_r2);
}

static void fe_from_mont(fe r, const fe a)
{
    static const fe one = {1};
    fe_mul(r, a, one);
}

static void fe_sqr_n(fe r, const fe a, int n)
{
    fe_sqr(r, a);
    for (int i = 1; i < n; i++)
        fe_sqr(r, r);
}

/* x^(2^32 - 1) into x32, and x^(2^30 - 1) into x30 (for inversion). */
static void fe_pow_ones(fe x32, fe x30, const fe x)
{
    fe x2, x3, x6, x12, x15;
    fe_sqr(x2, x);
    fe_mul(x2, x2, x);       /* 2^2 - 1 */
    fe_sqr(x3, x2);
    fe_mul(x3, x3, x);       /* 2^3 - 1 */
    fe_sqr_n(x6, x3, 3);
    fe_mul(x6, x6, x3);      /* 2^6 - 1 */
    fe_sqr_n(x12, x6, 6);
    fe_mul(x12, x12, x6);    /* 2^12 - 1 */
    fe_sqr_n(x15, x12, 3);
    fe_mul(x15, x15, x3);    /* 2^15 - 1 */
    fe_sqr_n(x30, x15, 15);
    fe_mul(x30, x30, x15);   /* 2^30 - 1 */
    fe_sqr_n(x32, x30, 2);
    fe_mul(x32, x32, x2);    /* 2^32 - 1 */
}

/* r = a^(p-2); p - 2 = ffffffff 00000001 00000000 00000000 00000000
 * ffffffff ffffffff fffffffd in 32-bit words. */
static void fe_inv(fe r, const fe a)
{
    fe x32, x30, t;
    fe_pow_ones(x32, x30, a);
    fe_sqr_n(t, x32, 32);
    fe_mul(t, t, a);         /* ffffffff 00000001 */
    fe_sqr_n(t, t, 128);
    fe_mul(t, t, x32);       /* ... 00000000 x3, ffffffff */
    fe_sqr_n(t, t, 32);
    fe_mul(t, t, x32);       /* ffffffff */
    fe_sqr_n(t, t, 30);
    fe_mul(t, t, x30);       /* 30 ones ... */
    fe_sqr_n(t, t, 2);
    fe_mul(r, t, a);         /* ... then 01: fffffffd */
}

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

/* The field and point functions leave secret-dependent temporaries in
 * their dead stack frames; this overwrites that region once per secret
 * computation (called at the depth the computation ran at). */
static NOINLINE void burn_stack(void)
{
    uint8_t buf[4096];
    sodium_memzero(buf, sizeof buf);
}

#endif /* PSI_P256_FIELD_OPS_H */
