/* Rejection cases of a "shardpsi-extra-vectors/1" file: each names an
 * operation, its bad input and the exact error it must give; see
 * cli_vectors.h and vectors/README.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"
#include "cli_vectors.h"

enum { VX_KEY, VX_POINT, VX_REQUEST, VX_INTERSECTION, VX_SETUP, VX_OPS };

static const char *const vx_ops[VX_OPS] = {
    "key", "point", "process_request", "intersection", "setup_params",
};

/* Out: *code, the error named `name` (PSI_OK refused).  Returns: 0 or -1. */
static int vx_error_code(int *code, const char *name)
{
    const char *known;

    for (int c = -1; (known = psi_error_name(c)) != NULL && c > -1000; c--) {
        if (strcmp(known, name) == 0) {
            *code = c;
            return 0;
        }
    }
    return -1;
}

static const char *vx_name(int code)
{
    const char *name = psi_error_name(code);

    return name != NULL ? name : "an unknown error code";
}

static int vx_operation(psi_cli_reject *r, const psi_app_json *j, const cJSON *obj,
                        char *err, size_t err_len)
{
    const char *op;

    if (psi_cli_vfield_string(&op, j, obj, "operation", err, err_len) != 0)
        return -1;
    for (r->op = 0; r->op < VX_OPS; r->op++)
        if (strcmp(op, vx_ops[r->op]) == 0)
            return 0;
    snprintf(err, err_len, "field \"operation\": unknown value \"%.40s\"", op);
    return -1;
}

/* "fpr": a number, or the string "NaN" (JSON has no NaN). */
static int vx_fpr(double *fpr, const cJSON *obj, char *err, size_t err_len)
{
    const cJSON *f;

    if (psi_cli_vfield(&f, obj, "fpr", err, err_len) != 0)
        return -1;
    if (cJSON_IsNumber(f)) {
        *fpr = f->valuedouble;
        return 0;
    }
    if (cJSON_IsString(f) && strcmp(f->valuestring, "NaN") == 0) {
        *fpr = NAN;
        return 0;
    }
    snprintf(err, err_len, "field \"fpr\" is not a number or \"NaN\"");
    return -1;
}

static int vx_setup_fields(psi_cli_reject *r, const psi_app_json *j, const cJSON *obj,
                           char *err, size_t err_len)
{
    double nc;

    if (psi_cli_vfield_hex(&r->key, j, obj, "server_key", err, err_len) != 0 ||
        psi_cli_vfield_structure(&r->params.structure, j, obj, err, err_len) != 0 ||
        vx_fpr(&r->params.fpr, obj, err, err_len) != 0 ||
        psi_cli_vfield_integer(&nc, obj, "num_client_inputs", -PSI_CLI_MAX_EXACT,
                               PSI_CLI_MAX_EXACT, err, err_len) != 0)
        return -1;
    r->params.num_client_inputs = (int64_t)nc;
    return psi_cli_vfield_inputs(&r->server_inputs, &r->n_server, j, obj,
                                 "server_inputs", err, err_len);
}

/* The operation's own fields. */
static int vx_fields(psi_cli_reject *r, const psi_app_json *j, const cJSON *obj,
                     char *err, size_t err_len)
{
    switch (r->op) {
    case VX_KEY:
        return psi_cli_vfield_hex(&r->key, j, obj, "key", err, err_len);
    case VX_POINT:
        return psi_cli_vfield_hex(&r->data, j, obj, "point", err, err_len);
    case VX_REQUEST:
        return psi_cli_vfield_hex(&r->key, j, obj, "server_key", err, err_len) ||
               psi_cli_vfield_bool(&r->reveal, obj, "reveal_intersection", err, err_len) ||
               psi_cli_vfield_hex(&r->data, j, obj, "request", err, err_len) ? -1 : 0;
    case VX_INTERSECTION:
        return psi_cli_vfield_hex(&r->key, j, obj, "client_key", err, err_len) ||
               psi_cli_vfield_bool(&r->reveal, obj, "reveal_intersection", err, err_len) ||
               psi_cli_vfield_hex(&r->data, j, obj, "server_setup", err, err_len) ||
               psi_cli_vfield_hex(&r->response, j, obj, "response", err, err_len) ? -1 : 0;
    default:
        return vx_setup_fields(r, j, obj, err, err_len);
    }
}

int psi_cli_reject_read(psi_cli_reject *r, const psi_app_json *j, const cJSON *obj,
                        char *err, size_t err_len)
{
    const char *error;

    memset(r, 0, sizeof *r);
    if (!cJSON_IsObject(obj)) {
        snprintf(err, err_len, "case is not an object");
        return -1;
    }
    if (psi_cli_vfield_string(&r->name, j, obj, "name", err, err_len) != 0 ||
        vx_operation(r, j, obj, err, err_len) != 0 ||
        vx_fields(r, j, obj, err, err_len) != 0 ||
        psi_cli_vfield_string(&error, j, obj, "error", err, err_len) != 0)
        return -1;
    if (vx_error_code(&r->error, error) != 0) {
        snprintf(err, err_len, "field \"error\": \"%.60s\" is not the name of a "
                 "PSI_E_* error", error);
        return -1;
    }
    return 0;
}

