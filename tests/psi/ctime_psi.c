/* Constant time of the whole engine, checked with valgrind memcheck (after
 * libsecp256k1's ctime_tests.c).  The key is marked secret (undefined)
 * wherever it lives: the caller's key buffer before
 * psi_engine_create_from_key, the random draw of psi_engine_create (through
 * a libsodium randombytes implementation that marks what it draws), and the
 * guarded k and k^-1 of every engine after creation and cloning.  Every
 * call of the engine then runs on it; what a call returns for the wire is
 * declassified here, after the call, and nothing else.  A branch or memory
 * index that depends on the key is reported as a "conditional jump or move
 * depends on uninitialised value(s)" or a "use of uninitialised value", and
 * meson's `valgrind --error-exitcode=99` fails the test.
 *
 * Where a key-derived value becomes public inside the library before a call
 * returns (masked elements about to be sorted or encoded, unmasked ones
 * about to be matched, the infinity flag of the batched affine conversion),
 * the library declassifies it itself: PSI_DECLASSIFY of psi/ctcheck.h,
 * active because meson compiles the library's sources into this program
 * with -DPSI_CTCHECK.  Reports inside OpenSSL's libcrypto (its EC and BN
 * code) are outside what this test judges and are suppressed by
 * tests/psi/ctime-openssl.supp; with -Dp256=portable only key import, range
 * check and inversion in engine.c still call it.
 *
 * Every check runs once per suite (PROTOCOL.md §16).  In the OpenMined
 * suite the values hashed to the curve are public here: its hash-to-curve
 * is variable time in the value by design (§3, §12).  In the p256-sswu and
 * ristretto255 suites hashing is constant time in the value (§16), so
 * there the values' bytes are secret too (not their lengths): masking,
 * setup and request run on secret values, and only what the library
 * declassifies (masked elements, which carry the key) becomes public.
 *
 * Run with --self-check, the program only branches on a secret byte of its
 * own, which valgrind must report (meson's ctime_psi_selfcheck expects the
 * failure): it shows the harness detects a branch at all.
 *
 * Internal: it reaches the engine's guarded secret through engine.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "checkmem.h"
#include "engine.h"
#include "psi.h"

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

/* Client values "Element 0" .. "Element 7", server values "Element 4" ..
 * "Element 11": the client's indices 4..7 are in the intersection. */
#define N_VALUES 8
#define FIRST_COMMON 4
#define N_COMMON (N_VALUES - FIRST_COMMON)
#define VALUE_CHARS 16

/* H("Element 0") and H("Element 1") (PROTOCOL.md §3.3): what unmasking a
 * masked value gives back. */
static const uint8_t h_element[2][PSI_ELEMENT_BYTES] = {
    {0x02, 0x15, 0xe1, 0x07, 0x90, 0xd4, 0x64, 0xef, 0xb8, 0x1b, 0xed, 0x74, 0x4b, 0xbd, 0x5d,
     0x75, 0xd0, 0xd8, 0x93, 0x64, 0x45, 0x79, 0x1a, 0xae, 0x87, 0x3e, 0xc0, 0x96, 0x4d, 0xae,
     0xc7, 0x61, 0xdf},
    {0x02, 0x45, 0x24, 0x35, 0xdd, 0x6a, 0x0d, 0xfc, 0x70, 0x87, 0x53, 0x44, 0x8d, 0xcf, 0xc7,
     0x7c, 0x63, 0xad, 0x9e, 0x4f, 0x16, 0xfa, 0xef, 0x63, 0xd9, 0x3b, 0x11, 0xe9, 0x33, 0x64,
     0x48, 0x20, 0x90},
};

/* n, the group order: out of range as a key (§2.1). */
static const uint8_t group_order[PSI_KEY_BYTES] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51};

/* l, ristretto255's group order, little-endian: out of range (§16.3). */
static const uint8_t r255_order[PSI_KEY_BYTES] = {
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10};

/* The suite every check below runs in (main runs them once per suite). */
static psi_suite cur_suite;

/* ------------------------------------------------------------- reporting */

static char report[96][96];
static int n_report;

