/* The three psi_proto messages (PROTOCOL.md §10): Request, Response and
 * ServerSetup.  Encoding is the canonical proto3 form psi.js 2.0.6 emits,
 * so outputs match it byte for byte; decoding accepts whatever protobuf
 * accepts except where PROTOCOL.md asks for a stricter rule (element size,
 * a single oneof member, sorted raw elements).  The other suites' messages
 * are the same with a suite header in front and their own element length
 * (§16.1).  This file holds the sizes, the whole-message calls and the
 * GCS and Bloom setups; a Request, a Response and a raw setup are written
 * by chunks.c (a head and element records), Request and Response are read
 * by reader.c, ServerSetup by setup_parse.c. */
#include <string.h>

#include "codec.h"
#include "bloom.h"
#include "gcs.h"
#include "messages.h"
#include "reader.h"
#include "setup.h"
#include "suite.h"

/* A tag and a worst-case (10-byte) varint: the most a scalar field takes. */
#define SCALAR_FIELD_MAX 11

const uint8_t psi_msg_empty[1];

/* ---------------------------------------------------------------- sizes */

/* The suite header's length and the bytes one element takes in a message
 * (tag, one-byte length, element): 0 and 35 for the OpenMined suite. */
static size_t header_bytes(int suite)
{
    return suite == PSI_SUITE_OPENMINED_P256 ? 0 : PSI_SUITE_HEADER_BYTES;
}

static size_t element_wire_bytes(int suite)
{
    return 2 + psi_suite_element_bytes(suite);
}

/* fixed + n * each, or 0 on overflow. */
static size_t sized(size_t fixed, size_t n, size_t each)
{
    if (n > (SIZE_MAX - fixed) / each)
        return 0;
    return fixed + n * each;
}

size_t psi_request_bound(int suite, size_t n)
{
    if (!psi_suite_known(suite))
        return 0;
    // The reveal flag, when set, takes 2 bytes (08 01) before the elements.
    return sized(header_bytes(suite) + 2, n, element_wire_bytes(suite));
}

size_t psi_response_bound(int suite, size_t n)
{
    if (!psi_suite_known(suite))
        return 0;
    return sized(header_bytes(suite), n, element_wire_bytes(suite));
}

size_t psi_message_element_bound(int suite, size_t msg_len)
{
    if (!psi_suite_known(suite))
        return 0;
    return msg_len / element_wire_bytes(suite);
}

/* ------------------------------------------------------ suite header */

int psi_msg_header(size_t *skip, int suite, const uint8_t *msg, size_t len, const char *name)
{
    *skip = 0;
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    // The OpenMined suite has no header; a message that starts with the
    // header's tag is another suite's (and no valid protobuf either).
    if (suite == PSI_SUITE_OPENMINED_P256)
        return len > 0 && msg[0] == PSI_SUITE_HEADER_TAG
                   ? psi_fail_at(PSI_E_SUITE_MISMATCH, name, -1, 0)
                   : PSI_OK;
    if (len < PSI_SUITE_HEADER_BYTES || msg[0] != PSI_SUITE_HEADER_TAG || msg[1] != suite)
        return psi_fail_at(PSI_E_SUITE_MISMATCH, name, -1, 0);
    *skip = PSI_SUITE_HEADER_BYTES;
    return PSI_OK;
}

/* ------------------------------------------------------------- writing */

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

int psi_msg_take_output(uint8_t *out, size_t *out_len, size_t *cap)
{
    PSI_CHECK_ARG(out_len != NULL);
    *cap = *out_len;
    *out_len = 0;
    PSI_CHECK_ARG(out != NULL || *cap == 0);
    return PSI_OK;
}

/* ---------------------------------------------- Request and Response */