void psi_cli_reject_free(psi_cli_reject *r)
{
    free(r->key.data);
    free(r->data.data);
    free(r->response.data);
    free(r->server_inputs);
    memset(r, 0, sizeof *r);
}

/* Returns: 0 if rc is the expected error, else 1 with a message. */
static int vx_expect(const psi_cli_reject *r, const char *call, int rc,
                     char *msg, size_t msg_len)
{
    if (rc == r->error)
        return 0;
    snprintf(msg, msg_len, "%s: expected %s, got %s", call, vx_name(r->error),
             vx_name(rc));
    return 1;
}

/* As vx_expect for the call psi_<name> of a party, or psi_shards_<name>
 * when it is sharded. */
static int vx_expect_party(const psi_cli_reject *r, const psi_app_party *p,
                           const char *name, int rc, char *msg, size_t msg_len)
{
    char call[80];

    snprintf(call, sizeof call, "%s%s", psi_app_party_api(p), name);
    return vx_expect(r, call, rc, msg, msg_len);
}

static int vx_key(const psi_cli_reject *r, char *msg, size_t msg_len)
{
    psi_settings s;
    psi_engine *e = NULL;
    int rc;

    psi_settings_default(&s);
    s.suite = (psi_suite)r->suite;
    rc = psi_engine_create_from_key(&e, &s, r->key.data, r->key.len);
    psi_engine_free(e);
    return vx_expect(r, "psi_engine_create_from_key", rc, msg, msg_len);
}

static int vx_request(const psi_cli_reject *r, const psi_app_party *server,
                      char *msg, size_t msg_len)
{
    size_t len = psi_response_bound(
        r->suite, psi_message_element_bound(r->suite, r->data.len));
    uint8_t *buf = psi_app_alloc(len, 1);
    int rc;

    if (buf == NULL) {
        snprintf(msg, msg_len, "out of memory");
        return 1;
    }
    rc = psi_app_party_process_request(server, buf, &len, r->data.data, r->data.len);
    free(buf);
    return vx_expect_party(r, server, "server_process_request", rc, msg, msg_len);
}

/* The size, and with reveal on the intersection: both must fail. */
static int vx_intersection(const psi_cli_reject *r, const psi_app_party *client,
                           char *msg, size_t msg_len)
{
    size_t count = 0, n = psi_message_element_bound(r->suite, r->response.len);
    size_t *got;
    int rc = psi_app_party_intersection_size(client, &count, r->data.data, r->data.len,
                                             r->response.data, r->response.len);

    if (vx_expect_party(r, client, "client_get_intersection_size", rc, msg,
                        msg_len) != 0 || !r->reveal)
        return rc == r->error ? 0 : 1;
    if ((got = psi_app_alloc(n, sizeof *got)) == NULL) {
        snprintf(msg, msg_len, "out of memory");
        return 1;
    }
    rc = psi_app_party_intersection(client, got, &n, r->data.data, r->data.len,
                                    r->response.data, r->response.len);
    free(got);
    return vx_expect_party(r, client, "client_get_intersection", rc, msg, msg_len);
}

/* When psi_setup_bound refuses the parameters it must give the same error,
 * and psi_server_create_setup must refuse them even with no capacity. */
static int vx_setup(const psi_cli_reject *r, const psi_app_party *server,
                    char *msg, size_t msg_len)
{
    size_t bound = 0, len;
    uint8_t *buf;
    int rc = psi_setup_bound(&bound, r->suite, &r->params, r->n_server);

    if (rc != PSI_OK && vx_expect(r, "psi_setup_bound", rc, msg, msg_len) != 0)
        return 1;
    if ((buf = psi_app_alloc(bound, 1)) == NULL) {
        snprintf(msg, msg_len, "out of memory");
        return 1;
    }
    len = bound;
    rc = psi_app_party_create_setup(server, buf, &len, NULL, &r->params,
                                    r->server_inputs, r->n_server);
    free(buf);
    return vx_expect_party(r, server, "server_create_setup", rc, msg, msg_len);
}

/* Runs an operation that needs a party made from the case's key. */
static int vx_with_party(const psi_cli_reject *r, const psi_app_shard_opts *so,
                         char *msg, size_t msg_len)
{
    psi_app_party p;
    int client = r->op == VX_INTERSECTION;
    int rc = psi_cli_vparty(&p, so, r->suite, client ? PSI_ROLE_CLIENT : PSI_ROLE_SERVER,
                            r->op == VX_SETUP ? 1 : r->reveal, &r->key,
                            client ? "client_key" : "server_key", msg, msg_len);

    if (rc == 0 && r->op == VX_REQUEST)
        rc = vx_request(r, &p, msg, msg_len);
    else if (rc == 0 && client)
        rc = vx_intersection(r, &p, msg, msg_len);
    else if (rc == 0)
        rc = vx_setup(r, &p, msg, msg_len);
    psi_app_party_free(&p);
    return rc;
}

int psi_cli_reject_run(const psi_cli_reject *r, const psi_app_shard_opts *so,
                       char *msg, size_t msg_len)
{
    msg[0] = '\0';
    if (r->op == VX_KEY)
        return vx_key(r, msg, msg_len);
    if (r->op == VX_POINT)
        return vx_expect(r, "psi_point_check",
                         psi_point_check(r->suite, r->data.data, r->data.len), msg,
                         msg_len);
    return vx_with_party(r, so, msg, msg_len);
}
