/* psi/p256_sswu.c against RFC 9380: every expand_message_xmd vector of
 * the SHA-256 files (the 256-byte DST one through the §5.3.3 oversize
 * rule), every P256_XMD:SHA-256_SSWU_RO_ and _NU_ vector (u values and
 * P), the DST and length limits, and random messages: each output on the
 * curve, the same twice.  The vectors are read at run time from
 * PSI_TESTDATA/hash-to-curve (see its README.md for the format).  Random
 * cases print their seed (PSI_TEST_SEED replays); PSI_TEST_ITERS sets
 * their number (default 200). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "p256.h"
#include "test_util.h"

#define H2C_DIR PSI_TESTDATA "/hash-to-curve/"

/* The p256-sswu suite's tag (psi/h2c.c). */
static const char PROJECT_DST[] = "shardpsi-v1-p256-sswu-P256_XMD:SHA-256_SSWU_RO_";

static uint64_t rng;

static const char *json_str(const cJSON *obj, const char *key)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    assert_true(cJSON_IsString(item));
    return item->valuestring;
}

/* A 0x-prefixed big-endian field element, left-padded to 32 bytes. */
static void unhex_0x(uint8_t out[32], const char *hex)
{
    size_t len;
    assert_true(hex[0] == '0' && hex[1] == 'x');
    uint8_t *b = tu_unhex(hex + 2, &len);
    assert_true(len <= 32);
    memset(out, 0, 32);
    memcpy(out + 32 - len, b, len);
    free(b);
}

/* Non-zero when (x, y) is an affine point of the curve. */
static int on_curve(const uint8_t x[32], const uint8_t y[32])
{
    uint8_t y2[32];
    return psi_p256_decompress(y2, x, y[31] & 1) && memcmp(y2, y, 32) == 0;
}

/* One expand_message_xmd file; returns the number of vectors checked. */
static int check_xmd_file(const char *path)
{
    cJSON *doc = tu_load_json(path);
    const char *dst = json_str(doc, "DST");
    size_t dst_len = strlen(dst);
    uint8_t dst_hash[crypto_hash_sha256_BYTES], out[256];
    const uint8_t *use_dst = (const uint8_t *)dst;
    if (dst_len > 255) {
        /* §5.3.3: the function refuses it; the caller hashes it down. */
        assert_int_equal(psi_p256_expand_xmd(out, 32, NULL, 0, use_dst, dst_len), 0);
        static const char prefix[] = "H2C-OVERSIZE-DST-";
        crypto_hash_sha256_state st;
        crypto_hash_sha256_init(&st);
        crypto_hash_sha256_update(&st, (const uint8_t *)prefix, sizeof prefix - 1);
        crypto_hash_sha256_update(&st, use_dst, dst_len);
        crypto_hash_sha256_final(&st, dst_hash);
        use_dst = dst_hash;
        dst_len = sizeof dst_hash;
    }
    int n = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(doc, "tests")) {
        const char *msg = json_str(v, "msg");
        size_t out_len = strtoul(json_str(v, "len_in_bytes"), NULL, 16), want_len, dp_len;
        uint8_t *want = tu_unhex(json_str(v, "uniform_bytes"), &want_len);
        uint8_t *dst_prime = tu_unhex(json_str(v, "DST_prime"), &dp_len);
        /* DST_prime = DST || I2OSP(len(DST), 1): the tag used is the file's. */
        assert_int_equal(dp_len, dst_len + 1);
        assert_memory_equal(dst_prime, use_dst, dst_len);
        assert_int_equal(dst_prime[dst_len], dst_len);
        assert_int_equal(want_len, out_len);
        assert_true(out_len <= sizeof out);
        memset(out, 0xaa, sizeof out);
        assert_int_equal(psi_p256_expand_xmd(out, out_len, (const uint8_t *)msg, strlen(msg),
                                             use_dst, dst_len), 1);
        assert_memory_equal(out, want, out_len);
        if (out_len < sizeof out)
            assert_int_equal(out[out_len], 0xaa); /* nothing past out_len */
        free(want);
        free(dst_prime);
        n++;
    }
    cJSON_Delete(doc);
    return n;
}

