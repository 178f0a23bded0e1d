/* One party on a single engine or on shards; see app_party.h. */
#include "app_party.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"

/* Parses a count in [1, max] for option `name` of command `cmd`. */
static int party_parse_count(size_t *out, const char *text, size_t max,
                             const char *cmd, const char *name)
{
    char what[64];

    snprintf(what, sizeof what, "%s: %s", cmd, name);
    return psi_app_parse_count(out, text, max, what);
}

int psi_app_shard_opt(psi_app_shard_opts *o, int argc, char **argv, int *i,
                      const char *cmd)
{
    const char *v = NULL;

    int rc = 0;

    if (psi_app_opt_value(argc, argv, i, "--shards", &v))
        rc = v && party_parse_count(&o->shards, v, PSI_SHARD_MAX_SHARDS, cmd,
                                    "--shards") == 0 ? 1 : -1;
    else if (psi_app_opt_value(argc, argv, i, "--threads", &v))
        rc = v && party_parse_count(&o->threads, v, PSI_SHARD_MAX_THREADS, cmd,
                                    "--threads") == 0 ? 1 : -1;
    if (rc > 0)
        o->sharded = 1;
    return rc;
}

int psi_app_party_build(psi_app_party *p, const psi_app_party_spec *spec,
                        const char **what)
{
    psi_settings st;
    psi_shard_settings ss;
    psi_engine *e = NULL;
    int rc;

    memset(p, 0, sizeof *p);
    psi_settings_default(&st);
    st.role = spec->role;
    st.reveal_intersection = spec->reveal;
    st.suite = (psi_suite)spec->suite;
    if (spec->key != NULL)
        rc = psi_engine_clone(&e, spec->key, &st);
    else if (spec->key_bytes != NULL)
        rc = psi_engine_create_from_key(&e, &st, spec->key_bytes, spec->key_len);
    else
        rc = psi_engine_create(&e, &st);
    if (rc != PSI_OK) {
        *what = PSI_APP_PARTY_E_ENGINE;
        return rc;
    }
    if (!spec->shard.sharded) {
        p->engine = e;
        return PSI_OK;
    }
    psi_shard_settings_default(&ss);
    ss.shards = spec->shard.shards; // 0: the library's default for the threads
    ss.threads = spec->shard.threads; // 0: the online CPUs, at most the shards
    ss.progress = spec->progress;
    ss.progress_arg = spec->progress_arg;
    rc = psi_shards_create(&p->shards, e, &ss);
    psi_engine_free(e);  // no operation can reach the single engine by mistake
    *what = PSI_APP_PARTY_E_SHARDS;
    return rc;
}

void psi_app_party_free(psi_app_party *p)
{
    psi_engine_free(p->engine);
    psi_shards_free(p->shards);
    memset(p, 0, sizeof *p);
}

size_t psi_app_party_shards(const psi_app_party *p)
{
    return psi_shards_count(p->shards);
}

size_t psi_app_party_threads(const psi_app_party *p)
{
    return psi_shards_threads(p->shards);
}

const char *psi_app_party_api(const psi_app_party *p)
{
    return p->shards != NULL ? "psi_shards_" : "psi_";
}

void psi_app_party_describe(const psi_app_party *p, char *out, size_t cap)
{
    size_t n = psi_app_party_shards(p), t = psi_app_party_threads(p);

    if (p->shards == NULL)
        snprintf(out, cap, "a single engine");
    else if (t == 0)
        snprintf(out, cap, "%zu shard%s, inline (no worker thread)", n,
                 n == 1 ? "" : "s");
    else
        snprintf(out, cap, "%zu shard%s, %zu thread%s", n, n == 1 ? "" : "s", t,
                 t == 1 ? "" : "s");
}

int psi_app_party_create_setup(const psi_app_party *p, uint8_t *out, size_t *out_len,
                               size_t *perm, const psi_setup_params *params,
                               const psi_value *values, size_t n)
{
    if (p->shards != NULL)
        return psi_shards_server_create_setup(p->shards, out, out_len, perm, params,
                                              values, n);
    return psi_server_create_setup(p->engine, out, out_len, perm, params, values, n);
}

