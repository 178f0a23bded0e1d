/* The committed vector files through psi_shards (PROTOCOL.md §14): every
 * case of the OpenMined and sample files, and the association and
 * rejection cases of the extra file, must give the stored bytes, indices
 * and errors for every shard count.  Public API only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psi.h"
#include "psi_shard.h"
#include "test_shard_common.h"
#include "test_util.h"

#define VEC_OPENMINED PSI_SOURCE_ROOT "/vectors/openmined-psi-2.0.6.json"
#define VEC_SAMPLE PSI_SOURCE_ROOT "/vectors/reference/sample-vectors.json"
#define VEC_EXTRA PSI_SOURCE_ROOT "/vectors/shardpsi-extra.json"

/* cJSON decodes \u0000 into valuestring but keeps no length.  The files are
 * parsed with each \u0000 escape turned into \ufdd0, a noncharacter none of
 * them holds (checked), which values_of turns back into a NUL byte. */
static cJSON *load_vectors(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    size_t size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc(size + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, size, f), size);
    fclose(f);
    text[size] = '\0';
    assert_null(strstr(text, "\\ufdd0"));
    assert_null(strstr(text, "\\uFDD0"));
    assert_null(strstr(text, "\xef\xb7\x90"));
    for (size_t i = 0; i + 6 <= size; i++)
        if (text[i] == '\\' && memcmp(text + i, "\\u0000", 6) == 0)
            memcpy(text + i, "\\ufdd0", 6);
        else if (text[i] == '\\')
            i++; /* an escaped character, maybe a backslash */
    cJSON *json = cJSON_ParseWithLength(text, size);
    free(text);
    if (json == NULL)
        fail_msg("invalid JSON in %s", path);
    return json;
}

typedef struct valueset {
    psi_value *v;
    size_t n;
    uint8_t *bytes;
} valueset;

static void values_of(valueset *vs, const cJSON *arr)
{
    const cJSON *it;
    size_t total = 0, at = 0, i = 0;
    vs->n = (size_t)cJSON_GetArraySize(arr);
    cJSON_ArrayForEach(it, arr) total += strlen(it->valuestring);
    vs->bytes = malloc(total + 1);
    vs->v = calloc(vs->n + 1, sizeof *vs->v);
    assert_true(vs->bytes != NULL && vs->v != NULL);
    cJSON_ArrayForEach(it, arr) {
        const char *s = it->valuestring;
        size_t start = at, len = strlen(s);
        for (size_t j = 0; j < len; j++) {
            int nul = j + 3 <= len && memcmp(s + j, "\xef\xb7\x90", 3) == 0;
            vs->bytes[at++] = nul ? 0 : (uint8_t)s[j];
            j += nul ? 2 : 0;
        }
        vs->v[i++] = (psi_value){vs->bytes + start, at - start};
    }
}

static const cJSON *field(const cJSON *c, const char *name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, name);
    if (f == NULL)
        fail_msg("vector case without \"%s\"", name);
    return f;
}

typedef struct bytes {
    uint8_t *p;
    size_t len;
} bytes;

static bytes hex_field(const cJSON *c, const char *name)
{
    bytes b;
    b.p = tu_unhex(field(c, name)->valuestring, &b.len);
    return b;
}

static psi_engine *engine_of(const cJSON *c, const char *key, psi_role role, int reveal)
{
    bytes k = hex_field(c, key);
    psi_engine *e = ts_engine_new(role, reveal, k.p, k.len);
    free(k.p);
    return e;
}

static psi_structure structure_of(const char *name)
{
    if (strcmp(name, "raw") == 0)
        return PSI_STRUCTURE_RAW;
    if (strcmp(name, "gcs") == 0)
        return PSI_STRUCTURE_GCS;
    assert_string_equal(name, "bloom_filter");
    return PSI_STRUCTURE_BLOOM_FILTER;
}

/* One case of a psi-wire-vectors/1 file, or an association case of the
 * extra file (reveal on, raw, with permutation and pairs). */
typedef struct vcase {
    const cJSON *json;
    int reveal, association;
    psi_engine *s, *c;
    psi_setup_params params;
    valueset sv, cv;
    bytes setup, request, response;
} vcase;

