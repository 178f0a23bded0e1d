/* The CLI's payloads: chosen CSV columns of the server's rows; see
 * app_payload.h. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "app_payload.h"
#include "app_offline.h"
#include "app_util.h"

size_t psi_app_csv_fields(const uint8_t *rec, size_t len, psi_app_span *f, size_t max)
{
    size_t n = 0, start = 0;
    int quoted = 0;

    for (size_t i = 0; i <= len; i++) {
        if (i < len && rec[i] == '"')
            quoted = !quoted; // "" inside quotes flips twice
        if (i == len || (rec[i] == ',' && !quoted)) {
            if (n < max)
                f[n] = (psi_app_span){start, i - start};
            n++;
            start = i + 1;
        }
    }
    return n;
}

/* The field's text without its quotes ("" is one quote), into out (at
 * least len bytes).  Returns: its length. */
static size_t csv_unquote(const uint8_t *p, size_t len, uint8_t *out)
{
    size_t n = 0;

    if (len < 2 || p[0] != '"') {
        memcpy(out, p, len);
        return len;
    }
    for (size_t i = 1; i + 1 < len; i++) {
        out[n++] = p[i];
        if (p[i] == '"')
            i++; // the second quote of ""
    }
    return n;
}

int psi_app_payloads(const psi_app_input *in, const char *list, psi_value **pays,
                     uint8_t **buf, char **head, char *err, size_t err_len)
{
    return psi_app_payloads_at(in, 0, list, pays, buf, head, err, err_len);
}

int psi_app_payloads_at(const psi_app_input *in, uint64_t base, const char *list,
                        psi_value **pays, uint8_t **buf, char **head, char *err, size_t err_len)
{
    psi_app_span hf[PSI_APP_PAYLOAD_COLUMNS * 4], rf[PSI_APP_PAYLOAD_COLUMNS * 4];
    size_t cols[PSI_APP_PAYLOAD_COLUMNS], nc = 0, nh, total = 0, at = 0, hlen = 0;
    const uint8_t *h = in->data + in->header.off;
    uint8_t name[4096];
    const char *p = list;

    *pays = NULL;
    *buf = NULL;
    *head = NULL;
    if (in->records == NULL) {
        snprintf(err, err_len, "--payload-columns needs a CSV input (--column)");
        return -1;
    }
    nh = psi_app_csv_fields(h, in->header.len, hf, sizeof hf / sizeof hf[0]);
    if (nh > sizeof hf / sizeof hf[0]) {
        snprintf(err, err_len, "the header has %zu columns, more than %zu", nh,
                 sizeof hf / sizeof hf[0]);
        return -1;
    }
    for (;;) {
        const char *e = strchr(p, ',');
        size_t l = e != NULL ? (size_t)(e - p) : strlen(p), found = nh;
        for (size_t k = 0; k < nh; k++) {
            if (hf[k].len > sizeof name)
                continue;
            size_t ul = csv_unquote(h + hf[k].off, hf[k].len, name);
            if (ul == l && memcmp(name, p, l) == 0)
                found = k;
        }
        if (found == nh) {
            snprintf(err, err_len, "--payload-columns: no column '%.*s' in the header",
                     (int)(l < 200 ? l : 200), p);
            return -1;
        }
        for (size_t k = 0; k < nc; k++)
            if (cols[k] == found) {
                snprintf(err, err_len, "--payload-columns: '%.*s' is named twice",
                         (int)(l < 200 ? l : 200), p);
                return -1;
            }
        if (nc == PSI_APP_PAYLOAD_COLUMNS) {
            snprintf(err, err_len, "--payload-columns: more than %d columns",
                     PSI_APP_PAYLOAD_COLUMNS);
            return -1;
        }
        cols[nc++] = found;
        hlen += hf[found].len + 1;
        if (e == NULL)
            break;
        p = e + 1;
    }
    // Every payload is a slice of the record's own bytes joined anew, so
    // the whole takes at most the records' bytes.
    for (size_t i = 0; i < in->n; i++)
        total += in->records[i].len + nc;
    if ((*head = malloc(hlen + 1)) == NULL || (*pays = psi_app_alloc(in->n + 1, sizeof **pays)) == NULL ||
        (*buf = psi_app_alloc(total + 1, 1)) == NULL) {
        free(*head);
        free(*pays);
        *head = NULL;
        *pays = NULL;
        snprintf(err, err_len, "out of memory for the payloads");
        return -1;
    }
    for (size_t k = 0, w = 0; k < nc; k++) {
        memcpy(*head + w, h + hf[cols[k]].off, hf[cols[k]].len);
        w += hf[cols[k]].len;
        (*head)[w++] = k + 1 < nc ? ',' : '\0';
    }
    for (size_t i = 0; i < in->n; i++) {
        const uint8_t *r = in->data + in->records[i].off;
        size_t nr = psi_app_csv_fields(r, in->records[i].len, rf, sizeof rf / sizeof rf[0]);
        size_t start = at;
        if (nr != nh) { // the reader checked the count: a record it did not split so
            snprintf(err, err_len, "record %zu: %zu fields, the header has %zu", i + 1, nr, nh);
            free(*head), free(*pays), free(*buf);
            *head = NULL, *pays = NULL, *buf = NULL;
            return -1;
        }
        for (size_t k = 0; k < nc; k++) {
            memcpy(*buf + at, r + rf[cols[k]].off, rf[cols[k]].len);
            at += rf[cols[k]].len;
            if (k + 1 < nc)
                (*buf)[at++] = ',';
        }
        (*pays)[i] = (psi_value){*buf + start, at - start};
    }
    // The reader gave the fields their structure; a control byte is what a
    // client would still refuse (PROTOCOL.md §22.1): refused here, at its row.
    size_t nf;
    char why[160];
    if (psi_app_payload_check((const uint8_t *)*head, hlen - 1, 1, &nf, why, sizeof why) != 0) {
        snprintf(err, err_len, "the header of the payload columns is refused: %s (a payload is "
                 "data: no control byte, no line break in a header)", why);
        goto refused;
    }
    for (size_t i = 0; i < in->n; i++) {
        if (psi_app_payload_check((*pays)[i].data, (*pays)[i].len, 0, &nf, why,
                                  sizeof why) == 0)
            continue;
        snprintf(err, err_len, "the payload of row %" PRIu64 " is refused: %s of its columns "
                 "(a payload is data: a client refuses a control byte)", base + i + 1, why);
        goto refused;
    }
    return 0;
refused:
    free(*head), free(*pays), free(*buf);
    *head = NULL, *pays = NULL, *buf = NULL;
    return -1;
}

