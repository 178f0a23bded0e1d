/*
 * `shardpsi vectors check`: the cases of a "psi-wire-vectors/1" file and of a
 * "shardpsi-extra-vectors/1" file (vectors/README.md), read from JSON
 * (cli_vector_case.c, cli_vector_extra.c) and replayed through the library
 * (cli_vector_run.c, cli_vector_extra.c).
 */
#ifndef PSI_CLI_VECTORS_H
#define PSI_CLI_VECTORS_H

#include <stddef.h>
#include <stdint.h>

#include "app_json.h"
#include "app_party.h"
#include "psi.h"

/* A byte string decoded from hex, owned by the case. */
typedef struct psi_cli_bytes {
    uint8_t *data;
    size_t len;
} psi_cli_bytes;

/* One wire case, or one association case (association = 1: raw setup,
 * reveal on, and perm and pairs instead of the intersection).  Input values
 * point into the JSON tree, so the tree must outlive the case. */
typedef struct psi_cli_case {
    const char *name;
    int suite;          // psi_suite: the file's top-level "suite"
    int association;
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
    size_t *perm;                            // association cases only
    size_t n_perm;
    psi_pair *pairs;                         // association cases only
    size_t n_pairs;
} psi_cli_case;

/** Reads the wire case object `obj` of file `j`.
 *  Returns: 0, or -1 with what is wrong in err (missing or wrong-typed
 *  field, bad hex, unknown data structure, out of memory).
 *  Out: *c, freed with psi_cli_case_free (also after a failure). */
int psi_cli_case_read(psi_cli_case *c, const psi_app_json *j, const cJSON *obj,
                      char *err, size_t err_len);

/** Reads an association case object; as psi_cli_case_read. */
int psi_cli_assoc_read(psi_cli_case *c, const psi_app_json *j, const cJSON *obj,
                       char *err, size_t err_len);

/** Frees what psi_cli_case_read allocated; a zeroed *c is fine. */
void psi_cli_case_free(psi_cli_case *c);

/** Replays a case: recomputes setup (and for an association case the
 *  permutation), request and response from the keys and inputs, and the
 *  intersection (if revealed) and its size, or the association table, from
 *  the stored messages; compares each with the stored value.  Each party
 *  runs on one engine or, as `so` asks, on shards (app_party.h).
 *  Returns: 0 if all agree; 1 if something differed, described in msg; -1
 *  if the case itself is invalid (a key out of range), described in msg. */
int psi_cli_case_run(const psi_cli_case *c, const psi_app_shard_opts *so,
                     char *msg, size_t msg_len);

/* One rejection case: an operation on bad input and the error it must give.
 * Which fields are used depends on the operation (vectors/README.md). */
typedef struct psi_cli_reject {
    const char *name;
    int suite;               // psi_suite: the file's top-level "suite"
    int op;                  // an operation (cli_vector_extra.c)
    int error;               // the expected PSI_E_* code
    psi_cli_bytes key;       // key, server_key or client_key
    psi_cli_bytes data;      // point, request or server_setup
    psi_cli_bytes response;  // intersection only
    int reveal;
    psi_setup_params params;
    psi_value *server_inputs;
    size_t n_server;
} psi_cli_reject;

/** Reads a rejection case object; as psi_cli_case_read.  An error name
 *  that psi_error_name does not know, or PSI_OK, is malformed. */
int psi_cli_reject_read(psi_cli_reject *r, const psi_app_json *j, const cJSON *obj,
                        char *err, size_t err_len);

/** Frees what psi_cli_reject_read allocated; a zeroed *r is fine. */
void psi_cli_reject_free(psi_cli_reject *r);

/** Runs the operation, with an engine operation on one engine or on shards
 *  as `so` asks.  Returns: 0 if it failed with exactly the expected error;
 *  1 otherwise, described in msg; -1 if the case is invalid (a server or
 *  client key out of range), described in msg. */
int psi_cli_reject_run(const psi_cli_reject *r, const psi_app_shard_opts *so,
                       char *msg, size_t msg_len);

/** Makes a party of `suite` for a case from its key, named `what` in
 *  messages ("server_key"): psi_engine_create_from_key, then
 *  psi_app_party_init.
 *  Returns: 0; -1 if the key is invalid (out of range, bad length); 1 if
 *  the shards could not be built; both described in msg.
 *  Out: *p, freed with psi_app_party_free (also after a failure). */
int psi_cli_vparty(psi_app_party *p, const psi_app_shard_opts *so, int suite,
                   psi_role role, int reveal, const psi_cli_bytes *key, const char *what,
                   char *msg, size_t msg_len);

/* Field readers shared by the case readers (cli_vector_case.c).  Each
 * returns 0, or -1 with the reason in err. */

/** Out: *f, the member `name` of obj ("missing" if absent). */
int psi_cli_vfield(const cJSON **f, const cJSON *obj, const char *name,
                   char *err, size_t err_len);
/** Out: *s, a string member (NUL-terminated; U+0000 inside is refused). */
int psi_cli_vfield_string(const char **s, const psi_app_json *j, const cJSON *obj,
                          const char *name, char *err, size_t err_len);
/** Out: *v, 0 or 1 from a true/false member. */
int psi_cli_vfield_bool(int *v, const cJSON *obj, const char *name,
                        char *err, size_t err_len);
/** Out: *out, a hex member decoded (owned by the caller). */
int psi_cli_vfield_hex(psi_cli_bytes *out, const psi_app_json *j, const cJSON *obj,
                       const char *name, char *err, size_t err_len);
/** Out: *out, an integral number member in [lo, hi]. */
int psi_cli_vfield_integer(double *out, const cJSON *obj, const char *name,
                           double lo, double hi, char *err, size_t err_len);
/** Out: *out, *n, an array of strings as values (array owned by the caller,
 *  bytes pointing into the tree). */
int psi_cli_vfield_inputs(psi_value **out, size_t *n, const psi_app_json *j,
                          const cJSON *obj, const char *name, char *err, size_t err_len);
/** Out: *out, "data_structure": raw, gcs or bloom_filter. */
int psi_cli_vfield_structure(psi_structure *out, const psi_app_json *j,
                             const cJSON *obj, char *err, size_t err_len);

/** Reports one case of a file: the array it is in, its index and name
 *  (NULL when unreadable), rc (0 passed, 1 failed, -1 malformed) and msg. */
typedef void (*psi_cli_vreport_fn)(void *arg, const char *array, size_t index,
                                   const char *name, int rc, const char *msg);

/** Runs the "cases" and "tampered" arrays of a "shardpsi-payload-vectors/1"
 *  file (cli_vector_payload.c): each table rebuilt from its keys, values,
 *  payloads, L and salt and compared byte for byte, its payloads opened
 *  after a round with the case's keys (every mask on one engine or shards
 *  as `so` asks), each damaged table refused with its error.  Returns: 0,
 *  or -1 when either array is missing (no case run). */
int psi_cli_payload_file_run(const psi_app_json *j, const psi_app_shard_opts *so,
                             psi_cli_vreport_fn report, void *arg);

/* Largest integer a JSON number (a double) holds exactly. */
#define PSI_CLI_MAX_EXACT 9007199254740992.0

#endif /* PSI_CLI_VECTORS_H */
