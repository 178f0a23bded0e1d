/* Fault injection in the sharding layer (PROTOCOL.md §14.4): every
 * allocation of every sharded operation, in the engine (psi_alloc) and in
 * shard/ (psi_shard_alloc), is failed in turn while the shards run on two
 * threads, and thread and lock creation is failed in psi_shards_create.
 * Each failure must surface as its error code with nothing returned; the
 * ASan build's leak checker proves nothing is lost on those paths, and
 * psi_shards_free joining the pool proves no thread is left running. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common.h"
#include "psi_shard.h"
#include "shard_pool.h"
#include "shard_util.h"

#define N_VALUES 9
#define N_OPS 14

typedef struct fixture {
    psi_engine *client, *server;
    psi_shards *gc, *gs;
    psi_value values[N_VALUES];
    uint8_t setup[3][2048];
    size_t setup_len[3];
    uint8_t request[512], response[512];
    size_t request_len, response_len;
    uint8_t request_points[N_VALUES * PSI_ELEMENT_BYTES];
    uint8_t response_points[N_VALUES * PSI_ELEMENT_BYTES];
} fixture;

static const char *const texts[N_VALUES] = {"a", "b", "c", "d", "", "f", "b", "a", "z"};

static psi_shards *shards_of(const psi_engine *e)
{
    psi_shard_settings ss;
    psi_shard_settings_default(&ss);
    ss.shards = 3;
    ss.threads = 2;
    psi_shards *g = NULL;
    assert_int_equal(psi_shards_create(&g, e, &ss), PSI_OK);
    return g;
}

static void fixture_init(fixture *f)
{
    psi_settings s;
    psi_settings_default(&s);
    assert_int_equal(psi_engine_create(&f->client, &s), PSI_OK);
    s.role = PSI_ROLE_SERVER;
    assert_int_equal(psi_engine_create(&f->server, &s), PSI_OK);
    f->gc = shards_of(f->client);
    f->gs = shards_of(f->server);
    for (int i = 0; i < N_VALUES; i++)
        f->values[i] = (psi_value){(const uint8_t *)texts[i], strlen(texts[i])};
    for (int st = 0; st < 3; st++) {
        psi_setup_params p = {(psi_structure)st, 0.01, N_VALUES};
        f->setup_len[st] = sizeof f->setup[st];
        assert_int_equal(psi_server_create_setup(f->server, f->setup[st], &f->setup_len[st],
                                                 NULL, &p, f->values + 2, 6), PSI_OK);
    }
    f->request_len = sizeof f->request;
    assert_int_equal(psi_client_create_request(f->client, f->request, &f->request_len,
                                               f->values, N_VALUES), PSI_OK);
    f->response_len = sizeof f->response;
    assert_int_equal(psi_server_process_request(f->server, f->response, &f->response_len,
                                                f->request, f->request_len), PSI_OK);
    size_t n = N_VALUES;
    int reveal = 0;
    assert_int_equal(psi_request_decode(f->request_points, &n, &reveal, f->request,
                                        f->request_len), PSI_OK);
    n = N_VALUES;
    assert_int_equal(psi_response_decode(f->response_points, &n, f->response,
                                         f->response_len), PSI_OK);
}

static void fixture_free(fixture *f)
{
    psi_shards_free(f->gc);
    psi_shards_free(f->gs);
    psi_engine_free(f->client);
    psi_engine_free(f->server);
}

/* The result of one operation: its bytes (or indices), length and code. */
typedef struct result {
    uint8_t bytes[2048];
    size_t len;
    int rc;
} result;

/* Runs sharded operation `op` once into r.  A failed call must report a
 * zero length whatever it was given. */
static void run_op(fixture *f, int op, result *r)
{
    size_t perm[N_VALUES];
    psi_setup_params p = {(psi_structure)(op % 3), 0.01, N_VALUES};
    psi_shards *g = NULL;
    memset(r, 0, sizeof *r);
    r->len = sizeof r->bytes;
    size_t items = r->len / sizeof(psi_pair);
    switch (op) {
    case 0: case 1: case 2:
        r->rc = psi_shards_server_create_setup(f->gs, r->bytes, &r->len, perm, &p, f->values,
                                               N_VALUES);
        break;
    case 3: case 4: case 5:
        r->rc = psi_shards_client_get_intersection(f->gc, (size_t *)r->bytes, &items,
                                                   f->setup[op % 3], f->setup_len[op % 3],
                                                   f->response, f->response_len);
        r->len = items;
        break;
    case 6:
        r->rc = psi_shards_client_get_association(f->gc, (psi_pair *)r->bytes, &items,
                                                  f->setup[0], f->setup_len[0], f->response,
                                                  f->response_len);
        r->len = items;
        break;
    case 7:
        r->rc = psi_shards_client_get_intersection_size(f->gc, &r->len, f->setup[1],
                                                        f->setup_len[1], f->response,
                                                        f->response_len);
        break;
    case 8:
        r->rc = psi_shards_client_create_request(f->gc, r->bytes, &r->len, f->values, N_VALUES);
        break;
    case 9:
        r->rc = psi_shards_server_process_request(f->gs, r->bytes, &r->len, f->request,
                                                  f->request_len);
        break;
    case 10:
        r->rc = psi_shards_mask(f->gs, r->bytes, &r->len, f->values, N_VALUES);
        break;
    case 11:
        r->rc = psi_shards_remask(f->gs, r->bytes, &r->len, f->request_points, N_VALUES);
        break;
    case 12:
        r->rc = psi_shards_unmask(f->gc, r->bytes, &r->len, f->response_points, N_VALUES);
        break;
    default: {
        psi_shard_settings ss;
        psi_shard_settings_default(&ss);
        ss.shards = 4;
        ss.threads = 2;
        r->rc = psi_shards_create(&g, f->server, &ss);
        assert_true((r->rc == PSI_OK) == (g != NULL));
        r->len = psi_shards_count(g);
        psi_shards_free(g);
    }
    }
    if (r->rc != PSI_OK && op != 13)
        assert_int_equal(r->len, 0);
}

