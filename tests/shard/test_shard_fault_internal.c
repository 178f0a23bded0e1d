/* Fault injection in the sharding layer (PROTOCOL.md §14.4): every
 * allocation of every function of psi_shard.h is failed in turn, on the
 * inline executor (one thread) and on two worker threads, in two passes:
 *  - the engine's allocations and OpenSSL's, one countdown for both: the
 *    allocator this test gives OpenSSL (CRYPTO_set_mem_functions, first
 *    thing in main) consumes psi_alloc_fail_after's countdown through
 *    psi_alloc_should_fail;
 *  - shard/'s own allocations (psi_shard_alloc_fail_after).
 * Each failure must surface as PSI_E_NOMEM (PSI_E_CRYPTO only when the
 * failed allocation was OpenSSL's), with nothing returned; a call that
 * still succeeds (OpenSSL's fallbacks) must give the undisturbed output.
 * Thread and lock creation is failed in psi_shards_create.  The ASan
 * build's leak checker (and valgrind in the plain build) proves nothing is
 * lost on those paths, and psi_shards_free joining the pool proves no
 * thread is left running. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/crypto.h>

#include "common.h"
#include "fault_openssl.h"
#include "psi_shard.h"
#include "shard_pool.h"
#include "shard_util.h"

/* ---------------------------------------------------------- fixture */

#define N_VALUES 9
#define CAP 2048

typedef struct fixture {
    size_t threads, shards;
    psi_engine *client, *server, *server_off, *client_off;
    psi_shards *gc, *gs, *gs_off, *gc_off;
    psi_value values[N_VALUES];
    uint8_t setup[3][CAP];
    size_t setup_len[3];
    uint8_t request[512], response[512], request_off[512], response_off[512];
    size_t request_len, response_len, request_off_len, response_off_len;
    uint8_t request_points[N_VALUES * PSI_ELEMENT_BYTES];
    uint8_t response_points[N_VALUES * PSI_ELEMENT_BYTES];
    uint8_t sorted_halves[N_VALUES * PSI_ELEMENT_BYTES]; /* two MASK_SORT slices */
    size_t sorted_perm[N_VALUES];
} fixture;

static const char *const texts[N_VALUES] = {"a", "b", "c", "d", "", "f", "b", "a", "z"};

static psi_shards *shards_of(const fixture *f, const psi_engine *e)
{
    psi_shard_settings ss;
    psi_shard_settings_default(&ss);
    ss.shards = f->shards;
    ss.threads = f->threads;
    psi_shards *g = NULL;
    assert_int_equal(psi_shards_create(&g, e, &ss), PSI_OK);
    return g;
}

static psi_engine *engine_of(psi_role role, int reveal, const psi_engine *from)
{
    psi_settings s;
    psi_settings_default(&s);
    s.role = role;
    s.reveal_intersection = reveal;
    psi_engine *e = NULL;
    if (from != NULL)
        assert_int_equal(psi_engine_clone(&e, from, &s), PSI_OK);
    else
        assert_int_equal(psi_engine_create(&e, &s), PSI_OK);
    return e;
}

static void fixture_messages(fixture *f)
{
    for (int st = 0; st < 3; st++) {
        psi_setup_params p = {(psi_structure)st, 0.01, N_VALUES};
        f->setup_len[st] = sizeof f->setup[st];
        assert_int_equal(psi_server_create_setup(f->server, f->setup[st], &f->setup_len[st],
                                                 NULL, &p, f->values + 2, 6), PSI_OK);
    }
    f->request_len = f->response_len = f->request_off_len = f->response_off_len = 512;
    assert_int_equal(psi_client_create_request(f->client, f->request, &f->request_len,
                                               f->values, N_VALUES), PSI_OK);
    assert_int_equal(psi_server_process_request(f->server, f->response, &f->response_len,
                                                f->request, f->request_len), PSI_OK);
    assert_int_equal(psi_client_create_request(f->client_off, f->request_off,
                                               &f->request_off_len, f->values, N_VALUES),
                     PSI_OK);
    assert_int_equal(psi_server_process_request(f->server_off, f->response_off,
                                                &f->response_off_len, f->request_off,
                                                f->request_off_len), PSI_OK);
    size_t n = N_VALUES;
    int reveal = 0;
    assert_int_equal(psi_request_decode(f->request_points, &n, &reveal, PSI_SUITE_OPENMINED_P256, f->request,
                                        f->request_len), PSI_OK);
    n = N_VALUES;
    assert_int_equal(psi_response_decode(f->response_points, &n, PSI_SUITE_OPENMINED_P256, f->response,
                                         f->response_len), PSI_OK);
    for (size_t k = 0; k < 2; k++) {
        /* The cut of §14.1: the first slice takes the odd value. */
        size_t off = k * ((N_VALUES + 1) / 2), count = k == 0 ? (N_VALUES + 1) / 2 : N_VALUES / 2;
        psi_step sl = {PSI_STEP_MASK_SORT, off, count, f->values + off, NULL};
        assert_int_equal(psi_step_run(f->server, f->sorted_halves + off * PSI_ELEMENT_BYTES,
                                      f->sorted_perm + off, NULL, &sl), PSI_OK);
    }
}