static void ok(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (n_report < (int)(sizeof report / sizeof report[0])) {
        int at = snprintf(report[n_report], sizeof report[0], "[%s] ",
                          psi_suite_name(cur_suite));
        vsnprintf(report[n_report++] + at, sizeof report[0] - (size_t)at, fmt, ap);
    }
    va_end(ap);
}

/* A failed call or a wrong result.  The return code is not declassified:
 * a code that depends on the key is itself reported by valgrind here. */
static void check(int cond, const char *what, int rc)
{
    if (cond)
        return;
    fprintf(stderr, "ctime_psi: %s failed: %s (%d)\n", what, psi_strerror(rc), rc);
    exit(1);
}

static void check_ok(int rc, const char *what)
{
    check(rc == PSI_OK, what, rc);
}

/* ------------------------------------------- secret randomness, secret keys */

/* randombytes_buf through the system generator, marking what it draws
 * secret while draws_secret is set (around psi_engine_create only: the
 * canary libsodium draws in sodium_init must stay defined). */
static int draws_secret;

static const char *ct_rng_name(void)
{
    return "ctime_psi";
}

static uint32_t ct_rng_random(void)
{
    return randombytes_sysrandom_implementation.random();
}

static void ct_rng_stir(void)
{
    randombytes_sysrandom_implementation.stir();
}

static void ct_rng_buf(void *buf, size_t size)
{
    randombytes_sysrandom_implementation.buf(buf, size);
    if (draws_secret)
        PSI_CHECKMEM_SECRET(buf, size);
}

static int ct_rng_close(void)
{
    return randombytes_sysrandom_implementation.close();
}

static randombytes_implementation ct_rng = {
    ct_rng_name, ct_rng_random, ct_rng_stir, NULL, ct_rng_buf, ct_rng_close,
};

/* The engine's guarded k and k^-1 are secret (already, through the key
 * they came from; again here, so nothing the creation did is trusted).
 * The memory is read-only: this changes valgrind's shadow state only. */
static void mark_engine(const psi_engine *e)
{
    PSI_CHECKMEM_SECRET(e->secret->k, PSI_KEY_BYTES);
    PSI_CHECKMEM_SECRET(e->secret->kinv, PSI_KEY_BYTES);
}

static psi_settings settings(psi_role role, int reveal)
{
    psi_settings s;
    psi_settings_default(&s);
    s.role = role;
    s.reveal_intersection = reveal;
    s.suite = cur_suite;
    return s;
}

/* Creates an engine from a copy of `key` marked secret before the call, so
 * that import, range check and inversion run on secret bytes. */
static int engine_from_key(psi_engine **out, psi_role role, const uint8_t *key, size_t len)
{
    uint8_t buf[PSI_KEY_BYTES + 1];
    psi_settings s = settings(role, 1);
    memcpy(buf, key, len);
    PSI_CHECKMEM_SECRET(buf, len);
    int rc = psi_engine_create_from_key(out, &s, buf, len);
    sodium_memzero(buf, sizeof buf);
    if (rc == PSI_OK)
        mark_engine(*out);
    return rc;
}

/* Returns 1 when the engine's exported key equals `key`.  The export stays
 * secret: it is compared in constant time and only the verdict, the test's
 * own, is declassified. */
static int exports(const psi_engine *e, const uint8_t key[PSI_KEY_BYTES])
{
    uint8_t out[PSI_KEY_BYTES];
    size_t len = sizeof out;
    check_ok(psi_engine_export_key(e, out, &len), "psi_engine_export_key");
    check(len == PSI_KEY_BYTES, "psi_engine_export_key length", 0);
    int same = sodium_memcmp(out, key, PSI_KEY_BYTES) == 0;
    PSI_CHECKMEM_DECLASSIFY(&same, sizeof same);
    sodium_memzero(out, sizeof out);
    return same;
}

/* ----------------------------------------------------------------- engines */

typedef struct engines {
    psi_engine *server, *client;   /* reveal on */
    psi_engine *server_off, *client_off; /* reveal off: clone_with */
    psi_engine *server_clone;      /* psi_engine_clone of server */
} engines;

/* The server's key below n (below l for ristretto255, little-endian) after
 * a zero byte: key + 1 is its 32-byte form, key its 33-byte one. */