typedef uint64_t (*fail_fn)(uint64_t countdown);

/* Fails the k-th allocation for k = 1, 2, ... until the operation runs
 * through, which must then give the bytes of an undisturbed run. */
static void fail_each(fixture *f, fail_fn arm, int op)
{
    result want, got;
    run_op(f, op, &want);
    assert_int_equal(want.rc, PSI_OK);
    for (uint64_t k = 1;; k++) {
        arm(k);
        run_op(f, op, &got);
        uint64_t counted = arm(0);
        if (got.rc == PSI_OK) {
            assert_true(counted < k);
            assert_int_equal(got.len, want.len);
            assert_memory_equal(got.bytes, want.bytes, sizeof got.bytes);
            return;
        }
        if (got.rc != PSI_E_NOMEM)
            fail_msg("op %d, allocation %llu: %s", op, (unsigned long long)k,
                     psi_error_name(got.rc));
        assert_true(k < 100000);
    }
}

static void test_shard_fault_engine_allocations(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    for (int op = 0; op < N_OPS; op++)
        fail_each(&f, psi_alloc_fail_after, op);
    fixture_free(&f);
}

static void test_shard_fault_shard_allocations(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    for (int op = 0; op < N_OPS; op++)
        fail_each(&f, psi_shard_alloc_fail_after, op);
    fixture_free(&f);
}

/* A thread or lock that cannot be created fails psi_shards_create with
 * PSI_E_THREAD: no fallback to fewer threads, nothing returned, nothing
 * leaked, every started thread joined. */
static void test_shard_fault_thread_start(void **state)
{
    (void)state;
    psi_settings s;
    psi_settings_default(&s);
    psi_engine *e = NULL;
    assert_int_equal(psi_engine_create(&e, &s), PSI_OK);
    psi_shard_settings ss;
    psi_shard_settings_default(&ss);
    ss.threads = 4;
    ss.shards = 6;
    for (unsigned k = 1; k <= 4; k++) {
        psi_shards *g = (psi_shards *)&ss;
        psi_pool_fail_thread_after(k);
        assert_int_equal(psi_shards_create(&g, e, &ss), PSI_E_THREAD);
        psi_pool_fail_thread_after(0);
        assert_null(g);
    }
    for (unsigned k = 1; k <= 3; k++) {
        psi_shards *g = (psi_shards *)&ss;
        psi_pool_fail_lock_after(k);
        int rc = psi_shards_create(&g, e, &ss);
        psi_pool_fail_lock_after(0);
        if (rc == PSI_OK) { /* fewer than k locks: the countdown never hit */
            psi_shards_free(g);
            continue;
        }
        assert_int_equal(rc, PSI_E_THREAD);
        assert_null(g);
    }
    psi_shards *g = NULL;
    assert_int_equal(psi_shards_create(&g, e, &ss), PSI_OK);
    assert_int_equal(psi_shards_threads(g), 4);
    psi_shards_free(g);
    psi_engine_free(e);
}

/* Bad points in several shards: the lowest-numbered shard's error, which
 * is the first bad point's, as the single engine reports it. */
static void test_shard_fault_lowest_shard_wins(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    uint8_t points[N_VALUES * PSI_ELEMENT_BYTES], out[sizeof points];
    size_t len = sizeof points;
    assert_int_equal(psi_engine_mask(f.server, points, &len, f.values, N_VALUES), PSI_OK);
    points[7 * PSI_ELEMENT_BYTES] = 0x05;                /* shard 2 of 3 */
    memset(points + 4 * PSI_ELEMENT_BYTES + 1, 0xff, 32); /* shard 1: x >= p */
    len = sizeof out;
    assert_int_equal(psi_engine_remask(f.server, out, &len, points, N_VALUES),
                     PSI_E_POINT_X_RANGE);
    for (int i = 0; i < 20; i++) { /* whatever order the threads finish in */
        len = sizeof out;
        memset(out, 0xaa, sizeof out);
        assert_int_equal(psi_shards_remask(f.gs, out, &len, points, N_VALUES),
                         PSI_E_POINT_X_RANGE);
        assert_int_equal(len, 0);
        for (size_t j = 0; j < sizeof out; j++)
            assert_int_equal(out[j], 0);
    }
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard_fault_engine_allocations),
        cmocka_unit_test(test_shard_fault_shard_allocations),
        cmocka_unit_test(test_shard_fault_thread_start),
        cmocka_unit_test(test_shard_fault_lowest_shard_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
