/*
 * `psi vectors check`: one case of a "psi-wire-vectors/1" file, read from
 * JSON (cli_vector_case.c) and replayed through the library
 * (cli_vector_run.c).
 */
#ifndef PSI_CLI_VECTORS_H
#define PSI_CLI_VECTORS_H

#include <stddef.h>
#include <stdint.h>

#include "cli_json.h"
#include "psi.h"

/* A byte string decoded from hex, owned by the case. */
typedef struct psi_cli_bytes {
    uint8_t *data;
    size_t len;
} psi_cli_bytes;

/* One vector case.  Input values point into the JSON tree, so the tree
 * must outlive the case. */
typedef struct psi_cli_case {
    const char *name;
    psi_cli_bytes server_key, client_key;
    int reveal;
    psi_setup_params params;
    psi_value *server_inputs;
    size_t n_server;
    psi_value *client_inputs;
    size_t n_client;
    psi_cli_bytes setup, request, response;  // the stored messages
    size_t *intersection;                    // present when reveal is on
    size_t n_intersection;
    size_t intersection_size;
} psi_cli_case;

/** Reads the case object `obj` of file `j`.
 *  Returns: 0, or -1 with what is wrong in err (missing or wrong-typed
 *  field, bad hex, unknown data structure, out of memory).
 *  Out: *c, freed with psi_cli_case_free (also after a failure). */
int psi_cli_case_read(psi_cli_case *c, const psi_cli_json *j, const cJSON *obj,
                      char *err, size_t err_len);

/** Frees what psi_cli_case_read allocated; a zeroed *c is fine. */
void psi_cli_case_free(psi_cli_case *c);

/** Replays a case: recomputes setup, request and response from the keys
 *  and inputs, and the intersection (if revealed) and its size from the
 *  stored messages; compares each with the stored value.
 *  Returns: 0 if all agree; 1 if something differed, described in msg; -1
 *  if the case itself is invalid (a key out of range), described in msg. */
int psi_cli_case_run(const psi_cli_case *c, char *msg, size_t msg_len);

#endif /* PSI_CLI_VECTORS_H */
