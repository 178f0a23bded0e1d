/* The cases of a "shardpsi-payload-vectors/1" file (vectors/shardpsi-payloads.json,
 * written by vectors/payload-ref.py; PROTOCOL.md §22): each table rebuilt from
 * its server's key, values, payloads, padded length and salt and compared byte
 * for byte, its payloads opened after a round of masks with the case's keys
 * and compared with the expected ones; each damaged table refused with its
 * error.  Every mask runs on one engine or on shards, as the options ask. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"
#include "cli_vectors.h"

/* One table case, read from the tree (inputs point into it). */
typedef struct vp_case {
    const char *name;
    int suite;
    psi_cli_bytes server_key, client_key, salt, table;
    size_t pad_len;
    psi_value *server_inputs, *payloads, *client_inputs, *expected;
    size_t n_server, n_payloads, n_client, n_expected;
    int *present;             // expected[i] is a payload, not null
} vp_case;

static void vp_free(vp_case *c)
{
    free(c->server_key.data);
    free(c->client_key.data);
    free(c->salt.data);
    free(c->table.data);
    free(c->server_inputs);
    free(c->payloads);
    free(c->client_inputs);
    free(c->expected);
    free(c->present);
    memset(c, 0, sizeof *c);
}

/* Out: *suite, the case's "suite" by name.  Returns: 0 or -1. */
static int vp_suite(int *suite, const psi_app_json *j, const cJSON *obj, char *err,
                    size_t err_len)
{
    const char *name;
    psi_suite s;

    if (psi_cli_vfield_string(&name, j, obj, "suite", err, err_len) != 0)
        return -1;
    if (psi_suite_from_name(&s, name) != PSI_OK) {
        snprintf(err, err_len, "field \"suite\": unknown suite \"%.40s\"", name);
        return -1;
    }
    *suite = (int)s;
    return 0;
}

/* "expected": one string or null per client input. */
static int vp_expected(vp_case *c, const psi_app_json *j, const cJSON *obj, char *err,
                       size_t err_len)
{
    const cJSON *a, *it;
    size_t n = 0;

    if (psi_cli_vfield(&a, obj, "expected", err, err_len) != 0)
        return -1;
    if (!cJSON_IsArray(a)) {
        snprintf(err, err_len, "field \"expected\": not an array");
        return -1;
    }
    c->n_expected = (size_t)cJSON_GetArraySize(a);
    c->expected = calloc(c->n_expected + 1, sizeof *c->expected);
    c->present = calloc(c->n_expected + 1, sizeof *c->present);
    if (c->expected == NULL || c->present == NULL) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    cJSON_ArrayForEach(it, a) {
        if (cJSON_IsString(it)) {
            const char *text;
            psi_app_json_bytes(j, it, &text, &c->expected[n].len);
            c->expected[n].data = (const uint8_t *)text;
            c->present[n] = 1;
        } else if (!cJSON_IsNull(it)) {
            snprintf(err, err_len, "field \"expected\"[%zu]: neither a string nor null", n);
            return -1;
        }
        n++;
    }
    return 0;
}

static int vp_read(vp_case *c, const psi_app_json *j, const cJSON *obj, char *err,
                   size_t err_len)
{
    double pad = 0;

    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(obj)) {
        snprintf(err, err_len, "not an object");
        return -1;
    }
    if (psi_cli_vfield_string(&c->name, j, obj, "name", err, err_len) != 0 ||
        vp_suite(&c->suite, j, obj, err, err_len) != 0 ||
        psi_cli_vfield_hex(&c->server_key, j, obj, "server_key", err, err_len) != 0 ||
        psi_cli_vfield_hex(&c->client_key, j, obj, "client_key", err, err_len) != 0 ||
        psi_cli_vfield_hex(&c->salt, j, obj, "salt", err, err_len) != 0 ||
        psi_cli_vfield_hex(&c->table, j, obj, "table", err, err_len) != 0 ||
        psi_cli_vfield_integer(&pad, obj, "pad_len", 0, (double)PSI_PAYLOAD_MAX, err,
                               err_len) != 0 ||
        psi_cli_vfield_inputs(&c->server_inputs, &c->n_server, j, obj, "server_inputs", err,
                              err_len) != 0 ||
        psi_cli_vfield_inputs(&c->payloads, &c->n_payloads, j, obj, "payloads", err,
                              err_len) != 0 ||
        psi_cli_vfield_inputs(&c->client_inputs, &c->n_client, j, obj, "client_inputs", err,
                              err_len) != 0 ||
        vp_expected(c, j, obj, err, err_len) != 0)
        return -1;
    c->pad_len = (size_t)pad;
    if (c->n_payloads != c->n_server || c->n_expected != c->n_client ||
        c->salt.len != PSI_PAYLOAD_SALT_BYTES) {
        snprintf(err, err_len, "%zu payloads for %zu server inputs, %zu expected for %zu "
                 "client inputs, a salt of %zu bytes", c->n_payloads, c->n_server,
                 c->n_expected, c->n_client, c->salt.len);
        return -1;
    }
    return 0;
}

