/* Match's result text from every rank to rank 0, in bounded chunks
 * (PROTOCOL.md §18.3); see mpi_run.h.  Rank 0 receives a rank's next chunk
 * only when it has written the one before, and a sender's MPI_Send waits
 * for that, so rank 0 holds one chunk at a time.  (The steps' elements go
 * to rank 0 through the plan's source, mpi_plan.c.) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"
#include "mpi_run.h"

#define STREAM_BYTES_CHUNK ((size_t)4 << 20)

int psi_mpi_stream_bytes(psi_mpi_run *r, FILE *f, const uint8_t *bytes, size_t len)
{
    uint64_t total = len;
    uint8_t *buf;
    int bad = 0;

    if (r->rank != 0) {
        MPI_Send(&total, 1, MPI_UINT64_T, 0, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD);
        for (size_t i = 0; i < len; i += STREAM_BYTES_CHUNK) {
            size_t c = len - i < STREAM_BYTES_CHUNK ? len - i : STREAM_BYTES_CHUNK;
            MPI_Send(bytes + i, (int)c, MPI_BYTE, 0, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD);
        }
        return 0;
    }
    if (len > 0 && fwrite(bytes, 1, len, f) != len)
        bad = 1;
    if ((buf = malloc(STREAM_BYTES_CHUNK)) == NULL)
        MPI_Abort(MPI_COMM_WORLD, PSI_APP_EXIT_FAIL);
    for (int q = 1; q < r->size; q++) {
        MPI_Recv(&total, 1, MPI_UINT64_T, q, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (uint64_t i = 0; i < total; i += STREAM_BYTES_CHUNK) {
            size_t c = total - i < STREAM_BYTES_CHUNK ? (size_t)(total - i) : STREAM_BYTES_CHUNK;
            MPI_Recv(buf, (int)c, MPI_BYTE, q, PSI_MPI_TAG_CHUNK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (!bad && fwrite(buf, 1, c, f) != c)
                bad = 1;
        }
    }
    free(buf);
    return bad ? -1 : 0;
}
