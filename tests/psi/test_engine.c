/* The engine through the public API: keys (§2), hash to curve (§3),
 * strict point decoding (§4.2), the batch primitives and roles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psi.h"
#include "test_util.h"

#define REF PSI_SOURCE_ROOT "/vectors/reference/openmined-psi-vectors.json"
#define WYCHEPROOF PSI_TESTDATA "/wycheproof/ecdh_secp256r1_ecpoint_test.json"

static const char order_hex[] =
    "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551";

static psi_engine *engine_from_hex(psi_role role, int reveal, const char *hex, int *rc)
{
    psi_settings s;
    psi_settings_default(&s);
    s.role = role;
    s.reveal_intersection = reveal;
    size_t len;
    uint8_t *key = tu_unhex(hex, &len);
    psi_engine *e = NULL;
    *rc = psi_engine_create_from_key(&e, &s, key, len);
    free(key);
    return e;
}

static void expect_key(const char *hex, int want_rc, const char *want_export)
{
    int rc;
    psi_engine *e = engine_from_hex(PSI_ROLE_CLIENT, 1, hex, &rc);
    assert_int_equal(rc, want_rc);
    if (want_rc != PSI_OK) {
        assert_null(e);
        return;
    }
    uint8_t out[40];
    size_t len = sizeof out;
    assert_int_equal(psi_engine_export_key(e, out, &len), PSI_OK);
    assert_int_equal(len, PSI_KEY_BYTES);
    char *got = tu_hex(out, len);
    assert_string_equal(got, want_export);
    free(got);
    psi_engine_free(e);
}

static void test_engine_sizes_agree(void **state)
{
    (void)state;
    assert_int_equal(psi_element_bytes(), PSI_ELEMENT_BYTES);
    assert_int_equal(psi_key_bytes(), PSI_KEY_BYTES);
    assert_string_equal(psi_strerror(PSI_OK), "success");
    assert_string_equal(psi_strerror(-9999), "unknown error");
    assert_string_equal(psi_strerror(5), "unknown error");
    for (int c = PSI_E_INVALID_ARG; c >= PSI_E_BLOOM_FORMAT; c--) {
        assert_string_not_equal(psi_strerror(c), "unknown error");
        assert_non_null(psi_error_name(c));
    }
    assert_string_equal(psi_error_name(PSI_E_POINT_PREFIX), "PSI_E_POINT_PREFIX");
    assert_string_equal(psi_error_name(PSI_E_HASH_TO_CURVE), "PSI_E_HASH_TO_CURVE");
    assert_string_equal(psi_error_name(PSI_OK), "PSI_OK");
    assert_string_equal(psi_error_name(PSI_E_THREAD), "PSI_E_THREAD");
    assert_string_equal(psi_error_name(PSI_E_POINT_ENCODING), "PSI_E_POINT_ENCODING");
    assert_string_equal(psi_error_name(PSI_E_IO), "PSI_E_IO");
    assert_string_equal(psi_error_name(PSI_E_SETUP_MISMATCH), "PSI_E_SETUP_MISMATCH");
    assert_string_equal(psi_error_name(PSI_E_PAYLOAD_AUTH), "PSI_E_PAYLOAD_AUTH");
    assert_string_equal(psi_error_name(PSI_E_PAYLOAD_DUPLICATE), "PSI_E_PAYLOAD_DUPLICATE");
    assert_string_equal(psi_error_name(PSI_E_BLOOM_FORMAT), "PSI_E_BLOOM_FORMAT");
    assert_null(psi_error_name(PSI_E_BLOOM_FORMAT - 1));
    assert_null(psi_error_name(1));
}

static void test_engine_key_rules(void **state)
{
    (void)state;
    const char *zero32 = "0000000000000000000000000000000000000000000000000000000000000000";
    expect_key(zero32, PSI_E_KEY_OUT_OF_RANGE, NULL);
    expect_key("", PSI_E_KEY_OUT_OF_RANGE, NULL);
    expect_key("00", PSI_E_KEY_OUT_OF_RANGE, NULL);
    expect_key(order_hex, PSI_E_KEY_OUT_OF_RANGE, NULL);
    expect_key("ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
               PSI_E_KEY_OUT_OF_RANGE, NULL);
    /* n + 1 would be 1 if reduced: it must be rejected, never reduced. */
    expect_key("01ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551",
               PSI_E_KEY_OUT_OF_RANGE, NULL);
    expect_key("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632550", PSI_OK,
               "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632550");
    expect_key("05", PSI_OK,
               "0000000000000000000000000000000000000000000000000000000000000005");
    expect_key("00000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", PSI_OK,
               "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    /* Any length: 100 bytes of leading zeros then 1. */
    char long_key[203];
    memset(long_key, '0', 200);
    strcpy(long_key + 200, "01");
    expect_key(long_key, PSI_OK,
               "0000000000000000000000000000000000000000000000000000000000000001");
}

