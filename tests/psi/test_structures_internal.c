/* Unit tests of the GCS and Bloom filter structures (PROTOCOL.md §7.2,
 * §7.3, §9.2-§9.4): known answers from OpenMined PSI 2.0.6 / psi.js, every
 * parameter edge, stream validation and the size bound.  Random parts print
 * their seed; set PSI_TEST_SEED to replay and PSI_TEST_ITERS to scale. */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "bloom.h"
#include "cxx_sort.h"
#include "gcs.h"

/* ------------------------------------------------------------ vectors */

/* The five server elements of §11, masked with the server key, in byte
 * order (the raw setup's list). */
static const char SERVER5_HEX[] =
    "027eaa6b53db9ef3fd938c48d793dd71f1595b8846bf0bf74422ff434399520424"
    "0291eea606f9bc39fd97bfcbc8094ca93e34b148b6d790c4eed93971b78da76d55"
    "034b17d7bdd613fa9df56c58d0c77ca255d4f140efb95e07247c97aa9cd6fea0dd"
    "03662671bdc627e05271c21260a6087ca388c45e9c6f829451b09776349ebf00ec"
    "03bbbd96e7755417f1088f686d397a6ce4a679ab8c737940f70229b69fbccfdfa7";
/* Indices in SERVER5_HEX of the masked "zzz", "abc", "Element 0",
 * "Element 4", "Element 2". */
enum { S5_ZZZ, S5_ABC, S5_E0, S5_E4, S5_E2 };

/* The server key applied to "a" (edge_setups in the vectors file). */
static const char ELEM_A_HEX[] =
    "02f66d464ac22143b0eea2d8526d64613d3f2419a20d9ea3a771504c54f94e31a7";

/* end_to_end_20x50: the 50 masked server elements (fpr 0.01, nc 20). */
static const char SERVER50_HEX[] =
    "020295da2c3b5ad512dc73910a863fa0dddac330cdc51490c90fbf18685e9c55"
    "800213b20848e8471103f8ef5ef8f42b55065966f8bed8d07e95d9d96a24128d"
    "179602181744c855fceec1c07c209674ea7ed660634acb2598133240a26b2a80"
    "72f5fb0220cf51740d5709a99079188d2152cae2d5917e683b269e1731627c41"
    "4968ae4d0229e4eca40b7820d23fdb67371dc44475992dd13444db1024269704"
    "52270a0f9a0232f0c8bfe6b3eaa9fabd07d4264f159cbd326f7e71f45c80f095"
    "42b03e225ea5025a697d8b93fd23eb950143876fa1499f28b9d9f7cff82dc410"
    "817d753b86b3e402611d941be4862c350239b47d67abfb78226cd494b52572b4"
    "1c1f549e16af4875026e0f8b52588439fa842f8bcc7a91f86a129f94be11fed0"
    "246bd25a4ceaf31eae0273237234b8f2ba16d0c2324e13ee5b0d1f9e878f4825"
    "67001b0fd69bd05cfe4202770d248048c249f5ea4b490f4b5459d0dca3c044b8"
    "0e1f5bd4cc448067842289027fae201f751f5abba2066564b9f6462b5fd71314"
    "11e0232095997b26fce4ee0e02a579854ce5b73549ec3a66b08aa698686f4901"
    "ee998945603247bf707f70cc3202ad6cc2bc356624398a0320e87557b96eb757"
    "4515805c889f7db300a2c141b0c302b023215a42cc02e45080e224d050eb485a"
    "f3932a2b3df01cd4968622d9f00ae902b1d06f740f51c4ade3efbe512d4ae10c"
    "f0366871609b5a2e325873c94d59033902b1ff232ade7d6b51405ec2d98499fd"
    "5e0adf6ea1764866eb5db58c7c855c6e7a02b4da0de9fd7da79c23bac3731737"
    "94d5ede7ecbf38a0462a27f1af8113f1e40602be44609f2bb186f4ef9cd7214a"
    "c82958eb2d4a6bbe0e4ecf00d4add0f5a97bd902ca6195b24292486d061e5323"
    "2bcd7ddb4695b698e9aeacdc948b1cb5d593d0a102cc556e0a41d669c3a6563e"
    "0afd0ab787d15fd4cc78a8223c6245c25e08e408a902d2c59161b76ba9bfb8fe"
    "caf8347069551a1b7bc74e5786697280bc333766453202d65fff394504d44539"
    "469c5ca61ec8e1c32e6feee48cf9b984a9c047a17b3eac02e82675b35f930688"
    "c6e24e95238e98582e0ca083a3e02b51a48ef4f8077acc3502e9b7794422e576"
    "cb2615b5965644264b5a00b86818031ee5772bd4446414a8e502ecafaef151c7"
    "d4a20547e4e3e63eb1734954ad2791df29af2211320f77c1748a02ee2f2d9e32"
    "c30521ac7aa23040d0e8c818d42063f7653ff3bcaaba9ff108e27302fa02ab0a"
    "2c262664e7a5b30fcc338e80764787f4dd17f32f82a31b15c00282a602fce310"
    "8122d19c1a230f13360a0fc304955184060418538c14c7eeab1f4f63e802fe63"
    "6a7b2064f3d47665b308f823c5890ecd50d3b55d9fa460d457dcab08e59d030f"
    "841a0dd938cce9034701352b841c2481f10294e55403769651ab29ff9bfc9303"
    "3221c968260e73c10e51e8b2412649ea38a070c030b182f24cf3530b7b25d662"
    "0338c618d1880445a17a3e30dc8ed26fcdb1fdbf633d1ff2f9816b240539d58c"
    "d40341401ad53d038e01e53fe41b90ef330dbe29cb1848b2c73f683972b89c68"
    "1cd80342764dcbed5dcf36f5589f1b877f3e9954a8b770fd4fd52f6cb18d0f48"
    "5d6fee034936c7ee76d78835273dcf0deb544aa72a10bc732ae57210c2b22ccc"
    "045fa936034b17d7bdd613fa9df56c58d0c77ca255d4f140efb95e07247c97aa"
    "9cd6fea0dd0355d0b6fa615881d99cc887467299d6cb39940753513190ae8716"
    "f3ae5c36505603662671bdc627e05271c21260a6087ca388c45e9c6f829451b0"
    "9776349ebf00ec036a4242087d6fb8435ca3b5452983ef0feee4c6dfe4d61703"
    "b5f572b73f699cd90385e5b9acc0e4b70c9433872d137abcecc0132f8933a20b"
    "783b56cadb355b81e9038e18cc103328d086898beb5747d4d0c116925c414d37"
    "307353eca02bf4cbb22e039039451ef10f4f5c2b3efaa9bc7a7033008df2c0c5"
    "ba0f87447eaff3a7b24d55039940cd07b08d09482dbe4195e1eadaba5edaf1b3"
    "401aafb771e80f45415027fc03a9c5076268b745b73d0faed6ab3c7f726bac3f"
    "04ad851fd352c24e841cec786303b0c3635a4102c04591c062c6cd7c1c4d10ac"
    "a4792c4d606758acc77fffbd4d6303b57dfad965b6aabfffe48826f34fb830e8"
    "e0ec47d99ae66fa10dcc438f1a53d303bbbd96e7755417f1088f686d397a6ce4"
    "a679ab8c737940f70229b69fbccfdfa703c5b382cba92415b527afa367170d7d"
    "9528c8888ca5712d36d054712f32e94fba03ea0d8054e6906e2be2e858c0c05d"
    "fd5635660a69c8acdff9c84f2b78011bca86";

/* Its GCS stream (div 10, hash_range 100000). */
static const char GCS50_HEX[] =
    "be50d8afb912200dfed30a4831c918a0c1ccc50b0dc948ce03701d1e841c3a8a"
    "f3a938493837d20961c3be83d4be96b8d8fb42082afb02bc0b8b428ca27083da"
    "c799181e0493c90c520452aa408205";