static void test_sswu_expand_vectors(void **state)
{
    (void)state;
    int n38 = check_xmd_file(H2C_DIR "expand_message_xmd_SHA256_38.json");
    int n256 = check_xmd_file(H2C_DIR "expand_message_xmd_SHA256_256.json");
    printf("expand_message_xmd: %d + %d vectors\n", n38, n256);
    assert_int_equal(n38, 10);
    assert_int_equal(n256, 10);
}

/* One suite file: u (hash_to_field from expand_message_xmd and
 * psi_p256_reduce_wide) and P (the function under test) for every
 * vector; returns the number of vectors. */
static int check_suite_file(const char *path, int ro)
{
    cJSON *doc = tu_load_json(path);
    const char *dst = json_str(doc, "dst");
    int count = ro ? 2 : 1, n = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(doc, "vectors")) {
        const uint8_t *msg = (const uint8_t *)json_str(v, "msg");
        size_t msg_len = strlen((const char *)msg);
        const uint8_t *d = (const uint8_t *)dst;
        uint8_t uniform[96], wide[64] = {0}, u[32], want[32], x[32], y[32];
        assert_int_equal(psi_p256_expand_xmd(uniform, 48 * (size_t)count, msg, msg_len, d,
                                             strlen(dst)), 1);
        const cJSON *us = cJSON_GetObjectItemCaseSensitive(v, "u");
        assert_int_equal(cJSON_GetArraySize(us), count);
        for (int i = 0; i < count; i++) {
            memcpy(wide + 16, uniform + 48 * i, 48);
            psi_p256_reduce_wide(u, wide);
            unhex_0x(want, cJSON_GetArrayItem(us, i)->valuestring);
            assert_memory_equal(u, want, 32);
        }
        int ok = ro ? psi_p256_sswu_hash(x, y, msg, msg_len, d, strlen(dst))
                    : psi_p256_sswu_encode(x, y, msg, msg_len, d, strlen(dst));
        assert_int_equal(ok, 1);
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(v, "P");
        unhex_0x(want, json_str(p, "x"));
        assert_memory_equal(x, want, 32);
        unhex_0x(want, json_str(p, "y"));
        assert_memory_equal(y, want, 32);
        n++;
    }
    cJSON_Delete(doc);
    return n;
}

static void test_sswu_hash_vectors(void **state)
{
    (void)state;
    int n = check_suite_file(H2C_DIR "P256_XMD_SHA-256_SSWU_RO_.json", 1);
    printf("P256_XMD:SHA-256_SSWU_RO_: %d vectors\n", n);
    assert_int_equal(n, 5);
}

static void test_sswu_encode_vectors(void **state)
{
    (void)state;
    int n = check_suite_file(H2C_DIR "P256_XMD_SHA-256_SSWU_NU_.json", 0);
    printf("P256_XMD:SHA-256_SSWU_NU_: %d vectors\n", n);
    assert_int_equal(n, 5);
}

