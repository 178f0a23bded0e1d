/* Allocation-failure injection for every public operation of psi.h: each
 * allocation an operation makes, the library's own (psi_alloc) and
 * OpenSSL's, is failed in turn.
 *
 * One countdown for both: the allocator this test gives OpenSSL
 * (CRYPTO_set_mem_functions, first thing in main) consumes
 * psi_alloc_fail_after's countdown through psi_alloc_should_fail, so
 * "allocation k" is the k-th of the library and OpenSSL together, in call
 * order.  For each operation a clean run counts them and gives the
 * expected output; then for k = 1..count the k-th fails, and the call must
 *  - return PSI_E_NOMEM; or PSI_E_CRYPTO, accepted only when the failed
 *    allocation was OpenSSL's (OpenSSL reports some allocation failures as
 *    generic ones, which the library cannot tell apart);
 *  - or return PSI_OK with exactly the clean run's output (OpenSSL has
 *    fallbacks, e.g. when its error queue cannot grow);
 *  - on failure leave *len at 0 and its output as it was before the call
 *    (zeroed, or the input of an in-place call);
 *  - never crash, and leak nothing: the ASan build checks leaks at exit,
 *    and valgrind --leak-check=full in the plain build.
 * libsodium's guarded allocation (sodium_malloc, mmap) is not injected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/crypto.h>

#include "codec.h"
#include "common.h"
#include "fault_openssl.h"

/* ---------------------------------------------------------- fixture */

#define N_VALUES 6
#define CAP 2048

/* Everything the operations read, built without injected failures. */
typedef struct fixture {
    psi_engine *client, *server, *client_off, *server_off;
    psi_value values[N_VALUES];
    uint8_t setup[3][CAP];
    size_t setup_len[3];
    uint8_t request[CAP], response[CAP], request_off[CAP], response_off[CAP];
    size_t request_len, response_len, request_off_len, response_off_len;
    uint8_t masked[N_VALUES * PSI_ELEMENT_BYTES];    /* client's, = request's */
    uint8_t remasked[N_VALUES * PSI_ELEMENT_BYTES];  /* = response's */
    uint8_t unmasked[N_VALUES * PSI_ELEMENT_BYTES];  /* the client's match input */
    uint8_t sorted[N_VALUES * PSI_ELEMENT_BYTES];    /* unmasked, by bytes */
    psi_setup *parsed[3];
    size_t perm[N_VALUES];
} fixture;

static const char *const texts[N_VALUES] = {"a", "b", "c", "d", "", "f"};

static psi_engine *engine_of(uint8_t key_byte, psi_role role, int reveal)
{
    uint8_t key[PSI_KEY_BYTES];
    memset(key, key_byte, sizeof key);
    psi_settings s;
    psi_settings_default(&s);
    s.role = role;
    s.reveal_intersection = reveal;
    psi_engine *e = NULL;
    assert_int_equal(psi_engine_create_from_key(&e, &s, key, sizeof key), PSI_OK);
    return e;
}

static void fixture_messages(fixture *f)
{
    size_t len;
    for (int st = 0; st < 3; st++) {
        psi_setup_params p = {(psi_structure)st, 0.01, N_VALUES};
        f->setup_len[st] = CAP;
        assert_int_equal(psi_server_create_setup(f->server, f->setup[st], &f->setup_len[st],
                                                 st == 0 ? f->perm : NULL, &p, f->values + 1,
                                                 4), PSI_OK);
        assert_int_equal(psi_setup_parse(&f->parsed[st], PSI_SUITE_OPENMINED_P256, f->setup[st], f->setup_len[st]),
                         PSI_OK);
    }
    f->request_len = f->response_len = f->request_off_len = f->response_off_len = CAP;
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
    len = sizeof f->masked;
    assert_int_equal(psi_engine_mask(f->client, f->masked, &len, f->values, N_VALUES), PSI_OK);
    len = sizeof f->remasked;
    assert_int_equal(psi_engine_remask(f->server, f->remasked, &len, f->masked, N_VALUES),
                     PSI_OK);
    len = sizeof f->unmasked;
    assert_int_equal(psi_engine_unmask(f->client, f->unmasked, &len, f->remasked, N_VALUES),
                     PSI_OK);
    memcpy(f->sorted, f->unmasked, sizeof f->sorted);
    assert_int_equal(psi_elements_sort(f->sorted, NULL, N_VALUES), PSI_OK);
}

static void fixture_init(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->client = engine_of(0x11, PSI_ROLE_CLIENT, 1);
    f->server = engine_of(0x22, PSI_ROLE_SERVER, 1);
    f->client_off = engine_of(0x11, PSI_ROLE_CLIENT, 0);
    f->server_off = engine_of(0x22, PSI_ROLE_SERVER, 0);
    for (int i = 0; i < N_VALUES; i++)
        f->values[i] = (psi_value){(const uint8_t *)texts[i], strlen(texts[i])};
    fixture_messages(f);
}

