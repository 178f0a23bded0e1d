/*
 * The offline commands of `shardpsi` (PROTOCOL.md §17): keygen
 * (cli_offline.c) and the four protocol steps (cli_offline_steps.c, cli_offline_match.c), on the
 * shared state of app/app_offline.h.
 */
#ifndef PSI_CLI_OFFLINE_H
#define PSI_CLI_OFFLINE_H

#include <stdint.h>

#include "app_offline.h"

/* The steps (cli_offline_steps.c): each runs after parsing and returns the
 * exit code. */
int psi_cli_offline_setup(psi_app_offline *s);
int psi_cli_offline_request(psi_app_offline *s);
int psi_cli_offline_response(psi_app_offline *s);
int psi_cli_offline_match(psi_app_offline *s);

/** Reads --input through once in chunks of the budget, for its errors and
 *  its count (a progress step "reading the input").  Returns: 0 or -1
 *  (reported).  Out: *n. */
int psi_cli_offline_count(psi_app_offline *s, uint64_t *n);

#endif /* PSI_CLI_OFFLINE_H */