/* Out-of-range lengths are refused with the outputs zeroed. */
static void test_sswu_rejects_bad_lengths(void **state)
{
    (void)state;
    static uint8_t big[PSI_P256_XMD_MAX_BYTES + 1];
    const uint8_t dst[256] = {'D'}, zeros[32] = {0};
    uint8_t x[32], y[32];
    memset(big, 0xaa, sizeof big);
    assert_int_equal(psi_p256_expand_xmd(big, sizeof big, NULL, 0, dst, 1), 0);
    for (size_t i = 0; i < sizeof big; i++)
        assert_int_equal(big[i], 0);
    assert_int_equal(psi_p256_expand_xmd(big, PSI_P256_XMD_MAX_BYTES, NULL, 0, dst, 1), 1);
    assert_int_equal(psi_p256_expand_xmd(big, 32, NULL, 0, dst, 0), 0);
    assert_int_equal(psi_p256_expand_xmd(big, 32, NULL, 0, dst, 256), 0);
    assert_int_equal(psi_p256_expand_xmd(big, 32, NULL, 0, dst, 255), 1);
    assert_int_equal(psi_p256_expand_xmd(NULL, 0, NULL, 0, dst, 1), 1);
    for (int ro = 0; ro < 2; ro++) {
        for (size_t dst_len = 0; dst_len <= 256; dst_len += 256) {
            memset(x, 0xaa, sizeof x);
            memset(y, 0xaa, sizeof y);
            int ok = ro ? psi_p256_sswu_hash(x, y, (const uint8_t *)"m", 1, dst, dst_len)
                        : psi_p256_sswu_encode(x, y, (const uint8_t *)"m", 1, dst, dst_len);
            assert_int_equal(ok, 0);
            assert_memory_equal(x, zeros, 32);
            assert_memory_equal(y, zeros, 32);
        }
    }
}

/* The project's tag and the empty message (NULL or not) give one point
 * of the curve. */
static void test_sswu_project_dst(void **state)
{
    (void)state;
    const uint8_t *dst = (const uint8_t *)PROJECT_DST, empty[1] = {0};
    uint8_t x[32], y[32], x2[32], y2[32];
    assert_int_equal(psi_p256_sswu_hash(x, y, NULL, 0, dst, sizeof PROJECT_DST - 1), 1);
    assert_true(on_curve(x, y));
    assert_int_equal(psi_p256_sswu_hash(x2, y2, empty, 0, dst, sizeof PROJECT_DST - 1), 1);
    assert_memory_equal(x, x2, 32);
    assert_memory_equal(y, y2, 32);
    char *hx = tu_hex(x, 32), *hy = tu_hex(y, 32);
    printf("project DST, empty message: x %s y %s\n", hx, hy);
    free(hx);
    free(hy);
}

static unsigned long iters(void)
{
    const char *env = getenv("PSI_TEST_ITERS");
    return env != NULL ? strtoul(env, NULL, 10) : 200;
}

/* Random messages of 0 to 299 bytes: RO and NU outputs on the curve, RO
 * the same when computed twice and different from NU. */
static void test_sswu_random_on_curve(void **state)
{
    (void)state;
    const uint8_t *dst = (const uint8_t *)PROJECT_DST;
    size_t dst_len = sizeof PROJECT_DST - 1;
    unsigned long n = iters();
    for (unsigned long i = 0; i < n; i++) {
        uint8_t msg[300], x[32], y[32], x2[32], y2[32];
        size_t len = (size_t)(tu_rand(&rng) % sizeof msg);
        for (size_t j = 0; j < len; j++)
            msg[j] = (uint8_t)(tu_rand(&rng) >> 56);
        assert_int_equal(psi_p256_sswu_hash(x, y, msg, len, dst, dst_len), 1);
        assert_true(on_curve(x, y));
        assert_int_equal(psi_p256_sswu_hash(x2, y2, msg, len, dst, dst_len), 1);
        assert_memory_equal(x, x2, 32);
        assert_memory_equal(y, y2, 32);
        assert_int_equal(psi_p256_sswu_encode(x2, y2, msg, len, dst, dst_len), 1);
        assert_true(on_curve(x2, y2));
        assert_memory_not_equal(x, x2, 32);
    }
}

static int setup(void **state)
{
    (void)state;
    rng = tu_seed("sswu");
    if (rng == 0)
        rng = 1; /* xorshift needs a non-zero state */
    return sodium_init() < 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sswu_expand_vectors),
        cmocka_unit_test(test_sswu_hash_vectors),
        cmocka_unit_test(test_sswu_encode_vectors),
        cmocka_unit_test(test_sswu_rejects_bad_lengths),
        cmocka_unit_test(test_sswu_project_dst),
        cmocka_unit_test(test_sswu_random_on_curve),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