/* Both are a head and element records (chunks.c): one encoder. */
int psi_request_encode(uint8_t *out, size_t *out_len, int suite, int reveal,
                             const uint8_t *elements, size_t n)
{
    size_t cap;
    int rc = psi_msg_take_output(out, out_len, &cap);
    if (rc != PSI_OK)
        return rc;
    PSI_CHECK_ARG(reveal == 0 || reveal == 1);
    PSI_CHECK_ARG(elements != NULL || n == 0);
    PSI_CHECK_ARG(n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    return psi_msg_encode(out, out_len, cap, suite, PSI_MESSAGE_REQUEST, reveal, elements, n);
}

int psi_response_encode(uint8_t *out, size_t *out_len, int suite,
                              const uint8_t *elements, size_t n)
{
    size_t cap;
    int rc = psi_msg_take_output(out, out_len, &cap);
    if (rc != PSI_OK)
        return rc;
    PSI_CHECK_ARG(elements != NULL || n == 0);
    PSI_CHECK_ARG(n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    return psi_msg_encode(out, out_len, cap, suite, PSI_MESSAGE_RESPONSE, 0, elements, n);
}

int psi_msg_check_element(const psi_field *f, size_t elen)
{
    if (f->wire_type != PSI_WIRE_LEN)
        return PSI_E_MSG_TAG;
    return f->len == elen ? PSI_OK : PSI_E_MSG_ELEMENT_SIZE;
}

/* Decodes a whole Request or Response into at most `cap` elements: the
 * reader of reader.c run over the whole message, so a message read whole
 * and one fed in pieces give the same elements, codes and details.  On
 * failure the elements written are wiped and *count and *reveal stay 0. */
static int decode_elements(uint8_t *elements, size_t cap, size_t *count, int *reveal,
                           int suite, psi_message_kind kind, const uint8_t *msg, size_t len)
{
    psi_reader r;
    size_t n = 0, used = 0;
    uint64_t total;
    int rc = psi_reader_init(&r, suite, kind);
    if (rc != PSI_OK)
        return rc;
    rc = psi_reader_run(&r, elements, cap, &n, &used, msg, len);
    // The reader stops early only at an element it has no room for.
    if (rc == PSI_OK && used < len)
        rc = PSI_E_BUFFER_TOO_SMALL;
    if (rc == PSI_OK)
        rc = psi_reader_finish(&r, reveal, &total);
    psi_reader_wipe(&r);
    if (rc != PSI_OK) {
        if (n != 0)
            memset(elements, 0, n * PSI_ELEMENT_BYTES);
        *reveal = 0;
        return rc;
    }
    *count = n;
    return PSI_OK;
}

int psi_request_decode(uint8_t *elements, size_t *count, int *reveal, int suite,
                             const uint8_t *msg, size_t len)
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
    return decode_elements(elements, cap, count, reveal, suite, PSI_MESSAGE_REQUEST,
                           msg != NULL ? msg : psi_msg_empty, len);
}

int psi_response_decode(uint8_t *elements, size_t *count, int suite, const uint8_t *msg,
                              size_t len)
{
    int unused_reveal;
    PSI_CHECK_ARG(count != NULL);
    size_t cap = *count;
    *count = 0;
    PSI_CHECK_ARG(elements != NULL || cap == 0);
    PSI_CHECK_ARG(cap <= SIZE_MAX / PSI_ELEMENT_BYTES);
    PSI_CHECK_ARG(msg != NULL || len == 0);
    psi_detail_clear();
    return decode_elements(elements, cap, count, &unused_reveal, suite, PSI_MESSAGE_RESPONSE,
                           msg != NULL ? msg : psi_msg_empty, len);
}

/* ---------------------------------------------------- ServerSetup out */

/* The contents of a GCS or Bloom member (a raw setup is a head and
 * element records, chunks.c). */
typedef struct setup_body {
    int suite;
    psi_structure structure;
    int32_t div; /* GCS */
    int64_t hash_range;
    int32_t k; /* Bloom */
    const uint8_t *bits; /* GCS and Bloom */
    size_t bits_len;
} setup_body;

/* The bits field is the body's last: with payload 0 everything but the
 * bits themselves is written (psi_setup_built_head). */
static void put_body(psi_wbuf *w, const setup_body *b, int payload)
{
    uint32_t field = b->structure == PSI_STRUCTURE_GCS ? GCS_BITS : BLOOM_BITS;
    if (b->structure == PSI_STRUCTURE_GCS) {
        put_int(w, GCS_DIV, b->div);
        put_int(w, GCS_HASH_RANGE, b->hash_range);
    } else {
        put_int(w, BLOOM_HASHES, b->k);
        // The project's own suites name their probe format (§7.4) before
        // the bits, so that the bits stay the last field.
        if (psi_bloom_format_of(b->suite) == PSI_BLOOM_FORMAT_DISTINCT)
            put_int(w, PSI_BLOOM_FORMAT_FIELD, PSI_BLOOM_FORMAT_DISTINCT);
    }
    if (payload) {
        put_bytes(w, field, b->bits, b->bits_len);
    } else if (b->bits_len > 0) {
        psi_wbuf_tag(w, field, PSI_WIRE_LEN);
        psi_wbuf_varint(w, b->bits_len);
    }
}

/* The member is always written, even when empty (`0a 00`, §10). */
static void put_setup_part(psi_wbuf *w, const setup_body *b, int payload)
{
    psi_wbuf body_size = {NULL, 0, 0};
    put_body(&body_size, b, 1);
    psi_msg_put_header(w, b->suite);
    // The oneof field numbers are the structure values plus one.
    psi_wbuf_tag(w, (uint32_t)b->structure + 1, PSI_WIRE_LEN);
    psi_wbuf_varint(w, body_size.len);
    put_body(w, b, payload);
}

static void put_setup(psi_wbuf *w, const void *ctx)
{
    put_setup_part(w, ctx, 1);
}

int psi_setup_built_head(uint8_t *head, size_t *head_len, int suite, psi_structure structure,
                         int32_t div_or_k, int64_t hash_range, size_t bits_len)
{
    setup_body b = {.suite = suite, .structure = structure, .bits_len = bits_len};
    PSI_CHECK_ARG(structure == PSI_STRUCTURE_GCS || structure == PSI_STRUCTURE_BLOOM_FILTER);
    if (structure == PSI_STRUCTURE_GCS) {
        b.div = div_or_k;
        b.hash_range = hash_range;
    } else {
        b.k = div_or_k;
    }
    psi_wbuf w = {head, *head_len, 0};
    put_setup_part(&w, &b, 0);
    if (w.len > *head_len)
        return PSI_E_BUFFER_TOO_SMALL;
    *head_len = w.len;
    return PSI_OK;
}

int psi_setup_canonical_len(size_t *len, const psi_setup *s)
{
    *len = 0;
    if (s->structure == PSI_STRUCTURE_RAW) {
        uint8_t head[PSI_MESSAGE_HEAD_MAX];
        size_t head_len = sizeof head, each = element_wire_bytes(s->suite);
        int rc = psi_message_head(head, &head_len, s->suite, PSI_MESSAGE_SETUP_RAW, 0,
                                  s->raw_count);
        if (rc != PSI_OK)
            return rc;
        if (s->raw_count > (SIZE_MAX - head_len) / each)
            return PSI_E_MSG_TOO_LARGE;
        *len = head_len + s->raw_count * each;
        return PSI_OK;
    }
    /* Counted only: a writer of capacity 0 copies nothing, so the bits
     * need not be at hand. */
    setup_body b = {.suite = s->suite, .structure = s->structure};
    if (s->structure == PSI_STRUCTURE_GCS) {
        b.div = s->gcs_div;
        b.hash_range = s->gcs_hash_range;
        b.bits_len = s->gcs_bits_len;
    } else {
        b.k = s->bloom_k;
        b.bits_len = s->bloom_bytes;
    }
    psi_wbuf w = {NULL, 0, 0};
    put_setup(&w, &b);
    if (w.len == SIZE_MAX)
        return PSI_E_MSG_TOO_LARGE;
    *len = w.len;
    return PSI_OK;
}

static int encode_raw(uint8_t *out, size_t *out_len, size_t cap, int suite,
                      const uint8_t *elements, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        const uint8_t *e = elements + i * PSI_ELEMENT_BYTES;
        if (memcmp(e - PSI_ELEMENT_BYTES, e, PSI_ELEMENT_BYTES) > 0)
            return psi_fail_at(PSI_E_SETUP_UNSORTED, "elements", (int64_t)i, -1);
    }
    return psi_msg_encode(out, out_len, cap, suite, PSI_MESSAGE_SETUP_RAW, 0, elements, n);
}