static void test_engine_random_key_round_trips(void **state)
{
    (void)state;
    psi_settings s;
    psi_settings_default(&s);
    psi_engine *a = NULL, *b = NULL, *c = NULL;
    assert_int_equal(psi_engine_create(&a, &s), PSI_OK);
    assert_int_equal(psi_engine_create(&c, &s), PSI_OK);
    uint8_t ka[32], kc[32];
    size_t la = 32, lc = 32;
    assert_int_equal(psi_engine_export_key(a, ka, &la), PSI_OK);
    assert_int_equal(psi_engine_export_key(c, kc, &lc), PSI_OK);
    assert_memory_not_equal(ka, kc, 32);
    assert_int_equal(psi_engine_create_from_key(&b, &s, ka, la), PSI_OK);
    psi_value v = {(const uint8_t *)"value", 5};
    uint8_t ma[33], mb[33];
    size_t l1 = 33, l2 = 33;
    assert_int_equal(psi_engine_mask(a, ma, &l1, &v, 1), PSI_OK);
    assert_int_equal(psi_engine_mask(b, mb, &l2, &v, 1), PSI_OK);
    assert_memory_equal(ma, mb, 33);
    psi_engine *d = NULL;
    assert_int_equal(psi_engine_clone(&d, a, NULL), PSI_OK);
    l2 = 33;
    assert_int_equal(psi_engine_mask(d, mb, &l2, &v, 1), PSI_OK);
    assert_memory_equal(ma, mb, 33);
    assert_int_equal(psi_engine_role(d), PSI_ROLE_CLIENT);
    assert_int_equal(psi_engine_reveal(d), 1);
    psi_engine_free(a);
    psi_engine_free(b);
    psi_engine_free(c);
    psi_engine_free(d);
    psi_engine_free(NULL);
}

/* H(m) is the mask under key 1. */
static void check_h2c(psi_engine *one, const char *input, size_t len, const char *want)
{
    psi_value v = {(const uint8_t *)input, len};
    uint8_t out[33];
    size_t olen = sizeof out;
    assert_int_equal(psi_engine_mask(one, out, &olen, &v, 1), PSI_OK);
    char *got = tu_hex(out, olen);
    if (strcmp(got, want) != 0)
        fail_msg("H(%.40s) = %s, want %s", input, got, want);
    free(got);
}

static void test_engine_h2c_known_answers(void **state)
{
    (void)state;
    int rc;
    psi_engine *one = engine_from_hex(PSI_ROLE_CLIENT, 1, "01", &rc);
    assert_int_equal(rc, PSI_OK);
    cJSON *ref = tu_load_json(REF);
    const char *groups[] = {"h2c", "h2c_leading_zero_rehash"};
    int checked = 0;
    for (int g = 0; g < 2; g++) {
        const cJSON *item;
        cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(ref, groups[g])) {
            if (item->string[0] == '_')
                continue;
            if (strcmp(item->string, "x*1000") == 0) {
                char *xs = malloc(1000);
                memset(xs, 'x', 1000);
                check_h2c(one, xs, 1000, item->valuestring);
                free(xs);
            } else {
                check_h2c(one, item->string, strlen(item->string), item->valuestring);
            }
            checked++;
        }
    }
    assert_true(checked >= 15);
    cJSON_Delete(ref);
    psi_engine_free(one);
}

static int point_rc(const char *hex)
{
    size_t len;
    uint8_t *p = tu_unhex(hex, &len);
    int rc = psi_point_check(PSI_SUITE_OPENMINED_P256, p, len);
    free(p);
    return rc;
}

static void test_engine_point_decoding_is_strict(void **state)
{
    (void)state;
    const char *g = "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296";
    const char *gy = "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5";
    char buf[200];
    snprintf(buf, sizeof buf, "03%s", g);
    assert_int_equal(point_rc(buf), PSI_OK);
    assert_int_equal(point_rc("00"), PSI_E_POINT_IDENTITY);
    assert_int_equal(point_rc(""), PSI_E_POINT_LENGTH);
    snprintf(buf, sizeof buf, "04%s%s", g, gy);
    assert_int_equal(point_rc(buf), PSI_E_POINT_LENGTH);
    snprintf(buf, sizeof buf, "07%s%s", g, gy);
    assert_int_equal(point_rc(buf), PSI_E_POINT_LENGTH);
    snprintf(buf, sizeof buf, "03%s00", g);
    assert_int_equal(point_rc(buf), PSI_E_POINT_LENGTH);
    snprintf(buf, sizeof buf, "04%s", g);
    assert_int_equal(point_rc(buf), PSI_E_POINT_PREFIX);
    snprintf(buf, sizeof buf, "00%s", g);
    assert_int_equal(point_rc(buf), PSI_E_POINT_PREFIX);
    /* x = 0 is a valid point on P-256; x = 1 is not. */
    assert_int_equal(point_rc("020000000000000000000000000000000000000000000000000000000000000000"),
                     PSI_OK);
    assert_int_equal(point_rc("020000000000000000000000000000000000000000000000000000000000000001"),
                     PSI_E_POINT_NOT_ON_CURVE);
    /* x = p and x = 2^256 - 1. */
    assert_int_equal(point_rc("02ffffffff00000001000000000000000000000000ffffffffffffffffffffffff"),
                     PSI_E_POINT_X_RANGE);
    assert_int_equal(point_rc("03ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"),
                     PSI_E_POINT_X_RANGE);
    assert_int_equal(psi_point_check(PSI_SUITE_OPENMINED_P256, NULL, 33), PSI_E_INVALID_ARG);
}

