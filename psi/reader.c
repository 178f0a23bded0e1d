/* The one decoder of Request and Response (PROTOCOL.md §10, §10.1, §16.1):
 * a state machine fed the message's bytes in pieces of any size.  It
 * applies the rules of §10 field by field as the bytes arrive and holds
 * only what a cut field needs to go on: the varint being read as a value,
 * the bytes left to skip as a count, and an element's bytes (at most one
 * element).  A field is judged when its last byte arrives, exactly as a
 * decoder of the whole message judges it once it has read it whole, so
 * the codes and details are the same for any cut; psi_request_decode
 * and psi_response_decode are this reader run over the whole
 * message (messages.c). */
#include <string.h>

#include "messages.h"
#include "reader.h"
#include "suite.h"

/* The largest field number protobuf allows (2^29 - 1). */
#define FIELD_NUMBER_MAX 0x1FFFFFFFu
/* A 64-bit varint takes at most 10 bytes; the 10th carries bit 63. */
#define VARINT_MAX_BYTES 10

/* What the next byte is. */
enum {
    R_HEADER,  /* a byte of the suite header (or, in the OpenMined suite,
                  the first byte, which must not be the header's tag) */
    R_TAG,     /* a byte of a field's tag (vbytes 0: between fields) */
    R_VARINT,  /* a byte of a varint field's value */
    R_LENGTH,  /* a byte of a length-delimited field's length */
    R_SKIP,    /* a payload byte judged only at its end (left to go) */
    R_ELEMENT, /* a byte of an element of the right length (held) */
    R_FAILED,  /* an error was found: err */
    R_ENDED    /* psi_reader_end succeeded */
};

/* Names for error details: the message, its element field and its flag. */
static const char *message_name(const psi_reader *r)
{
    return r->kind == PSI_MESSAGE_REQUEST ? "Request" : "Response";
}

static const char *elements_name(const psi_reader *r)
{
    return r->kind == PSI_MESSAGE_REQUEST ? "Request.encrypted_elements"
                                          : "Response.encrypted_elements";
}

int psi_reader_init(psi_reader *r, int suite, psi_message_kind kind)
{
    memset(r, 0, sizeof *r);
    if (kind != PSI_MESSAGE_REQUEST && kind != PSI_MESSAGE_RESPONSE)
        return PSI_E_INVALID_ARG;
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    r->suite = suite;
    r->kind = kind;
    r->elements_field = kind == PSI_MESSAGE_REQUEST ? REQUEST_ELEMENTS : RESPONSE_ELEMENTS;
    r->reveal_field = kind == PSI_MESSAGE_REQUEST ? REQUEST_REVEAL : 0;
    r->elen = psi_suite_element_bytes(suite);
    r->state = R_HEADER;
    return PSI_OK;
}

void psi_reader_wipe(psi_reader *r)
{
    // Element bytes are the partner's ciphertexts: wiped as the output is.
    memset(r->hold, 0, sizeof r->hold);
    r->held = 0;
}

/* Records the reader's first error and returns it; every later call
 * records the same detail again (refail). */
static int fail(psi_reader *r, int code, const char *field, int64_t index, int64_t offset)
{
    psi_reader_wipe(r);
    r->state = R_FAILED;
    r->err = code;
    r->err_field = field;
    r->err_index = index;
    r->err_offset = offset;
    return psi_fail_at(code, field, index, offset);
}

static int refail(const psi_reader *r)
{
    return psi_fail_at(r->err, r->err_field, r->err_index, r->err_offset);
}

/* A failure of the current field whose tag was read: the detail names the
 * field by its number (the element field with the element's index, or the
 * reveal flag), else the message. */
static int fail_field(psi_reader *r, int code)
{
    int64_t at = (int64_t)r->field_at;
    if (r->number == r->elements_field)
        return fail(r, code, elements_name(r), (int64_t)r->n, at);
    if (r->reveal_field != 0 && r->number == r->reveal_field)
        return fail(r, code, "Request.reveal_intersection", -1, at);
    return fail(r, code, message_name(r), -1, at);
}

/* A failure before the tag was read whole: the message's. */
static int fail_message(psi_reader *r, int code)
{
    return fail(r, code, message_name(r), -1, (int64_t)r->field_at);
}

/* The suite header is wrong or missing: byte 0 of the message (§16.1). */
static int fail_suite(psi_reader *r)
{
    return fail(r, PSI_E_SUITE_MISMATCH, message_name(r), -1, 0);
}

/* Adds byte b to the varint being read: 1 when it is complete (in
 * r->acc), 0 when more bytes follow, PSI_E_MSG_VARINT when it is longer
 * than 10 bytes or its 10th byte carries bits past 64. */
