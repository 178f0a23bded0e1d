/* test_suites, keys per suite: the ranges each suite accepts and refuses,
 * and the bytes it exports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "psi.h"
#include "psi_shard.h"
#include "test_shard_common.h"
#include "test_util.h"
#include "suites_common.h"

/* ------------------------------------------------------------- keys */

static int key_rc(int suite, const uint8_t *key, size_t len)
{
    psi_settings s = settings_of(suite, PSI_ROLE_SERVER, 1);
    psi_engine *e = NULL;
    int rc = psi_engine_create_from_key(&e, &s, key, len);
    CHECK((rc == PSI_OK) == (e != NULL));
    psi_engine_free(e);
    return rc;
}

/* The engine's exported key equals want (32 bytes). */
static void expect_export(int suite, const uint8_t *key, size_t len, const uint8_t *want)
{
    psi_engine *e = engine(suite, PSI_ROLE_CLIENT, 1, key, len);
    uint8_t out[PSI_KEY_BYTES + 1];
    size_t out_len = sizeof out;
    CHECK_RC(psi_engine_export_key(e, out, &out_len), PSI_OK);
    CHECK_RC(out_len, PSI_KEY_BYTES);
    CHECK(memcmp(out, want, PSI_KEY_BYTES) == 0);
    psi_engine_free(e);
}

void test_suites_keys(void **state)
{
    (void)state;
    /* l, little-endian */
    static const uint8_t l[32] = {0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7,
                                  0xa2, 0xde, 0xf9, 0xde, 0x14, [31] = 0x10};
    /* n, big-endian */
    static const uint8_t n[32] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad,
                                  0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc,
                                  0x63, 0x25, 0x51};
    uint8_t k[34], le1[32] = {1}, be1[32] = {[31] = 1};
    memset(k, 0, sizeof k);
    /* ristretto255: exactly 32 little-endian bytes, 1 <= k < l. */
    CHECK_RC(key_rc(R255, k, 32), PSI_E_KEY_OUT_OF_RANGE); /* 0 */
    CHECK_RC(key_rc(R255, l, 32), PSI_E_KEY_OUT_OF_RANGE);
    memcpy(k, l, 32);
    k[0]++;
    CHECK_RC(key_rc(R255, k, 32), PSI_E_KEY_OUT_OF_RANGE); /* l + 1 */
    k[0] -= 2;
    CHECK_RC(key_rc(R255, k, 32), PSI_OK); /* l - 1 */
    expect_export(R255, k, 32, k);
    memset(k, 0xff, 32);
    k[31] = 0x7f;
    CHECK_RC(key_rc(R255, k, 32), PSI_E_KEY_OUT_OF_RANGE); /* 2^255 - 1 */
    k[31] = 0xff;
    CHECK_RC(key_rc(R255, k, 32), PSI_E_KEY_OUT_OF_RANGE); /* 2^256 - 1 */
    CHECK_RC(key_rc(R255, le1, 32), PSI_OK);
    CHECK_RC(key_rc(R255, le1, 31), PSI_E_KEY_OUT_OF_RANGE);
    memset(k, 0, sizeof k);
    k[0] = 1;
    CHECK_RC(key_rc(R255, k, 33), PSI_E_KEY_OUT_OF_RANGE);
    CHECK_RC(key_rc(R255, k, 0), PSI_E_KEY_OUT_OF_RANGE);
    CHECK_RC(key_rc(R255, be1, 32), PSI_OK); /* 2^248, little-endian */
    expect_export(R255, le1, 32, le1);
    expect_export(R255, be1, 32, be1); /* not reversed */
    /* P-256 suites: OpenMined's rule, any length, big-endian, 1 <= k < n. */
    for (int suite = 0; suite < 2; suite++) {
        memset(k, 0, sizeof k);
        CHECK_RC(key_rc(suite, k, 32), PSI_E_KEY_OUT_OF_RANGE);
        CHECK_RC(key_rc(suite, k, 0), PSI_E_KEY_OUT_OF_RANGE);
        CHECK_RC(key_rc(suite, n, 32), PSI_E_KEY_OUT_OF_RANGE);
        memcpy(k + 2, n, 32);
        CHECK_RC(key_rc(suite, k, 34), PSI_E_KEY_OUT_OF_RANGE); /* 00 00 || n */
        k[33]--;
        CHECK_RC(key_rc(suite, k, 34), PSI_OK); /* 00 00 || n - 1 */
        expect_export(suite, k, 34, k + 2);
        k[1] = 1;
        CHECK_RC(key_rc(suite, k, 34), PSI_E_KEY_OUT_OF_RANGE); /* never reduced */
        uint8_t one = 1;
        CHECK_RC(key_rc(suite, &one, 1), PSI_OK);
        expect_export(suite, &one, 1, be1);
        CHECK_RC(key_rc(suite, le1, 32), PSI_OK); /* 2^248 */
    }
    /* Random keys: export and re-import give the same masks. */
    static const psi_value v = {(const uint8_t *)"key", 3};
    for (int suite = 0; suite < N_SUITES; suite++)
        for (int i = 0; i < 8; i++) {
            psi_engine *e = engine(suite, PSI_ROLE_CLIENT, 1, NULL, 0);
            uint8_t key[PSI_KEY_BYTES], m1[PSI_ELEMENT_BYTES], m2[PSI_ELEMENT_BYTES];
            size_t len = sizeof key;
            CHECK_RC(psi_engine_export_key(e, key, &len), PSI_OK);
            psi_engine *f = engine(suite, PSI_ROLE_SERVER, 1, key, len);
            len = sizeof m1;
            CHECK_RC(psi_engine_mask(e, m1, &len, &v, 1), PSI_OK);
            len = sizeof m2;
            CHECK_RC(psi_engine_mask(f, m2, &len, &v, 1), PSI_OK);
            CHECK(memcmp(m1, m2, sizeof m1) == 0);
            CHECK_RC(psi_point_check(suite, m1, psi_suite_element_bytes(suite)), PSI_OK);
            psi_engine_free(e);
            psi_engine_free(f);
        }
}