/* Compressed form of a 65-byte uncompressed point. */
static void compress(uint8_t out[33], const uint8_t *unc)
{
    out[0] = (uint8_t)(0x02 | (unc[64] & 1));
    memcpy(out + 1, unc + 1, 32);
}

/* Every Wycheproof invalid point is refused; every valid one, compressed,
 * is accepted and re-masking it with the test's private key gives the
 * shared secret's x (re-mask is exactly ECDH). */
static void test_engine_wycheproof_points(void **state)
{
    (void)state;
    cJSON *doc = tu_load_json(WYCHEPROOF);
    int invalid = 0, valid = 0;
    const cJSON *group, *t;
    cJSON_ArrayForEach(group, cJSON_GetObjectItemCaseSensitive(doc, "testGroups")) {
        cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(group, "tests")) {
            const char *result = cJSON_GetObjectItemCaseSensitive(t, "result")->valuestring;
            const char *pub = cJSON_GetObjectItemCaseSensitive(t, "public")->valuestring;
            size_t len;
            uint8_t *p = tu_unhex(pub, &len);
            if (strcmp(result, "invalid") == 0) {
                if (psi_point_check(PSI_SUITE_OPENMINED_P256, p, len) == PSI_OK)
                    fail_msg("tcId %d accepted", cJSON_GetObjectItemCaseSensitive(t, "tcId")->valueint);
                invalid++;
            } else {
                uint8_t c[33];
                if (len == 65)
                    compress(c, p);
                else
                    memcpy(c, p, 33);
                assert_int_equal(psi_point_check(PSI_SUITE_OPENMINED_P256, c, 33), PSI_OK);
                int rc;
                const char *priv = cJSON_GetObjectItemCaseSensitive(t, "private")->valuestring;
                psi_engine *e = engine_from_hex(PSI_ROLE_SERVER, 1, priv, &rc);
                if (rc == PSI_OK) {
                    uint8_t out[33];
                    size_t olen = 33;
                    assert_int_equal(psi_engine_remask(e, out, &olen, c, 1), PSI_OK);
                    char *x = tu_hex(out + 1, 32);
                    assert_string_equal(x, cJSON_GetObjectItemCaseSensitive(t, "shared")->valuestring);
                    free(x);
                    valid++;
                } else {
                    assert_int_equal(rc, PSI_E_KEY_OUT_OF_RANGE);
                }
                psi_engine_free(e);
            }
            free(p);
        }
    }
    printf("# wycheproof: %d invalid refused, %d valid checked\n", invalid, valid);
    assert_true(invalid >= 24 && valid >= 300);
    cJSON_Delete(doc);
}

static void test_engine_unmask_inverts_remask(void **state)
{
    (void)state;
    int rc;
    psi_engine *c = engine_from_hex(PSI_ROLE_CLIENT, 1, "0a0b0c", &rc);
    psi_engine *s = engine_from_hex(PSI_ROLE_SERVER, 1, "112233445566", &rc);
    psi_value v[3] = {{(const uint8_t *)"a", 1}, {NULL, 0}, {(const uint8_t *)"zz", 2}};
    uint8_t m[99], r[99], u[99], sm[99];
    size_t lm = 99, lr = 99, lu = 99, ls = 99;
    assert_int_equal(psi_engine_mask(c, m, &lm, v, 3), PSI_OK);
    assert_int_equal(psi_engine_remask(s, r, &lr, m, 3), PSI_OK);
    assert_int_equal(psi_engine_unmask(c, u, &lu, r, 3), PSI_OK);
    assert_int_equal(psi_engine_mask(s, sm, &ls, v, 3), PSI_OK);
    assert_memory_equal(u, sm, 99);
    /* One bad point fails the whole batch and leaves no output. */
    r[33] = 0x05;
    lu = 99;
    assert_int_equal(psi_engine_unmask(c, u, &lu, r, 3), PSI_E_POINT_PREFIX);
    assert_int_equal(lu, 0);
    lu = 98;
    assert_int_equal(psi_engine_unmask(c, u, &lu, m, 3), PSI_E_BUFFER_TOO_SMALL);
    psi_engine_free(c);
    psi_engine_free(s);
}