/* Its Bloom filter (k 11, 99 bytes). */
static const char BLOOM50_HEX[] =
    "4ec59e756c3c0e97de25611554fec32f91362ae2310c4e735ccf754cf9ae59eb"
    "8815dca0397fd5452ad549ed302807cbfc04457c3c6075188c9064babe4476a5"
    "89736c3ddeee86e54b30020f57684defb679abcc109a857e7831b2cd56bf554d"
    "ef327a";

/* OpenMined's bloom_filter_test.cpp: "Element 0".."Element 99" inserted
 * raw, fpr 0.01, capacity 100; base64 VN3/BXfU...naCE. */
static const char BLOOM_OM_HEX[] =
    "54ddff0577d48c40ef24b7310937a95024d7190c254dac74c4788ca2108d6f8e"
    "6e4a116cce72b4f7d447d0215520c9fdd4175cee32e45c75eb5e9d4d8a699948"
    "3ad84a3e6c77fe74d27ae834e7576ed779deef1c7a33cc1b16f1ee4475135cf2"
    "3b5f664a460b5eae317fb6aee5d14dd2a871a9f2e78da084";

/* ------------------------------------------------------------ helpers */

static uint64_t rng_state;
static unsigned long test_iters = 100;

/* splitmix64: small, seedable, good enough to pick test cases. */
static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint64_t rng_below(uint64_t bound)
{
    return bound == 0 ? 0 : rng_next() % bound;
}

static void rng_bytes(uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)rng_next();
}

static int group_setup(void **state)
{
    (void)state;
    const char *s = getenv("PSI_TEST_SEED");
    uint64_t seed = s != NULL ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
    const char *it = getenv("PSI_TEST_ITERS");
    if (it != NULL)
        test_iters = strtoul(it, NULL, 0);
    printf("test_structures: PSI_TEST_SEED=%" PRIu64 " PSI_TEST_ITERS=%lu\n", seed,
           test_iters);
    rng_state = seed;
    return 0;
}

/* Decodes hex into a fresh malloc'ed buffer; *len gets its size. */
static uint8_t *unhex(const char *hex, size_t *len)
{
    size_t n = strlen(hex) / 2;
    uint8_t *out = malloc(n + 1);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    *len = n;
    return out;
}

/* Elements from hex: *n gets the element count. */
static uint8_t *unhex_elements(const char *hex, size_t *n)
{
    size_t len;
    uint8_t *e = unhex(hex, &len);
    assert_int_equal(len % PSI_ELEMENT_BYTES, 0);
    *n = len / PSI_ELEMENT_BYTES;
    return e;
}

static void assert_bytes_hex(const uint8_t *got, size_t got_len, const char *hex)
{
    size_t len;
    uint8_t *want = unhex(hex, &len);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, want, len);
    free(want);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts v and drops repeats; returns the new count. */
static size_t sort_unique(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || v[i] != v[m - 1])
            v[m++] = v[i];
    return m;
}

/* Builds a GCS for elements with a bound-sized buffer; checks the bound. */
static uint8_t *gcs_build_checked(int32_t *div, size_t *len, int64_t hr,
                                  const uint8_t *elements, size_t n)
{
    size_t bound;
    assert_int_equal(psi_gcs_bits_bound(&bound, hr, n), PSI_OK);
    uint8_t *bits = malloc(bound + 1);
    assert_non_null(bits);
    *len = bound;
    assert_int_equal(psi_gcs_build(div, bits, len, hr, elements, n, PSI_ELEMENT_BYTES), PSI_OK);
    assert_true(*len <= bound);
    return bits;
}

/* -------------------------------------------------------- parameters */

static void test_structures_gcs_hash_range_known(void **state)
{
    (void)state;
    int64_t hr;
    /* 0.01/6 then 6/that = 3599.9999999999995: truncation, not rounding. */
    assert_int_equal(psi_gcs_hash_range(&hr, 0.01, 6, 5), PSI_OK);
    assert_int_equal(hr, 3599);
    assert_int_equal(psi_gcs_hash_range(&hr, 0.01, 10, 0), PSI_OK);
    assert_int_equal(hr, 10000);
    assert_int_equal(psi_gcs_hash_range(&hr, 0.01, 20, 50), PSI_OK);
    assert_int_equal(hr, 100000); /* ns > nc: sized by ns */
    assert_int_equal(psi_gcs_hash_range(&hr, 0.5, 1, 1), PSI_OK);
    assert_int_equal(hr, 2);
    assert_int_equal(psi_gcs_hash_range(&hr, 0.01, 2, 2), PSI_OK);
    assert_int_equal(hr, 400);
    assert_int_equal(psi_gcs_hash_range(&hr, 0.5, 1, 3), PSI_OK);
    assert_int_equal(hr, 6);
    /* The largest quotient below 2^63 still fits. */
    assert_int_equal(psi_gcs_hash_range(&hr, ldexp(1.0, -62), 1, 0), PSI_OK);
    assert_int_equal(hr, INT64_C(1) << 62);
}

/* Every rejected (fpr, nc) for both structures, with outputs cleared. */
static void check_fpr_rejected(double fpr, int64_t nc, size_t ns)
{
    int64_t hr = 99;
    int32_t k = 99;
    size_t nb = 99;
    assert_int_equal(psi_gcs_hash_range(&hr, fpr, nc, ns), PSI_E_FPR);
    assert_int_equal(hr, 0);
    assert_int_equal(psi_bloom_params(&k, &nb, fpr, nc, ns), PSI_E_FPR);
    assert_int_equal(k, 0);
    assert_int_equal(nb, 0);
}

static void test_structures_params_reject_fpr(void **state)
{
    (void)state;
    check_fpr_rejected(0.0, 1, 0);
    check_fpr_rejected(-0.0, 1, 5);
    check_fpr_rejected(1.0, 1, 0);
    check_fpr_rejected(2.0, 1, 0);
    check_fpr_rejected(-0.01, 1, 0);
    check_fpr_rejected(NAN, 1, 0);
    check_fpr_rejected(INFINITY, 1, 0);
    check_fpr_rejected(-INFINITY, 1, 0);
    check_fpr_rejected(ldexp(1.0, -1074), 2, 0); /* fpr / nc underflows to 0 */
    check_fpr_rejected(0.01, 0, 0);
    check_fpr_rejected(0.01, 0, 10);
    check_fpr_rejected(0.01, -1, 0);
    check_fpr_rejected(-0.01, -1, 0); /* fpr_c would be 0.01 */
    check_fpr_rejected(0.5, INT64_MIN, 3);
    check_fpr_rejected(NAN, 0, 0);
}

static void test_structures_params_overflow(void **state)
{
    (void)state;
    int64_t hr = 99;
    int32_t k = 99;
    size_t nb = 99;
    /* psi.js crashes on this one (§7.2): 1e5 / 1e-14 = 1e19 >= 2^63. */
    assert_int_equal(psi_gcs_hash_range(&hr, 1e-9, 100000, 0), PSI_E_PARAM_OVERFLOW);
    assert_int_equal(hr, 0);
    assert_int_equal(psi_gcs_hash_range(&hr, ldexp(1.0, -63), 1, 0), PSI_E_PARAM_OVERFLOW);
    assert_int_equal(psi_gcs_hash_range(&hr, 0.5, INT64_MAX, 0), PSI_E_PARAM_OVERFLOW);
    /* The Bloom filter of 1e5 inputs at 1e-9 is merely large. */
    assert_int_equal(psi_bloom_params(&k, &nb, 1e-9, 100000, 0), PSI_OK);
    assert_int_equal(psi_bloom_params(&k, &nb, 0.5, INT64_MAX, 0), PSI_E_PARAM_OVERFLOW);
    assert_int_equal(k, 0);
    assert_int_equal(nb, 0);
    if (SIZE_MAX > UINT32_MAX) { /* ns > nc sizes by ns, also when it overflows */
        assert_int_equal(psi_gcs_hash_range(&hr, 0.5, 1, SIZE_MAX / 4), PSI_E_PARAM_OVERFLOW);
        assert_int_equal(psi_bloom_params(&k, &nb, 1e-300, 1, SIZE_MAX / 4),
                         PSI_E_PARAM_OVERFLOW);
    }
}