int psi_app_payload_pick(int suite, const uint8_t *resp, size_t resp_len, const size_t *idx,
                         size_t k, uint8_t **picked)
{
    size_t cap = psi_message_element_bound(suite, resp_len), n = cap;
    uint8_t *all = psi_app_alloc(cap + 1, PSI_ELEMENT_BYTES);
    int prc = PSI_E_NOMEM;

    if (all == NULL || (*picked = psi_app_alloc(k + 1, PSI_ELEMENT_BYTES)) == NULL)
        goto done;
    if ((prc = psi_response_decode(all, &n, suite, resp, resp_len)) != PSI_OK)
        goto done;
    for (size_t i = 0; i < k; i++) {
        if (idx[i] >= n) {
            prc = PSI_E_INVALID_ARG;
            goto done;
        }
        memcpy(*picked + i * PSI_ELEMENT_BYTES, all + idx[i] * PSI_ELEMENT_BYTES,
               PSI_ELEMENT_BYTES);
    }
done:
    free(all);
    if (prc != PSI_OK) {
        free(*picked);
        *picked = NULL;
    }
    return prc;
}

int psi_app_payload_open(psi_shards *g, psi_app_paytab *t, const uint8_t *picked, size_t k,
                         uint8_t **out, size_t **lens, char *err, size_t err_len)
{
    size_t ul = k * PSI_ELEMENT_BYTES, L = t->pad_len;
    uint8_t *un = psi_app_alloc(k + 1, PSI_ELEMENT_BYTES);
    int prc = PSI_E_NOMEM;

    *out = NULL;
    *lens = NULL;
    if (un == NULL || (*out = psi_app_alloc(k * L + 1, 1)) == NULL ||
        (*lens = psi_app_alloc(k + 1, sizeof **lens)) == NULL)
        goto done;
    if ((prc = psi_shards_unmask(g, un, &ul, picked, k)) != PSI_OK)
        goto done;
    for (size_t i = 0; i < k && prc == PSI_OK; i++) {
        prc = psi_app_paytab_open(t, un + i * PSI_ELEMENT_BYTES, *out + i * L, &(*lens)[i], err,
                                  err_len);
        if (prc == PSI_E_PAYLOAD_AUTH || prc == PSI_E_PAYLOAD_LENGTH) {
            psi_error_detail d;
            psi_error_detail_get(&d);
            d.index = (int64_t)i;
            psi_error_detail_set(&d);
        }
    }
done:
    if (un != NULL)
        sodium_memzero(un, k * PSI_ELEMENT_BYTES);
    free(un);
    if (prc != PSI_OK) {
        // The opened payloads are the client's results: not left in freed memory.
        if (*out != NULL)
            sodium_memzero(*out, k * L);
        free(*out);
        free(*lens);
        *out = NULL;
        *lens = NULL;
    }
    return prc;
}

