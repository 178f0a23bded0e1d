/* A payload table read for lookups, in memory or from a file through a
 * sparse index of its tags (app_paytab.h, PROTOCOL.md §22.4). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "app_paytab.h"
#include "app_util.h"

/* Reads len bytes at offset off of fd, all or nothing. */
static int pt_pread(int fd, uint8_t *buf, size_t len, uint64_t off, char *err, size_t err_len)
{
    while (len > 0) {
        ssize_t r = pread(fd, buf, len, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(err, err_len, "cannot read the payload table back at byte %" PRIu64 ": %s",
                     off, r < 0 ? strerror(errno) : "the file is shorter than it was");
            return -1;
        }
        buf += r;
        len -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* Sets this thread's detail for the table: code at byte offset off of it
 * (the records' field; index unknown).  Returns: code. */
static int pt_fail(int code, int64_t off)
{
    psi_error_detail d = {code, "PayloadTable.records", -1, off};
    psi_error_detail_set(&d);
    return code;
}

static void pt_init(psi_app_paytab *t, int suite)
{
    memset(t, 0, sizeof *t);
    t->suite = suite;
    t->fd = -1;
}

int psi_app_paytab_mem(psi_app_paytab *t, int suite, const uint8_t *table, size_t len)
{
    size_t n = 0, L = 0;
    pt_init(t, suite);
    int rc = psi_payload_table_check(suite, table, len, &n, &L);
    if (rc != PSI_OK)
        return rc;
    memcpy(t->head, table, PSI_PAYLOAD_HEAD_BYTES);
    t->n = n;
    t->pad_len = L;
    t->rec = PSI_PAYLOAD_RECORD_EXTRA + L;
    t->mem = table + PSI_PAYLOAD_HEAD_BYTES;
    t->stride = n > 0 ? n : 1;
    return PSI_OK;
}

/* The records between index entries: a stretch of a few KiB (never fewer
 * than one record, never more than 64), more when the index would not fit
 * its share of the budget. */
static int pt_stride(psi_app_paytab *t, uint64_t share, char *err, size_t err_len,
                     uint64_t memory)
{
    uint64_t s = 4096 / t->rec;
    s = s < 1 ? 1 : s > 64 ? 64 : s;
    if (t->n / s * PSI_PAYLOAD_TAG_BYTES > share)
        s = (t->n * PSI_PAYLOAD_TAG_BYTES + share - 1) / share;
    if (s * t->rec > share) {
        // index n/s * 16 and stretch s * rec both within share: share^2 >= 16 n rec.
        double need = 8.0 * __builtin_sqrt((double)t->n * PSI_PAYLOAD_TAG_BYTES * (double)t->rec);
        snprintf(err, err_len, "a payload table of %" PRIu64 " records of %zu bytes cannot be "
                 "indexed within --memory %" PRIu64 ": raise it to at least %.0f", t->n, t->rec,
                 memory, need + 1);
        return -1;
    }
    t->stride = (size_t)s;
    return 0;
}

int psi_app_paytab_file(psi_app_paytab *t, int suite, int fd, uint64_t at, uint64_t len,
                        uint64_t memory, void (*progress)(void *, uint64_t), void *arg,
                        char *err, size_t err_len)
{
    uint8_t head[PSI_PAYLOAD_HEAD_BYTES], *buf = NULL, *prev = NULL;
    uint64_t n = 0, share = memory / 8 > 65536 ? memory / 8 : 65536;
    size_t L = 0, have = len < sizeof head ? (size_t)len : sizeof head;
    int rc;

    pt_init(t, suite);
    err[0] = '\0';
    if (pt_pread(fd, head, have, at, err, err_len) != 0)
        return PSI_E_IO;
    if ((rc = psi_payload_head_check(suite, head, have, &n, &L)) != PSI_OK)
        return rc;
    memcpy(t->head, head, sizeof head);
    t->n = n;
    t->pad_len = L;
    t->rec = PSI_PAYLOAD_RECORD_EXTRA + L;
    t->fd = fd;
    t->at = at + PSI_PAYLOAD_HEAD_BYTES;
    if (n > (len - PSI_PAYLOAD_HEAD_BYTES) / t->rec || len - PSI_PAYLOAD_HEAD_BYTES != n * t->rec)
        return pt_fail(PSI_E_PAYLOAD_TRUNCATED, (int64_t)len);
    if (pt_stride(t, share, err, err_len, memory) != 0)
        return PSI_E_MSG_TOO_LARGE;
    t->n_index = (n + t->stride - 1) / t->stride;
    size_t per = (size_t)(share / t->rec);
    per = per < 1 ? 1 : per;
    if ((t->index = psi_app_alloc(t->n_index + 1, PSI_PAYLOAD_TAG_BYTES)) == NULL ||
        (t->block = psi_app_alloc(t->stride, t->rec)) == NULL ||
        (buf = psi_app_alloc(per, t->rec)) == NULL || (prev = malloc(t->rec)) == NULL) {
        rc = PSI_E_NOMEM;
        goto done;
    }
    for (uint64_t j = 0; j < n;) {
        size_t c = n - j < per ? (size_t)(n - j) : per;
        if (pt_pread(fd, buf, c * t->rec, t->at + j * t->rec, err, err_len) != 0) {
            rc = PSI_E_IO;
            goto done;
        }
        rc = psi_payload_records_check(head, j > 0 ? prev : NULL, buf, c, j);
        if (rc != PSI_OK)
            goto done;
        for (uint64_t e = (j + t->stride - 1) / t->stride * t->stride; e < j + c; e += t->stride)
            memcpy(t->index + e / t->stride * PSI_PAYLOAD_TAG_BYTES, buf + (e - j) * t->rec,
                   PSI_PAYLOAD_TAG_BYTES);
        memcpy(prev, buf + (c - 1) * t->rec, t->rec);
        j += c;
        if (progress != NULL)
            progress(arg, PSI_PAYLOAD_HEAD_BYTES + j * t->rec);
    }
    rc = PSI_OK;
done:
    free(buf);
    free(prev);
    if (rc != PSI_OK) {
        psi_app_paytab_free(t);
        t->fd = -1;
    }
    return rc;
}

/* The position of the last entry of sorted tags[0..count) not after tag,
 * or count when tag comes before them all. */
static uint64_t pt_floor(const uint8_t *tags, size_t step, uint64_t count, const uint8_t *tag)
{
    uint64_t lo = 0, hi = count;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (memcmp(tags + mid * step, tag, PSI_PAYLOAD_TAG_BYTES) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == 0 ? count : lo - 1;
}

int psi_app_paytab_open(psi_app_paytab *t, const uint8_t *element, uint8_t *out, size_t *len,
                        char *err, size_t err_len)
{
    uint8_t tag[PSI_PAYLOAD_TAG_BYTES];
    const uint8_t *recs;
    uint64_t first, count;
    int rc;

    *len = PSI_PAYLOAD_NONE;
    if ((rc = psi_payload_tags(t->suite, t->head, element, 1, tag)) != PSI_OK)
        return rc;
    if (t->n == 0)
        return PSI_OK;
    if (t->mem != NULL) {
        recs = t->mem;
        first = 0;
        count = t->n;
    } else {
        uint64_t e = pt_floor(t->index, PSI_PAYLOAD_TAG_BYTES, t->n_index, tag);
        if (e == t->n_index)
            return PSI_OK;
        first = e * t->stride;
        count = t->n - first < t->stride ? t->n - first : t->stride;
        if (pt_pread(t->fd, t->block, (size_t)count * t->rec, t->at + first * t->rec, err,
                     err_len) != 0)
            return PSI_E_IO;
        t->reads++;
        recs = t->block;
    }
    uint64_t j = pt_floor(recs, t->rec, count, tag);
    if (j == count || memcmp(recs + j * t->rec, tag, PSI_PAYLOAD_TAG_BYTES) != 0)
        return PSI_OK;
    rc = psi_payload_record_open(t->suite, t->head, element, recs + j * t->rec, out, len);
    if (rc != PSI_OK)
        return pt_fail(rc, (int64_t)(PSI_PAYLOAD_HEAD_BYTES + (first + j) * t->rec));
    return PSI_OK;
}

void psi_app_paytab_free(psi_app_paytab *t)
{
    free(t->index);
    if (t->block != NULL)
        sodium_memzero(t->block, t->stride * t->rec);
    free(t->block);
    t->index = NULL;
    t->block = NULL;
}
