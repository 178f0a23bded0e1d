/* Run-time choice of the lane arithmetic (cpu.h). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cpu.h"

#if defined(PSI_HAVE_IFMA) && (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <cpuid.h>

static int probe(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) /* OSXSAVE */
        return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    /* XCR0: SSE (1), AVX (2), opmask (5), ZMM0-15 upper halves (6), ZMM16-31 (7) */
    if ((lo & 0xe6) != 0xe6)
        return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    return (b & (1u << 16)) && (b & (1u << 21)); /* AVX512F, AVX512IFMA */
}
#else
static int probe(void)
{
    return 0;
}
#endif

/* 0 unknown, 1 no, 2 yes */
static atomic_int supported;
/* PSI_ARITH_AUTO or PSI_ARITH_PORTABLE; -1 until the environment is read */
static atomic_int choice = -1;

int psi_cpu_ifma_supported(void)
{
    int s = atomic_load_explicit(&supported, memory_order_relaxed);
    if (s == 0) {
        s = probe() ? 2 : 1;
        atomic_store_explicit(&supported, s, memory_order_relaxed);
    }
    return s == 2;
}

static int env_choice(void)
{
    const char *v = getenv("SHARDPSI_ARITH");
    return v != NULL && strcmp(v, "portable") == 0 ? PSI_ARITH_PORTABLE : PSI_ARITH_AUTO;
}

int psi_cpu_ifma(void)
{
    int c = atomic_load_explicit(&choice, memory_order_relaxed);
    if (c < 0) {
        int e = env_choice();
        /* psi_arith_set may have stored a choice meanwhile: keep it */
        atomic_compare_exchange_strong(&choice, &c, e);
        c = atomic_load_explicit(&choice, memory_order_relaxed);
    }
    return c == PSI_ARITH_AUTO && psi_cpu_ifma_supported();
}

int psi_arith_set(psi_arith arith)
{
    PSI_CHECK_ARG(arith == PSI_ARITH_AUTO || arith == PSI_ARITH_PORTABLE);
    atomic_store_explicit(&choice, arith, memory_order_relaxed);
    return PSI_OK;
}

psi_arith psi_arith_get(void)
{
    return psi_cpu_ifma() ? PSI_ARITH_IFMA : PSI_ARITH_PORTABLE;
}