static void fixture_free(fixture *f)
{
    for (int st = 0; st < 3; st++)
        psi_setup_free(f->parsed[st]);
    psi_engine_free(f->client);
    psi_engine_free(f->server);
    psi_engine_free(f->client_off);
    psi_engine_free(f->server_off);
}

/* ------------------------------------------------------- operations */

/* One run's outcome.  `before` is what the output held before the call:
 * a failed call must leave it so. */
typedef struct result {
    uint8_t bytes[CAP], before[CAP];
    size_t len;
    int rc;
} result;

typedef void (*op_fn)(fixture *f, result *r, int arg);

/* Engine constructors: the output is the new engine's key (random for
 * psi_engine_create, whose output is its role and reveal flag instead). */
static void op_engine(fixture *f, result *r, int which)
{
    psi_settings s;
    psi_settings_default(&s);
    s.role = PSI_ROLE_SERVER;
    psi_engine *e = (psi_engine *)f; /* must come back NULL on failure */
    uint8_t key[PSI_KEY_BYTES];
    memset(key, 0x33, sizeof key);
    if (which == 0)
        r->rc = psi_engine_create(&e, &s);
    else if (which == 1)
        r->rc = psi_engine_create_from_key(&e, &s, key, sizeof key);
    else if (which == 2)
        r->rc = psi_engine_clone(&e, f->server, NULL);
    else
        r->rc = psi_engine_clone(&e, f->client, &s);
    assert_true((r->rc == PSI_OK) == (e != NULL));
    r->len = PSI_KEY_BYTES;
    if (e != NULL && which == 0)
        r->bytes[0] = (uint8_t)(psi_engine_role(e) * 2 + psi_engine_reveal(e));
    else if (e != NULL)
        assert_int_equal(psi_engine_export_key(e, r->bytes, &r->len), PSI_OK);
    else
        r->len = 0;
    psi_engine_free(e);
}

/* mask, remask, unmask, point_check. */
static void op_batch(fixture *f, result *r, int which)
{
    r->len = sizeof f->masked;
    if (which == 0)
        r->rc = psi_engine_mask(f->client, r->bytes, &r->len, f->values, N_VALUES);
    else if (which == 1)
        r->rc = psi_engine_remask(f->server, r->bytes, &r->len, f->masked, N_VALUES);
    else if (which == 2)
        r->rc = psi_engine_unmask(f->client, r->bytes, &r->len, f->remasked, N_VALUES);
    else {
        r->len = 0;
        r->rc = psi_point_check(PSI_SUITE_OPENMINED_P256, f->masked, PSI_ELEMENT_BYTES);
    }
}

/* psi_setup_bound, then psi_server_create_setup: raw with and without
 * perm, GCS, Bloom. */
static void op_setup(fixture *f, result *r, int which)
{
    psi_setup_params p = {(psi_structure)(which < 2 ? 0 : (which - 1) % 3), 0.01, N_VALUES};
    size_t *perm = which == 0 ? (size_t *)(r->bytes + CAP / 2) : NULL;
    if (which == 4) {
        size_t bound = 1;
        r->rc = psi_setup_bound(&bound, PSI_SUITE_OPENMINED_P256, &p, N_VALUES);
        memcpy(r->bytes, &bound, sizeof bound);
        r->len = r->rc == PSI_OK ? sizeof bound : 0;
        return;
    }
    r->len = CAP / 2;
    r->rc = psi_server_create_setup(f->server, r->bytes, &r->len, perm, &p, f->values,
                                    N_VALUES);
}

/* create_request, then process_request with reveal on and off. */
static void op_request(fixture *f, result *r, int which)
{
    r->len = CAP;
    if (which == 0)
        r->rc = psi_client_create_request(f->client, r->bytes, &r->len, f->values, N_VALUES);
    else if (which == 1)
        r->rc = psi_server_process_request(f->server, r->bytes, &r->len, f->request,
                                           f->request_len);
    else
        r->rc = psi_server_process_request(f->server_off, r->bytes, &r->len, f->request_off,
                                           f->request_off_len);
}

/* get_intersection (raw, GCS, Bloom), its size with reveal on (GCS) and
 * off (raw), the association table and its mapping. */
