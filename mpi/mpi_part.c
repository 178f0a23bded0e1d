/* Each rank's part of the input file read a chunk of its budget at a time
 * (PROTOCOL.md §18.5, §20); see mpi_run.h.  A part that is one chunk is
 * held and stepped as a whole.  A larger one is read twice: once to count
 * its values (the plan's slices are the ranks' counts, so every rank must
 * know them before any step runs), once to mask it chunk by chunk into
 * runs on disk, which rank 0's merge reads back (mpi_plan.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"
#include "mpi_run.h"

/* Opens the stream of this rank's bytes and reads its first chunk.  The
 * first line was checked by psi_mpi_input_range (line mode: no guard).
 * Returns: 0, or an exit code with the message in r->s.err. */
static int part_stream(psi_mpi_run *r, psi_mpi_part *pt)
{
    if (psi_app_input_stream_open(&pt->in, r->s.o.input, NULL, 1, r->b.block_bytes,
                                  r->b.chunk_values, r->b.record_max, r->s.err,
                                  sizeof r->s.err) != PSI_APP_INPUT_OK ||
        psi_app_input_stream_range(&pt->in, pt->start, pt->end, r->s.err,
                                   sizeof r->s.err) != PSI_APP_INPUT_OK ||
        psi_app_input_stream_next(&pt->in, r->s.err, sizeof r->s.err) != PSI_APP_INPUT_OK)
        return PSI_APP_EXIT_USAGE;
    return 0;
}

int psi_mpi_part_open(psi_mpi_run *r, psi_mpi_part *pt)
{
    int status;

    memset(pt, 0, sizeof *pt);
    pt->in.fd = -1;
    status = psi_mpi_input_range(r, &pt->start, &pt->end);
    if (status == 0)
        status = part_stream(r, pt);
    if (status == 0 && !(pt->whole = psi_app_input_stream_at_end(&pt->in))) {
        // Counted now, masked later: no values are kept.
        psi_app_progress_begin(&r->s.prog, "counting this rank's values",
                               psi_app_input_stream_estimate(&pt->in));
        r->s.prog.chunked = 1;
        while (status == 0 && pt->in.chunk.n > 0) {
            r->s.prog.base = pt->in.values;
            psi_app_progress_update(&r->s.prog, pt->in.chunk.n,
                                    psi_app_input_stream_estimate(&pt->in));
            if (psi_app_input_stream_next(&pt->in, r->s.err, sizeof r->s.err) != 0)
                status = PSI_APP_EXIT_USAGE;
        }
        r->s.prog.total = pt->in.values;
        psi_app_progress_end(&r->s.prog);
        psi_app_input_stream_close(&pt->in);
    }
    pt->n = pt->whole ? pt->in.chunk.n : pt->in.values;
    status = psi_mpi_agree(r, status);
    if (status == 0)
        psi_mpi_share_counts(r, pt->n);
    return status;
}

int psi_mpi_part_run(psi_mpi_run *r, psi_mpi_plan *mp, psi_mpi_part *pt, const char *step,
                     const char *what)
{
    int status = 0;

    if (pt->whole)
        return psi_mpi_plan_run(r, mp, step, pt->in.chunk.values, NULL, what, NULL);
    if ((status = part_stream(r, pt)) == 0) {
        psi_app_progress_begin(&r->s.prog, step, pt->n);
        r->s.prog.chunked = 1;
        while (status == 0 && pt->in.chunk.n > 0) {
            status = psi_mpi_plan_chunk(r, mp, pt->in.chunk.values, NULL, pt->in.chunk.n,
                                        pt->in.values, what, NULL);
            if (status == 0 &&
                psi_app_input_stream_next(&pt->in, r->s.err, sizeof r->s.err) != 0)
                status = PSI_APP_EXIT_USAGE;
        }
        psi_app_progress_end(&r->s.prog);
        // The same file, read again: it must hold the values counted.
        if (status == 0 && pt->in.values != pt->n) {
            psi_app_offline_fail(&r->s, "%s: the file changed while it was read (%" PRIu64
                                 " values, then %" PRIu64 ")", r->s.o.input, pt->n,
                                 pt->in.values);
            status = PSI_APP_EXIT_FAIL;
        }
        psi_app_input_stream_close(&pt->in);
    }
    return psi_mpi_agree(r, status);
}

int psi_mpi_part_value(psi_mpi_run *r, psi_mpi_part *pt, uint64_t i, const psi_value **v)
{
    if (!pt->whole && !pt->reading) {
        pt->reading = 1;
        if (part_stream(r, pt) != 0)
            return PSI_APP_EXIT_USAGE;
    }
    while (i >= pt->in.values + pt->in.chunk.n) {
        if (pt->whole || pt->in.chunk.n == 0) {
            psi_app_offline_fail(&r->s, "%s: the file changed while it was read (%" PRIu64
                                 " values, then fewer)", r->s.o.input, pt->n);
            return PSI_APP_EXIT_FAIL;
        }
        if (psi_app_input_stream_next(&pt->in, r->s.err, sizeof r->s.err) != 0)
            return PSI_APP_EXIT_USAGE;
    }
    *v = &pt->in.chunk.values[i - pt->in.values];
    return 0;
}

void psi_mpi_part_free(psi_mpi_part *pt)
{
    psi_app_input_stream_close(&pt->in);
}