void psi_app_payload_open_error(char *err, size_t err_len, const char *source, int rc,
                                const char *why, uint64_t row)
{
    if (rc == PSI_E_PAYLOAD_AUTH || rc == PSI_E_PAYLOAD_LENGTH)
        snprintf(err, err_len, "%s: the payload of matched row %" PRIu64 " %s (a damaged or "
                 "forged table): %s", source, row == UINT64_MAX ? 0 : row + 1,
                 rc == PSI_E_PAYLOAD_AUTH ? "does not decrypt" : "has a wrong length or padding",
                 psi_error_name(rc));
    else if (rc == PSI_E_IO)
        snprintf(err, err_len, "%s: %s", source, why);
    else
        snprintf(err, err_len, "%s: cannot open the payloads: %s (%s)", source,
                 psi_strerror(rc), psi_error_name(rc) ? psi_error_name(rc) : "?");
}

/* Checks the head of j and the k opened payloads (lens[i] PSI_PAYLOAD_NONE:
 * none) of the matched rows idx (of a chunk whose first row is `base`):
 * each as psi_app_payload_check allows, with the head's number of fields.
 * Returns: 0, or -1 with a message naming the row (or the head) in err. */
static int payload_join_check(const psi_app_join *j, const uint8_t *pays, const size_t *lens,
                              const size_t *idx, size_t k, uint64_t base, char *err,
                              size_t err_len)
{
    size_t want = 0, got = 0;
    char why[160];

    if (psi_app_payload_check((const uint8_t *)j->head, j->head_len, 1, &want, why,
                              sizeof why) != 0) {
        snprintf(err, err_len, "%s: the header line of its columns is refused: %s (a payload "
                 "is data, never structure)", j->source, why);
        return -1;
    }
    for (size_t i = 0; i < k; i++) {
        if (lens[i] == PSI_PAYLOAD_NONE)
            continue;
        int bad = psi_app_payload_check(pays + i * j->t->pad_len, lens[i], 0, &got, why,
                                        sizeof why) != 0;
        if (!bad && got == want)
            continue;
        if (!bad)
            snprintf(why, sizeof why, "%zu fields where the header line has %zu", got, want);
        snprintf(err, err_len, "%s: the payload of matched row %" PRIu64 " is refused: %s (a "
                 "payload is data, never structure); nothing is written", j->source,
                 base + idx[i] + 1, why);
        return -1;
    }
    return 0;
}

int psi_app_payload_join_open(const psi_app_join *j, const uint8_t *picked, const size_t *idx,
                              size_t k, uint64_t base, uint8_t **pays, size_t **lens, int *code,
                              char *err, size_t err_len)
{
    psi_error_detail d;
    char why[512] = "";
    const char *source = j->source;
    int rc = psi_app_payload_open(j->g, j->t, picked, k, pays, lens, why, sizeof why);

    *code = rc;
    if (rc != PSI_OK) {
        psi_error_detail_get(&d);
        psi_app_payload_open_error(err, err_len, source, rc, why,
                                   d.index >= 0 && (size_t)d.index < k ? base + idx[d.index]
                                                                       : UINT64_MAX);
        return -1;
    }
    if (payload_join_check(j, *pays, *lens, idx, k, base, err, err_len) != 0) {
        psi_app_payload_join_free(j, *pays, *lens, k);
        *pays = NULL;
        *lens = NULL;
        return -1;
    }
    for (size_t i = 0; i < k && j->raw; i++) {
        if ((*lens)[i] == PSI_PAYLOAD_NONE) {
            // A raw setup's match is exact: its element is a server value's.
            snprintf(err, err_len, "%s has no payload for row %" PRIu64 ", which the raw setup "
                     "matched: a table of another key or input", source, base + idx[i] + 1);
            psi_app_payload_join_free(j, *pays, *lens, k);
            *pays = NULL;
            *lens = NULL;
            return -1;
        }
    }
    return 0;
}

void psi_app_payload_join_free(const psi_app_join *j, uint8_t *pays, size_t *lens, size_t k)
{
    if (pays != NULL)
        sodium_memzero(pays, k * j->t->pad_len); // the client's results
    free(pays);
    free(lens);
}