static void op_client(fixture *f, result *r, int which)
{
    size_t items = CAP / sizeof(psi_pair);
    if (which < 3) {
        r->rc = psi_client_get_intersection(f->client, (size_t *)r->bytes, &items,
                                            f->setup[which], f->setup_len[which],
                                            f->response, f->response_len);
    } else if (which == 3) {
        r->rc = psi_client_get_intersection_size(f->client, &items, f->setup[1],
                                                 f->setup_len[1], f->response,
                                                 f->response_len);
    } else if (which == 4) {
        r->rc = psi_client_get_intersection_size(f->client_off, &items, f->setup[0],
                                                 f->setup_len[0], f->response_off,
                                                 f->response_off_len);
    } else {
        r->rc = psi_client_get_association(f->client, (psi_pair *)r->bytes, &items,
                                           f->setup[0], f->setup_len[0], f->response,
                                           f->response_len);
        if (which == 6 && r->rc == PSI_OK)
            r->rc = psi_association_map((psi_pair *)r->bytes, items, f->perm, 4);
    }
    r->len = items;
}

/* The building blocks: elements_sort with and without perm, setup_encode
 * for each structure, request and response encode and decode. */
static void op_codec(fixture *f, result *r, int which)
{
    size_t n = N_VALUES;
    int reveal = -1;
    r->len = CAP;
    if (which < 2) {
        memcpy(r->bytes, f->masked, sizeof f->masked);
        memcpy(r->before, f->masked, sizeof f->masked);
        r->rc = psi_elements_sort(r->bytes, which == 0 ? (size_t *)(r->bytes + CAP / 2) : NULL,
                                  N_VALUES);
        r->len = r->rc == PSI_OK ? N_VALUES : 0;
    } else if (which < 5) {
        psi_setup_params p = {(psi_structure)(which - 2), 0.01, N_VALUES};
        r->rc = psi_setup_encode(r->bytes, &r->len, PSI_SUITE_OPENMINED_P256, &p, f->sorted, N_VALUES);
    } else if (which == 5) {
        r->rc = psi_request_encode(r->bytes, &r->len, PSI_SUITE_OPENMINED_P256, 1, f->masked, N_VALUES);
    } else if (which == 6) {
        r->rc = psi_response_encode(r->bytes, &r->len, PSI_SUITE_OPENMINED_P256, f->remasked, N_VALUES);
    } else if (which == 7) {
        r->rc = psi_request_decode(r->bytes, &n, &reveal, PSI_SUITE_OPENMINED_P256, f->request, f->request_len);
        r->len = n;
        r->bytes[CAP - 1] = (uint8_t)reveal;
    } else {
        r->rc = psi_response_decode(r->bytes, &n, PSI_SUITE_OPENMINED_P256, f->response, f->response_len);
        r->len = n;
    }
}

/* setup_parse of each structure, then setup_match, setup_count (each
 * structure) and setup_associate (raw) on the fixture's parsed setups. */
static void op_parsed(fixture *f, result *r, int which)
{
    size_t items = N_VALUES;
    if (which < 3) {
        psi_setup *s = (psi_setup *)f;
        r->rc = psi_setup_parse(&s, PSI_SUITE_OPENMINED_P256, f->setup[which], f->setup_len[which]);
        assert_true((r->rc == PSI_OK) == (s != NULL));
        r->len = s != NULL ? psi_setup_raw_count(s) : 0;
        r->bytes[0] = s != NULL ? (uint8_t)psi_setup_structure(s) : 0;
        psi_setup_free(s);
        return;
    }
    const psi_setup *s = f->parsed[which % 3];
    if (which < 6)
        r->rc = psi_setup_match(s, (size_t *)r->bytes, &items, f->unmasked, N_VALUES);
    else if (which < 9)
        r->rc = psi_setup_count(s, &items, f->unmasked, N_VALUES);
    else
        r->rc = psi_setup_associate(s, (psi_pair *)r->bytes, &items, f->unmasked, N_VALUES);
    r->len = items;
}

typedef struct op {
    const char *name;
    op_fn fn;
    int arg;
    int allocates; /* the clean run must allocate (proves the hooks work) */
} op;

/* OpenSSL's EC_POINT_mul allocates; the portable multiplication of
 * -Dp256=portable (psi/p256.c) allocates nothing. */
#ifdef PSI_P256_PORTABLE
#define EC_ALLOCATES 0
#else
#define EC_ALLOCATES 1
#endif