static void check_bloom_params(double fpr, int64_t nc, size_t ns, int32_t want_k,
                               size_t want_bytes)
{
    int32_t k;
    size_t nb;
    assert_int_equal(psi_bloom_params(&k, &nb, fpr, nc, ns), PSI_OK);
    assert_int_equal(k, want_k);
    assert_int_equal(nb, want_bytes);
}

static void test_structures_bloom_params_known(void **state)
{
    (void)state;
    check_bloom_params(0.01, 10, 0, 10, 18);  /* empty server set */
    check_bloom_params(0.01, 6, 5, 10, 10);   /* §11 */
    check_bloom_params(0.01, 1, 100, 7, 120); /* OpenMined's own test */
    check_bloom_params(0.01, 20, 50, 11, 99); /* 20 x 50, ns > nc */
    check_bloom_params(0.5, 1, 1, 1, 1);
    check_bloom_params(0.01, 2, 2, 8, 3);
    check_bloom_params(0.999, 1, 1, 1, 1);
}

static void test_structures_digest_mod(void **state)
{
    (void)state;
    /* SHA256("abc") reduced by a few moduli, from an independent model;
     * the last three exercise the carry path above 2^63. */
    static const uint8_t md[32] = {
        0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
        0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
        0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
    assert_int_equal(psi_digest_mod(md, 32, 1), 0);
    assert_int_equal(psi_digest_mod(md, 32, 2), 1);
    assert_int_equal(psi_digest_mod(md, 32, 3599), 2574);
    assert_true(psi_digest_mod(md, 32, UINT64_C(9223372036854775807)) ==
                UINT64_C(7844562598752555730));
    assert_true(psi_digest_mod(md, 32, UINT64_C(9223372036854788153)) ==
                UINT64_C(892326288522967624));
    assert_true(psi_digest_mod(md, 32, UINT64_MAX) == UINT64_C(6903376816007250520));
    assert_true(psi_digest_mod(md, 32, UINT64_C(18446744073709551557)) ==
                UINT64_C(11084944056211703577));
    assert_int_equal(psi_digest_mod(md, 0, 7), 0);
}

/* ------------------------------------------------------- GCS encoding */

/* Encodes hash values directly and compares with the expected stream. */
static void check_encode(const uint64_t *in, size_t n, int32_t want_div, const char *hex)
{
    uint64_t *v = malloc((n + 1) * sizeof *v);
    assert_non_null(v);
    if (n > 0)
        memcpy(v, in, n * sizeof *v);
    uint8_t bits[64];
    size_t len = sizeof bits;
    int32_t div = -1;
    assert_int_equal(psi_gcs_encode_values(&div, bits, &len, v, n), PSI_OK);
    assert_int_equal(div, want_div);
    assert_bytes_hex(bits, len, hex);
    free(v);
}

static void test_structures_gcs_encode_known(void **state)
{
    (void)state;
    static const uint64_t seven[] = {7};
    static const uint64_t four[] = {100, 0, 10, 1}; /* sorted by the encoder */
    static const uint64_t s11[] = {2757, 458, 1010, 1624, 2090};
    static const uint64_t dup7[] = {7, 7};
    static const uint64_t dups[] = {9, 3, 20, 3, 9, 3};
    check_encode(seven, 1, 2, "0e"); /* OpenMined golomb_test */
    check_encode(four, 4, 4, "614c5001");
    check_encode(s11, 5, 9, "958b4233a5bb09");
    check_encode(dup7, 2, 1, "18"); /* avg counts both copies */
    check_encode(dups, 6, 1, "4660");
    check_encode(NULL, 0, 0, "");
    static const uint64_t zero[] = {0};
    check_encode(zero, 1, 0, "01"); /* prob 1: log2(0) path gives div 0 */
}

static void test_structures_gcs_encode_capacity(void **state)
{
    (void)state;
    uint64_t v[] = {2757, 458, 1010, 1624, 2090};
    uint8_t bits[7] = {0};
    size_t len = 6;
    int32_t div = 5;
    assert_int_equal(psi_gcs_encode_values(&div, bits, &len, v, 5), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(len, 0);
    assert_int_equal(div, 0);
    len = 7;
    assert_int_equal(psi_gcs_encode_values(&div, bits, &len, v, 5), PSI_OK);
    assert_int_equal(len, 7);
    /* A lone value whose avg makes 1 - prob round to 1: +inf div. */
    uint64_t huge[] = {UINT64_C(1) << 60};
    len = 7;
    assert_int_equal(psi_gcs_encode_values(&div, bits, &len, huge, 1), PSI_E_PARAM_OVERFLOW);
    assert_int_equal(len, 0);
    /* A long unary quotient does not fit a small buffer. */
    uint64_t run[64] = {0};
    run[63] = 1000;
    len = 7;
    assert_int_equal(psi_gcs_encode_values(&div, bits, &len, run, 64), PSI_E_BUFFER_TOO_SMALL);
    uint64_t bad[] = {(uint64_t)INT64_MAX};
    len = 7;
    assert_int_equal(psi_gcs_encode_values(&div, bits, &len, bad, 1), PSI_E_INVALID_ARG);
}

static void test_structures_gcs_hash_known(void **state)
{
    (void)state;
    size_t n;
    uint8_t *e = unhex_elements(SERVER5_HEX, &n);
    static const uint64_t want[] = {458, 1624, 1010, 2757, 2090};
    for (size_t i = 0; i < n; i++)
        assert_int_equal(psi_gcs_hash(e + i * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES, 3599), want[i]);
    assert_int_equal(psi_gcs_hash(e, PSI_ELEMENT_BYTES, 1), 0);
    free(e);
}

/* Builds from hex elements and checks div and the stream. */
static void check_build(const char *elements_hex, int64_t hr, int32_t want_div,
                        const char *want_hex)
{
    size_t n, len;
    int32_t div;
    uint8_t *e = unhex_elements(elements_hex, &n);
    uint8_t *bits = gcs_build_checked(&div, &len, hr, e, n);
    assert_int_equal(div, want_div);
    assert_bytes_hex(bits, len, want_hex);
    free(bits);
    free(e);
}

static void test_structures_gcs_build_known(void **state)
{
    (void)state;
    check_build(SERVER5_HEX, 3599, 9, "958b4233a5bb09");
    check_build(SERVER50_HEX, 100000, 10, GCS50_HEX);
    check_build(ELEM_A_HEX, 2, 0, "01");
    char twice[2 * sizeof ELEM_A_HEX];
    snprintf(twice, sizeof twice, "%s%s", ELEM_A_HEX, ELEM_A_HEX);
    check_build(twice, 400, 7, "a403");
    check_build("", 10000, 0, "");
}

/* ------------------------------------------------------- GCS decoding */

/* Decodes hex and compares with the expected values. */
static void check_decode(int64_t hr, int32_t div, const char *hex, const uint64_t *want,
                         size_t n_want)
{
    size_t len, count = 99;
    uint8_t *bits = unhex(hex, &len);
    uint64_t *v = (uint64_t *)bits; /* any non-NULL value: must be reset */
    assert_int_equal(psi_gcs_decode(&v, &count, hr, div, bits, len), PSI_OK);
    assert_int_equal(count, n_want);
    if (n_want == 0)
        assert_null(v);
    for (size_t i = 0; i < n_want; i++)
        assert_int_equal(v[i], want[i]);
    psi_free(v);
    free(bits);
}

static void check_decode_fails(int64_t hr, int32_t div, const char *hex, int want_rc)
{
    size_t len, count = 99;
    uint8_t *bits = unhex(hex, &len);
    uint64_t *v = (uint64_t *)bits;
    assert_int_equal(psi_gcs_decode(&v, &count, hr, div, bits, len), want_rc);
    assert_null(v);
    assert_int_equal(count, 0);
    free(bits);
}

static void test_structures_gcs_decode_known(void **state)
{
    (void)state;
    static const uint64_t s11[] = {458, 1010, 1624, 2090, 2757};
    static const uint64_t seven[] = {7};
    static const uint64_t four[] = {0, 1, 10, 100};
    check_decode(3599, 9, "958b4233a5bb09", s11, 5);
    check_decode(8, 2, "0e", seven, 1);
    check_decode(101, 4, "614c5001", four, 4);
    check_decode(10000, 0, "", NULL, 0);
    check_decode(10000, 0, "000000", NULL, 0); /* only padding */
    check_decode(INT64_MAX, 63, "", NULL, 0);
}

static void test_structures_gcs_decode_rejects_params(void **state)
{
    (void)state;
    check_decode_fails(0, 2, "0e", PSI_E_GCS_HASH_RANGE);
    check_decode_fails(-1, 2, "0e", PSI_E_GCS_HASH_RANGE);
    check_decode_fails(INT64_MIN, 2, "", PSI_E_GCS_HASH_RANGE);
    check_decode_fails(0, 64, "0e", PSI_E_GCS_HASH_RANGE); /* range first */
    check_decode_fails(8, -1, "0e", PSI_E_GCS_DIV);
    check_decode_fails(8, 64, "0e", PSI_E_GCS_DIV);
    check_decode_fails(8, INT32_MIN, "", PSI_E_GCS_DIV);
    check_decode_fails(8, INT32_MAX, "", PSI_E_GCS_DIV);
}

static void test_structures_gcs_decode_rejects_truncated(void **state)
{
    (void)state;
    /* {7} written with div 2, read with div 7: after the 1 at bit 1 only
     * six bits remain for a seven-bit remainder. */
    check_decode_fails(1000, 7, "0e", PSI_E_GCS_STREAM);
    /* A 1 in the last bit with no room for its two remainder bits. */
    check_decode_fails(1000, 2, "80", PSI_E_GCS_STREAM);
    /* The §11 stream cut after its sixth byte ends inside 2757's
     * remainder. */
    check_decode_fails(3599, 9, "958b4233a5bb", PSI_E_GCS_STREAM);
    check_decode_fails(3599, 9, "958b4233a5", PSI_E_GCS_STREAM);
}

static void test_structures_gcs_decode_rejects_out_of_range(void **state)
{
    (void)state;
    static const uint64_t seven[] = {7};
    check_decode(8, 2, "0e", seven, 1);
    check_decode_fails(7, 2, "0e", PSI_E_GCS_STREAM); /* 7 >= hash_range */
    check_decode_fails(1, 0, "02", PSI_E_GCS_STREAM); /* 1 >= 1 */
    check_decode_fails(2757, 9, "958b4233a5bb09", PSI_E_GCS_STREAM);
    /* q = 1 with div 63: the delta is 2^63 + r, past any int64. */
    check_decode_fails(INT64_MAX, 63, "020000000000000000", PSI_E_GCS_STREAM);
    /* Two deltas of 2^62 with div 62: the sum reaches 2^63. */
    check_decode_fails(INT64_MAX, 62, "02000000000000000200000000000000", PSI_E_GCS_STREAM);
    /* The largest value a hash_range of INT64_MAX admits is fine. */
    static const uint64_t top[] = {UINT64_C(9223372036854775806)};
    check_decode(INT64_MAX, 62, "faffffffffffffff", top, 1);
    /* 30 bytes of zeros, then a 1: q = 240 >= hash_range with div 0. */
    char hex[64] = {0};
    memset(hex, '0', 60);
    strcat(hex, "01");
    check_decode_fails(240, 0, hex, PSI_E_GCS_STREAM);
    static const uint64_t q240[] = {240};
    check_decode(241, 0, hex, q240, 1);
}

static void test_structures_gcs_decode_zero_runs_and_repeats(void **state)
{
    (void)state;
    /* div 0: "1 1 1" is 0 then two repeats of 0. */
    static const uint64_t zero[] = {0};
    check_decode(5, 0, "07", zero, 1);
    /* "1 0 1": 0, then 1. */
    static const uint64_t zero_one[] = {0, 1};
    check_decode(5, 0, "05", zero_one, 2);
    /* "1 1 0 0 1": 0, a repeat, then a delta of 2. */
    static const uint64_t zero_two[] = {0, 2};
    check_decode(5, 0, "13", zero_two, 2);
    /* A long zero run inside a byte-spanning stream: 8000 zeros then 1. */
    size_t len = 1001;
    uint8_t *bits = calloc(len, 1);
    assert_non_null(bits);
    bits[1000] = 0x01;
    uint64_t *v = NULL;
    size_t count;
    assert_int_equal(psi_gcs_decode(&v, &count, 8001, 0, bits, len), PSI_OK);
    assert_int_equal(count, 1);
    assert_int_equal(v[0], 8000);
    psi_free(v);
    free(bits);
}

static void test_structures_gcs_round_trip(void **state)
{
    (void)state;
    for (unsigned long it = 0; it < test_iters; it++) {
        size_t n = (size_t)rng_below(300), len, count;
        int64_t hr;
        double fpr = (double)(1 + rng_below(500)) / 1000.0;
        int64_t nc = 1 + (int64_t)rng_below(1000);
        assert_int_equal(psi_gcs_hash_range(&hr, fpr, nc, n), PSI_OK);
        uint8_t *e = malloc(n * PSI_ELEMENT_BYTES + 1);
        uint64_t *want = malloc((n + 1) * sizeof *want), *got = NULL;
        assert_true(e != NULL && want != NULL);
        rng_bytes(e, n * PSI_ELEMENT_BYTES);
        for (size_t i = 0; n > 1 && i < n / 8; i++) /* some duplicates */
            memcpy(e + rng_below(n) * PSI_ELEMENT_BYTES, e, PSI_ELEMENT_BYTES);
        for (size_t i = 0; i < n; i++)
            want[i] = psi_gcs_hash(e + i * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES, hr);
        size_t m = sort_unique(want, n);
        int32_t div;
        uint8_t *bits = gcs_build_checked(&div, &len, hr, e, n);
        assert_int_equal(psi_gcs_decode(&got, &count, hr, div, bits, len), PSI_OK);
        assert_int_equal(count, m);
        if (m > 0)
            assert_memory_equal(got, want, m * sizeof *got);
        psi_free(got);
        free(bits), free(want), free(e);
    }
}

/* -------------------------------------------------------- GCS bound */

/* Encodes values (sorted in place) and checks the stream fits the bound
 * for hr; returns 1 if encoding succeeded, 0 if div was infinite. */
static int check_bound_values(uint64_t *v, size_t n, int64_t hr)
{
    size_t bound;
    assert_int_equal(psi_gcs_bits_bound(&bound, hr, n), PSI_OK);
    uint8_t *bits = malloc(bound + 1);
    assert_non_null(bits);
    size_t len = bound;
    int32_t div;
    int rc = psi_gcs_encode_values(&div, bits, &len, v, n);
    free(bits);
    if (rc == PSI_E_PARAM_OVERFLOW)
        return 0;
    if (rc != PSI_OK)
        fail_msg("bound %zu too small: hr %" PRId64 " n %zu rc %d", bound, hr, n, rc);
    assert_true(len <= bound);
    return 1;
}

/* Fills v with one adversarial pattern of n values below hr. */
static void fill_pattern(uint64_t *v, size_t n, int64_t hr, int pattern, uint64_t vlast)
{
    uint64_t top = (uint64_t)hr - 1;
    for (size_t i = 0; i < n; i++) {
        switch (pattern) {
        case 0: v[i] = top; break;                                   /* all at the top */
        case 1: v[i] = n > 1 ? top / (n - 1) * i : top; break;       /* evenly spread */
        case 2: v[i] = i + 1 < n ? 0 : top; break;                   /* zeros, one top */
        case 3: v[i] = i + 1 < n ? (i < top ? i : top) : vlast; break; /* dense, one far */
        case 4: v[i] = i < 64 ? top >> i : 0; break;                 /* geometric */
        default: v[i] = rng_below(top + 1); break;                   /* random */
        }
    }
    if (pattern == 1 && n > 1)
        v[n - 1] = top;
}

static void test_structures_gcs_bound_adversarial(void **state)
{
    (void)state;
    static const int64_t ranges[] = {1, 2, 3, 7, 3599, 100000, (INT64_C(1) << 20) + 3,
                                     INT64_C(1) << 40, INT64_C(1) << 53,
                                     (INT64_C(1) << 54) + 1, INT64_C(1) << 62, INT64_MAX};
    static const size_t sizes[] = {1, 2, 3, 5, 64, 1000};
    size_t ok = 0;
    uint64_t *v = malloc(1000 * sizeof *v);
    assert_non_null(v);
    for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++) {
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            uint64_t top = (uint64_t)ranges[r] - 1;
            for (int p = 0; p < 6; p++) {
                /* For the dense pattern, walk vlast down from the top so
                 * every div boundary below it is crossed. */
                for (int shift = 0; shift < (p == 3 ? 64 : 1); shift++) {
                    fill_pattern(v, sizes[s], ranges[r], p, top >> shift);
                    ok += (size_t)check_bound_values(v, sizes[s], ranges[r]);
                }
            }
        }
    }
    assert_true(ok > 1000);
    free(v);
}