int psi_app_payload_join(const psi_app_join *j, const psi_app_input *in, int header,
                         const uint8_t *picked, const size_t *idx, size_t k, uint64_t base,
                         size_t *written, int *code, char *err, size_t err_len)
{
    uint8_t *pays = NULL;
    size_t *lens = NULL;
    int rc = 0;

    if (psi_app_payload_join_open(j, picked, idx, k, base, &pays, &lens, code, err,
                                  err_len) != 0)
        return -1;
    if (psi_app_payload_rows_write(j->f, in, header ? (const uint8_t *)j->head : NULL,
                                   j->head_len, idx, k, pays, j->t->pad_len, lens,
                                   j->raw_cells, written) != 0) {
        snprintf(err, err_len, "cannot write the rows");
        rc = -1;
    }
    psi_app_payload_join_free(j, pays, lens, k);
    return rc;
}

int psi_app_payload_rows_write(FILE *f, const psi_app_input *in, const uint8_t *head,
                               size_t head_len, const size_t *idx, size_t k,
                               const uint8_t *pays, size_t pad_len, const size_t *lens,
                               int raw, size_t *written)
{
    int csv = in->records != NULL, bad = 0;
    size_t w = 0, cap = pad_len > head_len ? pad_len : head_len;
    uint8_t *scratch = psi_app_alloc(cap + 1, 1);

    *written = 0;
    if (scratch == NULL)
        return -1;
    if (csv && head != NULL) {
        bad |= fwrite(in->data + in->header.off, 1, in->header.len, f) != in->header.len;
        bad |= psi_app_payload_write(f, ',', raw, head, head_len, scratch) != 0;
        bad |= fputc('\n', f) == EOF;
    }
    for (size_t i = 0; i < k && !bad; i++) {
        if (lens[i] == PSI_PAYLOAD_NONE)
            continue; // a false positive of GCS or Bloom
        const uint8_t *p = pays + i * pad_len;
        if (csv) {
            const psi_app_span *r = &in->records[idx[i]];
            bad |= r->len > 0 && fwrite(in->data + r->off, 1, r->len, f) != r->len;
            bad |= psi_app_payload_write(f, ',', raw, p, lens[i], scratch) != 0;
            bad |= fputc('\n', f) == EOF;
        } else {
            const psi_value *v = &in->values[idx[i]];
            bad |= psi_app_payload_line_write(f, raw, v->data, v->len, p, lens[i],
                                              scratch) != 0;
        }
        w++;
    }
    // The scratch held the client's results: not left in freed memory.
    sodium_memzero(scratch, cap + 1);
    free(scratch);
    *written = w;
    return bad ? -1 : 0;
}

int psi_app_payload_table_raw(int suite, const uint8_t *setup, size_t setup_len,
                              const size_t *perm, const psi_value *pays, size_t n,
                              size_t pad_len, uint8_t **table, size_t *table_len)
{
    psi_value *sorted = psi_app_alloc(n + 1, sizeof *sorted);
    psi_setup *ps = NULL;
    const uint8_t *el = NULL;
    size_t len = 0;
    int prc = sorted != NULL ? PSI_OK : PSI_E_NOMEM;

    *table = NULL;
    *table_len = 0;
    if (prc == PSI_OK)
        prc = psi_setup_parse(&ps, suite, setup, setup_len);
    if (prc == PSI_OK && (psi_setup_raw_count(ps) != n ||
                          (n > 0 && (el = psi_setup_raw_elements(ps)) == NULL)))
        prc = PSI_E_INVALID_ARG;
    for (size_t i = 0; prc == PSI_OK && i < n; i++)
        sorted[i] = pays[perm[i]];
    if (prc == PSI_OK)
        prc = psi_payload_table_build(suite, NULL, &len, el, sorted, n, pad_len, NULL);
    if (prc == PSI_E_BUFFER_TOO_SMALL) {
        prc = (*table = psi_app_alloc(len + 1, 1)) != NULL ? PSI_OK : PSI_E_NOMEM;
        if (prc == PSI_OK)
            prc = psi_payload_table_build(suite, *table, &len, el, sorted, n, pad_len, NULL);
    }
    if (prc == PSI_E_PAYLOAD_DUPLICATE || prc == PSI_E_PAYLOAD_LENGTH) {
        // The library names a setup position: the caller names an input row.
        psi_error_detail d;
        psi_error_detail_get(&d);
        if (d.index >= 0 && (size_t)d.index < n)
            d.index = (int64_t)perm[d.index];
        psi_error_detail_set(&d);
    }
    if (prc != PSI_OK) {
        free(*table);
        *table = NULL;
        len = 0;
    }
    *table_len = len;
    psi_setup_free(ps);
    free(sorted);
    return prc;
}