static void server_key(uint8_t key[PSI_KEY_BYTES + 1])
{
    key[0] = 0;
    for (int i = 0; i < PSI_KEY_BYTES; i++)
        key[1 + i] = (uint8_t)(i * 29 + 7);
    if (cur_suite == PSI_SUITE_RISTRETTO255)
        key[PSI_KEY_BYTES] &= 0x0f;
    else
        key[1] &= 0x7f;
}

/* Engines from key bytes (§2.1), and the export of their keys (§2.3). */
static void make_keyed_engines(engines *en)
{
    uint8_t key[PSI_KEY_BYTES + 1], zero[PSI_KEY_BYTES] = {0};
    psi_engine *e33 = NULL, *bad = NULL;
    int r255 = cur_suite == PSI_SUITE_RISTRETTO255;
    server_key(key);
    check_ok(engine_from_key(&en->server, PSI_ROLE_SERVER, key + 1, PSI_KEY_BYTES),
             "psi_engine_create_from_key");
    /* P-256 suites: any length, never reduced: 00 || k is k.  ristretto255:
     * exactly 32 bytes (§16.3), so the 33-byte form is refused. */
    int rc = engine_from_key(&e33, PSI_ROLE_SERVER, key, sizeof key);
    check(r255 ? rc == PSI_E_KEY_OUT_OF_RANGE && e33 == NULL : rc == PSI_OK,
          "psi_engine_create_from_key (33 bytes)", rc);
    rc = engine_from_key(&bad, PSI_ROLE_SERVER, r255 ? r255_order : group_order,
                         PSI_KEY_BYTES);
    check(rc == PSI_E_KEY_OUT_OF_RANGE && bad == NULL, "refusing the group order", rc);
    rc = engine_from_key(&bad, PSI_ROLE_SERVER, zero, sizeof zero);
    check(rc == PSI_E_KEY_OUT_OF_RANGE && bad == NULL, "refusing key 0", rc);
    ok("ok create_from_key (33-byte key %s; keys 0 and %s refused)",
       r255 ? "refused" : "accepted", r255 ? "l" : "n");
    check(exports(en->server, key + 1) && (e33 == NULL || exports(e33, key + 1)),
          "exported key", 0);
    ok("ok export_key (%d engine(s))", e33 == NULL ? 1 : 2);
    psi_engine_free(e33);
    sodium_memzero(key, sizeof key);
}

/* The client's random engine, and clones with the reveal flag off. */
static void make_other_engines(engines *en)
{
    psi_settings s = settings(PSI_ROLE_CLIENT, 1);
    draws_secret = 1;
    int rc = psi_engine_create(&en->client, &s);
    draws_secret = 0;
    check_ok(rc, "psi_engine_create");
    mark_engine(en->client);
    ok("ok create (random key drawn secret)");

    check_ok(psi_engine_clone(&en->server_clone, en->server, NULL), "psi_engine_clone");
    mark_engine(en->server_clone);
    s = settings(PSI_ROLE_SERVER, 0);
    check_ok(psi_engine_clone(&en->server_off, en->server, &s), "psi_engine_clone");
    mark_engine(en->server_off);
    s = settings(PSI_ROLE_CLIENT, 0);
    check_ok(psi_engine_clone(&en->client_off, en->client, &s), "psi_engine_clone");
    mark_engine(en->client_off);
    ok("ok clone, clone_with (3 engines; reveal off)");
}

static void free_engines(engines *en)
{
    psi_engine_free(en->server);
    psi_engine_free(en->client);
    psi_engine_free(en->server_off);
    psi_engine_free(en->client_off);
    psi_engine_free(en->server_clone);
}

/* ---------------------------------------------------------------- values */

typedef struct values {
    char text[2][N_VALUES][VALUE_CHARS];
    psi_value client[N_VALUES], server[N_VALUES];
} values;

