/*
 * The commands of the `shardpsi` tool.  Each takes the arguments from its own
 * name on (argv[0] is the command name) and returns the process exit code
 * (PSI_APP_EXIT_* of app_util.h).
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

/** `shardpsi server ...` (cli_server.c). */
int psi_cli_cmd_server(int argc, char **argv);
/** Prints the help of `shardpsi server` to `out`. */
void psi_cli_server_usage(FILE *out);

/** `shardpsi client ...` (cli_client.c). */
int psi_cli_cmd_client(int argc, char **argv);
/** Prints the help of `shardpsi client` to `out`. */
void psi_cli_client_usage(FILE *out);

/** `shardpsi tls-keygen ...` (cli_tls_keygen.c). */
int psi_cli_cmd_tls_keygen(int argc, char **argv);
/** Prints the help of `shardpsi tls-keygen` to `out`. */
void psi_cli_tls_keygen_usage(FILE *out);

/** `shardpsi keygen|setup|request|response|match ...`, the offline commands
 *  (cli_offline.c); argv[0] names the command. */
int psi_cli_cmd_offline(int argc, char **argv);
/* Their help: psi_app_offline_usage (app_offline.h). */

#endif /* PSI_CLI_COMMANDS_H */