/* Near each div boundary the stream is longest; probe values around the
 * points where div changes for random hash ranges. */
static void test_structures_gcs_bound_random(void **state)
{
    (void)state;
    uint64_t *v = malloc(512 * sizeof *v);
    assert_non_null(v);
    for (unsigned long it = 0; it < test_iters * 10; it++) {
        int64_t hr = (int64_t)(rng_next() >> (1 + rng_below(63)));
        hr = hr < 1 ? 1 : hr;
        size_t n = 1 + (size_t)rng_below(rng_below(2) ? 8 : 512);
        uint64_t vlast = rng_below((uint64_t)hr);
        fill_pattern(v, n, hr, 3, vlast);
        check_bound_values(v, n, hr);
        fill_pattern(v, n, hr, 5, 0);
        check_bound_values(v, n, hr);
    }
    size_t bound;
    assert_int_equal(psi_gcs_bits_bound(&bound, 3599, 5), PSI_OK);
    assert_true(bound >= 7 && bound <= 16); /* real but not wasteful */
    assert_int_equal(psi_gcs_bits_bound(&bound, 3599, 0), PSI_OK);
    assert_int_equal(bound, 0);
    assert_int_equal(psi_gcs_bits_bound(&bound, INT64_MAX, SIZE_MAX), PSI_E_PARAM_OVERFLOW);
    assert_int_equal(bound, 0);
    assert_int_equal(psi_gcs_bits_bound(&bound, 0, 5), PSI_E_INVALID_ARG);
    free(v);
}