static void vcase_load(vcase *v, const cJSON *c, int association)
{
    memset(v, 0, sizeof *v);
    v->json = c;
    v->association = association;
    v->reveal = association || cJSON_IsTrue(field(c, "reveal_intersection"));
    v->s = engine_of(c, "server_key", PSI_ROLE_SERVER, v->reveal);
    v->c = engine_of(c, "client_key", PSI_ROLE_CLIENT, v->reveal);
    v->params.structure = PSI_STRUCTURE_RAW;
    if (!association) {
        v->params.structure = structure_of(field(c, "data_structure")->valuestring);
        v->params.fpr = field(c, "fpr")->valuedouble;
        v->params.num_client_inputs = (int64_t)field(c, "num_client_inputs")->valuedouble;
    }
    values_of(&v->sv, field(c, "server_inputs"));
    values_of(&v->cv, field(c, "client_inputs"));
    v->setup = hex_field(c, "server_setup");
    v->request = hex_field(c, "request");
    v->response = hex_field(c, "response");
}

static void vcase_free(vcase *v)
{
    psi_engine_free(v->s);
    psi_engine_free(v->c);
    free(v->sv.v);
    free(v->sv.bytes);
    free(v->cv.v);
    free(v->cv.bytes);
    free(v->setup.p);
    free(v->request.p);
    free(v->response.p);
}

static void expect_ok(const char *what, const out *o)
{
    if (o->rc != PSI_OK)
        fail_msg("%s, %s: returned %s", ts_where, what, psi_error_name(o->rc));
}

static void expect_indices(const char *what, const size_t *got, size_t n, const cJSON *want)
{
    if (n != (size_t)cJSON_GetArraySize(want))
        fail_msg("%s, %s: %zu items, expected %d", ts_where, what, n, cJSON_GetArraySize(want));
    for (size_t i = 0; i < n; i++)
        if (got[i] != (size_t)cJSON_GetArrayItem(want, (int)i)->valuedouble)
            fail_msg("%s, %s: differs at position %zu (expected %zu, got %zu)", ts_where, what,
                     i, (size_t)cJSON_GetArrayItem(want, (int)i)->valuedouble, got[i]);
}

/* The association table from the stored setup and response, mapped with
 * the stored permutation, against the stored pairs. */
static void vcase_association(const vcase *v, party gc)
{
    call m = {.op = OP_ASSOC, .a = v->setup.p, .a_len = v->setup.len, .b = v->response.p,
              .b_len = v->response.len, .cap = psi_message_element_bound(PSI_SUITE_OPENMINED_P256, v->response.len)};
    out o = ts_run_call(gc, &m);
    expect_ok("get_association", &o);
    const cJSON *perm = field(v->json, "permutation"), *want = field(v->json, "association");
    size_t n_perm = (size_t)cJSON_GetArraySize(perm);
    size_t *p = calloc(n_perm + 1, sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n_perm; i++)
        p[i] = (size_t)cJSON_GetArrayItem(perm, (int)i)->valuedouble;
    psi_pair *pairs = (psi_pair *)(void *)o.p;
    assert_int_equal(psi_association_map(pairs, o.len, p, n_perm), PSI_OK);
    if (o.len != (size_t)cJSON_GetArraySize(want))
        fail_msg("%s, association: %zu pairs, expected %d", ts_where, o.len,
                 cJSON_GetArraySize(want));
    for (size_t i = 0; i < o.len; i++) {
        const cJSON *w = cJSON_GetArrayItem(want, (int)i);
        if (pairs[i].client_index != (size_t)cJSON_GetArrayItem(w, 0)->valuedouble
            || pairs[i].server_index != (size_t)cJSON_GetArrayItem(w, 1)->valuedouble)
            fail_msg("%s, association: differs at pair %zu", ts_where, i);
    }
    free(p);
    ts_out_free(&o);
}

/* The setup (and its permutation), the request and the response to the
 * stored request; the matches from the stored setup and response. */
