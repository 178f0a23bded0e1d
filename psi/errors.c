/* The one table of error messages, the version string and the size
 * functions.  Messages never contain key material or partner data. */
#include <stdio.h>

#include "common.h"


static const char *const messages[] = {
    [0] = "success",
    [1] = "invalid argument (a NULL pointer, an impossible length or an unknown enum value)",
    [2] = "out of memory",
    [3] = "internal cryptographic library failure",
    [4] = "output buffer too small",
    [5] = "key out of range: it must be an integer in [1, n-1] for the group order n (P-256 "
          "suites: big-endian; ristretto255: 32 bytes, little-endian)",
    [6] = "operation not allowed for this engine's role (client or server)",
    [7] = "reveal_intersection flag of the request differs from the server's",
    [8] = "intersection requested from a client created with reveal_intersection off",
    [9] = "invalid point: not 33 bytes (P-256 suites) or 32 bytes (ristretto255)",
    [10] = "invalid point: prefix byte is not 02 or 03",
    [11] = "invalid point: x coordinate is not below the field prime p",
    [12] = "invalid point: no point on P-256 has this x coordinate",
    [13] = "invalid point: the point at infinity",
    [14] = "malformed message: a varint or a length runs past the end",
    [15] = "malformed message: varint longer than 10 bytes",
    [16] = "malformed message: invalid field tag or wrong wire type for a known field",
    [17] = "malformed setup: no data structure (raw, gcs or bloom_filter) is set",
    [18] = "malformed setup: more than one data structure is set",
    [19] = "malformed message: an encrypted element is not 33 bytes (P-256 suites) or 32 bytes "
           "(ristretto255)",
    [20] = "message too large: element counts or sizes overflow",
    [21] = "fpr / num_client_inputs must be in (0, 1)",
    [22] = "parameters overflow: GCS hash range or Bloom filter size too large",
    [23] = "unknown data structure",
    [24] = "malformed GCS setup: hash_range must be at least 1",
    [25] = "malformed GCS setup: div must be in [0, 63]",
    [26] = "malformed GCS setup: bit stream ends inside a value or holds a value >= hash_range",
    [27] = "malformed Bloom filter setup: num_hash_functions must be in [1, 1074] "
           "(PSI_BLOOM_K_MAX)",
    [28] = "malformed Bloom filter setup: the bit array is empty",
    [29] = "malformed raw setup: elements are not sorted by bytes",
    [30] = "hash to curve found no point",
    [31] = "a thread, mutex or condition variable could not be created",
    [32] = "unknown suite: the suites are openmined-p256, p256-sswu and ristretto255",
    [33] = "message of another suite: its suite header (or the lack of one) names another "
           "suite than this engine's",
    [34] = "invalid point: not a canonical ristretto255 encoding of a group element",
    [35] = "the output could not be written or the input read (the caller's sink or reader failed)",
    [36] = "setup mismatch: this setup is not one an honest server of the agreed parameters "
           "and number of values would send",
    [37] = "malformed payload table: not a payload table's header, or its reserved bytes are "
           "not zero",
    [38] = "malformed payload table: its length is not its header plus its count of records "
           "(a truncated or extra record)",
    [39] = "payload length: a padded length past PSI_PAYLOAD_MAX, a payload longer than the "
           "padded length, or an opened record whose length or padding is wrong",
    [40] = "malformed payload table: its tags are not in strictly ascending order",
    [41] = "payload does not decrypt: a record with a matched tag fails authentication "
           "(a damaged or forged table)",
    [42] = "two equal values were given payloads: a payload table holds one record a value",
    [43] = "Bloom filter setup not in format 2, the only one p256-sswu and ristretto255 read "
           "(PROTOCOL.md section 7.4): no format field is the old format 1; build the setup again",
};

