/*
 * An outside program using the installed library: built by
 * tests/consumer/test_consumer.sh against a staged `meson install` with only
 * pkg-config's flags, never the build tree.  One raw PSI round with random
 * keys: the client holds 3 values, the server 3, 2 shared; the server
 * answers through the sharding layer (3 shards on 2 threads).  Exit status
 * 0 only if the intersection has exactly 2 elements.
 */
#include <psi.h>
#include <psi_shard.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 3

static int check(int rc, const char *what)
{
    if (rc != PSI_OK)
        fprintf(stderr, "consumer: %s: %s (%d)\n", what, psi_strerror(rc), rc);
    return rc != PSI_OK;
}

static void to_values(psi_value *out, const char *const *in)
{
    size_t i;

    for (i = 0; i < N; i++) {
        out[i].data = (const uint8_t *)in[i];
        out[i].len = strlen(in[i]);
    }
}

int main(void)
{
    static const char *const client_in[N] = { "apple", "banana", "cherry" };
    static const char *const server_in[N] = { "banana", "cherry", "durian" };
    psi_value cv[N], sv[N];
    psi_settings s;
    psi_engine *client = NULL, *server = NULL;
    psi_shards *shards = NULL;
    psi_shard_settings ss;
    psi_setup_params p = { PSI_STRUCTURE_RAW, 1e-9, N };
    uint8_t setup[1024], request[1024], response[1024];
    size_t setup_len = sizeof setup, request_len = sizeof request;
    size_t response_len = sizeof response, idx[N], count = N, bound = 0;
    int bad = 0;

#if !defined(SHARDPSI_VERSION_NUMBER) || SHARDPSI_VERSION_NUMBER != \
    ((SHARDPSI_VERSION_MAJOR << 16) | (SHARDPSI_VERSION_MINOR << 8) | SHARDPSI_VERSION_PATCH)
#error "psi.h: the SHARDPSI_VERSION_* macros are missing or disagree"
#endif
    // The header this program was built with and the library it loaded.
    if (strcmp(psi_version(), SHARDPSI_VERSION_STRING) != 0) {
        fprintf(stderr, "consumer: library %s, header %s\n", psi_version(),
                SHARDPSI_VERSION_STRING);
        return 1;
    }
    to_values(cv, client_in);
    to_values(sv, server_in);
    psi_settings_default(&s);
    s.role = PSI_ROLE_CLIENT;
    bad = check(psi_engine_create(&client, &s), "create client");
    s.role = PSI_ROLE_SERVER;
    bad = bad || check(psi_engine_create(&server, &s), "create server");
    bad = bad || check(psi_setup_bound(&bound, PSI_SUITE_OPENMINED_P256, &p, N), "setup bound");
    if (!bad && (bound > sizeof setup || psi_request_bound(PSI_SUITE_OPENMINED_P256, N) > sizeof request
                 || psi_response_bound(PSI_SUITE_OPENMINED_P256, N) > sizeof response)) {
        fprintf(stderr, "consumer: message bounds exceed the buffers\n");
        bad = 1;
    }
    bad = bad || check(psi_server_create_setup(server, setup, &setup_len, NULL, &p,
                                               sv, N), "server setup");
    bad = bad || check(psi_client_create_request(client, request, &request_len,
                                                 cv, N), "client request");
    psi_shard_settings_default(&ss);
    ss.shards = 3;
    ss.threads = 2;
    bad = bad || check(psi_shards_create(&shards, server, &ss), "create shards");
    bad = bad || check(psi_shards_server_process_request(shards, response, &response_len,
                                                         request, request_len), "response");
    bad = bad || check(psi_client_get_intersection(client, idx, &count, setup,
                                                   setup_len, response, response_len),
                       "intersection");
    if (!bad && count != 2) {
        fprintf(stderr, "consumer: intersection has %zu elements, expected 2\n", count);
        bad = 1;
    }
    // The shared values are client indices 1 and 2, in either order.
    if (!bad && !((idx[0] == 1 && idx[1] == 2) || (idx[0] == 2 && idx[1] == 1))) {
        fprintf(stderr, "consumer: wrong indices %zu, %zu\n", idx[0], idx[1]);
        bad = 1;
    }
    psi_shards_free(shards);
    psi_engine_free(client);
    psi_engine_free(server);
    if (!bad)
        printf("consumer: shardpsi %s, intersection of 2 found\n", psi_version());
    return bad ? 1 : 0;
}