static void vcase_check(const vcase *v, party gs, party gc)
{
    call su = {.op = OP_SETUP, .params = v->params, .values = v->sv.v, .n = v->sv.n,
               .want_perm = v->association};
    assert_int_equal(psi_setup_bound(&su.cap, PSI_SUITE_OPENMINED_P256, &v->params, v->sv.n), PSI_OK);
    out o = ts_run_call(gs, &su);
    expect_ok("server_setup", &o);
    ts_expect_bytes("server_setup", o.p, o.len, v->setup.p, v->setup.len);
    if (v->association)
        expect_indices("permutation", o.perm, o.n_perm, field(v->json, "permutation"));
    ts_out_free(&o);
    call rq = {.op = OP_REQUEST, .values = v->cv.v, .n = v->cv.n, .cap = psi_request_bound(PSI_SUITE_OPENMINED_P256, v->cv.n)};
    o = ts_run_call(gc, &rq);
    expect_ok("request", &o);
    ts_expect_bytes("request", o.p, o.len, v->request.p, v->request.len);
    ts_out_free(&o);
    call pr = {.op = OP_PROCESS, .a = v->request.p, .a_len = v->request.len,
               .cap = psi_response_bound(PSI_SUITE_OPENMINED_P256, psi_message_element_bound(PSI_SUITE_OPENMINED_P256, v->request.len))};
    o = ts_run_call(gs, &pr);
    expect_ok("response", &o);
    ts_expect_bytes("response", o.p, o.len, v->response.p, v->response.len);
    ts_out_free(&o);
    call m = {.op = OP_INTER, .a = v->setup.p, .a_len = v->setup.len, .b = v->response.p,
              .b_len = v->response.len, .cap = psi_message_element_bound(PSI_SUITE_OPENMINED_P256, v->response.len)};
    if (v->association) {
        vcase_association(v, gc);
        return;
    }
    if (v->reveal) {
        o = ts_run_call(gc, &m);
        expect_ok("intersection", &o);
        expect_indices("intersection", (size_t *)(void *)o.p, o.len, field(v->json, "intersection"));
        ts_out_free(&o);
    }
    m.op = OP_SIZE;
    o = ts_run_call(gc, &m);
    expect_ok("intersection_size", &o);
    if (o.len != (size_t)field(v->json, "intersection_size")->valuedouble)
        fail_msg("%s, intersection_size: %zu", ts_where, o.len);
    ts_out_free(&o);
}

static void vcase_run(const vcase *v, const size_t *shard_counts, size_t n_counts, int plans)
{
    for (size_t i = 0; i < n_counts; i++) {
        snprintf(ts_where, sizeof ts_where, "vector %s, N=%zu T=2",
                 field(v->json, "name")->valuestring, shard_counts[i]);
        party gs = {NULL, ts_shards_new(v->s, shard_counts[i], 2)};
        party gc = {NULL, ts_shards_new(v->c, shard_counts[i], 2)};
        vcase_check(v, gs, gc);
        psi_shards_free(gs.g);
        psi_shards_free(gc.g);
    }
    /* The step API driven as workers and as MPI ranks drive it (§19); the
     * large cases only through the shards, to keep the time down. */
    static const size_t slices[] = {1, 3, 8};
    for (size_t i = 0; plans && i < sizeof slices / sizeof slices[0]; i++) {
        for (int mode = PLAN_REMOTE; mode <= PLAN_EXTERNAL; mode++) {
            snprintf(ts_where, sizeof ts_where, "vector %s, %s plan of %zu slices",
                     field(v->json, "name")->valuestring,
                     mode == PLAN_REMOTE ? "remote" : "external", slices[i]);
            party ps = {v->s, NULL, (party_mode)mode, slices[i]};
            party pc = {v->c, NULL, (party_mode)mode, slices[i]};
            vcase_check(v, ps, pc);
        }
    }
}

/* Every case with N in {1, 2, 3, 5, 8, 16}; the few large ones (1000
 * values a side) with three counts, to keep the time down. */
static void check_wire_file(const char *path)
{
    static const size_t all[] = {1, 2, 3, 5, 8, 16}, big[] = {3, 8, 16};
    cJSON *json = load_vectors(path);
    assert_string_equal(field(json, "format")->valuestring, "psi-wire-vectors/1");
    const cJSON *c;
    size_t cases = 0;
    cJSON_ArrayForEach(c, field(json, "cases")) {
        vcase v;
        vcase_load(&v, c, 0);
        if (v.sv.n + v.cv.n > 500)
            vcase_run(&v, big, 3, 0);
        else
            vcase_run(&v, all, 6, 1);
        vcase_free(&v);
        cases++;
    }
    printf("# %s: %zu cases\n", path, cases);
    assert_true(cases > 0);
    cJSON_Delete(json);
}