/* --------------------------------------------------------- GCS match */

/* The §11 client after unmasking, with stand-ins for the non-members:
 * "", abc, Element 0, Element 1, Element 2, Element 3. */
static uint8_t *client6(void)
{
    size_t n;
    uint8_t *s = unhex_elements(SERVER5_HEX, &n);
    uint8_t *c = malloc(6 * PSI_ELEMENT_BYTES);
    assert_non_null(c);
    memset(c, 0x11, PSI_ELEMENT_BYTES);
    memcpy(c + 1 * PSI_ELEMENT_BYTES, s + S5_ABC * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES);
    memcpy(c + 2 * PSI_ELEMENT_BYTES, s + S5_E0 * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES);
    memset(c + 3 * PSI_ELEMENT_BYTES, 0x22, PSI_ELEMENT_BYTES);
    memcpy(c + 4 * PSI_ELEMENT_BYTES, s + S5_E2 * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES);
    memset(c + 5 * PSI_ELEMENT_BYTES, 0x33, PSI_ELEMENT_BYTES);
    free(s);
    return c;
}

/* §9.5's client [x, y, x, z, x] with x = Element 0, z = Element 2. */
static uint8_t *client_dups(void)
{
    uint8_t *c6 = client6(), *c = malloc(5 * PSI_ELEMENT_BYTES);
    assert_non_null(c);
    static const int from[5] = {2, 0, 2, 4, 2};
    for (int i = 0; i < 5; i++)
        memcpy(c + i * PSI_ELEMENT_BYTES, c6 + from[i] * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES);
    free(c6);
    return c;
}

static void check_gcs_match(const uint8_t *c, size_t n, const size_t *want, size_t n_want)
{
    static const uint64_t s11[] = {458, 1010, 1624, 2090, 2757};
    size_t out[8], count = n;
    assert_int_equal(psi_gcs_match(out, &count, s11, 5, 3599, c, n, PSI_ELEMENT_BYTES), PSI_OK);
    assert_int_equal(count, n_want);
    for (size_t i = 0; i < n_want; i++)
        assert_int_equal(out[i], want[i]);
}

