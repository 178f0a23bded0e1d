/* See codec_common.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "setup.h"
#include "wire.h"
#include "codec_common.h"

/* ------------------------------------------------------------ vectors */

/* §11 small example (vectors/reference/openmined-psi-vectors.json,
 * small_example): request with reveal on, response with reveal off
 * (sorted), raw setup. */
const char SMALL_REQUEST[] =
    "0801122102df6bda232f6c5ecc7bfec2ada5049777a41c4547b29fa57e7c2294e80bcecadb1221024f67bdba"
    "5ec73447834e58a52f8553b36939229ba465a0334b4cd85e1aae2b801221028efbd69d77a25d6a31e770682e"
    "13fd6605a658e0b2b66872c7d5030e4f9e64ed1221026ed7d63886233c749601ca8a2befdb98c214190971d5"
    "fd6d2126e73d6c8d35bd12210331d9bed2786360d1a1471a4330bf7c23b7430e3578fc08129fc446ff1f050f"
    "28122102a6ebe0496fbdbd62848953f00354a172454c0eb5462af8a6251014ec8e77e612";
const char SMALL_RESPONSE[] =
    "0a21022e61de37aa22e0b9b511e807cb0876d4cfdd5afbeaf83722bc7d4c431552a4210a210291ed12ea6df7"
    "745022827227e4ba37b69b8771e6101aad70d34b39aa8ab1f6110a21030693978266f44295fa74474af50cdb"
    "ce5ccda956557e97ce6c786335bdd3f2340a2103a44534d81288cf175fbb5b498c25d852d316fbafe3892e95"
    "06bf26e70167cb9e0a2103ab7379cdf30e31ec452a06b8dbf1d1582b5d756394d6ed2887c0d1313bc91c390a"
    "2103d94c3fc3c3d56ad9a18394b0e8762b787c8d7d25c2ddb7022c8d9ae9ee46f316";
const char SMALL_SETUP_RAW[] =
    "0aaf010a21027eaa6b53db9ef3fd938c48d793dd71f1595b8846bf0bf74422ff4343995204240a210291eea6"
    "06f9bc39fd97bfcbc8094ca93e34b148b6d790c4eed93971b78da76d550a21034b17d7bdd613fa9df56c58d0"
    "c77ca255d4f140efb95e07247c97aa9cd6fea0dd0a2103662671bdc627e05271c21260a6087ca388c45e9c6f"
    "829451b09776349ebf00ec0a2103bbbd96e7755417f1088f686d397a6ce4a679ab8c737940f70229b69fbccf"
    "dfa7";
const char SMALL_SETUP_GCS[] = "120e0809108f1c1a07958b4233a5bb09";
const char SMALL_SETUP_BLOOM[] = "1a0e080a120a785a48495c584c4ae9c8";

/* tests/data/openmined-psi-js (protocol[1]: request with reveal off;
 * setups for fpr 1e-6 and 6 client inputs). */
const char JS_REQUEST[] =
    "1221020e7a6bf4333a29ede6a10cc2a027618f59eefe9c67a17cce6dedd4c1bef85255122103dbb0216772e9"
    "788def4722961f6742f093a3ecdfdaab4468641f7937e942422d1221022a0d84d23ad52fd92b859c85cd3bf4"
    "9167243c92ecdedb80b390bfed487b184f12210231140a94d535f224dd6b8020b2a0d18d062788cbdc6fa3e4"
    "6ecca8ebcce62a3912210251839af973023a293fd6b8306f0f733482b7ed04187248e6adcffaeaa1e4208b12"
    "2102d1f1f3680785896f3dfb6857c6c3908620fde1ad0ad1054dcc18531e2d03fbbc";
const char JS_SETUP_RAW[] =
    "0aaf010a210200103796719d5e0335045e07754c52cff1c2f7e6838ae6b6ab4b002f94a8615d0a21028baab2"
    "975033caa382dc7563df05b96a4bd95cba2f97b6e015bda76c26d6d9de0a210296512388b080f07cde02b0ea"
    "7915236282968ee50f85231f6d1983e7670fc5c60a2102b3885587a8c82b6b259026660a5a6150e893cc7f39"
    "9496dd9ee5b2c7c18cdfa50a2102c5026a4411f9913b40643ca0a9cd50fd4b7be4aca72108cfe159ccdca7e3"
    "bd1c";
const char JS_SETUP_GCS[] = "121808161080a295111a0f263bcde5f46a8ec80a0ca9eca2c99c";
const char JS_SETUP_BLOOM[] =
    "1a1d081712190d1d02beaabfeabb3a1b863989d3c011700578057391146158";

/* reference edge_setups: server element 'a' alone, twice, or none. */
const char EDGE_RAW_A[] =
    "0a230a2102f66d464ac22143b0eea2d8526d64613d3f2419a20d9ea3a771504c54f94e31a7";
const char EDGE_BLOOM_EMPTY[] = "1a16080a1212000000000000000000000000000000000000";

/* ------------------------------------------------------------ helpers */

/* Decodes hex (spaces ignored) into a buffer of exactly the decoded size,
 * so ASan catches any read past the end of a message. */
uint8_t *hex_alloc(const char *hex, size_t *len)
{
    size_t digits = 0, n = 0;
    for (const char *c = hex; *c != '\0'; c++)
        digits += *c != ' ';
    assert_int_equal(digits % 2, 0);
    uint8_t *out = malloc(digits == 0 ? 1 : digits / 2);
    assert_non_null(out);
    for (const char *c = hex; *c != '\0'; c += (*c == ' ') ? 1 : 2) {
        unsigned byte;
        if (*c == ' ')
            continue;
        assert_int_equal(sscanf(c, "%2x", &byte), 1);
        out[n++] = (uint8_t)byte;
    }
    *len = n;
    return out;
}

void assert_hex_equal(const uint8_t *got, size_t got_len, const char *hex)
{
    size_t len;
    uint8_t *want = hex_alloc(hex, &len);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, want, len);
    free(want);
}

uint64_t rng_state;

uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

void rng_fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rng_next();
}

uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return (v != NULL && *v != '\0') ? strtoull(v, NULL, 0) : dflt;
}

int cmp_element(const void *a, const void *b)
{
    return memcmp(a, b, EB);
}

/* Parses a setup and returns its raw elements (a copy the caller frees). */
uint8_t *raw_elements(const char *hex, size_t *n)
{
    size_t len;
    uint8_t *msg = hex_alloc(hex, &len);
    psi_setup *s;
    assert_int_equal(psi_setup_parse(&s, PSI_SUITE_OPENMINED_P256, msg, len), PSI_OK);
    *n = psi_setup_raw_count(s);
    uint8_t *el = malloc(*n * EB + 1);
    assert_non_null(el);
    memcpy(el, s->raw, *n * EB);
    psi_setup_free(s);
    free(msg);
    return el;
}

psi_setup *parse_hex(const char *hex, int expect)
{
    size_t len;
    uint8_t *msg = hex_alloc(hex, &len);
    psi_setup *s = (psi_setup *)&s;
    assert_int_equal(psi_setup_parse(&s, PSI_SUITE_OPENMINED_P256, msg, len), expect);
    if (expect != PSI_OK)
        assert_null(s);
    free(msg);
    return s;
}
