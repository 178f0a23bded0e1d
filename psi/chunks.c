/* The one encoder of the messages made of element records (PROTOCOL.md
 * §10.1): a Request, a Response or a raw ServerSetup is its head (the
 * suite header, the reveal flag, RawInfo's tag and length) and then one
 * record per element.  Protobuf concatenates the occurrences of a
 * repeated field, so records written in any number of pieces make the
 * same bytes; psi_request_encode, psi_response_encode and the
 * raw psi_setup_encode are this head and these records. */
#include "codec.h"
#include "messages.h"
#include "suite.h"

/* A tag and a worst-case (10-byte) varint: RawInfo's tag and length. */
#define LENGTH_FIELD_MAX 11

_Static_assert(PSI_SUITE_HEADER_BYTES + LENGTH_FIELD_MAX <= PSI_MESSAGE_HEAD_MAX,
               "PSI_MESSAGE_HEAD_MAX holds every head");

static int kind_known(psi_message_kind kind)
{
    return kind == PSI_MESSAGE_REQUEST || kind == PSI_MESSAGE_RESPONSE ||
           kind == PSI_MESSAGE_SETUP_RAW;
}

/* The field number of the element records (§10 table). */
static uint32_t record_field(psi_message_kind kind)
{
    switch (kind) {
    case PSI_MESSAGE_REQUEST:
        return REQUEST_ELEMENTS;
    case PSI_MESSAGE_RESPONSE:
        return RESPONSE_ELEMENTS;
    default:
        return RAW_ELEMENTS;
    }
}

/* Bytes of n records, or PSI_E_MSG_TOO_LARGE. */
static int records_size(size_t *size, int suite, uint64_t n)
{
    size_t each = 2 + psi_suite_element_bytes(suite);
    if (n > SIZE_MAX / each)
        return PSI_E_MSG_TOO_LARGE;
    *size = (size_t)n * each;
    return PSI_OK;
}

void psi_msg_put_header(psi_wbuf *w, int suite)
{
    if (suite == PSI_SUITE_OPENMINED_P256)
        return;
    const uint8_t header[PSI_SUITE_HEADER_BYTES] = {PSI_SUITE_HEADER_TAG, (uint8_t)suite};
    psi_wbuf_bytes(w, header, sizeof header);
}

/* The head into w (or only counted): PSI_E_MSG_TOO_LARGE when the records
 * of a raw setup, or the whole setup, would not fit in size_t. */
static int put_head(psi_wbuf *w, int suite, psi_message_kind kind, int reveal, uint64_t n)
{
    psi_msg_put_header(w, suite);
    if (kind == PSI_MESSAGE_REQUEST && reveal) {
        // proto3 implicit presence: reveal off is not written at all.
        psi_wbuf_tag(w, REQUEST_REVEAL, PSI_WIRE_VARINT);
        psi_wbuf_varint(w, 1);
    } else if (kind == PSI_MESSAGE_SETUP_RAW) {
        size_t body;
        int rc = records_size(&body, suite, n);
        if (rc != PSI_OK)
            return rc;
        // The oneof member is always written, even empty (`0a 00`, §10).
        psi_wbuf_tag(w, SETUP_RAW, PSI_WIRE_LEN);
        psi_wbuf_varint(w, body);
        if (body > SIZE_MAX - w->len)
            return PSI_E_MSG_TOO_LARGE;
    }
    return PSI_OK;
}

/* Each element as its own length-delimited field, as protobuf writes
 * `repeated bytes` (never packed). */
static void put_records(psi_wbuf *w, int suite, psi_message_kind kind, const uint8_t *elements,
                        size_t n)
{
    size_t elen = psi_suite_element_bytes(suite);
    for (size_t i = 0; i < n; i++) {
        psi_wbuf_tag(w, record_field(kind), PSI_WIRE_LEN);
        psi_wbuf_varint(w, elen);
        psi_wbuf_bytes(w, elements + i * PSI_ELEMENT_BYTES, elen);
    }
}

int psi_message_head(uint8_t *out, size_t *out_len, int suite, psi_message_kind kind,
                     int reveal, uint64_t n)
{
    size_t cap;
    int rc = psi_msg_take_output(out, out_len, &cap);
    if (rc != PSI_OK)
        return rc;
    PSI_CHECK_ARG(kind_known(kind));
    PSI_CHECK_ARG(reveal == 0 || reveal == 1);
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    psi_wbuf w = {NULL, 0, 0};
    rc = put_head(&w, suite, kind, reveal, n);
    if (rc != PSI_OK)
        return rc;
    if (w.len > cap)
        return PSI_E_BUFFER_TOO_SMALL;
    w = (psi_wbuf){out, cap, 0};
    put_head(&w, suite, kind, reveal, n);
    *out_len = w.len;
    return PSI_OK;
}

int psi_message_records(uint8_t *out, size_t *out_len, int suite, psi_message_kind kind,
                        const uint8_t *elements, size_t n)
{
    size_t cap, size;
    int rc = psi_msg_take_output(out, out_len, &cap);
    if (rc != PSI_OK)
        return rc;
    PSI_CHECK_ARG(kind_known(kind));
    PSI_CHECK_ARG(elements != NULL || n == 0);
    PSI_CHECK_ARG(n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    rc = records_size(&size, suite, n);
    if (rc != PSI_OK)
        return rc;
    if (size > cap)
        return PSI_E_BUFFER_TOO_SMALL;
    psi_wbuf w = {out, cap, 0};
    put_records(&w, suite, kind, elements, n);
    *out_len = w.len;
    return PSI_OK;
}

int psi_msg_encode(uint8_t *out, size_t *out_len, size_t cap, int suite, psi_message_kind kind,
                   int reveal, const uint8_t *elements, size_t n)
{
    psi_wbuf head = {NULL, 0, 0};
    size_t records, head_len, records_len;
    int rc = put_head(&head, suite, kind, reveal, n);
    if (rc != PSI_OK)
        return rc;
    rc = records_size(&records, suite, n);
    if (rc != PSI_OK)
        return rc;
    if (records > SIZE_MAX - head.len)
        return PSI_E_MSG_TOO_LARGE;
    // All or nothing: a message that does not fit leaves `out` untouched.
    if (head.len + records > cap)
        return PSI_E_BUFFER_TOO_SMALL;
    head_len = cap;
    rc = psi_message_head(out, &head_len, suite, kind, reveal, n);
    if (rc != PSI_OK || n == 0) {
        *out_len = head_len;
        return rc;
    }
    records_len = cap - head_len;
    rc = psi_message_records(out + head_len, &records_len, suite, kind, elements, n);
    if (rc != PSI_OK)
        return rc; // not reached: the sizes were checked above
    *out_len = head_len + records_len;
    return PSI_OK;
}