/* The client's unmasked elements of its inputs after a round with the
 * case's keys: masked by the client, re-masked by the server, unmasked.
 * Returns: 0, 1 with the failure in msg, -1 for an invalid key.
 * Out: *el (n_client elements, malloc'd). */
static int vp_client_elements(const vp_case *c, const psi_app_shard_opts *so, uint8_t **el,
                              char *msg, size_t msg_len)
{
    psi_app_party server, client;
    size_t n = c->n_client, len = n * PSI_ELEMENT_BYTES;
    uint8_t *a = malloc(len + 1), *b = malloc(len + 1);
    int rc;

    *el = NULL;
    memset(&client, 0, sizeof client);
    rc = psi_cli_vparty(&server, so, c->suite, PSI_ROLE_SERVER, 1, &c->server_key,
                        "server_key", msg, msg_len);
    if (rc == 0)
        rc = psi_cli_vparty(&client, so, c->suite, PSI_ROLE_CLIENT, 1, &c->client_key,
                            "client_key", msg, msg_len);
    if (rc == 0 && (a == NULL || b == NULL)) {
        snprintf(msg, msg_len, "out of memory");
        rc = 1;
    }
    int prc = PSI_OK;
    size_t l1 = len, l2 = len, l3 = len;
    if (rc == 0 && ((prc = psi_app_party_mask(&client, a, &l1, c->client_inputs, n)) != PSI_OK ||
                    (prc = psi_app_party_remask(&server, b, &l2, a, n)) != PSI_OK ||
                    (prc = psi_app_party_unmask(&client, a, &l3, b, n)) != PSI_OK)) {
        snprintf(msg, msg_len, "the round of masks: %s", psi_strerror(prc));
        rc = 1;
    }
    psi_app_party_free(&server);
    psi_app_party_free(&client);
    free(b);
    if (rc != 0) {
        free(a);
        return rc;
    }
    *el = a;
    return 0;
}

/* Runs a table case.  Returns: 0, 1 (what differed in msg), -1 (invalid). */
static int vp_run(const vp_case *c, const psi_app_shard_opts *so, char *msg, size_t msg_len)
{
    psi_app_party server;
    size_t len = c->table.len, L = c->pad_len, n = c->n_client;
    uint8_t *table = malloc(len + 1), *el = NULL, *out = NULL;
    size_t *lens = NULL;
    int rc = psi_cli_vparty(&server, so, c->suite, PSI_ROLE_SERVER, 1, &c->server_key,
                            "server_key", msg, msg_len);

    if (rc == 0 && table == NULL) {
        snprintf(msg, msg_len, "out of memory");
        rc = 1;
    }
    int prc = rc == 0 ? psi_app_party_payload_table(&server, c->suite, table, &len,
                                                    c->server_inputs, c->payloads, c->n_server,
                                                    c->pad_len, c->salt.data)
                      : PSI_OK;
    psi_app_party_free(&server);
    if (rc == 0 && prc != PSI_OK) {
        snprintf(msg, msg_len, "psi_payload_table_build: %s", psi_strerror(prc));
        rc = 1;
    } else if (rc == 0 && (len != c->table.len || memcmp(table, c->table.data, len) != 0)) {
        snprintf(msg, msg_len, "table: %zu bytes differing from the stored %zu", len,
                 c->table.len);
        rc = 1;
    }
    if (rc == 0)
        rc = vp_client_elements(c, so, &el, msg, msg_len);
    if (rc == 0 && ((out = malloc(n * L + 1)) == NULL ||
                    (lens = malloc(n * sizeof *lens + 1)) == NULL)) {
        snprintf(msg, msg_len, "out of memory");
        rc = 1;
    }
    if (rc == 0 && (prc = psi_payload_open(c->suite, c->table.data, c->table.len, el, n, out,
                                           n * L, lens)) != PSI_OK) {
        snprintf(msg, msg_len, "psi_payload_open: %s", psi_strerror(prc));
        rc = 1;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int same = c->present[i] ? lens[i] == c->expected[i].len &&
                                       memcmp(out + i * L, c->expected[i].data, lens[i]) == 0
                                 : lens[i] == PSI_PAYLOAD_NONE;
        if (!same) {
            snprintf(msg, msg_len, "the payload of client input %zu differs from the stored "
                     "one", i);
            rc = 1;
        }
    }
    free(table);
    free(el);
    free(out);
    free(lens);
    return rc;
}