static void test_structures_gcs_match_known(void **state)
{
    (void)state;
    uint8_t *c = client6();
    static const size_t want[] = {2, 1, 4}; /* by hash, as psi.js */
    check_gcs_match(c, 6, want, 3);
    size_t out[1], count = 0;
    assert_int_equal(psi_gcs_match(out, &count, NULL, 0, 3599, c, 6, PSI_ELEMENT_BYTES), PSI_OK);
    assert_int_equal(count, 0);
    count = 6;
    uint64_t none[] = {0};
    assert_int_equal(psi_gcs_match(NULL, &count, none, 1, 3599, NULL, 0, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    count = 0;
    assert_int_equal(psi_gcs_match(NULL, &count, none, 1, 3599, NULL, 0, PSI_ELEMENT_BYTES), PSI_OK);
    free(c);
}

static void test_structures_gcs_match_duplicates(void **state)
{
    (void)state;
    uint8_t *c = client_dups();
    static const size_t want[] = {0, 2, 4, 3}; /* §9.5: every copy matches */
    check_gcs_match(c, 5, want, 4);
    /* A value repeated in the set does not re-emit indices. */
    static const uint64_t rep[] = {1010, 1010, 2090, 2090};
    size_t out[5], count = 5;
    assert_int_equal(psi_gcs_match(out, &count, rep, 4, 3599, c, 5, PSI_ELEMENT_BYTES), PSI_OK);
    assert_int_equal(count, 4);
    free(c);
}

static void test_structures_gcs_match_capacity(void **state)
{
    (void)state;
    uint8_t *c = client_dups();
    static const uint64_t s11[] = {458, 1010, 1624, 2090, 2757};
    size_t out[5] = {7, 7, 7, 7, 7}, count = 3;
    assert_int_equal(psi_gcs_match(out, &count, s11, 5, 3599, c, 5, PSI_ELEMENT_BYTES), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(count, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(out[i], 0); /* no partial result */
    count = 4;
    assert_int_equal(psi_gcs_match(out, &count, s11, 5, 3599, c, 5, PSI_ELEMENT_BYTES), PSI_OK);
    assert_int_equal(count, 4);
    count = 5;
    assert_int_equal(psi_gcs_match(out, &count, s11, 5, 0, c, 5, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    free(c);
}

/* ------------------------------------------- libc++ std::sort order */

/* The client sorts its (hash, index) pairs with libc++'s unstable std::sort
 * (LLVM 20.1.4 in psi.js 2.0.6), and psi.js emits matching indices in that
 * order, so ties must land exactly where libc++ puts them.  Each case below
 * is a hash sequence made by sort_case_hashes(); its digest is that of the
 * index order libc++ 20.1.4 (emscripten 4.0.10's headers) produced, and the
 * same order came out of psi.js 2.0.6's getIntersection for client inputs
 * whose GCS hashes follow the sequence (order-preservingly relabelled).
 * The cases cover n < 24 (sorting networks, insertion sort), 24..128
 * (median of 3), > 128 (ninther), long runs of ties, and inputs that reach
 * the heap-sort fallback (SORT_KILLER). */
enum { SORT_RANDOM, SORT_EQUAL, SORT_ASC, SORT_DESC, SORT_ORGAN, SORT_SAW, SORT_KILLER };

/* McIlroy's adversary against libc++'s sort, with values halved so that
 * pairs tie: drives introsort to its heap-sort fallback (twice). */
static const uint8_t SORT_KILLER_200[200] = {
    0,  1,  2,  89, 3,  6,  4,  88, 88, 5,  39, 7,  87, 87, 8,  9,  10, 85, 86, 86,
    11, 12, 13, 84, 84, 85, 14, 15, 16, 82, 83, 83, 17, 18, 19, 81, 81, 82, 20, 21,
    22, 79, 80, 80, 23, 24, 25, 78, 78, 79, 26, 27, 28, 76, 77, 77, 29, 30, 31, 75,
    75, 76, 32, 33, 34, 73, 74, 74, 35, 36, 37, 72, 72, 73, 38, 70, 71, 71, 100, 98,
    99, 98, 97, 97, 96, 96, 95, 95, 94, 94, 93, 93, 92, 92, 91, 91, 90, 90, 89, 1,
    0,  2,  3,  5,  6,  7,  9,  8,  10, 12, 11, 13, 15, 14, 16, 18, 17, 19, 21, 20,
    22, 24, 23, 25, 27, 26, 28, 30, 29, 31, 33, 32, 34, 36, 35, 37, 70, 69, 39, 69,
    68, 68, 67, 67, 66, 66, 65, 65, 64, 64, 63, 63, 62, 62, 61, 61, 60, 60, 59, 59,
    58, 58, 57, 57, 56, 56, 55, 55, 54, 54, 53, 53, 52, 52, 51, 51, 50, 50, 49, 49,
    48, 48, 47, 47, 46, 46, 45, 45, 44, 44, 43, 43, 42, 42, 41, 41, 40, 40, 4,  38,
};

static uint64_t sort_xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Fills hashes[0..n) for one case; range >= 1. */
static void sort_case_hashes(uint64_t *h, size_t n, int kind, uint64_t range, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        switch (kind) {
        case SORT_RANDOM: h[i] = sort_xorshift(&s) % range; break;
        case SORT_EQUAL: h[i] = range - 1; break;
        case SORT_ASC: h[i] = (uint64_t)i * range / n; break;
        case SORT_DESC: h[i] = (uint64_t)(n - 1 - i) * range / n; break;
        case SORT_ORGAN: h[i] = (uint64_t)(i < n - 1 - i ? i : n - 1 - i) % range; break;
        case SORT_SAW: h[i] = (uint64_t)i % range; break;
        default: h[i] = SORT_KILLER_200[i % 200] + (uint64_t)(i / 200) * 101; break;
        }
    }
}

/* FNV-1a over the output index sequence. */
static uint64_t sort_digest(const size_t *idx, size_t n)
{
    uint64_t d = 14695981039346656037u;
    for (size_t i = 0; i < n; i++) {
        d ^= (uint64_t)idx[i];
        d *= 1099511628211u;
    }
    return d;
}

typedef struct sort_case {
    size_t n;
    int kind;
    uint64_t range;
    uint64_t seed;
    uint64_t digest; /* of libc++'s output order */
} sort_case;

static const sort_case SORT_CASES[] = {
    {0, SORT_RANDOM, 1, 1, 0xcbf29ce484222325u},
    {1, SORT_RANDOM, 1, 1, 0xaf63bd4c8601b7dfu},
    {2, SORT_EQUAL, 1, 1, 0x08328707b4eb6e3au},
    {3, SORT_EQUAL, 1, 1, 0xd949aa186c0c4928u},
    {4, SORT_EQUAL, 1, 1, 0x4475327f98e05411u},
    {5, SORT_EQUAL, 1, 1, 0x3378e3d0c52edfafu},
    {5, SORT_RANDOM, 2, 7, 0x5829878d4f0b5147u},
    {6, SORT_EQUAL, 1, 1, 0xa54ac5bf0ea60ddeu},
    {23, SORT_RANDOM, 3, 11, 0x8e38f41903b29790u},
    {24, SORT_EQUAL, 1, 1, 0x4d6366cf7d8aa54du},
    {24, SORT_RANDOM, 3, 12, 0x036900d8b7b5d171u},
    {25, SORT_DESC, 5, 1, 0x72d18a4418b6bf13u},
    {40, SORT_RANDOM, 4, 13, 0x673ab4b1813ac3f7u},
    {64, SORT_ORGAN, 7, 1, 0xf23836f1bc50a8afu},
    {128, SORT_RANDOM, 10, 14, 0xc6e42d72ef84268fu},
    {128, SORT_EQUAL, 1, 1, 0x356c6cc8137514a5u},
    {129, SORT_RANDOM, 10, 15, 0xe263b3da3878516fu},
    {130, SORT_ASC, 20, 1, 0x6ed8393616e62dbau},
    {200, SORT_KILLER, 1, 1, 0xfcd22a172374015fu},
    {200, SORT_SAW, 9, 1, 0x6cf867c5cfa5be4fu},
    {333, SORT_DESC, 40, 1, 0x0403386fb8faf7d3u},
    {500, SORT_RANDOM, 50, 16, 0xb5cb0ec1f1eea6f7u},
    {777, SORT_ORGAN, 100, 1, 0x984bafd8b52316fbu},
    {1000, SORT_RANDOM, 3, 17, 0x06e17b92c6039305u},
    {1000, SORT_EQUAL, 1, 1, 0xb1a3f67a8a6c3095u},
    {1000, SORT_KILLER, 1, 1, 0xcaffc7403a5f5b09u},
    {2048, SORT_SAW, 31, 1, 0x01d3c9ed871b65b3u},
    {3000, SORT_RANDOM, 1000, 18, 0x9ab6d77229b8db71u},
    {3000, SORT_DESC, 300, 1, 0x4736b8d77da785d5u},
};

static void test_structures_cxx_sort_known(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof SORT_CASES / sizeof SORT_CASES[0]; c++) {
        const sort_case *k = &SORT_CASES[c];
        uint64_t *h = malloc((k->n + 1) * sizeof *h);
        psi_hash_index *items = malloc((k->n + 1) * sizeof *items);
        size_t *idx = malloc((k->n + 1) * sizeof *idx);
        uint8_t *seen = calloc(k->n + 1, 1);
        assert_true(h != NULL && items != NULL && idx != NULL && seen != NULL);
        sort_case_hashes(h, k->n, k->kind, k->range, k->seed);
        for (size_t i = 0; i < k->n; i++)
            items[i] = (psi_hash_index){h[i], i};
        psi_cxx_sort_by_hash(items, k->n);
        for (size_t i = 0; i < k->n; i++) {
            assert_true(items[i].index < k->n && !seen[items[i].index]);
            seen[items[i].index] = 1;
            assert_int_equal(items[i].hash, h[items[i].index]);
            if (i > 0)
                assert_true(items[i - 1].hash <= items[i].hash);
            idx[i] = items[i].index;
        }
        if (sort_digest(idx, k->n) != k->digest)
            fail_msg("libc++ order differs in case %zu (n %zu)", c, k->n);
        free(h);
        free(items);
        free(idx);
        free(seen);
    }
}

/* Random sequences: always a sorted permutation (the order itself is
 * pinned by the cases above and the psi.js runs). */
static void test_structures_cxx_sort_random(void **state)
{
    (void)state;
    for (unsigned long it = 0; it < test_iters; it++) {
        size_t n = (size_t)rng_below(it % 4 == 0 ? 2000 : 200);
        uint64_t range = 1 + rng_below(it % 2 ? 4 : n + 1);
        psi_hash_index *items = malloc((n + 1) * sizeof *items);
        uint8_t *seen = calloc(n + 1, 1);
        assert_true(items != NULL && seen != NULL);
        for (size_t i = 0; i < n; i++)
            items[i] = (psi_hash_index){rng_below(range), i};
        psi_cxx_sort_by_hash(items, n);
        for (size_t i = 0; i < n; i++) {
            assert_true(items[i].index < n && !seen[items[i].index]);
            seen[items[i].index] = 1;
            if (i > 0)
                assert_true(items[i - 1].hash <= items[i].hash);
        }
        free(items);
        free(seen);
    }
}

/* End to end through the structures, against psi.js 2.0.6: server key
 * 01 02 .. 20, server inputs "s0".."s59", client inputs among
 * "s0".."s89", reveal on; the client's elements
 * are its inputs under the server key, as after unmasking.  want is
 * psi.js's getIntersection for the same setup and client. */
static void check_gcs_match_psijs(double fpr, const size_t *client_ids, size_t n,
                                  const size_t *want, size_t n_want)
{
    psi_settings st;
    psi_settings_default(&st);
    st.role = PSI_ROLE_SERVER;
    uint8_t key[32];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(i + 1);
    psi_engine *e = NULL;
    assert_int_equal(psi_engine_create_from_key(&e, &st, key, sizeof key), PSI_OK);
    char names[90][8];
    psi_value vals[150];
    for (size_t i = 0; i < 90; i++)
        snprintf(names[i], sizeof names[i], "s%zu", i);
    for (size_t i = 0; i < 60; i++)
        vals[i] = (psi_value){(const uint8_t *)names[i], strlen(names[i])};
    uint8_t *srv = malloc(60 * PSI_ELEMENT_BYTES), *cli = malloc((n + 1) * PSI_ELEMENT_BYTES);
    assert_true(srv != NULL && cli != NULL);
    size_t len = 60 * PSI_ELEMENT_BYTES;
    assert_int_equal(psi_engine_mask(e, srv, &len, vals, 60), PSI_OK);
    for (size_t i = 0; i < n; i++) {
        assert_true(client_ids[i] < 90);
        vals[i] = (psi_value){(const uint8_t *)names[client_ids[i]], strlen(names[client_ids[i]])};
    }
    len = n * PSI_ELEMENT_BYTES;
    assert_int_equal(psi_engine_mask(e, cli, &len, vals, n), PSI_OK);
    int64_t hr;
    assert_int_equal(psi_gcs_hash_range(&hr, fpr, 1, 60), PSI_OK);
    int32_t div;
    size_t bits_len;
    uint8_t *bits = gcs_build_checked(&div, &bits_len, hr, srv, 60);
    uint64_t *values;
    size_t n_values;
    assert_int_equal(psi_gcs_decode(&values, &n_values, hr, div, bits, bits_len), PSI_OK);
    size_t out[150], count = n;
    assert_int_equal(psi_gcs_match(out, &count, values, n_values, hr, cli, n, PSI_ELEMENT_BYTES), PSI_OK);
    assert_int_equal(count, n_want);
    for (size_t i = 0; i < n_want; i++)
        if (out[i] != want[i])
            fail_msg("position %zu: index %zu, psi.js has %zu", i, out[i], want[i]);
    psi_free(values);
    free(bits);
    free(srv);
    free(cli);
    psi_engine_free(e);
}

static void test_structures_gcs_match_psijs_order(void **state)
{
    (void)state;
    size_t ids[150];
    /* fpr 0.99: hash_range 60.  Client "s(i*i mod 45)", i < 150: every
     * element matches, many ties, ninther pivots. */
    for (size_t i = 0; i < 150; i++)
        ids[i] = (i * i) % 45;
    static const size_t want150[] = {
        70,  115, 20,  110, 65,  25,  100, 10,  55,  145, 80,  35,  125, 2,   97,  43,  92,
        7,   88,  128, 38,  83,  142, 133, 47,  137, 52,  114, 69,  66,  24,  141, 21,  111,
        126, 144, 36,  81,  84,  39,  54,  9,   6,   96,  51,  99,  129, 101, 119, 74,  106,
        56,  11,  34,  146, 16,  61,  124, 79,  29,  130, 95,  5,   40,  85,  140, 50,  147,
        87,  138, 27,  117, 72,  102, 3,   93,  123, 18,  78,  63,  33,  42,  108, 12,  57,
        132, 48,  86,  76,  59,  41,  104, 14,  149, 94,  131, 4,   31,  139, 49,  121, 0,
        60,  15,  105, 90,  30,  135, 45,  120, 75,  91,  19,  89,  109, 26,  136, 1,   134,
        116, 71,  44,  46,  64,  98,  62,  8,   127, 53,  17,  143, 118, 37,  107, 73,  82,
        28,  77,  112, 113, 23,  22,  32,  68,  67,  103, 13,  122, 148, 58,
    };
    check_gcs_match_psijs(0.99, ids, 150, want150, 150);
    /* fpr 0.5: hash_range 120.  Client "s(7i mod 90)", i < 40: some miss
     * (s60.. are not in the set), median-of-3 pivots. */
    for (size_t i = 0; i < 40; i++)
        ids[i] = (i * 7) % 90;
    static const size_t want40[] = {8,  29, 1,  18, 14, 3, 27, 4,  22, 32, 15,
                                    6,  16, 30, 2,  25, 31, 39, 10, 17, 28, 7,
                                    0,  33, 5,  26, 34, 21, 13, 19, 20};
    check_gcs_match_psijs(0.5, ids, 40, want40, 31);
    /* fpr 0.9: 12 elements, insertion sort. */
    static const size_t ids12[] = {3, 3, 50, 3, 7, 3, 50, 64, 3, 7, 3, 3};
    static const size_t want12[] = {0, 1, 3, 5, 8, 10, 11, 4, 9, 2, 6, 7};
    check_gcs_match_psijs(0.9, ids12, 12, want12, 12);
}

/* ------------------------------------------------------------- Bloom */

/* Builds a filter from hex elements with the parameters for (fpr, nc). */
static uint8_t *bloom_from(const char *hex, double fpr, int64_t nc, int32_t *k, size_t *nb)
{
    size_t n;
    uint8_t *e = unhex_elements(hex, &n);
    assert_int_equal(psi_bloom_params(k, nb, fpr, nc, n), PSI_OK);
    uint8_t *bits = calloc(*nb, 1);
    assert_non_null(bits);
    psi_bloom_build(bits, *nb, *k, e, n, PSI_ELEMENT_BYTES);
    free(e);
    return bits;
}

static void check_bloom_build(const char *hex, double fpr, int64_t nc, int32_t want_k,
                              const char *want_hex)
{
    int32_t k;
    size_t nb;
    uint8_t *bits = bloom_from(hex, fpr, nc, &k, &nb);
    assert_int_equal(k, want_k);
    assert_bytes_hex(bits, nb, want_hex);
    free(bits);
}

static void test_structures_bloom_build_known(void **state)
{
    (void)state;
    check_bloom_build(SERVER5_HEX, 0.01, 6, 10, "785a48495c584c4ae9c8");
    check_bloom_build(SERVER50_HEX, 0.01, 20, 11, BLOOM50_HEX);
    check_bloom_build("", 0.01, 10, 10, "000000000000000000000000000000000000");
    check_bloom_build(ELEM_A_HEX, 0.5, 1, 1, "10");
    char twice[2 * sizeof ELEM_A_HEX];
    snprintf(twice, sizeof twice, "%s%s", ELEM_A_HEX, ELEM_A_HEX);
    check_bloom_build(twice, 0.01, 2, 8, "044110");
}

static void test_structures_bloom_openmined_vector(void **state)
{
    (void)state;
    int32_t k;
    size_t nb;
    /* Uncorrected fpr (nc = 1) and 100 raw strings, as OpenMined's test. */
    assert_int_equal(psi_bloom_params(&k, &nb, 0.01, 1, 100), PSI_OK);
    assert_int_equal(k, 7);
    assert_int_equal(nb, 120);
    uint8_t bits[120] = {0};
    for (int i = 0; i < 100; i++) {
        char s[16];
        int len = snprintf(s, sizeof s, "Element %d", i);
        psi_bloom_insert(bits, nb, k, (const uint8_t *)s, (size_t)len);
    }
    assert_bytes_hex(bits, nb, BLOOM_OM_HEX);
}

static void check_bloom_match(const uint8_t *bits, size_t nb, int32_t k, const uint8_t *c,
                              size_t n, const size_t *want, size_t n_want)
{
    size_t out[8], count = n;
    assert_int_equal(psi_bloom_match(out, &count, k, bits, nb, c, n, PSI_ELEMENT_BYTES), PSI_OK);
    assert_int_equal(count, n_want);
    for (size_t i = 0; i < n_want; i++)
        assert_int_equal(out[i], want[i]);
}

static void test_structures_bloom_match_known(void **state)
{
    (void)state;
    int32_t k;
    size_t nb;
    uint8_t *bits = bloom_from(SERVER5_HEX, 0.01, 6, &k, &nb);
    uint8_t *c = client6(), *d = client_dups();
    static const size_t want[] = {1, 2, 4};       /* ascending index order */
    static const size_t want_dups[] = {0, 2, 3, 4}; /* §9.5 */
    check_bloom_match(bits, nb, k, c, 6, want, 3);
    check_bloom_match(bits, nb, k, d, 5, want_dups, 4);
    size_t out[4] = {9, 9, 9, 9}, count = 3;
    assert_int_equal(psi_bloom_match(out, &count, k, bits, nb, d, 5, PSI_ELEMENT_BYTES), PSI_E_BUFFER_TOO_SMALL);
    assert_int_equal(count, 0);
    assert_int_equal(out[0], 0);
    free(bits), free(c), free(d);
}

static void test_structures_bloom_match_degenerate(void **state)
{
    (void)state;
    uint8_t *c = client6();
    uint8_t ones[1] = {0xff}, zeros[2] = {0};
    static const size_t all[] = {0, 1, 2, 3, 4, 5};
    /* A hostile k costs at most n_bits probes per element. */
    check_bloom_match(ones, 1, INT32_MAX, c, 6, all, 6);
    check_bloom_match(zeros, 2, 1, c, 6, NULL, 0);
    size_t out[6], count = 6;
    assert_int_equal(psi_bloom_match(out, &count, 0, ones, 1, c, 6, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    count = 6;
    assert_int_equal(psi_bloom_match(out, &count, -1, ones, 1, c, 6, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    count = 6;
    assert_int_equal(psi_bloom_match(out, &count, 1, ones, 0, c, 6, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    count = 6;
    assert_int_equal(psi_bloom_match(out, &count, 1, NULL, 1, c, 6, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    count = 0;
    assert_int_equal(psi_bloom_match(NULL, &count, 1, ones, 1, NULL, 0, PSI_ELEMENT_BYTES), PSI_OK);
    assert_int_equal(psi_bloom_match(out, NULL, 1, ones, 1, c, 6, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    free(c);
}

/* ---------------------------------------------- misuse and allocation */

static void test_structures_misuse(void **state)
{
    (void)state;
    int32_t k, div;
    size_t nb, len = 0, count = 0;
    uint64_t *v, one = 1;
    uint8_t e[PSI_ELEMENT_BYTES] = {2}, bits[1] = {1};
    assert_int_equal(psi_gcs_hash_range(NULL, 0.01, 1, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_bloom_params(NULL, &nb, 0.01, 1, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_bloom_params(&k, NULL, 0.01, 1, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_gcs_bits_bound(NULL, 10, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_gcs_build(NULL, bits, &len, 10, e, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    assert_int_equal(psi_gcs_build(&div, bits, NULL, 10, e, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    len = 1;
    assert_int_equal(psi_gcs_build(&div, NULL, &len, 10, e, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    len = 1;
    assert_int_equal(psi_gcs_build(&div, bits, &len, 10, NULL, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    len = 1;
    assert_int_equal(psi_gcs_build(&div, bits, &len, 0, e, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    len = 1;
    assert_int_equal(psi_gcs_build(&div, bits, &len, 10, e, SIZE_MAX, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    len = 1;
    assert_int_equal(psi_gcs_encode_values(&div, bits, &len, NULL, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_gcs_decode(NULL, &count, 10, 0, bits, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_gcs_decode(&v, NULL, 10, 0, bits, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_gcs_decode(&v, &count, 10, 0, NULL, 1), PSI_E_INVALID_ARG);
    assert_int_equal(psi_gcs_match(NULL, NULL, &one, 1, 10, e, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    count = 1;
    assert_int_equal(psi_gcs_match(&nb, &count, NULL, 1, 10, e, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
    count = 1;
    assert_int_equal(psi_gcs_match(&nb, &count, &one, 1, 10, NULL, 1, PSI_ELEMENT_BYTES), PSI_E_INVALID_ARG);
}

static void test_structures_alloc_failures(void **state)
{
    (void)state;
    size_t n, len = 16, count;
    int32_t div;
    uint8_t bits[16];
    uint8_t *e = unhex_elements(SERVER5_HEX, &n);
    uint64_t *v = NULL;
    psi_alloc_fail_after(1);
    assert_int_equal(psi_gcs_build(&div, bits, &len, 3599, e, n, PSI_ELEMENT_BYTES), PSI_E_NOMEM);
    assert_int_equal(len, 0);
    psi_alloc_fail_after(1);
    static const uint8_t s11_bits[] = {0x95, 0x8b, 0x42, 0x33, 0xa5, 0xbb, 0x09};
    assert_int_equal(psi_gcs_decode(&v, &count, 3599, 9, s11_bits, sizeof s11_bits),
                     PSI_E_NOMEM);
    assert_null(v);
    psi_alloc_fail_after(1);
    static const uint64_t s11[] = {458, 1010, 1624, 2090, 2757};
    size_t out[5];
    count = 5;
    assert_int_equal(psi_gcs_match(out, &count, s11, 5, 3599, e, n, PSI_ELEMENT_BYTES), PSI_E_NOMEM);
    assert_int_equal(count, 0);
    psi_alloc_fail_after(0);
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_structures_gcs_hash_range_known),
        cmocka_unit_test(test_structures_params_reject_fpr),
        cmocka_unit_test(test_structures_params_overflow),
        cmocka_unit_test(test_structures_bloom_params_known),
        cmocka_unit_test(test_structures_digest_mod),
        cmocka_unit_test(test_structures_gcs_encode_known),
        cmocka_unit_test(test_structures_gcs_encode_capacity),
        cmocka_unit_test(test_structures_gcs_hash_known),
        cmocka_unit_test(test_structures_gcs_build_known),
        cmocka_unit_test(test_structures_gcs_decode_known),
        cmocka_unit_test(test_structures_gcs_decode_rejects_params),
        cmocka_unit_test(test_structures_gcs_decode_rejects_truncated),
        cmocka_unit_test(test_structures_gcs_decode_rejects_out_of_range),
        cmocka_unit_test(test_structures_gcs_decode_zero_runs_and_repeats),
        cmocka_unit_test(test_structures_gcs_round_trip),
        cmocka_unit_test(test_structures_gcs_bound_adversarial),
        cmocka_unit_test(test_structures_gcs_bound_random),
        cmocka_unit_test(test_structures_gcs_match_known),
        cmocka_unit_test(test_structures_gcs_match_duplicates),
        cmocka_unit_test(test_structures_gcs_match_capacity),
        cmocka_unit_test(test_structures_cxx_sort_known),
        cmocka_unit_test(test_structures_cxx_sort_random),
        cmocka_unit_test(test_structures_gcs_match_psijs_order),
        cmocka_unit_test(test_structures_bloom_build_known),
        cmocka_unit_test(test_structures_bloom_openmined_vector),
        cmocka_unit_test(test_structures_bloom_match_known),
        cmocka_unit_test(test_structures_bloom_match_degenerate),
        cmocka_unit_test(test_structures_misuse),
        cmocka_unit_test(test_structures_alloc_failures),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
