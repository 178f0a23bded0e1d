/*
 * `shardpsi demo` past its memory budget (cli_demo_spill.c, PROTOCOL.md
 * §20): the same generated sets, written value by value to nameless
 * temporary files; the four offline steps of cli_offline_steps.c and
 * cli_offline_match.c run the protocol on them, exactly as `shardpsi
 * setup`, `request`, `response` and `match` do; the matched indices are
 * checked as they are read back.  Nothing is held whole and nothing has a
 * name on disk, so an interrupted or killed demo leaves no file behind.
 */
#ifndef PSI_CLI_DEMO_SPILL_H
#define PSI_CLI_DEMO_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "app_sets.h"

/** Prints one step's line: values, message bytes (SIZE_MAX: none), time
 *  and values a second. */
void psi_cli_demo_step_line(const char *step, size_t values, size_t bytes, double ms);

/** Runs the demo of o within `memory` bytes, its files in `dir`.
 *  Returns: 0 if the result is right, 1 if it is wrong, -1 after a
 *  message (a step or the disk failed). */
int psi_cli_demo_spill(const psi_app_demo_opts *o, uint64_t memory, const char *dir);

#endif /* PSI_CLI_DEMO_SPILL_H */
