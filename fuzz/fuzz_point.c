/* Fuzzes strict point decoding (PROTOCOL.md §4.2, §16.3): psi_point_check
 * and psi_point_check on the whole input; and, when the input is a few 33-byte points, the engine's
 * batch calls on them, which must fail with the first bad point's code or
 * round-trip (unmask(remask(P)) == P). */
#include <sodium.h>

#include "fuzz_common.h"

/* Most points given to the batch calls: two scalar multiplications each. */
#define POINT_BATCH_MAX 4

static const int point_check_codes[] = { FUZZ_POINT_CODES, PSI_E_NOMEM, PSI_E_CRYPTO };

/* Returns: the code of the first point psi_point_check refuses, or PSI_OK. */
static int first_bad_point(const uint8_t *points, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = psi_point_check(PSI_SUITE_OPENMINED_P256, points + i * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES);

        FUZZ_EXPECT("psi_point_check", rc, point_check_codes);
        if (rc != PSI_OK)
            return rc;
    }
    return PSI_OK;
}

/* One batch call (remask or unmask) on n points.  Returns: its code. */
static int batch_call(int unmask, const psi_engine *e, uint8_t *out, const uint8_t *points,
                      size_t n, int want)
{
    static const int codes[] = { FUZZ_POINT_CODES, PSI_E_NOMEM, PSI_E_CRYPTO };
    const char *fn = unmask ? "psi_engine_unmask" : "psi_engine_remask";
    size_t len = n * PSI_ELEMENT_BYTES;
    int rc;

    memset(out, FUZZ_SENTINEL, len);
    rc = unmask ? psi_engine_unmask(e, out, &len, points, n)
                : psi_engine_remask(e, out, &len, points, n);
    FUZZ_EXPECT(fn, rc, codes);
    if (rc == PSI_E_NOMEM || rc == PSI_E_CRYPTO)
        return rc;
    fuzz_require(rc == want, fn, rc, "differs from the first bad point's psi_point_check code");
    if (rc != PSI_OK) {
        fuzz_require(len == 0, fn, rc, "*out_len not 0 after a failure");
        fuzz_require_untouched(fn, rc, out, n * PSI_ELEMENT_BYTES);
    } else {
        fuzz_require(len == n * PSI_ELEMENT_BYTES, fn, rc, "wrong *out_len");
        fuzz_require(first_bad_point(out, n) == PSI_OK, fn, rc, "output is not a valid point");
    }
    return rc;
}

static void fuzz_batch(const uint8_t *data, size_t n)
{
    static psi_engine *e;
    uint8_t masked[POINT_BATCH_MAX * PSI_ELEMENT_BYTES];
    uint8_t back[POINT_BATCH_MAX * PSI_ELEMENT_BYTES];
    int want = first_bad_point(data, n);

    if (want == PSI_E_NOMEM || want == PSI_E_CRYPTO)
        return;
    if (e == NULL)
        e = fuzz_engine(PSI_ROLE_SERVER, 1, FUZZ_SERVER_KEY_BYTE, PSI_SUITE_OPENMINED_P256);
    // unmask checks its input as strictly as remask
    (void)batch_call(1, e, back, data, n, want);
    if (batch_call(0, e, masked, data, n, want) != PSI_OK)
        return;
    if (batch_call(1, e, back, masked, n, PSI_OK) != PSI_OK)
        return;
    fuzz_require(memcmp(back, data, n * PSI_ELEMENT_BYTES) == 0, "psi_engine_unmask", PSI_OK,
                 "unmask(remask(P)) != P");
}

/* Returns: the code §4.2's order of checks gives before the curve
 * equation (PSI_OK when only the curve equation is left to decide). */
static int expected_code(const uint8_t *data, size_t size)
{
    static const uint8_t field_p[32] = {
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    };

    if (size == 1 && data[0] == 0)
        return PSI_E_POINT_IDENTITY;
    if (size != PSI_ELEMENT_BYTES)
        return PSI_E_POINT_LENGTH;
    if (data[0] != 2 && data[0] != 3)
        return PSI_E_POINT_PREFIX;
    if (memcmp(data + 1, field_p, sizeof field_p) >= 0)
        return PSI_E_POINT_X_RANGE;
    return PSI_OK;
}

/* The ristretto255 suite's decoding (§16.3) on the same input: 32 bytes,
 * not all zero, a canonical encoding; libsodium's own check is the
 * reference.  An accepted element is a fixed point of multiplication by 1
 * (an encoding is canonical iff it re-encodes to itself), and p256-sswu
 * decodes exactly as the OpenMined suite. */
static void check_ristretto255(const uint8_t *data, size_t size)
{
    static const int codes[] = { PSI_E_POINT_LENGTH, PSI_E_POINT_IDENTITY, PSI_E_POINT_ENCODING };
    const char *fn = "psi_point_check";
    int rc = psi_point_check(PSI_SUITE_RISTRETTO255, data, size);
    int want;

    if (rc != PSI_OK)
        FUZZ_EXPECT(fn, rc, codes);
    if (size != crypto_core_ristretto255_BYTES)
        want = PSI_E_POINT_LENGTH;
    else if (sodium_is_zero(data, size))
        want = PSI_E_POINT_IDENTITY;
    else if (data[31] & 0x80) // bit 255: libsodium 1.0.18 ignores it (psi/ristretto.c)
        want = PSI_E_POINT_ENCODING;
    else
        want = crypto_core_ristretto255_is_valid_point(data) ? PSI_OK : PSI_E_POINT_ENCODING;
    fuzz_require(rc == want, fn, rc, "not the code of PROTOCOL.md 16.3");
    if (rc == PSI_OK) {
        uint8_t one[crypto_core_ristretto255_SCALARBYTES] = {1}, again[32];
        fuzz_require(crypto_scalarmult_ristretto255(again, one, data) == 0 &&
                         memcmp(again, data, sizeof again) == 0,
                     fn, rc, "an accepted encoding does not re-encode to itself");
    }
    fuzz_require(psi_point_check(PSI_SUITE_P256_SSWU, data, size) ==
                     psi_point_check(PSI_SUITE_OPENMINED_P256, data, size),
                 fn, rc, "p256-sswu decodes differently from openmined-p256");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int rc = psi_point_check(PSI_SUITE_OPENMINED_P256, data, size);
    int want = expected_code(data, size);

    FUZZ_EXPECT("psi_point_check", rc, point_check_codes);
    if (rc != PSI_E_NOMEM && rc != PSI_E_CRYPTO) {
        if (want != PSI_OK)
            fuzz_require(rc == want, "psi_point_check", rc, "not the code of PROTOCOL.md 4.2");
        else
            fuzz_require(rc == PSI_OK || rc == PSI_E_POINT_NOT_ON_CURVE, "psi_point_check", rc,
                         "not the code of PROTOCOL.md 4.2");
    }
    if (size > 0 && size % PSI_ELEMENT_BYTES == 0 && size / PSI_ELEMENT_BYTES <= POINT_BATCH_MAX)
        fuzz_batch(data, size / PSI_ELEMENT_BYTES);
    check_ristretto255(data, size);
    return 0;
}
