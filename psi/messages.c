/* The three psi_proto messages (PROTOCOL.md §10): Request, Response and
 * ServerSetup.  Encoding is the canonical proto3 form psi.js 2.0.6 emits,
 * so outputs match it byte for byte; decoding accepts whatever protobuf
 * accepts except where PROTOCOL.md asks for a stricter rule (element size,
 * a single oneof member, sorted raw elements). */
#include <string.h>

#include "bloom.h"
#include "gcs.h"
#include "setup.h"
#include "wire.h"

/* Field numbers of psi.proto (§10). */
enum {
    REQUEST_REVEAL = 1, REQUEST_ELEMENTS = 2,
    RESPONSE_ELEMENTS = 1,
    SETUP_RAW = 1, SETUP_GCS = 2, SETUP_BLOOM = 3,
    RAW_ELEMENTS = 1,
    GCS_DIV = 1, GCS_HASH_RANGE = 2, GCS_BITS = 3,
    BLOOM_HASHES = 1, BLOOM_BITS = 2
};

/* A tag and a worst-case (10-byte) varint: the most a scalar field takes. */
#define SCALAR_FIELD_MAX 11

/* Stands in for a NULL message of length 0, so that `msg + len` is never
 * computed on a null pointer. */
static const uint8_t empty_msg[1];

/* ---------------------------------------------------------------- sizes */

size_t psi_request_bound(size_t n)
{
    // The reveal flag, when set, takes 2 bytes (08 01) before the elements.
    if (n > (SIZE_MAX - 2) / PSI_ELEMENT_WIRE_BYTES)
        return 0;
    return 2 + n * PSI_ELEMENT_WIRE_BYTES;
}

size_t psi_response_bound(size_t n)
{
    if (n > SIZE_MAX / PSI_ELEMENT_WIRE_BYTES)
        return 0;
    return n * PSI_ELEMENT_WIRE_BYTES;
}

size_t psi_message_element_bound(size_t msg_len)
{
    return msg_len / PSI_ELEMENT_WIRE_BYTES;
}

/* ------------------------------------------------------------- writing */

/* Writes each element as its own length-delimited field, as protobuf does
 * for `repeated bytes` (never packed). */
static void put_elements(psi_wbuf *w, uint32_t field, const uint8_t *elements, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        psi_wbuf_tag(w, field, PSI_WIRE_LEN);
        psi_wbuf_varint(w, PSI_ELEMENT_BYTES);
        psi_wbuf_bytes(w, elements + i * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES);
    }
}

/* proto3 implicit presence: zero is not written.  Negative int32 and int64
 * values are sign-extended to 64 bits, as protobuf does. */
static void put_int(psi_wbuf *w, uint32_t field, int64_t v)
{
    if (v == 0)
        return;
    psi_wbuf_tag(w, field, PSI_WIRE_VARINT);
    psi_wbuf_varint(w, (uint64_t)v);
}

/* A singular proto3 `bytes` field: omitted when empty. */
static void put_bytes(psi_wbuf *w, uint32_t field, const uint8_t *data, size_t len)
{
    if (len == 0)
        return;
    psi_wbuf_tag(w, field, PSI_WIRE_LEN);
    psi_wbuf_varint(w, len);
    psi_wbuf_bytes(w, data, len);
}

typedef void (*writer_fn)(psi_wbuf *w, const void *ctx);

/* Runs `fn` once only counting, then for real if the message fits, so a
 * call that fails leaves `out` untouched. */
static int write_message(uint8_t *out, size_t *out_len, size_t cap, writer_fn fn,
                         const void *ctx)
{
    psi_wbuf w = {NULL, 0, 0};
    fn(&w, ctx);
    if (w.len == SIZE_MAX)
        return PSI_E_MSG_TOO_LARGE;
    if (w.len > cap)
        return PSI_E_BUFFER_TOO_SMALL;
    w = (psi_wbuf){out, cap, 0};
    fn(&w, ctx);
    *out_len = w.len;
    return PSI_OK;
}

/* Clears the output as the header's rules require and checks the buffer. */
static int take_output(uint8_t *out, size_t *out_len, size_t *cap)
{
    PSI_CHECK_ARG(out_len != NULL);
    *cap = *out_len;
    *out_len = 0;
    PSI_CHECK_ARG(out != NULL || *cap == 0);
    return PSI_OK;
}

/* ---------------------------------------------- Request and Response */

typedef struct elements_msg {
    int reveal;
    uint32_t field;
    const uint8_t *elements;
    size_t n;
} elements_msg;