static void make_values(values *v)
{
    for (int i = 0; i < N_VALUES; i++) {
        snprintf(v->text[0][i], VALUE_CHARS, "Element %d", i);
        snprintf(v->text[1][i], VALUE_CHARS, "Element %d", i + FIRST_COMMON);
        v->client[i] = (psi_value){(const uint8_t *)v->text[0][i], strlen(v->text[0][i])};
        v->server[i] = (psi_value){(const uint8_t *)v->text[1][i], strlen(v->text[1][i])};
        if (cur_suite == PSI_SUITE_OPENMINED_P256) {
            /* Public: hash-to-curve is variable time in the value (§12). */
            PSI_CHECKMEM_DECLASSIFY(v->text[0][i], VALUE_CHARS);
            PSI_CHECKMEM_DECLASSIFY(v->text[1][i], VALUE_CHARS);
        } else {
            /* Secret: this suite hashes in constant time (§16); the
             * lengths, in v->client and v->server, stay public. */
            PSI_CHECKMEM_SECRET(v->text[0][i], VALUE_CHARS);
            PSI_CHECKMEM_SECRET(v->text[1][i], VALUE_CHARS);
        }
    }
}

/* H(values): the OpenMined suite's known points (§3.3); in the other suites
 * the masks of an engine with key 1, a known answer checked by
 * tests/psi/test_suites_kat.c. */
static void hashes(uint8_t *out, const psi_value *values, size_t n)
{
    if (cur_suite == PSI_SUITE_OPENMINED_P256) {
        check(n <= 2, "hashes", 0);
        memcpy(out, h_element, n * PSI_ELEMENT_BYTES);
        return;
    }
    uint8_t one[PSI_KEY_BYTES] = {0};
    one[cur_suite == PSI_SUITE_RISTRETTO255 ? 0 : PSI_KEY_BYTES - 1] = 1;
    psi_engine *e = NULL;
    check_ok(engine_from_key(&e, PSI_ROLE_CLIENT, one, sizeof one), "key 1");
    size_t len = n * PSI_ELEMENT_BYTES;
    check_ok(psi_engine_mask(e, out, &len, values, n), "psi_engine_mask (key 1)");
    PSI_CHECKMEM_DECLASSIFY(out, len); /* the test's reference: public */
    psi_engine_free(e);
}

/* ------------------------------------------------------- batch primitives */

static void check_batch(const engines *en, const values *v)
{
    uint8_t masked[N_VALUES * PSI_ELEMENT_BYTES], both[sizeof masked];
    uint8_t back[sizeof masked], server_masked[sizeof masked];
    size_t len = sizeof masked;
    check_ok(psi_engine_mask(en->client, masked, &len, v->client, N_VALUES),
             "psi_engine_mask");
    PSI_CHECKMEM_DECLASSIFY(masked, len); /* sent: the request's elements */
    ok("ok mask (%d values)", N_VALUES);

    len = sizeof both;
    check_ok(psi_engine_remask(en->server, both, &len, masked, N_VALUES), "psi_engine_remask");
    PSI_CHECKMEM_DECLASSIFY(both, len); /* sent: the response's elements */
    ok("ok remask (%d points)", N_VALUES);

    len = sizeof back;
    check_ok(psi_engine_unmask(en->client, back, &len, both, N_VALUES), "psi_engine_unmask");
    PSI_CHECKMEM_DECLASSIFY(back, len); /* the server's masks, matched with the setup */
    /* Commutativity (§4): c^-1 (s (c H(v))) = s H(v). */
    len = sizeof server_masked;
    check_ok(psi_engine_mask(en->server_clone, server_masked, &len, v->client, N_VALUES),
             "psi_engine_mask (clone)");
    PSI_CHECKMEM_DECLASSIFY(server_masked, len); /* sent: the setup's elements */
    check(memcmp(back, server_masked, sizeof back) == 0, "unmask(remask(mask))", 0);
    /* Unmasking one's own mask gives H(v) back. */
    len = sizeof back;
    check_ok(psi_engine_unmask(en->client, back, &len, masked, N_VALUES), "psi_engine_unmask");
    PSI_CHECKMEM_DECLASSIFY(back, len);
    uint8_t h[N_VALUES * PSI_ELEMENT_BYTES];
    hashes(h, v->client, cur_suite == PSI_SUITE_OPENMINED_P256 ? 2 : N_VALUES);
    check(memcmp(back, h, cur_suite == PSI_SUITE_OPENMINED_P256 ? sizeof h_element : sizeof h)
              == 0, "unmask(mask) = H", 0);
    ok("ok unmask (%d points, twice)", N_VALUES);
}

