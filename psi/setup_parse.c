/* Reading a ServerSetup (PROTOCOL.md §10, §9.4, §16.1) into a psi_setup
 * for the matchers. */
#include <string.h>

#include "bloom.h"
#include "gcs.h"
#include "messages.h"
#include "setup.h"
#include "suite.h"

/* ----------------------------------------------------- ServerSetup in */

/* Two's complement reinterpretation, as protobuf reads int32 and int64;
 * a plain cast of an out-of-range value is implementation-defined in C. */
static int32_t as_int32(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) - INT32_MAX - 1;
}

static int64_t as_int64(uint64_t v)
{
    return v <= INT64_MAX ? (int64_t)v : (int64_t)(v - 0x8000000000000000u) - INT64_MAX - 1;
}

const char *const psi_setup_member_names[4] = {"ServerSetup", "ServerSetup.raw",
                                               "ServerSetup.gcs", "ServerSetup.bloom_filter"};
#define member_names psi_setup_member_names

/* Finds the one oneof member.  protobuf itself would merge repeats and let
 * a later member replace an earlier one; PROTOCOL.md refuses both, since a
 * conforming peer sends exactly one. */
static int find_member(psi_field *member, const uint8_t *msg, size_t skip, size_t len)
{
    const uint8_t *p = msg + skip, *end = msg + len, *at = p;
    psi_field f;
    int rc;
    *member = (psi_field){0};
    for (; (rc = psi_wire_next(&p, end, &f)) == PSI_OK; at = p) {
        if (f.number < SETUP_RAW || f.number > SETUP_BLOOM)
            continue;
        if (f.wire_type != PSI_WIRE_LEN)
            return psi_fail_at(PSI_E_MSG_TAG, member_names[f.number], -1, at - msg);
        if (member->number != 0)
            return psi_fail_at(PSI_E_MSG_ONEOF_DOUBLED, member_names[f.number], -1, at - msg);
        *member = f;
    }
    if (rc != 1)
        return psi_fail_at(rc, "ServerSetup", -1, p - msg);
    if (member->number == 0)
        return psi_fail_at(PSI_E_MSG_ONEOF_MISSING, "ServerSetup", -1, -1);
    return PSI_OK;
}

#define RAW_ELEMENTS_NAME PSI_RAW_ELEMENTS_NAME

/* Walks RawInfo: counts its elements into *n, and copies them to dst
 * unless dst is NULL (the counting pass validates every field).  msg is
 * the whole ServerSetup, for offsets in details. */
static int walk_raw(uint8_t *dst, size_t *n, size_t elen, const uint8_t *msg,
                    const uint8_t *data, size_t len)
{
    const uint8_t *p = data, *end = data + len, *at = data;
    psi_field f;
    int rc;
    *n = 0;
    for (; (rc = psi_wire_next(&p, end, &f)) == PSI_OK; at = p) {
        if (f.number != RAW_ELEMENTS)
            continue;
        rc = psi_msg_check_element(&f, elen);
        if (rc != PSI_OK)
            return psi_fail_at(rc, RAW_ELEMENTS_NAME, (int64_t)*n, at - msg);
        if (dst != NULL)
            memcpy(dst + *n * PSI_ELEMENT_BYTES, f.data, elen); // the slot is zeroed
        (*n)++;
    }
    if (rc == 1)
        return PSI_OK;
    const uint8_t *q = p;
    uint64_t tag;
    if (psi_wire_varint(&q, end, &tag) == PSI_OK && (tag >> 3) == RAW_ELEMENTS)
        return psi_fail_at(rc, RAW_ELEMENTS_NAME, (int64_t)*n, p - msg);
    return psi_fail_at(rc, "ServerSetup.raw", -1, p - msg);
}

static int parse_raw(psi_setup *s, const uint8_t *msg, const uint8_t *data, size_t len)
{
    size_t n;
    int rc;
    PSI_TRY(walk_raw(NULL, &n, s->elen, msg, data, len));
    if (n > SIZE_MAX / PSI_ELEMENT_BYTES)
        return PSI_E_MSG_TOO_LARGE;
    s->raw = psi_calloc(n, PSI_ELEMENT_BYTES);
    if (s->raw == NULL)
        return PSI_E_NOMEM;
    PSI_TRY(walk_raw(s->raw, &s->raw_count, s->elen, msg, data, len));
    for (size_t i = 1; i < n; i++) {
        const uint8_t *e = s->raw + i * PSI_ELEMENT_BYTES;
        if (memcmp(e - PSI_ELEMENT_BYTES, e, PSI_ELEMENT_BYTES) > 0)
            return psi_fail_at(PSI_E_SETUP_UNSORTED, RAW_ELEMENTS_NAME, (int64_t)i, -1);
    }
done:
    return rc;
}

