/*
 * The commands of the `shardpsi` tool.  Each takes the arguments from its own
 * name on (argv[0] is the command name) and returns the process exit code
 * (CLI_EXIT_* of cli_util.h).
 */
#ifndef PSI_CLI_COMMANDS_H
#define PSI_CLI_COMMANDS_H

#include <stdio.h>

/** `shardpsi vectors ...` (cli_vectors.c). */
int psi_cli_cmd_vectors(int argc, char **argv);
/** Prints the help of `shardpsi vectors` to `out`. */
void psi_cli_vectors_usage(FILE *out);

/** `shardpsi demo ...` (cli_demo.c). */
int psi_cli_cmd_demo(int argc, char **argv);
/** Prints the help of `shardpsi demo` to `out`. */
void psi_cli_demo_usage(FILE *out);

/** `shardpsi bench ...` (cli_bench.c). */
int psi_cli_cmd_bench(int argc, char **argv);
/** Prints the help of `shardpsi bench` to `out`. */
void psi_cli_bench_usage(FILE *out);

/** `shardpsi server ...` (cli_server.c). */
int psi_cli_cmd_server(int argc, char **argv);
/** Prints the help of `shardpsi server` to `out`. */
void psi_cli_server_usage(FILE *out);

/** `shardpsi client ...` (cli_client.c). */
int psi_cli_cmd_client(int argc, char **argv);
/** Prints the help of `shardpsi client` to `out`. */
void psi_cli_client_usage(FILE *out);

/** `shardpsi keygen|setup|request|response|match ...`, the offline commands
 *  (cli_offline.c); argv[0] names the command. */
int psi_cli_cmd_offline(int argc, char **argv);
/** Prints the help of offline command `cmd` to `out`.  Returns: 0, or -1
 *  when `cmd` is not one (out NULL: only the test). */
int psi_cli_offline_usage(FILE *out, const char *cmd);

#endif /* PSI_CLI_COMMANDS_H */
