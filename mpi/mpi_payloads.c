/* shardpsi-mpi payloads (PROTOCOL.md §22.1, §18): the payload file of a CSV
 * input, the same bytes as `shardpsi payloads` for the same key, input and
 * salt.  Every rank reads the CSV (a record may span lines, so the file is
 * not cut at line boundaries as the other steps' inputs are) and masks its
 * share of the values, one slice a rank of the library's plan of a
 * PSI_STEP_MASK step; rank 0's finish gathers the elements in input order,
 * and rank 0, which alone takes the payload columns, seals the table with
 * the library and writes the file.  Everything is held: the CSV on every
 * rank, the elements and the table on rank 0, so an input past a quarter of
 * the budget is refused. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app_payload.h"
#include "app_util.h"
#include "mpi_run.h"

/* The input fits: refused past a quarter of the budget on every rank (each
 * holds it).  Returns: as psi_mpi_agree. */
static int payloads_fit(psi_mpi_run *r)
{
    struct stat st;
    int status = 0;

    if (stat(r->s.o.input, &st) == 0 && (uint64_t)st.st_size > r->b.bytes / 4) {
        psi_app_offline_fail(&r->s, "%s: %llu bytes: shardpsi-mpi payloads holds the input on "
                             "every rank and the payload table on rank 0, in a quarter of "
                             "--memory %" PRIu64 ": raise --memory to at least %llu "
                             "(or build it with shardpsi payloads, which works within --memory)", r->s.o.input,
                             (unsigned long long)st.st_size, r->b.bytes,
                             (unsigned long long)st.st_size * 4);
        status = PSI_APP_EXIT_FAIL;
    }
    return psi_mpi_agree(r, status);
}

/* Rank 0: the table of the n elements (input order) and the payloads,
 * written after the columns' header line.  Returns: 0 or an exit code
 * (reported in r->s.err). */
static int payloads_write(psi_mpi_run *r, const uint8_t *el, const psi_value *pays,
                          const char *head, const uint8_t *salt, size_t *table_len)
{
    size_t n = r->s.in.n, len = 0;
    uint8_t *table = NULL;
    int prc = psi_payload_table_build(r->s.o.suite, NULL, &len, el, pays, n, r->s.o.pad_len,
                                      salt);

    if (prc == PSI_E_BUFFER_TOO_SMALL) {
        prc = (table = psi_app_alloc(len + 1, 1)) != NULL ? PSI_OK : PSI_E_NOMEM;
        if (prc == PSI_OK)
            prc = psi_payload_table_build(r->s.o.suite, table, &len, el, pays, n,
                                          r->s.o.pad_len, salt);
    }
    if (prc != PSI_OK) {
        char msg[512];
        psi_app_payload_build_error(msg, sizeof msg, r->s.o.input, prc, pays, r->s.o.pad_len);
        psi_app_offline_fail(&r->s, "%s", msg);
        free(table);
        return PSI_APP_EXIT_FAIL;
    }
    int bad = fprintf(r->s.out.f, "%s\n", head) < 0 || fwrite(table, 1, len, r->s.out.f) != len;
    free(table);
    if (bad) {
        psi_app_offline_fail(&r->s, "%s: cannot write", r->s.o.output);
        return PSI_APP_EXIT_FAIL;
    }
    *table_len = len;
    return 0;
}

int psi_mpi_payloads(psi_mpi_run *r)
{
    psi_mpi_plan mp;
    psi_op_args a;
    psi_value *pays = NULL;
    uint8_t *pbuf = NULL, *el = NULL, salt[PSI_PAYLOAD_SALT_BYTES];
    char *head = NULL;
    size_t table_len = 0;
    int status = 0, rc;

    memset(&mp, 0, sizeof mp);
    memset(&a, 0, sizeof a);
    if (r->s.o.salt != NULL &&
        psi_app_payload_salt(salt, r->s.o.salt, r->s.err, sizeof r->s.err) != 0)
        status = PSI_APP_EXIT_USAGE;
    if ((rc = psi_mpi_agree(r, status)) != 0 || (rc = psi_mpi_share_key(r)) != 0 ||
        (rc = payloads_fit(r)) != 0 ||
        (rc = psi_mpi_agree(r, psi_app_offline_input(&r->s) != 0 ? PSI_APP_EXIT_USAGE : 0)) != 0)
        goto done;
    // Rank 0 takes the payload columns; the other ranks mask only.
    status = 0;
    if (r->rank == 0 && psi_app_payloads(&r->s.in, r->s.o.payload_columns, &pays, &pbuf,
                                         &head, r->s.err, sizeof r->s.err) != 0) {
        char why[sizeof r->s.err];
        snprintf(why, sizeof why, "%s", r->s.err);
        psi_app_offline_fail(&r->s, "%s: %s", r->s.o.input, why);
        status = PSI_APP_EXIT_USAGE;
    }
    if ((rc = psi_mpi_agree(r, status)) != 0 ||
        (rc = psi_mpi_open(r, &r->s.out, r->s.o.output)) != 0)
        goto done;
    // One slice a rank: rank k masks the k-th of r->size equal shares.
    uint64_t n = r->s.in.n, share = n / (uint64_t)r->size, extra = n % (uint64_t)r->size;
    psi_mpi_share_counts(r, share + ((uint64_t)r->rank < extra ? 1 : 0));
    a.op = PSI_OP_STEP;
    a.step = PSI_STEP_MASK;
    a.n_values = (size_t)r->total;
    if ((rc = psi_mpi_plan_begin(r, &mp, PSI_ROLE_SERVER, 1, &a, r->counts,
                                 "cannot build the payload table", r->s.o.input)) != 0 ||
        (rc = psi_mpi_shards(r, PSI_ROLE_SERVER, 1)) != 0 ||
        (rc = psi_mpi_plan_run(r, &mp, "masking this rank's share of the values",
                               r->s.in.values + r->offsets[r->rank], NULL,
                               "cannot build the payload table", r->s.o.input)) != 0)
        goto done;
    // Rank 0's finish: every rank's elements, in input order.
    status = 0;
    psi_op_output o = {.len = (size_t)n * PSI_ELEMENT_BYTES};
    if (r->rank == 0 && (o.bytes = el = psi_app_alloc((size_t)n + 1, PSI_ELEMENT_BYTES)) == NULL)
        o.len = 0; // the finish fails, and every chunk is still received
    int prc = psi_mpi_plan_finish(r, &mp, &o);
    if (r->rank == 0 && prc != PSI_OK) {
        psi_app_offline_fail_psi(&r->s, "cannot build the payload table", r->s.o.input, prc);
        status = PSI_APP_EXIT_FAIL;
    } else if (r->rank == 0) {
        status = payloads_write(r, el, pays, head, r->s.o.salt != NULL ? salt : NULL,
                                &table_len);
    }
    if ((rc = psi_mpi_agree(r, status)) != 0 || (rc = psi_mpi_commit(r, &r->s.out)) != 0)
        goto done;
    PSI_MPI_NOTE(r, "%llu rows on %d ranks: a payload table (columns %s, suite %s; %zu bytes)",
                 (unsigned long long)n, r->size, head, psi_app_suite_label(r->s.o.suite),
                 table_len);
done:
    free(pays);
    free(pbuf);
    free(head);
    free(el);
    psi_mpi_plan_free(&mp);
    return rc;
}
