/*
 * One private set intersection round in one process, against the installed
 * library (README.md, "The C API"):
 *
 *   cc -std=c11 round.c -o round $(pkg-config --cflags --libs shardpsi) \
 *      -Wl,-rpath,"$(pkg-config --variable=libdir shardpsi)"
 *   ./round            # prints: 2 of 3 client values are in the server's set: ...
 *
 * The server holds 4 values, the client 3, 2 of them shared.  Exit status:
 * 0 on success, 1 on any error (with the library's message on stderr).
 */
#include <psi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void to_values(psi_value *out, const char *const *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        out[i].data = (const uint8_t *)in[i];
        out[i].len = strlen(in[i]);
    }
}

int main(void)
{
    static const char *const server_set[] = { "alice@example.org", "bob@example.org",
                                              "carol@example.org", "dave@example.org" };
    static const char *const client_set[] = { "bob@example.org", "erin@example.org",
                                              "dave@example.org" };
    enum { n_server = 4, n_client = 3 };
    psi_value server_values[n_server], client_values[n_client];
    to_values(server_values, server_set, n_server);
    to_values(client_values, client_set, n_client);

    /* README:begin */
if (psi_openssl_wipe_on_free() != PSI_OK) return 1;  /* first thing in main: no key left in freed memory */
psi_settings cs, ss; psi_settings_default(&cs); psi_settings_default(&ss); ss.role = PSI_ROLE_SERVER;
psi_engine *client = NULL, *server = NULL;
int rc = psi_engine_create(&client, &cs); if (rc == PSI_OK) rc = psi_engine_create(&server, &ss);
psi_setup_params p = {PSI_STRUCTURE_GCS, 1e-9, n_client}; size_t slen = 0, qlen = psi_request_bound(PSI_SUITE_OPENMINED_P256, n_client);
if (rc == PSI_OK) rc = psi_setup_bound(&slen, PSI_SUITE_OPENMINED_P256, &p, n_server);
size_t rlen = psi_response_bound(PSI_SUITE_OPENMINED_P256, n_client), count = n_client;
uint8_t *setup = malloc(slen), *req = malloc(qlen), *resp = malloc(rlen); size_t *idx = malloc(count * sizeof *idx);
if (rc == PSI_OK && (!setup || !req || !resp || !idx)) rc = PSI_E_NOMEM;
if (rc == PSI_OK) rc = psi_server_create_setup(server, setup, &slen, NULL, &p, server_values, n_server);
if (rc == PSI_OK) rc = psi_client_create_request(client, req, &qlen, client_values, n_client);
if (rc == PSI_OK) rc = psi_server_process_request(server, resp, &rlen, req, qlen);
if (rc == PSI_OK) rc = psi_client_get_intersection(client, idx, &count, setup, slen, resp, rlen);
if (rc != PSI_OK) { char m[PSI_ERROR_MESSAGE_BYTES]; psi_error_message(m, sizeof m, rc); fprintf(stderr, "round: %s\n", m); }
psi_engine_free(client); psi_engine_free(server);  /* keys wiped */
    /* README:end */

    if (rc == PSI_OK) {
        printf("%zu of %d client values are in the server's set:", count, n_client);
        for (size_t i = 0; i < count; i++)
            printf(" %s", client_set[idx[i]]);
        printf(" (shardpsi %s)\n", psi_version());
    }
    free(setup);
    free(req);
    free(resp);
    free(idx);
    return rc == PSI_OK ? 0 : 1;
}
