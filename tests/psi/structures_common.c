/* See structures_common.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gcs.h"
#include "structures_common.h"

/* ------------------------------------------------------------ vectors */

/* The five server elements of §11, masked with the server key, in byte
 * order (the raw setup's list). */
const char SERVER5_HEX[] =
    "027eaa6b53db9ef3fd938c48d793dd71f1595b8846bf0bf74422ff434399520424"
    "0291eea606f9bc39fd97bfcbc8094ca93e34b148b6d790c4eed93971b78da76d55"
    "034b17d7bdd613fa9df56c58d0c77ca255d4f140efb95e07247c97aa9cd6fea0dd"
    "03662671bdc627e05271c21260a6087ca388c45e9c6f829451b09776349ebf00ec"
    "03bbbd96e7755417f1088f686d397a6ce4a679ab8c737940f70229b69fbccfdfa7";

/* The server key applied to "a" (edge_setups in the vectors file). */
const char ELEM_A_HEX[2 * PSI_ELEMENT_BYTES + 1] =
    "02f66d464ac22143b0eea2d8526d64613d3f2419a20d9ea3a771504c54f94e31a7";

/* end_to_end_20x50: the 50 masked server elements (fpr 0.01, nc 20). */
const char SERVER50_HEX[] =
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

/* ------------------------------------------------------------ helpers */

uint64_t rng_state;
unsigned long test_iters = 100;

/* splitmix64: small, seedable, good enough to pick test cases. */
uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

uint64_t rng_below(uint64_t bound)
{
    return bound == 0 ? 0 : rng_next() % bound;
}

void rng_bytes(uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)rng_next();
}

/* Decodes hex into a fresh malloc'ed buffer; *len gets its size. */
uint8_t *unhex(const char *hex, size_t *len)
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
uint8_t *unhex_elements(const char *hex, size_t *n)
{
    size_t len;
    uint8_t *e = unhex(hex, &len);
    assert_int_equal(len % PSI_ELEMENT_BYTES, 0);
    *n = len / PSI_ELEMENT_BYTES;
    return e;
}

void assert_bytes_hex(const uint8_t *got, size_t got_len, const char *hex)
{
    size_t len;
    uint8_t *want = unhex(hex, &len);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, want, len);
    free(want);
}

/* Builds a GCS for elements with a bound-sized buffer; checks the bound. */
uint8_t *gcs_build_checked(int32_t *div, size_t *len, int64_t hr,
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

/* ------------------------------------------------------ clients */

/* The §11 client after unmasking, with stand-ins for the non-members:
 * "", abc, Element 0, Element 1, Element 2, Element 3. */
uint8_t *client6(void)
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
uint8_t *client_dups(void)
{
    uint8_t *c6 = client6(), *c = malloc(5 * PSI_ELEMENT_BYTES);
    assert_non_null(c);
    static const int from[5] = {2, 0, 2, 4, 2};
    for (int i = 0; i < 5; i++)
        memcpy(c + i * PSI_ELEMENT_BYTES, c6 + from[i] * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES);
    free(c6);
    return c;
}
