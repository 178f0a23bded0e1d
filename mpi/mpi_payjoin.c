/* match --payloads on the ranks (PROTOCOL.md §22.1, §22.4): every rank
 * opens the payload file where it lies (checked and indexed within its
 * budget, never read whole) and, for each piece of its matched indices,
 * takes their response elements from its part (held, or one record each
 * read from the response file, whose canonical layout puts element i at a
 * fixed offset), unmasks them again on its shards, looks their records up
 * and writes its rows with their payloads (a line input: the value, a tab
 * and the payload's fields).  See mpi_run.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>


#include "app_util.h"
#include "mpi_run.h"

int psi_mpi_pay_open(psi_mpi_run *r, psi_mpi_pay *p, const uint8_t *held,
                     const psi_mpi_records *rec, int raw)
{
    uint64_t size = 0;
    int status = 0;

    memset(p, 0, sizeof *p);
    p->fd = -1;
    p->held = held;
    p->raw = raw;
    p->elen = psi_suite_element_bytes(r->s.o.suite);
    snprintf(p->source, sizeof p->source, "payload file %s", r->s.o.payloads);
    if (psi_app_payfile_open(&p->pf, r->s.o.payloads, r->s.o.suite, r->b.bytes, r->s.err,
                             sizeof r->s.err) != 0) {
        psi_app_offline_fail(&r->s, "%s", r->s.err);
        status = PSI_APP_EXIT_FAIL;
    } else {
        p->open = 1;
    }
    if (status == 0 && held == NULL) {
        // The part's records: element i at at + i * rec + 2 (tag, length).
        p->at = rec->at;
        p->rec = 2 + p->elen;
        if ((p->fd = psi_mpi_open_regular(r, "response", rec->path, &size)) < 0)
            status = PSI_APP_EXIT_FAIL;
        else if (rec->count > 0 && psi_mpi_pread(p->fd, p->prefix, 2, p->at) != 0) {
            psi_app_offline_fail(&r->s, "response %s: cannot read it again", rec->path);
            status = PSI_APP_EXIT_FAIL;
        }
    }
    return psi_mpi_agree(r, status);
}

/* Element i of this rank's part of the response, into slot. */
static int pay_element(psi_mpi_run *r, psi_mpi_pay *p, uint64_t i, uint8_t *slot)
{
    uint8_t b[2 + PSI_ELEMENT_BYTES];

    memset(slot, 0, PSI_ELEMENT_BYTES);
    if (p->held != NULL) {
        memcpy(slot, p->held + i * PSI_ELEMENT_BYTES, PSI_ELEMENT_BYTES);
        return 0;
    }
    if (psi_mpi_pread(p->fd, b, p->rec, p->at + i * p->rec) != 0 || b[0] != p->prefix[0] ||
        b[1] != p->prefix[1])
        return psi_app_offline_fail(&r->s, "response %s: it changed since it was matched "
                                    "(%s)", r->s.o.response, errno ? strerror(errno)
                                                                   : "another record");
    memcpy(slot, b + 2, p->elen);
    return 0;
}

int psi_mpi_pay_rows(psi_mpi_run *r, psi_mpi_pay *p, psi_mpi_part *pt, const size_t *idx,
                     size_t c, FILE *f)
{
    uint8_t *picked = psi_app_alloc(c + 1, PSI_ELEMENT_BYTES), *pays = NULL;
    size_t *lens = NULL, L = p->pf.t.pad_len;
    const psi_value *v;
    psi_app_join j = {f, r->s.g, &p->pf.t, p->pf.head, p->pf.head_len, p->raw, p->source,
                      r->s.o.raw_cells};
    uint8_t *scratch = psi_app_alloc(L + 1, 1);
    int status = PSI_APP_EXIT_FAIL, code;

    if (picked == NULL || scratch == NULL) {
        psi_app_offline_fail(&r->s, "out of memory for a piece of the payloads");
        goto done;
    }
    for (size_t i = 0; i < c; i++)
        if (pay_element(r, p, idx[i], picked + i * PSI_ELEMENT_BYTES) != 0)
            goto done;
    if (psi_app_payload_join_open(&j, picked, idx, c, r->offsets[r->rank], &pays, &lens, &code,
                                  r->s.err, sizeof r->s.err) != 0) {
        psi_app_offline_fail(&r->s, "%s", r->s.err);
        goto done;
    }
    for (size_t i = 0; i < c; i++) {
        if (lens[i] == PSI_PAYLOAD_NONE)
            continue; // a false positive of GCS or Bloom
        if ((status = psi_mpi_part_value(r, pt, idx[i], &v)) != 0)
            goto done;
        status = PSI_APP_EXIT_FAIL;
        if (psi_app_payload_line_write(f, j.raw_cells, v->data, v->len, pays + i * L, lens[i],
                                       scratch) != 0) {
            psi_app_offline_fail(&r->s, "%s: cannot write", r->s.o.output);
            goto done;
        }
        p->written++;
    }
    status = 0;
done:
    free(picked);
    if (scratch != NULL)
        sodium_memzero(scratch, L + 1); // a payload's cells: the client's results
    free(scratch);
    psi_app_payload_join_free(&j, pays, lens, c);
    return status;
}

void psi_mpi_pay_free(psi_mpi_pay *p)
{
    if (p->open)
        psi_app_payfile_close(&p->pf);
    if (p->fd >= 0)
        close(p->fd);
    p->open = 0;
    p->fd = -1;
}
