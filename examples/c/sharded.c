/*
 * The sharding layer (README.md, "Sharding"): a server's setup made on
 * every core and by one engine, the same bytes.
 *
 *   cc -std=c11 sharded.c -o sharded $(pkg-config --cflags --libs shardpsi-shard) \
 *      -Wl,-rpath,"$(pkg-config --variable=libdir shardpsi)"
 *   ./sharded          # prints: 10000 values: the sharded setup (...) equals the single engine's
 *
 * Exit status: 0 when the two setups are equal, 1 otherwise or on an error.
 */
#include <psi.h>
/* README:begin */
#include <psi_shard.h>   /* cc app.c $(pkg-config --cflags --libs shardpsi-shard) */
/* README:end */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { n_server = 10000, value_bytes = 24 };

int main(void)
{
    if (psi_openssl_wipe_on_free() != PSI_OK)
        return 1;
    static char text[n_server][value_bytes];
    static psi_value server_values[n_server];
    for (size_t i = 0; i < n_server; i++) {
        int len = snprintf(text[i], sizeof text[i], "user%zu@example.org", i);
        server_values[i].data = (const uint8_t *)text[i];
        server_values[i].len = (size_t)len;
    }
    psi_settings s;
    psi_settings_default(&s);
    s.role = PSI_ROLE_SERVER;
    psi_engine *server = NULL;
    psi_setup_params p = { PSI_STRUCTURE_RAW, 1e-9, 1000 };
    size_t bound = 0;
    int rc = psi_engine_create(&server, &s);
    if (rc == PSI_OK)
        rc = psi_setup_bound(&bound, PSI_SUITE_OPENMINED_P256, &p, n_server);
    uint8_t *setup = malloc(bound), *single = malloc(bound);
    size_t slen = bound, single_len = bound;
    if (rc == PSI_OK && (setup == NULL || single == NULL))
        rc = PSI_E_NOMEM;
    if (rc == PSI_OK)
        rc = psi_server_create_setup(server, single, &single_len, NULL, &p, server_values, n_server);
    if (rc != PSI_OK) {
        fprintf(stderr, "sharded: %s\n", psi_strerror(rc));
        psi_engine_free(server);
        free(setup);
        free(single);
        return 1;
    }

    /* README:begin */
psi_shard_settings ss; psi_shard_settings_default(&ss);   /* threads = online CPUs, 4 shards a thread */
psi_shards *g = NULL; rc = psi_shards_create(&g, server, &ss);   /* each shard its own guarded key copy */
if (rc == PSI_OK) rc = psi_shards_server_create_setup(g, setup, &slen, NULL, &p, server_values, n_server);  /* as psi.h */
psi_shards_free(g);                                       /* joins the threads, wipes the keys */
    /* README:end */

    int same = rc == PSI_OK && slen == single_len && memcmp(setup, single, slen) == 0;
    if (rc != PSI_OK)
        fprintf(stderr, "sharded: %s\n", psi_strerror(rc));
    else
        printf("%d values: the sharded setup (%zu bytes) %s the single engine's\n", n_server,
               slen, same ? "equals" : "DIFFERS FROM");
    psi_engine_free(server);
    free(setup);
    free(single);
    return same ? 0 : 1;
}
