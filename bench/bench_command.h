/*
 * `shardpsi bench` (bench_cmd*.c): what the `shardpsi` command calls.  It
 * takes the arguments from "bench" on and returns the exit code
 * (PSI_APP_EXIT_* of app_util.h).
 */
#ifndef PSI_BENCH_COMMAND_H
#define PSI_BENCH_COMMAND_H

#include <stdio.h>

/** `shardpsi bench ...`. */
int psi_bench_cmd(int argc, char **argv);
/** Prints the help of `shardpsi bench` to `out`. */
void psi_bench_usage(FILE *out);

#endif /* PSI_BENCH_COMMAND_H */
