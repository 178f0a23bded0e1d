/*
 * `shardpsi payloads` and the payload side of `shardpsi match --payloads`
 * (PROTOCOL.md §22): the server's chosen CSV columns of each row, in a
 * payload table beside its setup, and the client's matched rows with the
 * payloads they open.  The server's values are masked by its shards
 * (psi_shards_payload_table_build); the library derives, encrypts and
 * orders.  An input past --memory is built a chunk at a time, the table
 * ordered through runs on disk (psi_app_payload_build_file, §22.4); the
 * client's side reads the payload file where it lies (psi_app_payfile).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app_payload.h"
#include "app_spill.h"
#include "app_util.h"
#include "cli_offline.h"

/* Whether --input fits one chunk of the budget b (then it is read whole).
 * Returns: 1, 0, or -1 (reported). */
static int payloads_fit(psi_app_offline *s, const psi_app_budget *b)
{
    psi_app_input_stream in;
    struct stat st;
    int whole;

    // stdin, or a pipe, cannot be read twice: it is held in memory.
    if (strcmp(s->o.input, "-") == 0 || stat(s->o.input, &st) != 0 || !S_ISREG(st.st_mode))
        return 1;

    if (psi_app_input_stream_open(&in, s->o.input, s->o.column, 0, b->block_bytes,
                                  b->chunk_values, b->record_max, s->err, sizeof s->err) != 0 ||
        psi_app_input_stream_next(&in, s->err, sizeof s->err) != 0) {
        psi_app_input_stream_close(&in);
        return psi_app_offline_fail(s, "%s", s->err);
    }
    whole = psi_app_input_stream_at_end(&in);
    psi_app_input_stream_close(&in);
    return whole;
}

/* The payload file of an input past the budget. */
static int payloads_spill(psi_app_offline *s, const psi_app_budget *b, const uint8_t *salt)
{
    char dir[4096];
    uint64_t n = 0;
    size_t L = 0;

    if (psi_app_offline_open(s, &s->out, s->o.output) != 0)
        return PSI_APP_EXIT_USAGE;
    if (psi_app_offline_shards(s, PSI_ROLE_SERVER, 0) != 0)
        return PSI_APP_EXIT_FAIL;
    psi_app_output_dir(dir, sizeof dir, s->o.output);
    psi_app_paybuild o = {s->g, s->o.suite, s->o.input, s->o.column, s->o.payload_columns,
                          s->o.pad_len, salt, *b, psi_app_temp_dir(s->o.temp_dir, dir),
                          &s->prog};
    if (psi_app_payload_build_file(&o, s->out.f, &n, &L, s->err, sizeof s->err) != 0) {
        psi_app_offline_fail(s, "%s", s->err);
        return PSI_APP_EXIT_FAIL;
    }
    if (psi_app_output_commit(&s->out, s->err, sizeof s->err) != 0) {
        psi_app_offline_fail(s, "%s: cannot write: %s", s->o.output, s->err);
        return PSI_APP_EXIT_FAIL;
    }
    psi_app_progress_note(&s->prog, "a payload table of %" PRIu64 " rows (padded to %zu "
                          "bytes), built within --memory %" PRIu64, n, L, b->bytes);
    return PSI_APP_EXIT_OK;
}

int psi_cli_offline_payloads(psi_app_offline *s)
{
    psi_value *pays = NULL;
    uint8_t *pbuf = NULL, *table = NULL;
    char *head = NULL;
    size_t len = 0;
    int rc = PSI_APP_EXIT_USAGE, prc;

    uint8_t salt[PSI_PAYLOAD_SALT_BYTES];
    if (s->o.salt != NULL && psi_app_payload_salt(salt, s->o.salt, s->err, sizeof s->err) != 0) {
        psi_app_offline_fail(s, "%s", s->err);
        goto done;
    }
    if (psi_app_offline_key(s) != 0)
        goto done;
    psi_app_budget b;
    psi_app_budget_init(&b, s->o.memory != 0 ? s->o.memory : psi_app_memory_default());
    int fit = payloads_fit(s, &b);
    if (fit < 0)
        goto done;
    if (fit == 0) {
        rc = payloads_spill(s, &b, s->o.salt != NULL ? salt : NULL);
        goto done;
    }
    if (psi_app_offline_input(s) != 0)
        goto done;
    if (psi_app_payloads(&s->in, s->o.payload_columns, &pays, &pbuf, &head, s->err,
                         sizeof s->err) != 0) {
        psi_app_offline_fail(s, "%s: %s", s->o.input, s->err);
        goto done;
    }
    if (psi_app_offline_open(s, &s->out, s->o.output) != 0)
        goto done;
    rc = PSI_APP_EXIT_FAIL;
    if (psi_app_offline_shards(s, PSI_ROLE_SERVER, 0) != 0)
        goto done;
    prc = psi_shards_payload_table_build(s->g, NULL, &len, s->in.values, pays, s->in.n,
                                         s->o.pad_len, s->o.salt != NULL ? salt : NULL);
    if (prc == PSI_E_BUFFER_TOO_SMALL) {
        if ((table = psi_app_alloc(len + 1, 1)) == NULL) {
            psi_app_offline_fail(s, "out of memory for a payload table of %zu bytes", len);
            goto done;
        }
        psi_app_progress_begin(&s->prog, "masking the values", s->in.n);
        prc = psi_shards_payload_table_build(s->g, table, &len, s->in.values, pays, s->in.n,
                                             s->o.pad_len, s->o.salt != NULL ? salt : NULL);
        psi_app_progress_end(&s->prog);
    }
    if (prc != PSI_OK) {
        char msg[512];
        psi_app_payload_build_error(msg, sizeof msg, s->o.input, prc, pays, s->o.pad_len);
        psi_app_offline_fail(s, "%s", msg);
        goto done;
    }
    if (fprintf(s->out.f, "%s\n", head) < 0 || fwrite(table, 1, len, s->out.f) != len ||
        psi_app_output_commit(&s->out, s->err, sizeof s->err) != 0) {
        psi_app_offline_fail(s, "%s: cannot write: %s", s->o.output, s->err);
        goto done;
    }
    psi_app_progress_note(&s->prog, "a payload table of %zu rows (columns %s; %zu bytes)",
                          s->in.n, head, len);
    rc = PSI_APP_EXIT_OK;
done:
    free(pays);
    free(pbuf);
    free(head);
    free(table);
    return rc;
}