static int encode_gcs(uint8_t *out, size_t *out_len, size_t cap, int suite,
                      const psi_setup_params *p, const uint8_t *elements, size_t n)
{
    setup_body b = {.suite = suite, .structure = PSI_STRUCTURE_GCS};
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
    PSI_TRY(psi_gcs_build(&b.div, bits, &b.bits_len, b.hash_range, elements, n,
                          psi_suite_element_bytes(suite)));
    b.bits = bits;
    rc = write_message(out, out_len, cap, put_setup, &b);
done:
    psi_free(bits); // public: the stream is what gets sent
    return rc;
}

static int encode_bloom(uint8_t *out, size_t *out_len, size_t cap, int suite,
                        const psi_setup_params *p, const uint8_t *elements, size_t n)
{
    setup_body b = {.suite = suite, .structure = PSI_STRUCTURE_BLOOM_FILTER};
    uint8_t *bits = NULL;
    int rc;
    PSI_TRY(psi_bloom_params(&b.k, &b.bits_len, p->fpr, p->num_client_inputs, n));
    bits = psi_calloc(b.bits_len, 1);
    if (bits == NULL) {
        rc = PSI_E_NOMEM;
        goto done;
    }
    PSI_TRY(psi_bloom_build(bits, b.bits_len, b.k, psi_bloom_format_of(suite), elements, n,
                            psi_suite_element_bytes(suite)));
    b.bits = bits;
    rc = write_message(out, out_len, cap, put_setup, &b);
done:
    psi_free(bits);
    return rc;
}