static void progress_cb(void *arg, uint64_t done, uint64_t total)
{
    uint64_t *calls = arg;
    calls[0]++;
    calls[1] = done;
    calls[2] = total;
}

static void test_engine_reports_progress(void **state)
{
    (void)state;
    uint64_t calls[3] = {0};
    psi_settings s;
    psi_settings_default(&s);
    s.progress = progress_cb;
    s.progress_arg = calls;
    psi_engine *e = NULL;
    assert_int_equal(psi_engine_create(&e, &s), PSI_OK);
    psi_value v[2048];
    char text[2048][8];
    for (int i = 0; i < 2048; i++) {
        snprintf(text[i], sizeof text[i], "%d", i);
        v[i] = (psi_value){(const uint8_t *)text[i], strlen(text[i])};
    }
    uint8_t *out = malloc(2048 * 33);
    size_t len = 2048 * 33;
    assert_int_equal(psi_engine_mask(e, out, &len, v, 2048), PSI_OK);
    assert_int_equal(calls[0], 2);
    assert_int_equal(calls[1], 2048);
    assert_int_equal(calls[2], 2048);
    free(out);
    psi_engine_free(e);
}

static void test_engine_rejects_misuse(void **state)
{
    (void)state;
    psi_settings s;
    psi_settings_default(&s);
    psi_engine *e = NULL;
    uint8_t buf[64], key[1] = {1};
    size_t len = sizeof buf;
    assert_int_equal(psi_engine_create(NULL, &s), PSI_E_INVALID_ARG);
    assert_int_equal(psi_engine_create(&e, NULL), PSI_E_INVALID_ARG);
    assert_int_equal(psi_engine_create_from_key(&e, &s, NULL, 3), PSI_E_INVALID_ARG);
    s.role = 7;
    assert_int_equal(psi_engine_create(&e, &s), PSI_E_INVALID_ARG);
    psi_settings_default(&s);
    s.reveal_intersection = 2;
    assert_int_equal(psi_engine_create(&e, &s), PSI_E_INVALID_ARG);
    psi_settings_default(&s);
    s.reserved[3] = 1;
    assert_int_equal(psi_engine_create(&e, &s), PSI_E_INVALID_ARG);
    assert_null(e);
    psi_settings_default(&s);
    assert_int_equal(psi_engine_create_from_key(&e, &s, key, 1), PSI_OK);
    assert_int_equal(psi_engine_clone(NULL, e, NULL), PSI_E_INVALID_ARG);
    psi_engine *c = e;
    assert_int_equal(psi_engine_clone(&c, NULL, NULL), PSI_E_INVALID_ARG);
    assert_null(c);
    assert_int_equal(psi_engine_export_key(e, buf, NULL), PSI_E_INVALID_ARG);
    assert_int_equal(psi_engine_export_key(NULL, buf, &len), PSI_E_INVALID_ARG);
    len = 31;
    assert_int_equal(psi_engine_export_key(e, buf, &len), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(len, 0);
    psi_value bad = {NULL, 4};
    len = sizeof buf;
    assert_int_equal(psi_engine_mask(e, buf, &len, &bad, 1), PSI_E_INVALID_ARG);
    len = sizeof buf;
    assert_int_equal(psi_engine_mask(NULL, buf, &len, &bad, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_engine_mask(e, buf, NULL, &bad, 1), PSI_E_INVALID_ARG);
    len = sizeof buf;
    assert_int_equal(psi_engine_remask(e, buf, &len, NULL, 1), PSI_E_INVALID_ARG);
    len = sizeof buf;
    assert_int_equal(psi_engine_unmask(NULL, buf, &len, buf, 1), PSI_E_INVALID_ARG);
    len = 0;
    assert_int_equal(psi_engine_mask(e, NULL, &len, NULL, 0), PSI_OK);
    assert_int_equal(psi_engine_role(NULL), 0);
    assert_int_equal(psi_engine_reveal(NULL), 0);
    psi_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_sizes_agree),
        cmocka_unit_test(test_engine_key_rules),
        cmocka_unit_test(test_engine_random_key_round_trips),
        cmocka_unit_test(test_engine_h2c_known_answers),
        cmocka_unit_test(test_engine_point_decoding_is_strict),
        cmocka_unit_test(test_engine_wycheproof_points),
        cmocka_unit_test(test_engine_unmask_inverts_remask),
        cmocka_unit_test(test_engine_reports_progress),
        cmocka_unit_test(test_engine_rejects_misuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