int psi_app_payfile_open(psi_app_payfile *p, const char *path, int suite, uint64_t memory,
                         char *err, size_t err_len)
{
    size_t want;
    const uint8_t *nl;
    int prc;

    memset(p, 0, sizeof *p);
    p->t.fd = -1;
    if (psi_app_msg_open(&p->f, path, "payload file", err, err_len) != 0)
        return -1;
    want = p->f.len < PSI_APP_PAYLOAD_HEAD_MAX + 1 ? (size_t)p->f.len
                                                    : PSI_APP_PAYLOAD_HEAD_MAX + 1;
    if ((p->head = malloc(want + 1)) == NULL) {
        snprintf(err, err_len, "payload file %s: out of memory", path);
        goto fail;
    }
    if (psi_app_msg_read(&p->f, 0, (uint8_t *)p->head, want) != 0) {
        snprintf(err, err_len, "payload file %s", p->f.err);
        goto fail;
    }
    if ((nl = memchr(p->head, '\n', want)) == NULL) {
        snprintf(err, err_len, "payload file %s: no header line of columns (is it a file "
                 "shardpsi payloads wrote?)", path);
        goto fail;
    }
    p->head_len = (size_t)(nl - (const uint8_t *)p->head);
    p->head[p->head_len] = '\0';
    p->table_at = p->head_len + 1;
    p->table_len = p->f.len - p->table_at;
    prc = psi_app_paytab_file(&p->t, suite, p->f.fd, p->table_at, p->table_len, memory, NULL,
                              NULL, err, err_len);
    if (prc == PSI_OK)
        return 0;
    if (prc == PSI_E_IO || (prc == PSI_E_MSG_TOO_LARGE && err[0] != '\0')) {
        char why[512];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, err_len, "payload file %s: %s", path, why);
    } else if (prc == PSI_E_SUITE_MISMATCH) {
        snprintf(err, err_len, "payload file %s: the payload table is of another suite, not "
                 "%s (PSI_E_SUITE_MISMATCH): give the file made with this suite's key", path,
                 psi_app_suite_label(suite));
    } else {
        snprintf(err, err_len, "payload file %s: the payload table is invalid: %s (%s)", path,
                 psi_strerror(prc), psi_error_name(prc) ? psi_error_name(prc) : "?");
    }
fail:
    psi_app_payfile_close(p);
    return -1;
}

void psi_app_payfile_close(psi_app_payfile *p)
{
    psi_app_paytab_free(&p->t);
    psi_app_msg_close(&p->f);
    free(p->head);
    p->head = NULL;
}

void psi_app_payload_build_error(char *err, size_t err_len, const char *input, int prc,
                                 const psi_value *pays, size_t pad_len)
{
    psi_error_detail d;

    psi_error_detail_get(&d);
    if (prc == PSI_E_PAYLOAD_DUPLICATE)
        snprintf(err, err_len, "%s: the value of row %lld is there twice: a payload table "
                 "holds one payload a value (join the rows first)", input,
                 (long long)d.index + 1);
    else if (prc == PSI_E_PAYLOAD_LENGTH && d.index >= 0 && pays != NULL)
        snprintf(err, err_len, "%s: the payload of row %lld is %zu bytes, longer than --pad-to "
                 "%zu", input, (long long)d.index + 1, pays[d.index].len, pad_len);
    else if (prc == PSI_E_PAYLOAD_LENGTH)
        snprintf(err, err_len, "%s: a payload is longer than %zu bytes, the most a table pads "
                 "to", input, (size_t)PSI_PAYLOAD_MAX);
    else
        snprintf(err, err_len, "%s: cannot build the payload table: %s (%s)", input,
                 psi_strerror(prc), psi_error_name(prc) ? psi_error_name(prc) : "?");
}

int psi_app_payload_salt(uint8_t out[PSI_PAYLOAD_SALT_BYTES], const char *hex, char *err,
                         size_t err_len)
{
    uint8_t *b = NULL;
    size_t n = 0;
    char why[128];

    if (psi_app_hex_decode(&b, &n, hex, strlen(hex), why, sizeof why) != 0) {
        snprintf(err, err_len, "--salt: %s", why);
        return -1;
    }
    if (n != PSI_PAYLOAD_SALT_BYTES) {
        snprintf(err, err_len, "--salt: %zu bytes, not %d (64 hex digits)", n,
                 PSI_PAYLOAD_SALT_BYTES);
        free(b);
        return -1;
    }
    memcpy(out, b, n);
    free(b);
    return 0;
}
