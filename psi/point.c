/* Strict decoding of partner points (PROTOCOL.md §4.2).  We accept only the
 * 33-byte compressed form OpenMined emits: OpenSSL alone would also take
 * the 1-byte identity and 65-byte forms, psi.js takes 04 points. */
#include <string.h>

#include "engine.h"
#include "p256.h"
#include "suite.h"

/* p, big-endian (§1). */
static const uint8_t field_p[32] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
};

int psi_point_precheck(const uint8_t *in, size_t len)
{
    if (len == 1 && in[0] == 0x00)
        return PSI_E_POINT_IDENTITY;
    if (len != PSI_ELEMENT_BYTES)
        return PSI_E_POINT_LENGTH;
    if (in[0] != 0x02 && in[0] != 0x03)
        return PSI_E_POINT_PREFIX;
    /* x is public (it came over the wire), so memcmp may compare it. */
    if (memcmp(in + 1, field_p, sizeof field_p) >= 0)
        return PSI_E_POINT_X_RANGE;
    return PSI_OK;
}

int psi_point_decode(psi_ec *ec, const uint8_t *in, size_t len)
{
    int rc = psi_point_precheck(in, len);
    if (rc != PSI_OK)
        return rc;
    memcpy(ec->px, in + 1, sizeof ec->px);
    /* The root is checked (y^2 = x^3 - 3x + b), so the point is on the
     * curve and, being affine, not infinity. */
    if (!psi_p256_decompress(ec->py, ec->px, in[0] & 1))
        return PSI_E_POINT_NOT_ON_CURVE;
    return PSI_OK;
}

int psi_point_check(int suite, const uint8_t *point, size_t len)
{
    PSI_CHECK_ARG(point != NULL || len == 0);
    psi_detail_clear();
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    if (suite == PSI_SUITE_RISTRETTO255) {
        int rc = psi_r255_check(point, len);
        return rc == PSI_OK ? rc : psi_fail_at(rc, "point", -1, -1);
    }
    if (len == 0)
        return psi_fail_at(PSI_E_POINT_LENGTH, "point", -1, -1);
    psi_ec ec;
    int rc = psi_ec_init(&ec, NULL);
    if (rc == PSI_OK && (rc = psi_point_decode(&ec, point, len)) != PSI_OK)
        psi_fail_at(rc, "point", -1, -1);
    psi_ec_release(&ec);
    return rc;
}