static int varint_step(psi_reader *r, uint8_t b)
{
    if (r->vbytes == VARINT_MAX_BYTES - 1 && b > 1)
        return PSI_E_MSG_VARINT;
    r->acc |= (uint64_t)(b & 0x7F) << (7 * r->vbytes);
    r->vbytes++;
    return (b & 0x80) == 0 ? 1 : 0;
}

/* The value just read is complete: takes it and clears the varint. */
static uint64_t varint_take(psi_reader *r)
{
    uint64_t v = r->acc;
    r->acc = 0;
    r->vbytes = 0;
    return v;
}

/* A whole tag: checks it and picks what its payload is. */
static int on_tag(psi_reader *r, uint64_t tag)
{
    if ((tag >> 3) == 0 || (tag >> 3) > FIELD_NUMBER_MAX)
        return fail_message(r, PSI_E_MSG_TAG);
    r->number = (uint32_t)(tag >> 3);
    r->wire_type = (int)(tag & 7);
    switch (r->wire_type) {
    case PSI_WIRE_VARINT:
        r->state = R_VARINT;
        return PSI_OK;
    case PSI_WIRE_I64:
        r->left = 8;
        r->state = R_SKIP;
        return PSI_OK;
    case PSI_WIRE_I32:
        r->left = 4;
        r->state = R_SKIP;
        return PSI_OK;
    case PSI_WIRE_LEN:
        r->state = R_LENGTH;
        return PSI_OK;
    default:
        // Groups (3, 4) are gone from proto3; 6 and 7 were never defined.
        return fail_field(r, PSI_E_MSG_TAG);
    }
}

/* A varint field's value is complete. */
static int on_varint(psi_reader *r, uint64_t v)
{
    if (r->reveal_field != 0 && r->number == r->reveal_field)
        r->flag = v != 0; // last occurrence wins, any nonzero is true
    else if (r->number == r->elements_field)
        return fail_field(r, PSI_E_MSG_TAG);
    r->state = R_TAG;
    return PSI_OK;
}

/* A fixed-size or length-delimited payload other than a held element is
 * complete: judged now that it is whole, as the whole decoder does. */
static int on_skipped(psi_reader *r)
{
    if (r->reveal_field != 0 && r->number == r->reveal_field)
        return fail_field(r, PSI_E_MSG_TAG);
    if (r->number == r->elements_field)
        return fail_field(r, r->wire_type == PSI_WIRE_LEN ? PSI_E_MSG_ELEMENT_SIZE
                                                          : PSI_E_MSG_TAG);
    r->state = R_TAG; // an unknown field: skipped
    return PSI_OK;
}

/* A length is complete: an element of the suite's length is held, any
 * other payload skipped, however long it claims to be. */
static int on_length(psi_reader *r, uint64_t len)
{
    if (r->number == r->elements_field && len == r->elen) {
        r->held = 0;
        r->state = R_ELEMENT;
        return PSI_OK;
    }
    r->left = len;
    r->state = R_SKIP;
    return len == 0 ? on_skipped(r) : PSI_OK;
}

