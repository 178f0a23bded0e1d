/* Known answers of the new suites through the public API (PROTOCOL.md
 * §16): ristretto255 against RFC 9496 Appendix A
 * (PSI_TESTDATA/ristretto255/ristretto255_rfc9496.json) and the suite's
 * hash-to-group rebuilt from libsodium's primitives; p256-sswu against
 * points of RFC 9380's P256_XMD:SHA-256_SSWU_RO_ with the project's DST,
 * computed independently by vectors/suite-ref.py (pure Python; its
 * hash_to_curve_p256 reproduces RFC 9380's J.1.1 vectors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "psi.h"
#include "test_util.h"

#define R255 PSI_SUITE_RISTRETTO255
#define EB PSI_ELEMENT_BYTES
#define RFC9496 PSI_TESTDATA "/ristretto255/ristretto255_rfc9496.json"

static unsigned long n_checks;
#define CHECK(c) (n_checks++, assert_true(c))
#define CHECK_RC(got, want) (n_checks++, assert_int_equal((got), (want)))

static psi_engine *engine(int suite, const uint8_t *key, size_t len)
{
    psi_settings s;
    psi_settings_default(&s);
    s.suite = (psi_suite)suite;
    psi_engine *e = NULL;
    CHECK_RC(psi_engine_create_from_key(&e, &s, key, len), PSI_OK);
    return e;
}

static void expect_hex(const uint8_t *got, size_t len, const char *want, const char *what)
{
    char *hex = tu_hex(got, len);
    n_checks++;
    if (strcmp(hex, want) != 0)
        fail_msg("%s:\n got %s\nwant %s", what, hex, want);
    free(hex);
}

static const cJSON *vectors(const cJSON *root, const char *section)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, section), "vectors");
    assert_true(cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0);
    return v;
}

static const char *str(const cJSON *o, const char *name)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, name);
    assert_true(cJSON_IsString(s));
    return s->valuestring;
}

/* ------------------------------------------------------ ristretto255 */

/* Every invalid encoding of RFC 9496 A.2 is refused; the identity as the
 * identity. */
static void test_r255_invalid_encodings(void **state)
{
    (void)state;
    cJSON *root = tu_load_json(RFC9496);
    const cJSON *v;
    int n = 0;
    cJSON_ArrayForEach(v, vectors(root, "invalid_encodings")) {
        size_t len;
        uint8_t *enc = tu_unhex(str(v, "encoding"), &len);
        assert_int_equal(len, 32);
        int want = sodium_is_zero(enc, 32) ? PSI_E_POINT_IDENTITY : PSI_E_POINT_ENCODING;
        int rc = psi_point_check(R255, enc, 32);
        if (rc != want)
            fail_msg("%s %s: %s, expected %s", str(v, "category"), str(v, "encoding"),
                     psi_error_name(rc), psi_error_name(want));
        n_checks++;
        /* also refused inside an engine call, in a 33-byte slot */
        uint8_t slot[EB] = {0}, out[EB];
        memcpy(slot, enc, 32);
        size_t out_len = sizeof out;
        uint8_t one[32] = {1};
        psi_engine *e = engine(R255, one, 32);
        CHECK_RC(psi_engine_remask(e, out, &out_len, slot, 1), want);
        CHECK_RC(out_len, 0);
        psi_engine_free(e);
        free(enc);
        n++;
    }
    CHECK_RC(n, 29);
    /* Other lengths, and a valid encoding with a non-zero 33rd slot byte. */
    uint8_t b1[EB] = {0};
    CHECK_RC(psi_point_check(R255, b1, 31), PSI_E_POINT_LENGTH);
    CHECK_RC(psi_point_check(R255, b1, 33), PSI_E_POINT_LENGTH);
    cJSON_Delete(root);
}

/* [0]B .. [15]B: decoded except the identity; remasking B with key k gives
 * [k]B, unmasking [k]B with key k gives B. */
