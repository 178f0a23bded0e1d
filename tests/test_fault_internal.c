/* Allocation-failure injection: every library allocation of every public
 * operation is failed in turn.  Each failure must surface as PSI_E_NOMEM
 * (never a crash or another code), and the ASan build's leak checker
 * proves nothing is lost on those paths.  OpenSSL's own allocations are
 * not hooked here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common.h"

/* Everything one round needs, built without injected failures. */
typedef struct fixture {
    psi_engine *client, *server;
    psi_value values[6];
    uint8_t setup[3][1024];
    size_t setup_len[3];
    uint8_t request[512], response[512];
    size_t request_len, response_len;
} fixture;

static const char *const texts[6] = {"a", "b", "c", "d", "", "f"};

static void fixture_init(fixture *f)
{
    psi_settings s;
    psi_settings_default(&s);
    assert_int_equal(psi_engine_create(&f->client, &s), PSI_OK);
    s.role = PSI_ROLE_SERVER;
    assert_int_equal(psi_engine_create(&f->server, &s), PSI_OK);
    for (int i = 0; i < 6; i++)
        f->values[i] = (psi_value){(const uint8_t *)texts[i], strlen(texts[i])};
    for (int st = 0; st < 3; st++) {
        psi_setup_params p = {(psi_structure)st, 0.01, 6};
        f->setup_len[st] = sizeof f->setup[st];
        assert_int_equal(psi_server_create_setup(f->server, f->setup[st], &f->setup_len[st], NULL,
                                                 &p, f->values + 1, 4), PSI_OK);
    }
    f->request_len = sizeof f->request;
    assert_int_equal(psi_client_create_request(f->client, f->request, &f->request_len,
                                               f->values, 6), PSI_OK);
    f->response_len = sizeof f->response;
    assert_int_equal(psi_server_process_request(f->server, f->response, &f->response_len,
                                                f->request, f->request_len), PSI_OK);
}

static void fixture_free(fixture *f)
{
    psi_engine_free(f->client);
    psi_engine_free(f->server);
}

/* Runs operation `op` once; returns its code.  Objects it creates are
 * freed here, whatever the outcome. */
static int run_op(fixture *f, int op)
{
    uint8_t out[1024];
    size_t len = sizeof out, idx[8], n = 8, perm[4];
    psi_pair pairs[8];
    psi_engine *e = NULL;
    psi_setup *setup = NULL;
    psi_settings s;
    psi_settings_default(&s);
    psi_setup_params p = {(psi_structure)(op % 3), 0.01, 6};
    int rc;
    switch (op) {
    case 0: case 1: case 2:
        rc = psi_server_create_setup(f->server, out, &len, perm, &p, f->values, 4);
        break;
    case 3: case 4: case 5:
        rc = psi_client_get_intersection(f->client, idx, &n, f->setup[op % 3], f->setup_len[op % 3],
                                         f->response, f->response_len);
        break;
    case 6:
        rc = psi_client_create_request(f->client, out, &len, f->values, 6);
        break;
    case 7:
        rc = psi_server_process_request(f->server, out, &len, f->request, f->request_len);
        break;
    case 8:
        rc = psi_client_get_intersection_size(f->client, &n, f->setup[1], f->setup_len[1],
                                              f->response, f->response_len);
        break;
    case 9:
        rc = psi_client_get_association(f->client, pairs, &n, f->setup[0], f->setup_len[0],
                                        f->response, f->response_len);
        break;
    case 10:
        rc = psi_engine_create_from_key(&e, &s, (const uint8_t *)"\x01\x02", 2);
        break;
    case 11:
        rc = psi_engine_clone(&e, f->server);
        break;
    default:
        rc = psi_setup_parse(&setup, f->setup[op - 12], f->setup_len[op - 12]);
        break;
    }
    psi_engine_free(e);
    psi_setup_free(setup);
    return rc;
}

#define OPS 15

static void test_fault_every_allocation_fails_cleanly(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    for (int op = 0; op < OPS; op++) {
        uint64_t k = 1;
        for (;; k++) {
            psi_alloc_fail_after(k);
            int rc = run_op(&f, op);
            uint64_t counted = psi_alloc_fail_after(0);
            if (rc == PSI_OK) {
                assert_true(counted < k); /* no failure was injected */
                break;
            }
            if (rc != PSI_E_NOMEM)
                fail_msg("operation %d, allocation %llu: %s", op, (unsigned long long)k,
                         psi_error_name(rc));
        }
        printf("# operation %d: %llu allocations failed in turn\n", op,
               (unsigned long long)(k - 1));
        assert_true(k > 1 || op >= 10); /* every message operation allocates */
    }
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_every_allocation_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