/* Reads a known scalar field; the wrong wire type is refused, not skipped. */
static int read_varint(const psi_field *f, uint64_t *v)
{
    if (f->wire_type != PSI_WIRE_VARINT)
        return PSI_E_MSG_TAG;
    *v = f->varint;
    return PSI_OK;
}

/* Reads a singular `bytes` field; the last occurrence wins. */
static int read_bytes(const psi_field *f, const uint8_t **data, size_t *len)
{
    if (f->wire_type != PSI_WIRE_LEN)
        return PSI_E_MSG_TAG;
    *data = f->data;
    *len = f->len;
    return PSI_OK;
}

/* The fields of GCSInfo (1 div, 2 hash_range, 3 bits) and BloomFilterInfo
 * (1 num_hash_functions, 2 bits, 3 format: §7.4), by number, for details. */
static const char *const gcs_names[] = {"ServerSetup.gcs", "ServerSetup.gcs.div",
                                        "ServerSetup.gcs.hash_range", "ServerSetup.gcs.bits"};
static const char *const bloom_names[] = {"ServerSetup.bloom_filter",
                                          "ServerSetup.bloom_filter.num_hash_functions",
                                          "ServerSetup.bloom_filter.bits",
                                          "ServerSetup.bloom_filter.format"};

/* Records a failure while reading the member's field at `at`: a wrong wire
 * type of a known field, or a field the reader could not read. */
static int member_fail(int rc, const char *const *names, uint32_t n_names,
                       const uint8_t *msg, const uint8_t *at, const uint8_t *end)
{
    const uint8_t *q = at;
    uint64_t tag;
    uint32_t number = 0;
    if (psi_wire_varint(&q, end, &tag) == PSI_OK && (tag >> 3) < n_names)
        number = (uint32_t)(tag >> 3);
    return psi_fail_at(rc, names[number], -1, at - msg);
}

static int parse_gcs(psi_setup *s, const uint8_t *msg, const uint8_t *data, size_t len,
                     uint64_t max_values)
{
    const uint8_t *p = data, *end = data + len, *at = data, *bits = NULL;
    size_t bits_len = 0;
    uint64_t div = 0, hash_range = 0;
    psi_field f;
    int rc;
    for (; (rc = psi_wire_next(&p, end, &f)) == PSI_OK; at = p) {
        if (f.number == GCS_DIV)
            rc = read_varint(&f, &div);
        else if (f.number == GCS_HASH_RANGE)
            rc = read_varint(&f, &hash_range);
        else if (f.number == GCS_BITS)
            rc = read_bytes(&f, &bits, &bits_len);
        if (rc != PSI_OK)
            return member_fail(rc, gcs_names, 4, msg, at, end);
    }
    if (rc != 1)
        return member_fail(rc, gcs_names, 4, msg, p, end);
    s->gcs_div = as_int32(div);
    s->gcs_hash_range = as_int64(hash_range);
    s->gcs_bits_len = bits_len;
    // The decoder validates hash_range, div and the whole stream.
    return psi_gcs_decode_bounded(&s->gcs_values, &s->gcs_count, &s->gcs_end_bit, max_values,
                                  s->gcs_hash_range, s->gcs_div, bits, bits_len);
}

/* The probe format a Bloom setup of the project's own suites names (§7.4):
 * format 2 is the one this library writes and reads.  A setup without
 * the field is format 1, psi.js's probes, which these suites wrote before
 * the field existed: refused, like any other number, rather than read
 * with probes its writer did not use.  openmined-p256 has no such field
 * (psi.js skips it, and so does this parser). */
static int check_bloom_format(int suite, uint64_t format)
{
    if (psi_bloom_format_of(suite) == PSI_BLOOM_FORMAT_PSIJS ||
        format == PSI_BLOOM_FORMAT_DISTINCT)
        return PSI_OK;
    return psi_fail_at(PSI_E_BLOOM_FORMAT, bloom_names[PSI_BLOOM_FORMAT_FIELD], -1, -1);
}