static void test_r255_generator_multiples(void **state)
{
    (void)state;
    cJSON *root = tu_load_json(RFC9496);
    const cJSON *v;
    uint8_t b[EB] = {0}, multiple[16][EB];
    memset(multiple, 0, sizeof multiple);
    cJSON_ArrayForEach(v, vectors(root, "multiples_of_generator")) {
        int k = cJSON_GetObjectItemCaseSensitive(v, "multiple")->valueint;
        size_t len;
        uint8_t *enc = tu_unhex(str(v, "encoding"), &len);
        assert_true(len == 32 && k >= 0 && k < 16);
        memcpy(multiple[k], enc, 32);
        CHECK_RC(psi_point_check(R255, enc, 32), k == 0 ? PSI_E_POINT_IDENTITY : PSI_OK);
        free(enc);
    }
    memcpy(b, multiple[1], EB);
    for (int k = 1; k < 16; k++) {
        uint8_t key[32] = {(uint8_t)k}, out[EB];
        size_t len = sizeof out;
        psi_engine *e = engine(R255, key, sizeof key);
        CHECK_RC(psi_engine_remask(e, out, &len, b, 1), PSI_OK);
        CHECK_RC(len, EB);
        CHECK(memcmp(out, multiple[k], EB) == 0); /* includes the zero 33rd byte */
        len = sizeof out;
        CHECK_RC(psi_engine_unmask(e, out, &len, multiple[k], 1), PSI_OK);
        CHECK(memcmp(out, b, EB) == 0);
        psi_engine_free(e);
    }
    /* l - 1 = -1: applying it twice is the identity map. */
    uint8_t lm1[32] = {0xec, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7,
                       0xa2, 0xde, 0xf9, 0xde, 0x14, [31] = 0x10};
    uint8_t neg[EB], back[EB];
    size_t len = sizeof neg;
    psi_engine *e = engine(R255, lm1, sizeof lm1);
    CHECK_RC(psi_engine_remask(e, neg, &len, multiple[5], 1), PSI_OK);
    CHECK(memcmp(neg, multiple[5], EB) != 0);
    len = sizeof back;
    CHECK_RC(psi_engine_remask(e, back, &len, neg, 1), PSI_OK);
    CHECK(memcmp(back, multiple[5], EB) == 0);
    len = sizeof back;
    CHECK_RC(psi_engine_unmask(e, back, &len, neg, 1), PSI_OK); /* (-1)^-1 = -1 */
    CHECK(memcmp(back, multiple[5], EB) == 0);
    psi_engine_free(e);
    cJSON_Delete(root);
}

/* RFC 9496 A.3 through libsodium's from_hash, the map the suite uses. */
static void test_r255_element_derivation(void **state)
{
    (void)state;
    cJSON *root = tu_load_json(RFC9496);
    const cJSON *v;
    int n = 0;
    cJSON_ArrayForEach(v, vectors(root, "element_derivation")) {
        size_t len;
        uint8_t *in = tu_unhex(str(v, "input"), &len), out[32];
        assert_int_equal(len, 64);
        crypto_core_ristretto255_from_hash(out, in);
        expect_hex(out, 32, str(v, "output"), "from_hash");
        CHECK_RC(psi_point_check(R255, out, 32), PSI_OK);
        free(in);
        n++;
    }
    CHECK_RC(n, 11);
    cJSON_Delete(root);
}

/* The suite's mask from its definition (§16.3): enc(k * from_hash(SHA-512(
 * "shardpsi-v1-ristretto255-H2G" || m))), with libsodium's primitives. */
static void test_r255_mask_definition(void **state)
{
    (void)state;
    static const char prefix[] = "shardpsi-v1-ristretto255-H2G";
    static const char *const text[] = {"", "a", "Element 0", "caf\xc3\xa9",
                                       "a value longer than one SHA-512 block of 128 bytes, "
                                       "so that the hash runs over two blocks of input at least "
                                       "...................."};
    uint64_t rng = tu_seed("test_suites_kat r255 mask");
    for (int round = 0; round < 4; round++) {
        uint8_t key[32];
        for (size_t i = 0; i < 32; i++)
            key[i] = (uint8_t)tu_rand(&rng);
        key[31] &= 0x0f;
        key[0] |= 1;
        if (round == 0) {
            memset(key, 0, sizeof key);
            key[0] = 1;
        }
        psi_engine *e = engine(R255, key, sizeof key);
        for (size_t t = 0; t < sizeof text / sizeof text[0]; t++) {
            psi_value v = {(const uint8_t *)text[t], strlen(text[t])};
            uint8_t buf[sizeof prefix + 256], digest[64], h[32], want[EB] = {0}, got[EB];
            memcpy(buf, prefix, sizeof prefix - 1);
            memcpy(buf + sizeof prefix - 1, v.data, v.len);
            crypto_hash_sha512(digest, buf, sizeof prefix - 1 + v.len);
            crypto_core_ristretto255_from_hash(h, digest);
            assert_int_equal(crypto_scalarmult_ristretto255(want, key, h), 0);
            size_t len = sizeof got;
            CHECK_RC(psi_engine_mask(e, got, &len, &v, 1), PSI_OK);
            CHECK(memcmp(got, want, EB) == 0);
        }
        psi_engine_free(e);
    }
}

/* ---------------------------------------------------------- p256-sswu */

/* ser(hash_to_curve(m, "shardpsi-v1-p256-sswu-P256_XMD:SHA-256_SSWU_RO_"))
 * and ser(7 * that), from vectors/suite-ref.py (hash_to_curve_p256,
 * p256_mul, p256_encode). */
