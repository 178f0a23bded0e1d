/*
 * `shardpsi payloads` and the payload side of `shardpsi match --payloads`
 * (PROTOCOL.md §22): the server's chosen CSV columns of each row, in a
 * payload table beside its setup, and the client's matched rows with the
 * payloads they open.  The server's values are masked by its shards
 * (psi_shards_payload_table_build); the library derives, encrypts and
 * orders.  Both
 * sides hold their input and the table whole: a payload file is not yet
 * built or read within a memory budget.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_payload.h"
#include "app_util.h"
#include "cli_offline.h"

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
    if (psi_app_offline_key(s) != 0 || psi_app_offline_input(s) != 0)
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

int psi_cli_payload_file_read(psi_app_offline *s, psi_cli_payload_file *p)
{
    const uint8_t *nl;
    size_t count = 0;
    int prc;

    memset(p, 0, sizeof *p);
    if (psi_app_offline_read_msg(s, s->o.payloads, "payload file", &p->buf, &p->len) != 0)
        return PSI_APP_EXIT_USAGE;
    nl = memchr(p->buf, '\n', p->len < PSI_APP_PAYLOAD_HEAD_MAX ? p->len
                                                                : PSI_APP_PAYLOAD_HEAD_MAX);
    if (nl == NULL) {
        psi_app_offline_fail(s, "payload file %s: no header line of columns (is it a file "
                             "shardpsi payloads wrote?)", s->o.payloads);
        return PSI_APP_EXIT_FAIL;
    }
    p->head_len = (size_t)(nl - p->buf);
    p->table = nl + 1;
    p->table_len = p->len - p->head_len - 1;
    prc = psi_payload_table_check(s->o.suite, p->table, p->table_len, &count, &p->pad_len);
    if (prc != PSI_OK) {
        psi_app_offline_fail_psi(s, "the payload table is invalid", s->o.payloads, prc);
        return PSI_APP_EXIT_FAIL;
    }
    return 0;
}

int psi_cli_payload_open(psi_app_offline *s, const psi_cli_payload_file *p,
                         const uint8_t *resp, size_t resp_len, const size_t *idx, size_t k,
                         uint8_t **out, size_t **lens)
{
    int prc = psi_app_payload_open(s->g, s->o.suite, p->table, p->table_len, p->pad_len, resp,
                                   resp_len, idx, k, out, lens);
    psi_error_detail d;

    if (prc == PSI_OK)
        return 0;
    psi_error_detail_get(&d);
    if (prc == PSI_E_PAYLOAD_AUTH || prc == PSI_E_PAYLOAD_LENGTH)
        psi_app_offline_fail(s, "payload file %s: the payload of matched row %zu %s "
                             "(a damaged or forged table): %s", s->o.payloads,
                             d.index >= 0 && (size_t)d.index < k ? idx[d.index] + 1 : 0,
                             prc == PSI_E_PAYLOAD_AUTH ? "does not decrypt"
                                                       : "has a wrong length or padding",
                             psi_error_name(prc));
    else
        psi_app_offline_fail_psi(s, "cannot open the payloads", s->o.payloads, prc);
    return -1;
}