/* ------------------------------------------------------- message calls */

static const char *const structure_name[] = {"raw", "gcs", "bloom"};

typedef struct setup_msg {
    uint8_t *bytes;
    size_t len;
    size_t perm[N_VALUES];
} setup_msg;

static void make_setups(const engines *en, const values *v, setup_msg setups[3])
{
    for (int st = 0; st < 3; st++) {
        psi_setup_params p = {(psi_structure)st, 1e-6, N_VALUES};
        size_t bound = 0;
        check_ok(psi_setup_bound(&bound, cur_suite, &p, N_VALUES), "psi_setup_bound");
        setups[st].bytes = malloc(bound);
        check(setups[st].bytes != NULL, "malloc", PSI_E_NOMEM);
        setups[st].len = bound;
        check_ok(psi_server_create_setup(en->server, setups[st].bytes, &setups[st].len,
                                         st == PSI_STRUCTURE_RAW ? setups[st].perm : NULL, &p,
                                         v->server, N_VALUES),
                 "psi_server_create_setup");
        /* sent: the setup, and the permutation of its elements */
        PSI_CHECKMEM_DECLASSIFY(setups[st].bytes, setups[st].len);
        PSI_CHECKMEM_DECLASSIFY(setups[st].perm, sizeof setups[st].perm);
        ok("ok create_setup %s (%d values)", structure_name[st], N_VALUES);
    }
}

/* Request from `client`, response from `server`. */
static void round_trip(const psi_engine *client, const psi_engine *server, const values *v,
                       uint8_t **response, size_t *response_len)
{
    size_t req_len = psi_request_bound(cur_suite, N_VALUES);
    uint8_t *req = malloc(req_len);
    check(req != NULL, "malloc", PSI_E_NOMEM);
    check_ok(psi_client_create_request(client, req, &req_len, v->client, N_VALUES),
             "psi_client_create_request");
    PSI_CHECKMEM_DECLASSIFY(req, req_len); /* sent */
    *response_len = psi_response_bound(
        cur_suite, psi_message_element_bound(cur_suite, req_len));
    *response = malloc(*response_len);
    check(*response != NULL, "malloc", PSI_E_NOMEM);
    check_ok(psi_server_process_request(server, *response, response_len, req, req_len),
             "psi_server_process_request");
    PSI_CHECKMEM_DECLASSIFY(*response, *response_len); /* sent */
    free(req);
}

/* Returns 1 when idx[0..count) are the client indices FIRST_COMMON ..
 * N_VALUES - 1, in any order (raw reports them by matching ciphertext). */
static int common_indices(const size_t *idx, size_t count)
{
    unsigned seen = 0;
    for (size_t i = 0; i < count; i++) {
        if (idx[i] < FIRST_COMMON || idx[i] >= N_VALUES)
            return 0;
        seen |= 1u << idx[i];
    }
    return count == N_COMMON && seen == ((1u << N_VALUES) - (1u << FIRST_COMMON));
}

/* The intersection and its size for each structure; the size also from
 * the reveal-off response, which is sorted. */
static void check_intersections(const engines *en, const setup_msg setups[3],
                                const uint8_t *resp, size_t resp_len, const uint8_t *resp_off,
                                size_t resp_off_len)
{
    size_t idx[N_VALUES], count;
    for (int st = 0; st < 3; st++) {
        count = N_VALUES;
        check_ok(psi_client_get_intersection(en->client, idx, &count, setups[st].bytes,
                                             setups[st].len, resp, resp_len),
                 "psi_client_get_intersection");
        PSI_CHECKMEM_DECLASSIFY(&count, sizeof count); /* the client's result */
        PSI_CHECKMEM_DECLASSIFY(idx, sizeof idx);
        /* GCS and Bloom may add false positives (fpr 1e-6): at least the 4. */
        check(st == PSI_STRUCTURE_RAW ? common_indices(idx, count) : count >= N_COMMON,
              "intersection", 0);
        size_t size = 0, size_off = 0;
        check_ok(psi_client_get_intersection_size(en->client, &size, setups[st].bytes,
                                                  setups[st].len, resp, resp_len),
                 "psi_client_get_intersection_size");
        check_ok(psi_client_get_intersection_size(en->client_off, &size_off, setups[st].bytes,
                                                  setups[st].len, resp_off, resp_off_len),
                 "psi_client_get_intersection_size (reveal off)");
        PSI_CHECKMEM_DECLASSIFY(&size, sizeof size);
        PSI_CHECKMEM_DECLASSIFY(&size_off, sizeof size_off);
        check(size == count && size_off == count, "intersection size", 0);
        ok("ok get_intersection %s (%zu found), _size (reveal on and off)", structure_name[st],
           count);
    }
}