int psi_setup_encode(uint8_t *out, size_t *out_len, int suite, const psi_setup_params *p,
                           const uint8_t *elements, size_t n)
{
    size_t cap;
    int rc = psi_msg_take_output(out, out_len, &cap);
    if (rc != PSI_OK)
        return rc;
    PSI_CHECK_ARG(p != NULL);
    PSI_CHECK_ARG(elements != NULL || n == 0);
    PSI_CHECK_ARG(n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    psi_detail_clear();
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    switch (p->structure) {
    case PSI_STRUCTURE_RAW:
        return encode_raw(out, out_len, cap, suite, elements, n);
    case PSI_STRUCTURE_GCS:
        return encode_gcs(out, out_len, cap, suite, p, elements, n);
    case PSI_STRUCTURE_BLOOM_FILTER:
        return encode_bloom(out, out_len, cap, suite, p, elements, n);
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
static int body_bound(size_t *body, int suite, const psi_setup_params *p, size_t n)
{
    int64_t hash_range;
    int32_t k;
    size_t bits;
    int rc;
    switch (p->structure) {
    case PSI_STRUCTURE_RAW:
        if (n > SIZE_MAX / element_wire_bytes(suite))
            return PSI_E_PARAM_OVERFLOW;
        *body = n * element_wire_bytes(suite);
        return PSI_OK;
    case PSI_STRUCTURE_GCS:
        PSI_TRY(psi_gcs_hash_range(&hash_range, p->fpr, p->num_client_inputs, n));
        PSI_TRY(psi_gcs_bits_bound(&bits, hash_range, n));
        *body = 3 * SCALAR_FIELD_MAX; // div, hash_range, and the bits' tag and length
        return add_size(body, bits);
    case PSI_STRUCTURE_BLOOM_FILTER:
        PSI_TRY(psi_bloom_params(&k, &bits, p->fpr, p->num_client_inputs, n));
        *body = 2 * SCALAR_FIELD_MAX; // num_hash_functions, and the bits' tag and length
        if (psi_bloom_format_of(suite) == PSI_BLOOM_FORMAT_DISTINCT)
            *body += SCALAR_FIELD_MAX; // format (§7.4)
        return add_size(body, bits);
    default:
        return psi_fail_at(PSI_E_STRUCTURE, "params.structure", -1, -1);
    }
done:
    return rc;
}

int psi_setup_bound(size_t *bound, int suite, const psi_setup_params *p, size_t n_server)
{
    size_t body = 0, total;
    int rc;
    PSI_CHECK_ARG(bound != NULL);
    *bound = 0;
    PSI_CHECK_ARG(p != NULL);
    psi_detail_clear();
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    PSI_TRY(body_bound(&body, suite, p, n_server));
    // Exact for raw: the header, the oneof tag, the body length, the body.
    total = header_bytes(suite) + 1 + psi_varint_size(body);
    PSI_TRY(add_size(&total, body));
    *bound = total;
done:
    return rc;
}

