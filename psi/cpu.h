/* Which arithmetic the engine runs (PROTOCOL.md §21): the eight-lane AVX-512
 * IFMA code where the CPU has it and the OS saves its registers, the
 * portable code elsewhere or when asked.  Not installed. */
#ifndef PSI_CPU_H
#define PSI_CPU_H

/* 1 when the IFMA lane code may run: the build has it (PSI_HAVE_IFMA),
 * cpuid reports AVX-512 F and IFMA, XGETBV reports the OS saving the
 * opmask, ZMM and upper-YMM state, the environment variable
 * SHARDPSI_ARITH is not "portable", and psi_arith_set has not chosen
 * PSI_ARITH_PORTABLE.  Thread-safe; the CPU is asked once a process. */
int psi_cpu_ifma(void);

/* What the CPU and the OS allow, whatever the choice above. */
int psi_cpu_ifma_supported(void);

#endif /* PSI_CPU_H */