/* An external plan's source: each half of the sorted halves, whole. */
static int halves_source(void *arg, size_t k, const uint8_t **elements, const size_t **index,
                         size_t *count)
{
    fixture *f = arg;
    size_t off = k * ((N_VALUES + 1) / 2);
    *elements = f->sorted_halves + off * PSI_ELEMENT_BYTES;
    *index = f->sorted_perm + off;
    *count = k == 0 ? (N_VALUES + 1) / 2 : N_VALUES / 2;
    return PSI_OK;
}

static void fixture_init(fixture *f, size_t threads, size_t shards)
{
    memset(f, 0, sizeof *f);
    f->threads = threads;
    f->shards = shards;
    f->client = engine_of(PSI_ROLE_CLIENT, 1, NULL);
    f->server = engine_of(PSI_ROLE_SERVER, 1, NULL);
    f->client_off = engine_of(PSI_ROLE_CLIENT, 0, f->client);
    f->server_off = engine_of(PSI_ROLE_SERVER, 0, f->server);
    f->gc = shards_of(f, f->client);
    f->gs = shards_of(f, f->server);
    f->gc_off = shards_of(f, f->client_off);
    f->gs_off = shards_of(f, f->server_off);
    for (int i = 0; i < N_VALUES; i++)
        f->values[i] = (psi_value){(const uint8_t *)texts[i], strlen(texts[i])};
    fixture_messages(f);
}

static void fixture_free(fixture *f)
{
    psi_shards_free(f->gc);
    psi_shards_free(f->gs);
    psi_shards_free(f->gc_off);
    psi_shards_free(f->gs_off);
    psi_engine_free(f->client);
    psi_engine_free(f->server);
    psi_engine_free(f->client_off);
    psi_engine_free(f->server_off);
}

/* ------------------------------------------------------- operations */

/* The result of one operation: its bytes (or indices), length and code. */
typedef struct result {
    uint8_t bytes[CAP];
    size_t len;
    int rc;
} result;

#define N_OPS 24

/* psi_shards_create (with count and threads) and the step API: psi_step_run
 * for each step, an external plan's merge of sorted slices, the cut. */
static void run_step(fixture *f, int op, result *r)
{
    size_t *perm = (size_t *)(r->bytes + CAP / 2);
    if (op == 16) {
        psi_shard_settings ss;
        psi_shard_settings_default(&ss);
        ss.shards = f->shards + 1;
        ss.threads = f->threads;
        psi_shards *g = (psi_shards *)f; /* must come back NULL on failure */
        r->rc = psi_shards_create(&g, f->server, &ss);
        assert_true((r->rc == PSI_OK) == (g != NULL));
        r->bytes[0] = (uint8_t)psi_shards_threads(g);
        r->len = psi_shards_count(g);
        psi_shards_free(g);
    } else if (op < 21) {
        static const psi_step_kind steps[4] = {PSI_STEP_MASK, PSI_STEP_MASK_SORT,
                                               PSI_STEP_REMASK, PSI_STEP_UNMASK};
        size_t off = (N_VALUES + 1) / 2, count = N_VALUES / 2; /* the second slice */
        const uint8_t *points = op == 19 ? f->request_points : f->response_points;
        psi_step sl = {steps[op - 17], off, count, f->values + off,
                       points + off * PSI_ELEMENT_BYTES};
        r->rc = psi_step_run(op == 20 ? f->client : f->server, r->bytes, perm, NULL, &sl);
        r->len = r->rc == PSI_OK ? count : 0;
    } else if (op == 21) {
        psi_op_args a = {.op = PSI_OP_STEP, .step = PSI_STEP_MASK_SORT, .n_values = N_VALUES,
                         .slices = 2, .external = 1};
        psi_op_output o = {.bytes = r->bytes, .len = N_VALUES * PSI_ELEMENT_BYTES, .perm = perm};
        psi_plan *p = NULL;
        r->rc = psi_plan_begin(&p, f->server, &a);
        if (r->rc == PSI_OK && (r->rc = psi_plan_source(p, halves_source, f)) == PSI_OK)
            r->rc = psi_plan_finish(p, &o);
        psi_plan_free(p);
        r->len = r->rc == PSI_OK ? N_VALUES : 0;
    } else if (op == 22) {
        psi_op_args a = {.op = PSI_OP_STEP, .step = PSI_STEP_MASK, .n_values = N_VALUES,
                         .slices = f->shards, .external = 1};
        psi_plan *p = NULL;
        r->rc = psi_plan_begin(&p, f->server, &a);
        for (size_t k = 0; r->rc == PSI_OK && k < f->shards; k++) {
            psi_step st;
            r->rc = psi_plan_step(p, &st, k);
            perm[2 * k] = st.offset;
            perm[2 * k + 1] = st.count;
        }
        psi_plan_free(p);
        r->len = r->rc == PSI_OK ? f->shards : 0;
        if (r->rc != PSI_OK)
            memset(perm, 0, 2 * f->shards * sizeof *perm);
    } else {
        perm[0] = psi_shards_count(f->gs);
        perm[1] = psi_shards_threads(f->gs);
        r->len = 2;
    }
}

