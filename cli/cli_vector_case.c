/* Reads one case of a "psi-wire-vectors/1" file; see cli_vectors.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "cli_vectors.h"

// Largest integer a JSON number (a double) holds exactly.
#define VCASE_MAX_EXACT 9007199254740992.0

/* Returns: the member `name` of obj, or NULL with "missing" in err. */
static const cJSON *vcase_field(const cJSON *obj, const char *name,
                                char *err, size_t err_len)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, name);

    if (f == NULL)
        snprintf(err, err_len, "field \"%s\" is missing", name);
    return f;
}

static int vcase_wrong(const char *name, const char *want, char *err, size_t err_len)
{
    snprintf(err, err_len, "field \"%s\" is not %s", name, want);
    return -1;
}

static int vcase_hex(psi_cli_bytes *out, const psi_cli_json *j, const cJSON *obj,
                     const char *name, char *err, size_t err_len)
{
    const cJSON *f = vcase_field(obj, name, err, err_len);
    const char *text;
    size_t len;
    char why[96];

    if (f == NULL)
        return -1;
    if (!cJSON_IsString(f))
        return vcase_wrong(name, "a hex string", err, err_len);
    psi_cli_json_bytes(j, f, &text, &len);
    if (psi_cli_hex_decode(&out->data, &out->len, text, len, why, sizeof why) != 0) {
        snprintf(err, err_len, "field \"%s\": %s", name, why);
        return -1;
    }
    return 0;
}

/* Reads an integral number in [lo, hi]. */
static int vcase_integer(double *out, const cJSON *obj, const char *name,
                         double lo, double hi, char *err, size_t err_len)
{
    const cJSON *f = vcase_field(obj, name, err, err_len);

    if (f == NULL)
        return -1;
    if (!cJSON_IsNumber(f) || f->valuedouble != floor(f->valuedouble) ||
        f->valuedouble < lo || f->valuedouble > hi)
        return vcase_wrong(name, "an integer in range", err, err_len);
    *out = f->valuedouble;
    return 0;
}

static int vcase_inputs(psi_value **out, size_t *n, const psi_cli_json *j,
                        const cJSON *obj, const char *name, char *err, size_t err_len)
{
    const cJSON *f = vcase_field(obj, name, err, err_len), *s;
    size_t i = 0;

    if (f == NULL)
        return -1;
    if (!cJSON_IsArray(f))
        return vcase_wrong(name, "an array of strings", err, err_len);
    *n = (size_t)cJSON_GetArraySize(f);
    if ((*out = psi_cli_alloc(*n, sizeof **out)) == NULL) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    cJSON_ArrayForEach(s, f) {
        const char *data;
        if (!cJSON_IsString(s)) {
            snprintf(err, err_len, "field \"%s\": item %zu is not a string", name, i);
            return -1;
        }
        psi_cli_json_bytes(j, s, &data, &(*out)[i].len);
        (*out)[i++].data = (const uint8_t *)data;
    }
    return 0;
}

static int vcase_indices(size_t **out, size_t *n, const cJSON *obj,
                         const char *name, char *err, size_t err_len)
{
    const cJSON *f = vcase_field(obj, name, err, err_len), *v;
    size_t i = 0;

    if (f == NULL)
        return -1;
    if (!cJSON_IsArray(f))
        return vcase_wrong(name, "an array of integers", err, err_len);
    *n = (size_t)cJSON_GetArraySize(f);
    if ((*out = psi_cli_alloc(*n, sizeof **out)) == NULL) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    cJSON_ArrayForEach(v, f) {
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
            v->valuedouble < 0 || v->valuedouble > VCASE_MAX_EXACT) {
            snprintf(err, err_len, "field \"%s\": item %zu is not an index", name, i);
            return -1;
        }
        (*out)[i++] = (size_t)v->valuedouble;
    }
    return 0;
}