static const struct {
    const char *m;
    size_t repeat; /* m is one byte repeated this often, when not 0 */
    const char *h, *h7;
} sswu_kat[] = {
    {"", 0, "032f75c719948990b48e364595415067677298babcc79eec8c809b4e5b02e6bb49",
     "020e9c8713e641549737b5077d847aee1edb622477043e082c72688e9df28fba6d"},
    {"abc", 0, "0226cb34d4fb1e9889dcceb2d4839063be2f985afb5f6c9b8596948b36cc815faf",
     "0230544b677b00270120384ff8ae877be01d9491be31674a96c404933a13a37a98"},
    {"Element 0", 0, "02c0d3abacde5b0a85a5b786c4f7d0632a2a7c4c5b872fcae8bb234bf70be2de96",
     "0321218f533c29eafa7e0112c6e9e6eebf4eaf20dab3ddd7e9a19b85e9d1e9b08c"},
    {"x", 200, "031bb3a58b9f7b7c664a42f6bf31bb4ab6870092b181e44962a94703c28c02214e",
     "023cfff7162dc93003fcf7b76602e8a0320abd46236ba382054e86e470cb9a2cda"},
};

static void test_sswu_kat(void **state)
{
    (void)state;
    uint8_t one = 1, seven[32] = {[31] = 7}, xs[200];
    memset(xs, 'x', sizeof xs);
    psi_engine *e1 = engine(PSI_SUITE_P256_SSWU, &one, 1);
    psi_engine *e7 = engine(PSI_SUITE_P256_SSWU, seven, sizeof seven);
    psi_engine *om = engine(PSI_SUITE_OPENMINED_P256, &one, 1);
    for (size_t i = 0; i < sizeof sswu_kat / sizeof sswu_kat[0]; i++) {
        psi_value v = {sswu_kat[i].repeat ? xs : (const uint8_t *)sswu_kat[i].m,
                       sswu_kat[i].repeat ? sswu_kat[i].repeat : strlen(sswu_kat[i].m)};
        uint8_t got[EB], om_got[EB];
        size_t len = sizeof got;
        CHECK_RC(psi_engine_mask(e1, got, &len, &v, 1), PSI_OK);
        expect_hex(got, EB, sswu_kat[i].h, "H(m), key 1");
        len = sizeof got;
        CHECK_RC(psi_engine_mask(e7, got, &len, &v, 1), PSI_OK);
        expect_hex(got, EB, sswu_kat[i].h7, "7 * H(m)");
        len = sizeof om_got;
        CHECK_RC(psi_engine_mask(om, om_got, &len, &v, 1), PSI_OK);
        CHECK(memcmp(om_got, got, EB) != 0); /* a different hash from OpenMined's */
    }
    psi_engine_free(e1);
    psi_engine_free(e7);
    psi_engine_free(om);
}

/* mask(key k) = remask(key k, mask(key 1)) = remask(k1, mask(k2))... for
 * random keys and values, in both P-256 suites; unmask undoes it. */
static void test_sswu_mask_is_k_times_h(void **state)
{
    (void)state;
    uint64_t rng = tu_seed("test_suites_kat sswu");
    uint8_t one = 1;
    char text[16][24];
    psi_value v[16];
    for (int i = 0; i < 16; i++) {
        snprintf(text[i], sizeof text[i], "v%llu", (unsigned long long)(tu_rand(&rng) % 1000));
        v[i] = (psi_value){(const uint8_t *)text[i], i == 0 ? 0 : strlen(text[i])};
    }
    for (int suite = 0; suite < 2; suite++) {
        psi_engine *e1 = engine(suite, &one, 1);
        uint8_t h[16 * EB], got[16 * EB], want[16 * EB], back[16 * EB], key[32];
        size_t len = sizeof h;
        CHECK_RC(psi_engine_mask(e1, h, &len, v, 16), PSI_OK);
        for (int round = 0; round < 4; round++) {
            for (size_t i = 0; i < 32; i++)
                key[i] = (uint8_t)tu_rand(&rng);
            key[0] &= 0x7f;
            key[31] |= 1;
            psi_engine *e = engine(suite, key, sizeof key);
            len = sizeof got;
            CHECK_RC(psi_engine_mask(e, got, &len, v, 16), PSI_OK);
            len = sizeof want;
            CHECK_RC(psi_engine_remask(e, want, &len, h, 16), PSI_OK);
            CHECK(memcmp(got, want, sizeof got) == 0);
            len = sizeof back;
            CHECK_RC(psi_engine_unmask(e, back, &len, got, 16), PSI_OK);
            CHECK(memcmp(back, h, sizeof h) == 0);
            psi_engine_free(e);
        }
        psi_engine_free(e1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_r255_invalid_encodings),
        cmocka_unit_test(test_r255_generator_multiples),
        cmocka_unit_test(test_r255_element_derivation),
        cmocka_unit_test(test_r255_mask_definition),
        cmocka_unit_test(test_sswu_kat),
        cmocka_unit_test(test_sswu_mask_is_k_times_h),
    };
    if (sodium_init() < 0)
        return 1;
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    printf("# test_suites_kat: %lu checks\n", n_checks);
    return rc;
}