/* The client's sharded results: intersection (raw, GCS, Bloom), the
 * association table, the size with reveal on and off. */
static void run_client(fixture *f, int op, result *r)
{
    size_t items = CAP / sizeof(psi_pair);
    if (op >= 3 && op <= 5)
        r->rc = psi_shards_client_get_intersection(f->gc, (size_t *)r->bytes, &items,
                                                   f->setup[op % 3], f->setup_len[op % 3],
                                                   f->response, f->response_len);
    else if (op == 6)
        r->rc = psi_shards_client_get_association(f->gc, (psi_pair *)r->bytes, &items,
                                                  f->setup[0], f->setup_len[0], f->response,
                                                  f->response_len);
    else if (op == 7)
        r->rc = psi_shards_client_get_intersection_size(f->gc, &items, f->setup[1],
                                                        f->setup_len[1], f->response,
                                                        f->response_len);
    else
        r->rc = psi_shards_client_get_intersection_size(f->gc_off, &items, f->setup[0],
                                                        f->setup_len[0], f->response_off,
                                                        f->response_off_len);
    r->len = items;
}

/* Runs sharded operation `op` once into r.  A failed call must report a
 * zero length and leave nothing in its output. */
static void run_op(fixture *f, int op, result *r)
{
    size_t *perm = (size_t *)(r->bytes + CAP / 2);
    psi_setup_params p = {(psi_structure)(op % 3), 0.01, N_VALUES};
    memset(r, 0, sizeof *r);
    r->len = CAP / 2;
    if (op <= 2 || op == 15)
        r->rc = psi_shards_server_create_setup(f->gs, r->bytes, &r->len, op == 0 ? perm : NULL,
                                               &p, f->values, N_VALUES);
    else if (op <= 8)
        run_client(f, op, r);
    else if (op == 9)
        r->rc = psi_shards_client_create_request(f->gc, r->bytes, &r->len, f->values, N_VALUES);
    else if (op == 10)
        r->rc = psi_shards_server_process_request(f->gs, r->bytes, &r->len, f->request,
                                                  f->request_len);
    else if (op == 11)
        r->rc = psi_shards_server_process_request(f->gs_off, r->bytes, &r->len, f->request_off,
                                                  f->request_off_len);
    else if (op == 12)
        r->rc = psi_shards_mask(f->gs, r->bytes, &r->len, f->values, N_VALUES);
    else if (op == 13)
        r->rc = psi_shards_remask(f->gs, r->bytes, &r->len, f->request_points, N_VALUES);
    else if (op == 14)
        r->rc = psi_shards_unmask(f->gc, r->bytes, &r->len, f->response_points, N_VALUES);
    else
        run_step(f, op, r);
    if (r->rc != PSI_OK && op != 16) {
        static const uint8_t zero[CAP];
        assert_int_equal(r->len, 0);
        assert_memory_equal(r->bytes, zero, CAP);
    }
}

static const char *const op_names[N_OPS] = {
    "shards_server_create_setup raw, perm", "shards_server_create_setup gcs",
    "shards_server_create_setup bloom", "shards_client_get_intersection raw",
    "shards_client_get_intersection gcs", "shards_client_get_intersection bloom",
    "shards_client_get_association", "shards_client_get_intersection_size gcs",
    "shards_client_get_intersection_size no reveal", "shards_client_create_request",
    "shards_server_process_request reveal", "shards_server_process_request no reveal",
    "shards_mask", "shards_remask", "shards_unmask", "shards_server_create_setup raw",
    "shards_create", "step_run mask", "step_run mask_sort",
    "step_run remask", "step_run unmask", "plan merge of sorted slices",
    "plan cut", "shards_count, shards_threads",
};

