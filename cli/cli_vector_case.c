/* Reads one wire case or association case, and the field readers the
 * rejection cases share; see cli_vectors.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"
#include "cli_vectors.h"

int psi_cli_vfield(const cJSON **f, const cJSON *obj, const char *name,
                   char *err, size_t err_len)
{
    *f = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (*f != NULL)
        return 0;
    snprintf(err, err_len, "field \"%s\" is missing", name);
    return -1;
}

static int vcase_wrong(const char *name, const char *want, char *err, size_t err_len)
{
    snprintf(err, err_len, "field \"%s\" is not %s", name, want);
    return -1;
}

int psi_cli_vfield_string(const char **s, const psi_app_json *j, const cJSON *obj,
                          const char *name, char *err, size_t err_len)
{
    const cJSON *f;
    size_t len;

    if (psi_cli_vfield(&f, obj, name, err, err_len) != 0)
        return -1;
    if (!cJSON_IsString(f))
        return vcase_wrong(name, "a string", err, err_len);
    psi_app_json_bytes(j, f, s, &len);
    if (len != strlen(*s))
        return vcase_wrong(name, "a string without U+0000", err, err_len);
    return 0;
}

int psi_cli_vfield_bool(int *v, const cJSON *obj, const char *name,
                        char *err, size_t err_len)
{
    const cJSON *f;

    if (psi_cli_vfield(&f, obj, name, err, err_len) != 0)
        return -1;
    if (!cJSON_IsBool(f))
        return vcase_wrong(name, "true or false", err, err_len);
    *v = cJSON_IsTrue(f);
    return 0;
}

int psi_cli_vfield_hex(psi_cli_bytes *out, const psi_app_json *j, const cJSON *obj,
                       const char *name, char *err, size_t err_len)
{
    const cJSON *f;
    const char *text;
    size_t len;
    char why[96];

    if (psi_cli_vfield(&f, obj, name, err, err_len) != 0)
        return -1;
    if (!cJSON_IsString(f))
        return vcase_wrong(name, "a hex string", err, err_len);
    psi_app_json_bytes(j, f, &text, &len);
    if (psi_app_hex_decode(&out->data, &out->len, text, len, why, sizeof why) != 0) {
        snprintf(err, err_len, "field \"%s\": %s", name, why);
        return -1;
    }
    return 0;
}

int psi_cli_vfield_integer(double *out, const cJSON *obj, const char *name,
                           double lo, double hi, char *err, size_t err_len)
{
    const cJSON *f;

    if (psi_cli_vfield(&f, obj, name, err, err_len) != 0)
        return -1;
    if (!cJSON_IsNumber(f) || f->valuedouble != floor(f->valuedouble) ||
        f->valuedouble < lo || f->valuedouble > hi)
        return vcase_wrong(name, "an integer in range", err, err_len);
    *out = f->valuedouble;
    return 0;
}

/* Out: *f, an array member, and *out, room for its items. */
static int vcase_array(const cJSON **f, void **out, size_t *n, size_t size,
                       const cJSON *obj, const char *name, const char *want,
                       char *err, size_t err_len)
{
    if (psi_cli_vfield(f, obj, name, err, err_len) != 0)
        return -1;
    if (!cJSON_IsArray(*f))
        return vcase_wrong(name, want, err, err_len);
    *n = (size_t)cJSON_GetArraySize(*f);
    if ((*out = psi_app_alloc(*n, size)) == NULL) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    return 0;
}

int psi_cli_vfield_inputs(psi_value **out, size_t *n, const psi_app_json *j,
                          const cJSON *obj, const char *name, char *err, size_t err_len)
{
    const cJSON *f, *s;
    size_t i = 0;

    if (vcase_array(&f, (void **)out, n, sizeof **out, obj, name,
                    "an array of strings", err, err_len) != 0)
        return -1;
    cJSON_ArrayForEach(s, f) {
        const char *data;
        if (!cJSON_IsString(s)) {
            snprintf(err, err_len, "field \"%s\": item %zu is not a string", name, i);
            return -1;
        }
        psi_app_json_bytes(j, s, &data, &(*out)[i].len);
        (*out)[i++].data = (const uint8_t *)data;
    }
    return 0;
}

static int vcase_is_index(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
           v->valuedouble >= 0 && v->valuedouble <= PSI_CLI_MAX_EXACT;
}

static int vcase_indices(size_t **out, size_t *n, const cJSON *obj,
                         const char *name, char *err, size_t err_len)
{
    const cJSON *f, *v;
    size_t i = 0;

    if (vcase_array(&f, (void **)out, n, sizeof **out, obj, name,
                    "an array of integers", err, err_len) != 0)
        return -1;
    cJSON_ArrayForEach(v, f) {
        if (!vcase_is_index(v)) {
            snprintf(err, err_len, "field \"%s\": item %zu is not an index", name, i);
            return -1;
        }
        (*out)[i++] = (size_t)v->valuedouble;
    }
    return 0;
}