/* The association table of the raw setup, mapped to server indices. */
static void check_association(const engines *en, const setup_msg *raw, const uint8_t *resp,
                              size_t resp_len)
{
    psi_pair pairs[N_VALUES];
    size_t count = N_VALUES;
    check_ok(psi_client_get_association(en->client, pairs, &count, raw->bytes, raw->len, resp,
                                        resp_len),
             "psi_client_get_association");
    PSI_CHECKMEM_DECLASSIFY(&count, sizeof count); /* the client's result */
    PSI_CHECKMEM_DECLASSIFY(pairs, sizeof pairs);
    check(count == N_COMMON, "association size", 0);
    check_ok(psi_association_map(pairs, count, raw->perm, N_VALUES), "psi_association_map");
    for (size_t i = 0; i < count; i++)
        check(pairs[i].client_index == pairs[i].server_index + FIRST_COMMON, "association", 0);
    ok("ok get_association raw (%zu pairs)", count);
}

static void check_messages(const engines *en, const values *v)
{
    setup_msg setups[3];
    make_setups(en, v, setups);
    uint8_t *resp, *resp_off;
    size_t resp_len, resp_off_len;
    round_trip(en->client, en->server, v, &resp, &resp_len);
    round_trip(en->client_off, en->server_off, v, &resp_off, &resp_off_len);
    ok("ok create_request (reveal on and off, %d values)", N_VALUES);
    ok("ok process_request (reveal on; reveal off, sorted)");
    check_intersections(en, setups, resp, resp_len, resp_off, resp_off_len);
    check_association(en, &setups[PSI_STRUCTURE_RAW], resp, resp_len);
    for (int st = 0; st < 3; st++)
        free(setups[st].bytes);
    free(resp);
    free(resp_off);
}

/* ------------------------------------------------------------------ main */

/* A deliberate leak: branches on a secret byte, which valgrind must report
 * (then its --error-exitcode fails the run; the program itself exits 0). */
static NOINLINE void self_check(void)
{
    uint8_t key[PSI_KEY_BYTES];
    randombytes_buf(key, sizeof key);
    PSI_CHECKMEM_SECRET(key, sizeof key);
    if (key[0] & 1)
        printf("ctime_psi self-check: odd key\n");
    else
        printf("ctime_psi self-check: even key\n");
    sodium_memzero(key, sizeof key);
    printf("ctime_psi self-check: valgrind counted %u error(s); expected at least 1\n",
           PSI_CHECKMEM_ERRORS());
}

int main(int argc, char **argv)
{
    if (!PSI_CHECKMEM_RUNNING()) {
        fprintf(stderr, "ctime_psi: must run under valgrind memcheck, e.g. "
                        "meson test --suite ctime, or valgrind --error-exitcode=99 %s\n",
                argv[0]);
        return 2;
    }
    if (randombytes_set_implementation(&ct_rng) != 0 || sodium_init() < 0) {
        fprintf(stderr, "ctime_psi: libsodium failed to start\n");
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "--self-check") == 0) {
        self_check();
        return 0;
    }
    for (int suite = 0; suite < 3; suite++) {
        engines en = {0};
        values v;
        cur_suite = (psi_suite)suite;
        make_keyed_engines(&en);
        make_other_engines(&en);
        make_values(&v);
        check_batch(&en, &v);
        check_messages(&en, &v);
        free_engines(&en);
    }
    for (int i = 0; i < n_report; i++)
        printf("%s\n", report[i]);
    return 0;
}