static int parse_bloom(psi_setup *s, const uint8_t *msg, const uint8_t *data, size_t len)
{
    const uint8_t *p = data, *end = data + len, *at = data, *bits = NULL;
    size_t bits_len = 0;
    uint64_t k = 0, format = 0;
    psi_field f;
    /* the format field is named in the suites that have it */
    uint32_t names = s->suite == PSI_SUITE_OPENMINED_P256 ? 3 : 4;
    int rc;
    for (; (rc = psi_wire_next(&p, end, &f)) == PSI_OK; at = p) {
        if (f.number == BLOOM_HASHES)
            rc = read_varint(&f, &k);
        else if (f.number == BLOOM_BITS)
            rc = read_bytes(&f, &bits, &bits_len);
        else if (f.number == PSI_BLOOM_FORMAT_FIELD && s->suite != PSI_SUITE_OPENMINED_P256)
            rc = read_varint(&f, &format);
        if (rc != PSI_OK)
            return member_fail(rc, bloom_names, names, msg, at, end);
    }
    if (rc != 1)
        return member_fail(rc, bloom_names, names, msg, p, end);
    if ((rc = check_bloom_format(s->suite, format)) != PSI_OK)
        return rc;
    s->bloom_k = as_int32(k);
    // psi.js matches everything with k = 0 and aborts on empty bits (§9.3);
    // no fpr gives more than PSI_BLOOM_K_MAX (§7.3).  The int32 as protobuf
    // reads it is checked, as everywhere in this parser.
    if (s->bloom_k < 1 || s->bloom_k > PSI_BLOOM_K_MAX)
        return psi_fail_at(PSI_E_BLOOM_HASHES, bloom_names[BLOOM_HASHES], -1, -1);
    if (bits_len == 0)
        return psi_fail_at(PSI_E_BLOOM_BITS, bloom_names[BLOOM_BITS], -1, -1);
    s->bloom_bits = psi_alloc(bits_len);
    if (s->bloom_bits == NULL)
        return PSI_E_NOMEM;
    memcpy(s->bloom_bits, bits, bits_len);
    s->bloom_bytes = bits_len;
    return PSI_OK;
}

psi_setup *psi_setup_new(int suite)
{
    psi_setup *s = psi_calloc(1, sizeof *s);
    if (s != NULL) {
        s->suite = (psi_suite)suite;
        s->elen = psi_suite_element_bytes(suite);
    }
    return s;
}

int psi_setup_parse(psi_setup **out, int suite, const uint8_t *msg, size_t len)
{
    return psi_setup_parse_bounded(out, suite, msg, len, UINT64_MAX);
}

int psi_setup_parse_bounded(psi_setup **out, int suite, const uint8_t *msg, size_t len,
                            uint64_t max_gcs_values)
{
    psi_setup *s = NULL;
    psi_field member;
    size_t skip;
    int rc;
    PSI_CHECK_ARG(out != NULL);
    *out = NULL;
    PSI_CHECK_ARG(msg != NULL || len == 0);
    psi_detail_clear();
    if (msg == NULL)
        msg = psi_msg_empty;
    PSI_TRY(psi_msg_header(&skip, suite, msg, len, "ServerSetup"));
    PSI_TRY(find_member(&member, msg, skip, len));
    if ((s = psi_setup_new(suite)) == NULL) {
        rc = PSI_E_NOMEM;
        goto done;
    }
    if (member.number == SETUP_RAW) {
        s->structure = PSI_STRUCTURE_RAW;
        PSI_TRY(parse_raw(s, msg, member.data, member.len));
    } else if (member.number == SETUP_GCS) {
        s->structure = PSI_STRUCTURE_GCS;
        PSI_TRY(parse_gcs(s, msg, member.data, member.len, max_gcs_values));
    } else {
        s->structure = PSI_STRUCTURE_BLOOM_FILTER;
        PSI_TRY(parse_bloom(s, msg, member.data, member.len));
    }
    *out = s;
    s = NULL;
done:
    psi_setup_free(s);
    return rc;
}

void psi_setup_free(psi_setup *s)
{
    if (s == NULL)
        return;
    psi_free(s->raw);
    psi_free(s->gcs_values);
    psi_free(s->bloom_bits);
    psi_free(s);
}

psi_structure psi_setup_structure(const psi_setup *s)
{
    return s != NULL ? s->structure : PSI_STRUCTURE_RAW;
}

size_t psi_setup_raw_count(const psi_setup *s)
{
    return s != NULL ? s->raw_count : 0;
}

const uint8_t *psi_setup_raw_elements(const psi_setup *s)
{
    return s != NULL && s->raw_count > 0 ? s->raw : NULL;
}