static const char *const names[] = {
    "PSI_OK", "PSI_E_INVALID_ARG", "PSI_E_NOMEM", "PSI_E_CRYPTO",
    "PSI_E_BUFFER_TOO_SMALL", "PSI_E_KEY_OUT_OF_RANGE", "PSI_E_WRONG_ROLE",
    "PSI_E_REVEAL_MISMATCH", "PSI_E_REVEAL_DISABLED", "PSI_E_POINT_LENGTH",
    "PSI_E_POINT_PREFIX", "PSI_E_POINT_X_RANGE", "PSI_E_POINT_NOT_ON_CURVE",
    "PSI_E_POINT_IDENTITY", "PSI_E_MSG_TRUNCATED", "PSI_E_MSG_VARINT", "PSI_E_MSG_TAG",
    "PSI_E_MSG_ONEOF_MISSING", "PSI_E_MSG_ONEOF_DOUBLED", "PSI_E_MSG_ELEMENT_SIZE",
    "PSI_E_MSG_TOO_LARGE", "PSI_E_FPR", "PSI_E_PARAM_OVERFLOW", "PSI_E_STRUCTURE",
    "PSI_E_GCS_HASH_RANGE", "PSI_E_GCS_DIV", "PSI_E_GCS_STREAM", "PSI_E_BLOOM_HASHES",
    "PSI_E_BLOOM_BITS", "PSI_E_SETUP_UNSORTED", "PSI_E_HASH_TO_CURVE",
    "PSI_E_THREAD", "PSI_E_SUITE", "PSI_E_SUITE_MISMATCH", "PSI_E_POINT_ENCODING",
    "PSI_E_IO", "PSI_E_SETUP_MISMATCH", "PSI_E_PAYLOAD_FORMAT", "PSI_E_PAYLOAD_TRUNCATED",
    "PSI_E_PAYLOAD_LENGTH", "PSI_E_PAYLOAD_ORDER", "PSI_E_PAYLOAD_AUTH",
    "PSI_E_PAYLOAD_DUPLICATE", "PSI_E_BLOOM_FORMAT",
};

_Static_assert(sizeof names / sizeof names[0] == sizeof messages / sizeof messages[0],
               "every error code has a name and a message");

static int known(int code)
{
    return code <= 0 && -(long)code < (long)(sizeof names / sizeof names[0]);
}

const char *psi_error_name(int code)
{
    return known(code) ? names[-code] : NULL;
}

const char *psi_strerror(int code)
{
    return known(code) ? messages[-code] : "unknown error";
}

/* ----------------------------------------------------------- details */

/* One per thread: the sharding layer's workers each record their own, and
 * it copies the failing shard's to the calling thread. */
static _Thread_local psi_error_detail detail = {PSI_OK, NULL, -1, -1};

void psi_detail_clear(void)
{
    detail = (psi_error_detail){PSI_OK, NULL, -1, -1};
}

int psi_fail_at(int code, const char *field, int64_t index, int64_t offset)
{
    detail = (psi_error_detail){code, field, index, offset};
    return code;
}

int psi_detail_rename(int code, const char *field)
{
    if (code != PSI_OK && detail.code == code)
        detail.field = field;
    return code;
}

void psi_error_detail_get(psi_error_detail *d)
{
    if (d != NULL)
        *d = detail;
}

void psi_error_detail_set(const psi_error_detail *d)
{
    if (d == NULL)
        psi_detail_clear();
    else
        detail = *d;
}

size_t psi_error_message(char *buf, size_t len, int code)
{
    char where[160] = "";
    const psi_error_detail *d = &detail;
    if (code != PSI_OK && d->code == code && d->field != NULL) {
        int w = snprintf(where, sizeof where, "%s", d->field);
        if (d->index >= 0 && w >= 0 && (size_t)w < sizeof where)
            w += snprintf(where + w, sizeof where - (size_t)w, "[%lld]", (long long)d->index);
        if (d->offset >= 0 && w >= 0 && (size_t)w < sizeof where)
            snprintf(where + w, sizeof where - (size_t)w, " (byte %lld)", (long long)d->offset);
    }
    int n = snprintf(buf, len, "%s%s%s", where, where[0] != '\0' ? ": " : "",
                     psi_strerror(code));
    return n < 0 ? 0 : (size_t)n;
}

const char *psi_version(void)
{
    return SHARDPSI_VERSION_STRING;
}

size_t psi_element_bytes(void)
{
    return PSI_ELEMENT_BYTES;
}

size_t psi_key_bytes(void)
{
    return PSI_KEY_BYTES;
}