static const op ops[] = {
    {"engine_create", op_engine, 0, 1},
    {"engine_create_from_key", op_engine, 1, 1},
    {"engine_clone", op_engine, 2, 1},
    {"engine_clone_with", op_engine, 3, 1},
    {"engine_mask", op_batch, 0, EC_ALLOCATES},
    {"engine_remask", op_batch, 1, EC_ALLOCATES},
    {"engine_unmask", op_batch, 2, EC_ALLOCATES},
    {"point_check", op_batch, 3, 0},
    {"setup_bound", op_setup, 4, 0},
    {"server_create_setup raw, perm", op_setup, 0, 1},
    {"server_create_setup raw", op_setup, 1, 1},
    {"server_create_setup gcs", op_setup, 2, 1},
    {"server_create_setup bloom", op_setup, 3, 1},
    {"client_create_request", op_request, 0, 1},
    {"server_process_request reveal", op_request, 1, 1},
    {"server_process_request no reveal", op_request, 2, 1},
    {"client_get_intersection raw", op_client, 0, 1},
    {"client_get_intersection gcs", op_client, 1, 1},
    {"client_get_intersection bloom", op_client, 2, 1},
    {"client_get_intersection_size gcs", op_client, 3, 1},
    {"client_get_intersection_size no reveal", op_client, 4, 1},
    {"client_get_association", op_client, 5, 1},
    {"client_get_association + association_map", op_client, 6, 1},
    {"elements_sort, perm", op_codec, 0, 1},
    {"elements_sort", op_codec, 1, 1},
    {"setup_encode raw", op_codec, 2, 0},
    {"setup_encode gcs", op_codec, 3, 1},
    {"setup_encode bloom", op_codec, 4, 1},
    {"request_encode", op_codec, 5, 0},
    {"response_encode", op_codec, 6, 0},
    {"request_decode", op_codec, 7, 0},
    {"response_decode", op_codec, 8, 0},
    {"setup_parse raw", op_parsed, 0, 1},
    {"setup_parse gcs", op_parsed, 1, 1},
    {"setup_parse bloom", op_parsed, 2, 1},
    {"setup_match raw", op_parsed, 3, 1},
    {"setup_match gcs", op_parsed, 4, 1},
    {"setup_match bloom", op_parsed, 5, 1},
    {"setup_count raw", op_parsed, 6, 0},
    {"setup_count gcs", op_parsed, 7, 1},
    {"setup_count bloom", op_parsed, 8, 1},
    {"setup_associate", op_parsed, 9, 1},
};

/* ------------------------------------------------------------ driver */

static void run(fixture *f, const op *o, result *r)
{
    memset(r, 0, sizeof *r);
    o->fn(f, r, o->arg);
}

/* Allocations of the last run: all, and OpenSSL's; resets both counts. */
static uint64_t counted(uint64_t *ossl)
{
    *ossl = fault_openssl_take_count();
    return psi_alloc_fail_after(0);
}

/* Checks a run whose k-th allocation was to fail. */
static void check_faulty(const op *o, const result *want, const result *got, uint64_t k,
                         int injected, int *n_absorbed)
{
    int in_ossl = fault_openssl_injected();
    if (got->rc == PSI_OK || !injected) {
        if (got->rc != PSI_OK)
            fail_msg("%s, allocation %llu (not reached): %s", o->name, (unsigned long long)k,
                     psi_error_name(got->rc));
        if (got->len != want->len || memcmp(got->bytes, want->bytes, CAP) != 0)
            fail_msg("%s, allocation %llu (%s): PSI_OK with another output", o->name,
                     (unsigned long long)k, !injected ? "not reached" :
                     in_ossl ? "OpenSSL's" : "the library's");
        *n_absorbed += injected;
        return;
    }
    if (got->rc != PSI_E_NOMEM && !(got->rc == PSI_E_CRYPTO && in_ossl))
        fail_msg("%s, allocation %llu (%s): %s", o->name, (unsigned long long)k,
                 in_ossl ? "OpenSSL's" : "the library's", psi_error_name(got->rc));
    assert_int_equal(got->len, 0);
    assert_memory_equal(got->bytes, got->before, CAP);
}

static void fail_each(fixture *f, const op *o)
{
    static result want, got;
    uint64_t ossl;
    counted(&ossl);
    run(f, o, &want);
    uint64_t total = counted(&ossl);
    assert_int_equal(want.rc, PSI_OK);
    if (o->allocates)
        assert_true(total > 0);
    int absorbed = 0;
    for (uint64_t k = 1; k <= total; k++) {
        fault_openssl_clear_injected();
        psi_alloc_fail_after(k);
        run(f, o, &got);
        uint64_t o_k, n = counted(&o_k);
        check_faulty(o, &want, &got, k, n >= k, &absorbed);
    }
    char note[64] = "";
    if (absorbed)
        snprintf(note, sizeof note, " (%d absorbed: same output)", absorbed);
    print_message("# %s: %llu allocations (%llu library, %llu OpenSSL), each failed in "
                  "turn%s\n", o->name, (unsigned long long)total,
                  (unsigned long long)(total - ossl), (unsigned long long)ossl, note);
}

static void test_fault_every_allocation_fails_cleanly(void **state)
{
    (void)state;
    static fixture f;
    fixture_init(&f);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        fail_each(&f, &ops[i]);
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
        cmocka_unit_test(test_fault_every_allocation_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