static void put_elements_msg(psi_wbuf *w, const void *ctx)
{
    const elements_msg *m = ctx;
    put_int(w, REQUEST_REVEAL, m->reveal); // 0 for a Response: never written
    put_elements(w, m->field, m->elements, m->n);
}

int psi_request_encode(uint8_t *out, size_t *out_len, int reveal, const uint8_t *elements,
                       size_t n)
{
    size_t cap;
    int rc = take_output(out, out_len, &cap);
    if (rc != PSI_OK)
        return rc;
    PSI_CHECK_ARG(reveal == 0 || reveal == 1);
    PSI_CHECK_ARG(elements != NULL || n == 0);
    PSI_CHECK_ARG(n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    elements_msg m = {reveal, REQUEST_ELEMENTS, elements, n};
    return write_message(out, out_len, cap, put_elements_msg, &m);
}

int psi_response_encode(uint8_t *out, size_t *out_len, const uint8_t *elements, size_t n)
{
    size_t cap;
    int rc = take_output(out, out_len, &cap);
    if (rc != PSI_OK)
        return rc;
    PSI_CHECK_ARG(elements != NULL || n == 0);
    PSI_CHECK_ARG(n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    elements_msg m = {0, RESPONSE_ELEMENTS, elements, n};
    return write_message(out, out_len, cap, put_elements_msg, &m);
}

/* An encrypted element must be a length-delimited field of exactly 33
 * bytes; points themselves are checked only when used. */
static int check_element(const psi_field *f)
{
    if (f->wire_type != PSI_WIRE_LEN)
        return PSI_E_MSG_TAG;
    return f->len == PSI_ELEMENT_BYTES ? PSI_OK : PSI_E_MSG_ELEMENT_SIZE;
}

/* Names for error details: a message and its element field. */
typedef struct msg_names {
    const char *message;  /* "Request" */
    const char *elements; /* "Request.encrypted_elements" */
    const char *scalar;   /* "Request.reveal_intersection", or NULL */
} msg_names;

static const msg_names request_names = {"Request", "Request.encrypted_elements",
                                        "Request.reveal_intersection"};
static const msg_names response_names = {"Response", "Response.encrypted_elements", NULL};

/* Records a field reader's failure at `at` (the start of the field that
 * could not be read).  When the tag itself is readable and names the
 * element field (or the reveal flag), the detail names that field, with
 * the element's index. */
static int wire_fail(int rc, const uint8_t *msg, const uint8_t *at, const uint8_t *end,
                     uint32_t elements_field, const msg_names *names, size_t index)
{
    const uint8_t *q = at;
    uint64_t tag = 0;
    int tag_read = psi_wire_varint(&q, end, &tag) == PSI_OK;
    if (tag_read && (tag >> 3) == elements_field)
        return psi_fail_at(rc, names->elements, (int64_t)index, at - msg);
    if (tag_read && names->scalar != NULL && (tag >> 3) == REQUEST_REVEAL)
        return psi_fail_at(rc, names->scalar, -1, at - msg);
    return psi_fail_at(rc, names->message, -1, at - msg);
}

/* Decodes a Request (reveal_field 1) or a Response (reveal_field 0, which
 * no field has) into at most `cap` elements.  On failure the elements
 * written so far are wiped and *count and *reveal stay 0. */
static int decode_elements(uint8_t *elements, size_t cap, size_t *count, int *reveal,
                           uint32_t reveal_field, uint32_t elements_field,
                           const msg_names *names, const uint8_t *msg, size_t len)
{
    const uint8_t *p = msg, *end = msg + len, *at = msg;
    size_t n = 0;
    int flag = 0;
    psi_field f;
    int rc;
    while ((rc = psi_wire_next(&p, end, &f)) == PSI_OK) {
        if (f.number == reveal_field) {
            if (f.wire_type != PSI_WIRE_VARINT) {
                rc = psi_fail_at(PSI_E_MSG_TAG, names->scalar, -1, at - msg);
                break;
            }
            flag = f.varint != 0; // last occurrence wins, as in protobuf
        } else if (f.number == elements_field) {
            rc = check_element(&f);
            if (rc != PSI_OK) {
                psi_fail_at(rc, names->elements, (int64_t)n, at - msg);
                break;
            }
            if (n == cap) {
                rc = PSI_E_BUFFER_TOO_SMALL;
                break;
            }
            memcpy(elements + n * PSI_ELEMENT_BYTES, f.data, PSI_ELEMENT_BYTES);
            n++;
        }
        at = p;
    }
    // The reader failed: it leaves p at the field it could not read (every
    // other failure above breaks out after p moved past a whole field).
    if (rc < 0 && at == p)
        wire_fail(rc, msg, p, end, elements_field, names, n);
    if (rc != 1) {
        if (n != 0)
            memset(elements, 0, n * PSI_ELEMENT_BYTES);
        return rc;
    }
    *count = n;
    *reveal = flag;
    return PSI_OK;
}

int psi_request_decode(uint8_t *elements, size_t *count, int *reveal, const uint8_t *msg,
                       size_t len)
{
    PSI_CHECK_ARG(count != NULL);
    size_t cap = *count;
    *count = 0;
    PSI_CHECK_ARG(reveal != NULL);
    *reveal = 0;
    PSI_CHECK_ARG(elements != NULL || cap == 0);
    PSI_CHECK_ARG(cap <= SIZE_MAX / PSI_ELEMENT_BYTES);
    PSI_CHECK_ARG(msg != NULL || len == 0);
    psi_detail_clear();
    return decode_elements(elements, cap, count, reveal, REQUEST_REVEAL, REQUEST_ELEMENTS,
                           &request_names, msg != NULL ? msg : empty_msg, len);
}

int psi_response_decode(uint8_t *elements, size_t *count, const uint8_t *msg, size_t len)
{
    int unused_reveal;
    PSI_CHECK_ARG(count != NULL);
    size_t cap = *count;
    *count = 0;
    PSI_CHECK_ARG(elements != NULL || cap == 0);
    PSI_CHECK_ARG(cap <= SIZE_MAX / PSI_ELEMENT_BYTES);
    PSI_CHECK_ARG(msg != NULL || len == 0);
    psi_detail_clear();
    return decode_elements(elements, cap, count, &unused_reveal, 0, RESPONSE_ELEMENTS,
                           &response_names, msg != NULL ? msg : empty_msg, len);
}

/* ---------------------------------------------------- ServerSetup out */

/* The contents of one ServerSetup oneof member. */
typedef struct setup_body {
    psi_structure structure;
    const uint8_t *elements; /* raw */
    size_t n;
    int32_t div; /* GCS */
    int64_t hash_range;
    int32_t k; /* Bloom */
    const uint8_t *bits; /* GCS and Bloom */
    size_t bits_len;
} setup_body;

static void put_body(psi_wbuf *w, const setup_body *b)
{
    switch (b->structure) {
    case PSI_STRUCTURE_RAW:
        put_elements(w, RAW_ELEMENTS, b->elements, b->n);
        break;
    case PSI_STRUCTURE_GCS:
        put_int(w, GCS_DIV, b->div);
        put_int(w, GCS_HASH_RANGE, b->hash_range);
        put_bytes(w, GCS_BITS, b->bits, b->bits_len);
        break;
    default:
        put_int(w, BLOOM_HASHES, b->k);
        put_bytes(w, BLOOM_BITS, b->bits, b->bits_len);
        break;
    }
}

/* The member is always written, even when empty (`0a 00`, §10). */
static void put_setup(psi_wbuf *w, const void *ctx)
{
    const setup_body *b = ctx;
    psi_wbuf body_size = {NULL, 0, 0};
    put_body(&body_size, b);
    // The oneof field numbers are the structure values plus one.
    psi_wbuf_tag(w, (uint32_t)b->structure + 1, PSI_WIRE_LEN);
    psi_wbuf_varint(w, body_size.len);
    put_body(w, b);
}

static int encode_raw(uint8_t *out, size_t *out_len, size_t cap, const uint8_t *elements,
                      size_t n)
{
    for (size_t i = 1; i < n; i++) {
        const uint8_t *e = elements + i * PSI_ELEMENT_BYTES;
        if (memcmp(e - PSI_ELEMENT_BYTES, e, PSI_ELEMENT_BYTES) > 0)
            return psi_fail_at(PSI_E_SETUP_UNSORTED, "elements", (int64_t)i, -1);
    }
    setup_body b = {.structure = PSI_STRUCTURE_RAW, .elements = elements, .n = n};
    return write_message(out, out_len, cap, put_setup, &b);
}

static int encode_gcs(uint8_t *out, size_t *out_len, size_t cap, const psi_setup_params *p,
                      const uint8_t *elements, size_t n)
{
    setup_body b = {.structure = PSI_STRUCTURE_GCS};
    uint8_t *bits = NULL;
    size_t bound;
    int rc;
    PSI_TRY(psi_gcs_hash_range(&b.hash_range, p->fpr, p->num_client_inputs, n));
    PSI_TRY(psi_gcs_bits_bound(&bound, b.hash_range, n));
    bits = psi_alloc(bound);
    if (bits == NULL) {
        rc = PSI_E_NOMEM;
        goto done;
    }
    b.bits_len = bound;
    PSI_TRY(psi_gcs_build(&b.div, bits, &b.bits_len, b.hash_range, elements, n));
    b.bits = bits;
    rc = write_message(out, out_len, cap, put_setup, &b);
done:
    psi_free(bits); // public: the stream is what gets sent
    return rc;
}

static int encode_bloom(uint8_t *out, size_t *out_len, size_t cap, const psi_setup_params *p,
                        const uint8_t *elements, size_t n)
{
    setup_body b = {.structure = PSI_STRUCTURE_BLOOM_FILTER};
    uint8_t *bits = NULL;
    int rc;
    PSI_TRY(psi_bloom_params(&b.k, &b.bits_len, p->fpr, p->num_client_inputs, n));
    bits = psi_calloc(b.bits_len, 1);
    if (bits == NULL) {
        rc = PSI_E_NOMEM;
        goto done;
    }
    psi_bloom_build(bits, b.bits_len, b.k, elements, n);
    b.bits = bits;
    rc = write_message(out, out_len, cap, put_setup, &b);
done:
    psi_free(bits);
    return rc;
}

int psi_setup_encode(uint8_t *out, size_t *out_len, const psi_setup_params *p,
                     const uint8_t *elements, size_t n)
{
    size_t cap;
    int rc = take_output(out, out_len, &cap);
    if (rc != PSI_OK)
        return rc;
    PSI_CHECK_ARG(p != NULL);
    PSI_CHECK_ARG(elements != NULL || n == 0);
    PSI_CHECK_ARG(n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    psi_detail_clear();
    switch (p->structure) {
    case PSI_STRUCTURE_RAW:
        return encode_raw(out, out_len, cap, elements, n);
    case PSI_STRUCTURE_GCS:
        return encode_gcs(out, out_len, cap, p, elements, n);
    case PSI_STRUCTURE_BLOOM_FILTER:
        return encode_bloom(out, out_len, cap, p, elements, n);
    default:
        return psi_fail_at(PSI_E_STRUCTURE, "params.structure", -1, -1);
    }
}

/* Adds `extra` to *total, or reports the overflow. */
static int add_size(size_t *total, size_t extra)
{
    if (extra > SIZE_MAX - *total)
        return PSI_E_PARAM_OVERFLOW;
    *total += extra;
    return PSI_OK;
}

/* The size of the oneof member's contents, at most. */
static int body_bound(size_t *body, const psi_setup_params *p, size_t n)
{
    int64_t hash_range;
    int32_t k;
    size_t bits;
    int rc;
    switch (p->structure) {
    case PSI_STRUCTURE_RAW:
        if (n > SIZE_MAX / PSI_ELEMENT_WIRE_BYTES)
            return PSI_E_PARAM_OVERFLOW;
        *body = n * PSI_ELEMENT_WIRE_BYTES;
        return PSI_OK;
    case PSI_STRUCTURE_GCS:
        PSI_TRY(psi_gcs_hash_range(&hash_range, p->fpr, p->num_client_inputs, n));
        PSI_TRY(psi_gcs_bits_bound(&bits, hash_range, n));
        *body = 3 * SCALAR_FIELD_MAX; // div, hash_range, and the bits' tag and length
        return add_size(body, bits);
    case PSI_STRUCTURE_BLOOM_FILTER:
        PSI_TRY(psi_bloom_params(&k, &bits, p->fpr, p->num_client_inputs, n));
        *body = 2 * SCALAR_FIELD_MAX; // num_hash_functions, and the bits' tag and length
        return add_size(body, bits);
    default:
        return psi_fail_at(PSI_E_STRUCTURE, "params.structure", -1, -1);
    }
done:
    return rc;
}

int psi_setup_bound(size_t *bound, const psi_setup_params *p, size_t n_server)
{
    size_t body = 0, total;
    int rc;
    PSI_CHECK_ARG(bound != NULL);
    *bound = 0;
    PSI_CHECK_ARG(p != NULL);
    psi_detail_clear();
    PSI_TRY(body_bound(&body, p, n_server));
    // Exact for raw: the oneof tag, the body length, the body.
    total = 1 + psi_varint_size(body);
    PSI_TRY(add_size(&total, body));
    *bound = total;
done:
    return rc;
}

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

/* Field names for error details, by oneof member. */
static const char *const member_names[] = {"ServerSetup", "ServerSetup.raw",
                                           "ServerSetup.gcs", "ServerSetup.bloom_filter"};

/* Finds the one oneof member.  protobuf itself would merge repeats and let
 * a later member replace an earlier one; PROTOCOL.md refuses both, since a
 * conforming peer sends exactly one. */
static int find_member(psi_field *member, const uint8_t *msg, size_t len)
{
    const uint8_t *p = msg, *end = msg + len, *at = msg;
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

#define RAW_ELEMENTS_NAME "ServerSetup.raw.encrypted_elements"

/* Walks RawInfo: counts its elements into *n, and copies them to dst
 * unless dst is NULL (the counting pass validates every field).  msg is
 * the whole ServerSetup, for offsets in details. */
static int walk_raw(uint8_t *dst, size_t *n, const uint8_t *msg, const uint8_t *data,
                    size_t len)
{
    const uint8_t *p = data, *end = data + len, *at = data;
    psi_field f;
    int rc;
    *n = 0;
    for (; (rc = psi_wire_next(&p, end, &f)) == PSI_OK; at = p) {
        if (f.number != RAW_ELEMENTS)
            continue;
        rc = check_element(&f);
        if (rc != PSI_OK)
            return psi_fail_at(rc, RAW_ELEMENTS_NAME, (int64_t)*n, at - msg);
        if (dst != NULL)
            memcpy(dst + *n * PSI_ELEMENT_BYTES, f.data, PSI_ELEMENT_BYTES);
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
    PSI_TRY(walk_raw(NULL, &n, msg, data, len));
    if (n > SIZE_MAX / PSI_ELEMENT_BYTES)
        return PSI_E_MSG_TOO_LARGE;
    s->raw = psi_alloc(n * PSI_ELEMENT_BYTES);
    if (s->raw == NULL)
        return PSI_E_NOMEM;
    PSI_TRY(walk_raw(s->raw, &s->raw_count, msg, data, len));
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
 * (1 num_hash_functions, 2 bits), by number, for details. */
static const char *const gcs_names[] = {"ServerSetup.gcs", "ServerSetup.gcs.div",
                                        "ServerSetup.gcs.hash_range", "ServerSetup.gcs.bits"};
static const char *const bloom_names[] = {"ServerSetup.bloom_filter",
                                          "ServerSetup.bloom_filter.num_hash_functions",
                                          "ServerSetup.bloom_filter.bits"};

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

static int parse_gcs(psi_setup *s, const uint8_t *msg, const uint8_t *data, size_t len)
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
    // psi_gcs_decode validates hash_range, div and the whole stream.
    return psi_gcs_decode(&s->gcs_values, &s->gcs_count, s->gcs_hash_range, s->gcs_div,
                          bits, bits_len);
}

static int parse_bloom(psi_setup *s, const uint8_t *msg, const uint8_t *data, size_t len)
{
    const uint8_t *p = data, *end = data + len, *at = data, *bits = NULL;
    size_t bits_len = 0;
    uint64_t k = 0;
    psi_field f;
    int rc;
    for (; (rc = psi_wire_next(&p, end, &f)) == PSI_OK; at = p) {
        if (f.number == BLOOM_HASHES)
            rc = read_varint(&f, &k);
        else if (f.number == BLOOM_BITS)
            rc = read_bytes(&f, &bits, &bits_len);
        if (rc != PSI_OK)
            return member_fail(rc, bloom_names, 3, msg, at, end);
    }
    if (rc != 1)
        return member_fail(rc, bloom_names, 3, msg, p, end);
    s->bloom_k = as_int32(k);
    // psi.js matches everything with k = 0 and aborts on empty bits (§9.3).
    if (s->bloom_k < 1)
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

int psi_setup_parse(psi_setup **out, const uint8_t *msg, size_t len)
{
    psi_setup *s = NULL;
    psi_field member;
    int rc;
    PSI_CHECK_ARG(out != NULL);
    *out = NULL;
    PSI_CHECK_ARG(msg != NULL || len == 0);
    psi_detail_clear();
    if (msg == NULL)
        msg = empty_msg;
    PSI_TRY(find_member(&member, msg, len));
    s = psi_calloc(1, sizeof *s);
    if (s == NULL) {
        rc = PSI_E_NOMEM;
        goto done;
    }
    if (member.number == SETUP_RAW) {
        s->structure = PSI_STRUCTURE_RAW;
        PSI_TRY(parse_raw(s, msg, member.data, member.len));
    } else if (member.number == SETUP_GCS) {
        s->structure = PSI_STRUCTURE_GCS;
        PSI_TRY(parse_gcs(s, msg, member.data, member.len));
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