/* ---- match --payloads past the budget (PROTOCOL.md §22.4) ----------------
 * The rows are written a chunk of the input at a time (match_write_sorted);
 * the response is decoded alongside, as many elements as the chunk has
 * rows, so a chunk's matched rows have their elements at hand: unmasked
 * again, looked up in the payload file through its index, and written. */

#define PJ_READ 65536

int psi_cli_payjoin_open(psi_app_offline *s, psi_cli_payjoin *p, int raw)
{
    uint64_t memory = s->o.memory != 0 ? s->o.memory : psi_app_memory_default();
    int prc;

    memset(p, 0, sizeof *p);
    p->resp.fd = -1;
    if (psi_app_payfile_open(&p->pf, s->o.payloads, s->o.suite, memory, s->err,
                             sizeof s->err) != 0) {
        psi_app_offline_fail(s, "%s", s->err);
        return -1;
    }
    p->open = 1;
    snprintf(p->source, sizeof p->source, "payload file %s", s->o.payloads);
    p->raw = raw;
    if (psi_app_offline_open_msg(s, s->o.response, "response", &p->resp) != 0)
        return -1;
    if ((prc = psi_reader_create(&p->reader, s->o.suite, PSI_MESSAGE_RESPONSE)) != PSI_OK ||
        (p->buf = malloc(PJ_READ)) == NULL) {
        psi_app_offline_fail(s, "out of memory for reading the response");
        return -1;
    }
    return 0;
}

/* Decodes the response's next n elements into el.  Returns: 0 or -1
 * (reported: the response was checked by the match, so only a file that
 * changed since fails here). */
static int payjoin_decode(psi_app_offline *s, psi_cli_payjoin *p, uint8_t *el, size_t n)
{
    size_t got = 0;

    while (got < n) {
        if (p->pos == p->len) {
            size_t want = p->resp.len - p->at < PJ_READ ? (size_t)(p->resp.len - p->at) : PJ_READ;
            if (want == 0 || psi_app_msg_read(&p->resp, p->at, p->buf, want) != 0)
                return psi_app_offline_fail(s, "response %s: it ended or changed while it "
                                            "was read again", s->o.response);
            p->at += want;
            p->pos = 0;
            p->len = want;
        }
        size_t count = n - got, used = 0;
        int prc = psi_reader_feed(p->reader, el + got * PSI_ELEMENT_BYTES, &count, &used,
                                  p->buf + p->pos, p->len - p->pos);
        if (prc != PSI_OK)
            return psi_app_offline_fail_psi(s, "the response changed while it was read again",
                                            s->o.response, prc);
        got += count;
        p->pos += used;
    }
    return 0;
}

int psi_cli_payjoin_chunk(psi_app_offline *s, psi_cli_payjoin *p, const psi_app_input *chunk,
                          uint64_t base, const size_t *idx, size_t k, int header,
                          size_t *written)
{
    uint8_t *el = psi_app_alloc(chunk->n + 1, PSI_ELEMENT_BYTES);
    uint8_t *picked = psi_app_alloc(k + 1, PSI_ELEMENT_BYTES);
    size_t *rel = psi_app_alloc(k + 1, sizeof *rel), w = 0;
    int code = PSI_OK, rc = -1;

    if (el == NULL || picked == NULL || rel == NULL) {
        psi_app_offline_fail(s, "out of memory for a chunk's payloads");
        goto done;
    }
    if (payjoin_decode(s, p, el, chunk->n) != 0)
        goto done;
    for (size_t i = 0; i < k; i++) {
        rel[i] = (size_t)(idx[i] - base);
        memcpy(picked + i * PSI_ELEMENT_BYTES, el + rel[i] * PSI_ELEMENT_BYTES,
               PSI_ELEMENT_BYTES);
    }
    psi_app_join j = {s->out.f, s->g, &p->pf.t, p->pf.head, p->pf.head_len, p->raw, p->source,
                      s->o.raw_cells};
    if (psi_app_payload_join(&j, chunk, header, picked, rel, k, base, &w, &code, s->err,
                             sizeof s->err) != 0) {
        psi_app_offline_fail(s, "%s", s->err);
        goto done;
    }
    *written += w;
    rc = 0;
done:
    free(el);
    free(picked);
    free(rel);
    return rc;
}

void psi_cli_payjoin_close(psi_cli_payjoin *p)
{
    if (p->open)
        psi_app_payfile_close(&p->pf);
    psi_app_msg_close(&p->resp);
    psi_reader_free(p->reader);
    free(p->buf);
    memset(p, 0, sizeof *p);
    p->resp.fd = -1;
}