/* ------------------------------------------------------------ driver */

typedef uint64_t (*fail_fn)(uint64_t countdown);

/* Allocations of the last run (and OpenSSL's, in *ossl); resets both. */
static uint64_t counted(fail_fn arm, uint64_t *ossl)
{
    *ossl = fault_openssl_take_count();
    return arm(0);
}

/* Checks a run whose k-th allocation was to fail. */
static void check_faulty(int op, const result *want, const result *got, uint64_t k,
                         int injected, int *absorbed)
{
    int in_ossl = fault_openssl_injected();
    if (got->rc == PSI_OK || !injected) {
        if (got->rc != PSI_OK || got->len != want->len ||
            memcmp(got->bytes, want->bytes, CAP) != 0)
            fail_msg("%s, allocation %llu (%s): %s%s", op_names[op], (unsigned long long)k,
                     !injected ? "not reached" : in_ossl ? "OpenSSL's" : "the library's",
                     psi_error_name(got->rc), got->rc == PSI_OK ? " with another output" : "");
        *absorbed += injected;
        return;
    }
    if (got->rc != PSI_E_NOMEM && !(got->rc == PSI_E_CRYPTO && in_ossl))
        fail_msg("%s, allocation %llu (%s): %s", op_names[op], (unsigned long long)k,
                 in_ossl ? "OpenSSL's" : "the library's", psi_error_name(got->rc));
}

/* Fails the k-th allocation for k = 1..(a clean run's count): each run
 * fails cleanly or gives the bytes of the undisturbed run. */
static void fail_each(fixture *f, fail_fn arm, const char *pass, int op)
{
    static result want, got;
    uint64_t ossl;
    counted(arm, &ossl);
    run_op(f, op, &want);
    uint64_t total = counted(arm, &ossl);
    assert_int_equal(want.rc, PSI_OK);
    int absorbed = 0;
    for (uint64_t k = 1; k <= total; k++) {
        fault_openssl_clear_injected();
        arm(k);
        run_op(f, op, &got);
        uint64_t o_k, n = counted(arm, &o_k);
        check_faulty(op, &want, &got, k, n >= k, &absorbed);
    }
    char what[64], note[48] = "";
    if (arm == psi_alloc_fail_after)
        snprintf(what, sizeof what, "%llu engine, %llu OpenSSL",
                 (unsigned long long)(total - ossl), (unsigned long long)ossl);
    else
        snprintf(what, sizeof what, "%s", pass);
    if (absorbed)
        snprintf(note, sizeof note, " (%d absorbed: same output)", absorbed);
    print_message("# %s, %zu thread%s, %zu shards: %llu allocations (%s), each failed in "
                  "turn%s\n", op_names[op], f->threads, f->threads > 1 ? "s" : "", f->shards,
                  (unsigned long long)total, what, note);
}

/* Every operation on the inline executor and on two threads; the pure
 * steps (ops 17 and up), which start no thread, once. */
static void fail_all_ops(fail_fn arm, const char *pass)
{
    static const size_t configs[2][2] = {{1, 2}, {2, 2}}; /* threads, shards */
    for (int c = 0; c < 2; c++) {
        static fixture f;
        fixture_init(&f, configs[c][0], configs[c][1]);
        assert_int_equal(psi_shards_threads(f.gs), configs[c][0] > 1 ? configs[c][0] : 0);
        for (int op = 0; op < (c == 0 ? N_OPS : 17); op++)
            fail_each(&f, arm, pass, op);
        fixture_free(&f);
    }
}

static void test_shard_fault_engine_allocations(void **state)
{
    (void)state;
    fail_all_ops(psi_alloc_fail_after, "engine and OpenSSL");
}

static void test_shard_fault_shard_allocations(void **state)
{
    (void)state;
    fail_all_ops(psi_shard_alloc_fail_after, "shard/");
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
    static fixture f;
    fixture_init(&f, 2, 3);
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
    /* Before any OpenSSL call: OpenSSL refuses once it has allocated. */
    if (!fault_openssl_install()) {
        fprintf(stderr, "CRYPTO_set_mem_functions refused: OpenSSL already allocated\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard_fault_engine_allocations),
        cmocka_unit_test(test_shard_fault_shard_allocations),
        cmocka_unit_test(test_shard_fault_thread_start),
        cmocka_unit_test(test_shard_fault_lowest_shard_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