/* "association": [[client_index, server_index], ...]. */
static int vcase_pairs(psi_pair **out, size_t *n, const cJSON *obj,
                       char *err, size_t err_len)
{
    const cJSON *f, *v;
    size_t i = 0;

    if (vcase_array(&f, (void **)out, n, sizeof **out, obj, "association",
                    "an array of pairs", err, err_len) != 0)
        return -1;
    cJSON_ArrayForEach(v, f) {
        const cJSON *a = cJSON_GetArrayItem(v, 0), *b = cJSON_GetArrayItem(v, 1);
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 ||
            !vcase_is_index(a) || !vcase_is_index(b)) {
            snprintf(err, err_len, "field \"association\": item %zu is not a pair "
                     "of indices", i);
            return -1;
        }
        (*out)[i].client_index = (size_t)a->valuedouble;
        (*out)[i++].server_index = (size_t)b->valuedouble;
    }
    return 0;
}

int psi_cli_vfield_structure(psi_structure *out, const psi_app_json *j,
                             const cJSON *obj, char *err, size_t err_len)
{
    static const char *const names[] = {"raw", "gcs", "bloom_filter"};
    const cJSON *f;
    const char *text;
    size_t len;

    if (psi_cli_vfield(&f, obj, "data_structure", err, err_len) != 0)
        return -1;
    if (!cJSON_IsString(f))
        return vcase_wrong("data_structure", "a string", err, err_len);
    psi_app_json_bytes(j, f, &text, &len);
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

static int vcase_flags(psi_cli_case *c, const psi_app_json *j, const cJSON *obj,
                       char *err, size_t err_len)
{
    const cJSON *f;
    double v;

    if (psi_cli_vfield_bool(&c->reveal, obj, "reveal_intersection", err, err_len) != 0 ||
        psi_cli_vfield(&f, obj, "fpr", err, err_len) != 0)
        return -1;
    if (!cJSON_IsNumber(f))
        return vcase_wrong("fpr", "a number", err, err_len);
    c->params.fpr = f->valuedouble;
    if (psi_cli_vfield_integer(&v, obj, "num_client_inputs", -PSI_CLI_MAX_EXACT,
                               PSI_CLI_MAX_EXACT, err, err_len) != 0)
        return -1;
    c->params.num_client_inputs = (int64_t)v;
    if (psi_cli_vfield_integer(&v, obj, "intersection_size", 0, PSI_CLI_MAX_EXACT,
                               err, err_len) != 0)
        return -1;
    c->intersection_size = (size_t)v;
    return psi_cli_vfield_structure(&c->params.structure, j, obj, err, err_len);
}

/* The fields wire and association cases share, after "name". */
static int vcase_common(psi_cli_case *c, const psi_app_json *j, const cJSON *obj,
                        char *err, size_t err_len)
{
    return psi_cli_vfield_hex(&c->server_key, j, obj, "server_key", err, err_len) ||
           psi_cli_vfield_hex(&c->client_key, j, obj, "client_key", err, err_len) ||
           psi_cli_vfield_inputs(&c->server_inputs, &c->n_server, j, obj,
                                 "server_inputs", err, err_len) ||
           psi_cli_vfield_inputs(&c->client_inputs, &c->n_client, j, obj,
                                 "client_inputs", err, err_len) ||
           psi_cli_vfield_hex(&c->setup, j, obj, "server_setup", err, err_len) ||
           psi_cli_vfield_hex(&c->request, j, obj, "request", err, err_len) ||
           psi_cli_vfield_hex(&c->response, j, obj, "response", err, err_len)
               ? -1 : 0;
}

static int vcase_start(psi_cli_case *c, const psi_app_json *j, const cJSON *obj,
                       char *err, size_t err_len)
{
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(obj)) {
        snprintf(err, err_len, "case is not an object");
        return -1;
    }
    return psi_cli_vfield_string(&c->name, j, obj, "name", err, err_len);
}

int psi_cli_case_read(psi_cli_case *c, const psi_app_json *j, const cJSON *obj,
                      char *err, size_t err_len)
{
    if (vcase_start(c, j, obj, err, err_len) != 0 ||
        vcase_flags(c, j, obj, err, err_len) != 0 ||
        vcase_common(c, j, obj, err, err_len) != 0)
        return -1;
    // The intersection itself is only defined when it is revealed.
    if (c->reveal && vcase_indices(&c->intersection, &c->n_intersection, obj,
                                   "intersection", err, err_len) != 0)
        return -1;
    return 0;
}

int psi_cli_assoc_read(psi_cli_case *c, const psi_app_json *j, const cJSON *obj,
                       char *err, size_t err_len)
{
    if (vcase_start(c, j, obj, err, err_len) != 0)
        return -1;
    c->association = 1;
    c->reveal = 1;  // the association table needs the revealed response
    c->params.structure = PSI_STRUCTURE_RAW;
    if (vcase_common(c, j, obj, err, err_len) != 0 ||
        vcase_indices(&c->perm, &c->n_perm, obj, "permutation", err, err_len) != 0)
        return -1;
    return vcase_pairs(&c->pairs, &c->n_pairs, obj, err, err_len);
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
    free(c->perm);
    free(c->pairs);
    memset(c, 0, sizeof *c);
}