static int vcase_structure(psi_structure *out, const psi_cli_json *j,
                           const cJSON *obj, char *err, size_t err_len)
{
    static const char *const names[] = {"raw", "gcs", "bloom_filter"};
    const cJSON *f = vcase_field(obj, "data_structure", err, err_len);
    const char *text;
    size_t len;

    if (f == NULL)
        return -1;
    if (!cJSON_IsString(f))
        return vcase_wrong("data_structure", "a string", err, err_len);
    psi_cli_json_bytes(j, f, &text, &len);
    for (int k = 0; k < 3; k++) {
        if (len == strlen(names[k]) && memcmp(text, names[k], len) == 0) {
            *out = (psi_structure)k;
            return 0;
        }
    }
    snprintf(err, err_len, "field \"data_structure\": unknown value \"%.40s\"%s "
             "(expected raw, gcs or bloom_filter)", text,
             len != strlen(text) ? " (holds U+0000)" : "");
    return -1;
}

static int vcase_flags(psi_cli_case *c, const psi_cli_json *j, const cJSON *obj,
                       char *err, size_t err_len)
{
    const cJSON *f;
    double v;

    if ((f = vcase_field(obj, "name", err, err_len)) == NULL)
        return -1;
    if (!cJSON_IsString(f))
        return vcase_wrong("name", "a string", err, err_len);
    c->name = f->valuestring;
    if ((f = vcase_field(obj, "reveal_intersection", err, err_len)) == NULL)
        return -1;
    if (!cJSON_IsBool(f))
        return vcase_wrong("reveal_intersection", "true or false", err, err_len);
    c->reveal = cJSON_IsTrue(f);
    if ((f = vcase_field(obj, "fpr", err, err_len)) == NULL)
        return -1;
    if (!cJSON_IsNumber(f))
        return vcase_wrong("fpr", "a number", err, err_len);
    c->params.fpr = f->valuedouble;
    if (vcase_integer(&v, obj, "num_client_inputs", -VCASE_MAX_EXACT,
                      VCASE_MAX_EXACT, err, err_len) != 0)
        return -1;
    c->params.num_client_inputs = (int64_t)v;
    if (vcase_integer(&v, obj, "intersection_size", 0, VCASE_MAX_EXACT,
                      err, err_len) != 0)
        return -1;
    c->intersection_size = (size_t)v;
    return vcase_structure(&c->params.structure, j, obj, err, err_len);
}

int psi_cli_case_read(psi_cli_case *c, const psi_cli_json *j, const cJSON *obj,
                      char *err, size_t err_len)
{
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(obj)) {
        snprintf(err, err_len, "case is not an object");
        return -1;
    }
    if (vcase_flags(c, j, obj, err, err_len) != 0 ||
        vcase_hex(&c->server_key, j, obj, "server_key", err, err_len) != 0 ||
        vcase_hex(&c->client_key, j, obj, "client_key", err, err_len) != 0 ||
        vcase_inputs(&c->server_inputs, &c->n_server, j, obj, "server_inputs",
                     err, err_len) != 0 ||
        vcase_inputs(&c->client_inputs, &c->n_client, j, obj, "client_inputs",
                     err, err_len) != 0 ||
        vcase_hex(&c->setup, j, obj, "server_setup", err, err_len) != 0 ||
        vcase_hex(&c->request, j, obj, "request", err, err_len) != 0 ||
        vcase_hex(&c->response, j, obj, "response", err, err_len) != 0)
        return -1;
    // The intersection itself is only defined when it is revealed.
    if (c->reveal && vcase_indices(&c->intersection, &c->n_intersection, obj,
                                   "intersection", err, err_len) != 0)
        return -1;
    return 0;
}

void psi_cli_case_free(psi_cli_case *c)
{
    free(c->server_key.data);
    free(c->client_key.data);
    free(c->server_inputs);
    free(c->client_inputs);
    free(c->setup.data);
    free(c->request.data);
    free(c->response.data);
    free(c->intersection);
    memset(c, 0, sizeof *c);
}