int psi_reader_run(psi_reader *r, uint8_t *elements, size_t cap, size_t *count, size_t *used,
                   const uint8_t *bytes, size_t len)
{
    const uint8_t *p = bytes, *end = bytes + len;
    size_t out = 0;
    int rc = PSI_OK;
    *count = 0;
    *used = 0;
    if (r->state == R_FAILED)
        return refail(r);
    if (r->state == R_ENDED)
        return PSI_E_INVALID_ARG;
    while (p < end && rc == PSI_OK) {
        uint8_t b = *p;
        size_t avail = (size_t)(end - p), take;
        switch (r->state) {
        case R_HEADER:
            if (r->suite == PSI_SUITE_OPENMINED_P256) {
                // No header; a message that starts with the header's tag is
                // another suite's (and no valid protobuf either).
                if (b == PSI_SUITE_HEADER_TAG)
                    rc = fail_suite(r);
                else
                    r->state = R_TAG;
                continue; // the byte is the first tag's
            }
            if (b != (r->header_seen == 0 ? PSI_SUITE_HEADER_TAG : (uint8_t)r->suite)) {
                rc = fail_suite(r);
                continue;
            }
            if (++r->header_seen == PSI_SUITE_HEADER_BYTES)
                r->state = R_TAG;
            take = 1;
            break;
        case R_TAG:
            if (r->vbytes == 0)
                r->field_at = r->pos;
            take = 1;
            rc = varint_step(r, b);
            if (rc < 0)
                rc = fail_message(r, rc);
            else
                rc = rc == 1 ? on_tag(r, varint_take(r)) : PSI_OK;
            break;
        case R_VARINT:
        case R_LENGTH:
            take = 1;
            rc = varint_step(r, b);
            if (rc < 0)
                rc = fail_field(r, rc);
            else if (rc == 1)
                rc = r->state == R_VARINT ? on_varint(r, varint_take(r))
                                          : on_length(r, varint_take(r));
            break;
        case R_SKIP:
            take = r->left < avail ? (size_t)r->left : avail;
            r->left -= take;
            rc = r->left == 0 ? on_skipped(r) : PSI_OK;
            break;
        default: // R_ELEMENT
            take = r->elen - r->held;
            if (take > avail) {
                take = avail; // cut by the chunk: held until the rest comes
            } else if (out == cap) {
                // Complete, but no room: its last bytes are left for the
                // next call, so *used < len tells the caller.
                goto stop;
            }
            memcpy(r->hold + r->held, p, take);
            r->held += take;
            if (r->held == r->elen) {
                // A shorter element fills the start of its slot (psi.h).
                uint8_t *slot = elements + out * PSI_ELEMENT_BYTES;
                memset(slot, 0, PSI_ELEMENT_BYTES);
                memcpy(slot, r->hold, r->elen);
                psi_reader_wipe(r);
                out++;
                r->n++;
                r->state = R_TAG;
            }
            break;
        }
        if (rc != PSI_OK)
            break;
        p += take;
        r->pos += take;
    }
stop:
    if (rc != PSI_OK) {
        if (out != 0)
            memset(elements, 0, out * PSI_ELEMENT_BYTES);
        return rc;
    }
    *count = out;
    *used = (size_t)(p - bytes);
    return PSI_OK;
}

int psi_reader_finish(psi_reader *r, int *reveal, uint64_t *total)
{
    *reveal = 0;
    *total = 0;
    switch (r->state) {
    case R_FAILED:
        return refail(r);
    case R_HEADER:
        // Too short for its suite header (§16.1); empty is a valid
        // OpenMined message.
        if (r->suite != PSI_SUITE_OPENMINED_P256)
            return fail_suite(r);
        break;
    case R_TAG:
        if (r->vbytes != 0)
            return fail_message(r, PSI_E_MSG_TRUNCATED); // the tag is cut
        break;
    case R_ENDED:
        break;
    default: // cut inside the payload of a field whose tag was read
        return fail_field(r, PSI_E_MSG_TRUNCATED);
    }
    r->state = R_ENDED;
    *reveal = r->flag;
    *total = r->n;
    return PSI_OK;
}

/* ------------------------------------------------------- public calls */

int psi_reader_create(psi_reader **out, int suite, psi_message_kind kind)
{
    PSI_CHECK_ARG(out != NULL);
    *out = NULL;
    PSI_CHECK_ARG(kind == PSI_MESSAGE_REQUEST || kind == PSI_MESSAGE_RESPONSE);
    psi_detail_clear();
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    psi_reader *r = psi_alloc(sizeof *r);
    if (r == NULL)
        return PSI_E_NOMEM;
    int rc = psi_reader_init(r, suite, kind);
    if (rc != PSI_OK) {
        psi_free(r);
        return rc;
    }
    *out = r;
    return PSI_OK;
}

int psi_reader_feed(psi_reader *r, uint8_t *elements, size_t *count, size_t *used,
                    const uint8_t *bytes, size_t len)
{
    PSI_CHECK_ARG(count != NULL);
    size_t cap = *count;
    *count = 0;
    PSI_CHECK_ARG(used != NULL);
    *used = 0;
    PSI_CHECK_ARG(r != NULL);
    PSI_CHECK_ARG(elements != NULL || cap == 0);
    PSI_CHECK_ARG(cap <= SIZE_MAX / PSI_ELEMENT_BYTES);
    PSI_CHECK_ARG(bytes != NULL || len == 0);
    PSI_CHECK_ARG(r->state != R_ENDED);
    psi_detail_clear();
    return psi_reader_run(r, elements, cap, count, used, bytes != NULL ? bytes : psi_msg_empty,
                          len);
}

int psi_reader_end(psi_reader *r, int *reveal, uint64_t *total)
{
    PSI_CHECK_ARG(reveal != NULL);
    *reveal = 0;
    PSI_CHECK_ARG(total != NULL);
    *total = 0;
    PSI_CHECK_ARG(r != NULL);
    psi_detail_clear();
    return psi_reader_finish(r, reveal, total);
}

void psi_reader_free(psi_reader *r)
{
    psi_free_wipe(r, sizeof *r);
}