static void test_shard_vectors_openmined(void **state)
{
    (void)state;
    check_wire_file(VEC_OPENMINED);
}

static void test_shard_vectors_sample(void **state)
{
    (void)state;
    check_wire_file(VEC_SAMPLE);
}

static int code_of(const char *name)
{
    for (int code = 0; code > -256; code--)
        if (psi_error_name(code) != NULL && strcmp(psi_error_name(code), name) == 0)
            return code;
    fail_msg("unknown error name %s", name);
    return 1;
}

/* A rejection case of the extra file through shards: process_request,
 * intersection (size, and with reveal on the indices and association) and
 * setup_params must fail with exactly the stored error.  Key and point
 * cases involve no shard. */
static void check_rejection(const cJSON *c, size_t n)
{
    const char *op = field(c, "operation")->valuestring;
    int want = code_of(field(c, "error")->valuestring), reveal = 1;
    if (strcmp(op, "key") == 0 || strcmp(op, "point") == 0)
        return;
    if (strcmp(op, "setup_params") != 0)
        reveal = cJSON_IsTrue(field(c, "reveal_intersection"));
    int server = strcmp(op, "intersection") != 0;
    psi_engine *e = engine_of(c, server ? "server_key" : "client_key",
                              server ? PSI_ROLE_SERVER : PSI_ROLE_CLIENT, reveal);
    party g = {NULL, ts_shards_new(e, n, 2)};
    call k = {.cap = 1 << 16};
    bytes a = {NULL, 0}, b = {NULL, 0};
    valueset sv = {NULL, 0, NULL};
    if (strcmp(op, "setup_params") == 0) {
        const cJSON *fpr = field(c, "fpr");
        values_of(&sv, field(c, "server_inputs"));
        k = (call){.op = OP_SETUP, .cap = 1 << 16, .values = sv.v, .n = sv.n,
                   .params = {structure_of(field(c, "data_structure")->valuestring),
                              cJSON_IsString(fpr) ? strtod("NAN", NULL) : fpr->valuedouble,
                              (int64_t)field(c, "num_client_inputs")->valuedouble}};
    } else if (server) {
        a = hex_field(c, "request");
        k = (call){.op = OP_PROCESS, .cap = 1 << 16, .a = a.p, .a_len = a.len};
    } else {
        a = hex_field(c, "server_setup");
        b = hex_field(c, "response");
        k = (call){.op = OP_SIZE, .cap = 1 << 12, .a = a.p, .a_len = a.len, .b = b.p,
                   .b_len = b.len};
    }
    for (int i = 0; i < (!server && reveal ? 3 : 1); i++) {
        k.op = i == 1 ? OP_INTER : i == 2 ? OP_ASSOC : k.op;
        int rc = ts_expect_same_call(op, (party){e, NULL}, g, &k);
        if (rc != want && k.op != OP_ASSOC) /* association: as the single engine */
            fail_msg("%s: returned %s, expected %s", ts_where, psi_error_name(rc),
                     psi_error_name(want));
    }
    free(a.p);
    free(b.p);
    free(sv.v);
    free(sv.bytes);
    psi_shards_free(g.g);
    psi_engine_free(e);
}

static void test_shard_vectors_extra(void **state)
{
    (void)state;
    static const size_t counts[] = {1, 2, 3, 5, 8, 16};
    cJSON *json = load_vectors(VEC_EXTRA);
    assert_string_equal(field(json, "format")->valuestring, "shardpsi-extra-vectors/1");
    const cJSON *c;
    cJSON_ArrayForEach(c, field(json, "association_cases")) {
        vcase v;
        vcase_load(&v, c, 1);
        vcase_run(&v, counts, 6, 1);
        vcase_free(&v);
    }
    cJSON_ArrayForEach(c, field(json, "rejection_cases")) {
        for (size_t i = 1; i < 6; i += 2) {
            snprintf(ts_where, sizeof ts_where, "vector %s, N=%zu T=2",
                     field(c, "name")->valuestring, counts[i]);
            check_rejection(c, counts[i]);
        }
    }
    cJSON_Delete(json);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard_vectors_openmined),
        cmocka_unit_test(test_shard_vectors_sample),
        cmocka_unit_test(test_shard_vectors_extra),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