int psi_cli_payload_file_run(const psi_app_json *j, const psi_app_shard_opts *so,
                             psi_cli_vreport_fn report, void *arg)
{
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(j->root, "cases");
    const cJSON *tampered = cJSON_GetObjectItemCaseSensitive(j->root, "tampered");
    const cJSON *obj;
    char msg[1024];
    size_t i = 0;

    if (!cJSON_IsArray(cases) || !cJSON_IsArray(tampered))
        return -1;
    cJSON_ArrayForEach(obj, cases) {
        vp_case c;
        int rc = vp_read(&c, j, obj, msg, sizeof msg);
        if (rc == 0)
            rc = vp_run(&c, so, msg, sizeof msg);
        else
            rc = -1;
        report(arg, "cases", i++, c.name, rc, msg);
        vp_free(&c);
    }
    i = 0;
    cJSON_ArrayForEach(obj, tampered) {
        const char *name = NULL, *of = NULL, *error = NULL;
        psi_cli_bytes table = {0};
        vp_case base;
        const cJSON *b;
        int rc = -1, suite = 0;

        memset(&base, 0, sizeof base);
        if (psi_cli_vfield_string(&name, j, obj, "name", msg, sizeof msg) == 0 &&
            vp_suite(&suite, j, obj, msg, sizeof msg) == 0 &&
            psi_cli_vfield_string(&of, j, obj, "of", msg, sizeof msg) == 0 &&
            psi_cli_vfield_string(&error, j, obj, "error", msg, sizeof msg) == 0 &&
            psi_cli_vfield_hex(&table, j, obj, "table", msg, sizeof msg) == 0) {
            // The case it damages: the same suite and name.
            snprintf(msg, sizeof msg, "no case \"%.40s\" of its suite", of);
            cJSON_ArrayForEach(b, cases) {
                int bs = -1;
                const char *bn = NULL;
                char e2[64];
                if (vp_suite(&bs, j, b, e2, sizeof e2) == 0 && bs == suite &&
                    psi_cli_vfield_string(&bn, j, b, "name", e2, sizeof e2) == 0 &&
                    strcmp(bn, of) == 0) {
                    rc = vp_read(&base, j, b, msg, sizeof msg) == 0 ? 0 : -1;
                    break;
                }
            }
        }
        uint8_t *el = NULL, *out = NULL;
        size_t *lens = NULL, n = base.n_client, count = 0, L = 0;
        if (rc == 0)
            rc = vp_client_elements(&base, so, &el, msg, sizeof msg);
        if (rc == 0) {
            // Checked first (as psi_payload_open does), so the output is sized by a
            // valid table's L.
            int prc = psi_payload_table_check(suite, table.data, table.len, &count, &L);
            if (prc == PSI_OK && ((out = malloc(n * L + 1)) == NULL ||
                                  (lens = malloc(n * sizeof *lens + 1)) == NULL))
                prc = PSI_E_NOMEM;
            if (prc == PSI_OK)
                prc = psi_payload_open(suite, table.data, table.len, el, n, out, n * L, lens);
            const char *got = psi_error_name(prc);
            if (got == NULL || strcmp(got, error) != 0) {
                snprintf(msg, sizeof msg, "gave %s, expected %s", got ? got : "PSI_OK", error);
                rc = 1;
            }
        }
        report(arg, "tampered", i++, name, rc, msg);
        free(el);
        free(out);
        free(lens);
        free(table.data);
        vp_free(&base);
    }
    return 0;
}