int psi_app_party_process_request(const psi_app_party *p, uint8_t *out, size_t *out_len,
                                  const uint8_t *request, size_t request_len)
{
    if (p->shards != NULL)
        return psi_shards_server_process_request(p->shards, out, out_len, request,
                                                 request_len);
    return psi_server_process_request(p->engine, out, out_len, request, request_len);
}

int psi_app_party_create_request(const psi_app_party *p, uint8_t *out, size_t *out_len,
                                 const psi_value *values, size_t n)
{
    if (p->shards != NULL)
        return psi_shards_client_create_request(p->shards, out, out_len, values, n);
    return psi_client_create_request(p->engine, out, out_len, values, n);
}

int psi_app_party_intersection(const psi_app_party *p, size_t *out, size_t *out_count,
                               const uint8_t *setup, size_t setup_len,
                               const uint8_t *response, size_t response_len)
{
    if (p->shards != NULL)
        return psi_shards_client_get_intersection(p->shards, out, out_count, setup,
                                                  setup_len, response, response_len);
    return psi_client_get_intersection(p->engine, out, out_count, setup, setup_len,
                                       response, response_len);
}

int psi_app_party_intersection_size(const psi_app_party *p, size_t *count,
                                    const uint8_t *setup, size_t setup_len,
                                    const uint8_t *response, size_t response_len)
{
    if (p->shards != NULL)
        return psi_shards_client_get_intersection_size(p->shards, count, setup,
                                                       setup_len, response,
                                                       response_len);
    return psi_client_get_intersection_size(p->engine, count, setup, setup_len,
                                            response, response_len);
}

int psi_app_party_association(const psi_app_party *p, psi_pair *out, size_t *out_count,
                              const uint8_t *setup, size_t setup_len,
                              const uint8_t *response, size_t response_len)
{
    if (p->shards != NULL)
        return psi_shards_client_get_association(p->shards, out, out_count, setup,
                                                 setup_len, response, response_len);
    return psi_client_get_association(p->engine, out, out_count, setup, setup_len,
                                      response, response_len);
}

int psi_app_party_mask(const psi_app_party *p, uint8_t *out, size_t *out_len,
                       const psi_value *values, size_t n)
{
    if (p->shards != NULL)
        return psi_shards_mask(p->shards, out, out_len, values, n);
    return psi_engine_mask(p->engine, out, out_len, values, n);
}

int psi_app_party_remask(const psi_app_party *p, uint8_t *out, size_t *out_len,
                         const uint8_t *points, size_t n)
{
    if (p->shards != NULL)
        return psi_shards_remask(p->shards, out, out_len, points, n);
    return psi_engine_remask(p->engine, out, out_len, points, n);
}

int psi_app_party_unmask(const psi_app_party *p, uint8_t *out, size_t *out_len,
                         const uint8_t *points, size_t n)
{
    if (p->shards != NULL)
        return psi_shards_unmask(p->shards, out, out_len, points, n);
    return psi_engine_unmask(p->engine, out, out_len, points, n);
}

int psi_app_party_payload_table(const psi_app_party *p, int suite, uint8_t *out,
                                size_t *out_len, const psi_value *values,
                                const psi_value *payloads, size_t n, size_t pad_len,
                                const uint8_t *salt)
{
    if (p->shards != NULL)
        return psi_shards_payload_table_build(p->shards, out, out_len, values, payloads, n,
                                              pad_len, salt);
    if (n > SIZE_MAX / PSI_ELEMENT_BYTES)
        return PSI_E_INVALID_ARG;
    size_t el_len = n * PSI_ELEMENT_BYTES;
    uint8_t *el = malloc(el_len + 1);
    int rc = el != NULL ? psi_engine_mask(p->engine, el, &el_len, values, n) : PSI_E_NOMEM;
    if (rc == PSI_OK)
        rc = psi_payload_table_build(suite, out, out_len, el, payloads, n, pad_len, salt);
    free(el);
    return rc;
}
