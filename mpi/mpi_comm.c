/* Agreement on failures, the key's distribution and the slice counts; see
 * mpi_run.h. */
#include <mpi.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "app_util.h"
#include "mpi_run.h"

#define PSI_MPI_TAG_ERR 13

int psi_mpi_agree(psi_mpi_run *r, int status)
{
    char msg[sizeof r->s.err];
    int first = -1;

    MPI_Allgather(&status, 1, MPI_INT, r->status, 1, MPI_INT, MPI_COMM_WORLD);
    for (int k = 0; k < r->size && first < 0; k++)
        if (r->status[k] != 0)
            first = k;
    if (first < 0)
        return 0;
    if (first == 0) {
        memcpy(msg, r->s.err, sizeof msg);
    } else if (r->rank == first) {
        MPI_Send(r->s.err, (int)sizeof r->s.err, MPI_CHAR, 0, PSI_MPI_TAG_ERR, MPI_COMM_WORLD);
    } else if (r->rank == 0) {
        MPI_Recv(msg, (int)sizeof msg, MPI_CHAR, first, PSI_MPI_TAG_ERR, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    }
    if (r->rank == 0) {
        msg[sizeof msg - 1] = '\0';
        if (r->size == 1)
            psi_app_progress_note(&r->s.prog, "error: %s", msg);
        else
            psi_app_progress_note(&r->s.prog, "error: rank %d: %s", first, msg);
    }
    return r->status[first];
}

int psi_mpi_share_key(psi_mpi_run *r)
{
    psi_settings st;
    uint8_t *key = sodium_malloc(64);
    size_t len = 64;
    uint64_t len64 = 0;
    int status = 0, rc, prc;

    if (key == NULL) {
        psi_app_offline_fail(&r->s, "out of guarded memory for the key");
        status = PSI_APP_EXIT_FAIL;
    }
    if (status == 0 && r->rank == 0) {
        if (psi_app_offline_key(&r->s) != 0) {
            status = PSI_APP_EXIT_USAGE;
        } else if ((prc = psi_engine_export_key(r->s.key, key, &len)) != PSI_OK) {
            psi_app_offline_fail_psi(&r->s, "cannot export the key", NULL, prc);
            status = PSI_APP_EXIT_FAIL;
        }
        len64 = len;
    }
    rc = psi_mpi_agree(r, status);
    if (rc == 0) {
        // The key crosses the interconnect once, in the clear (PROTOCOL.md §18.2).
        MPI_Bcast(&len64, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        MPI_Bcast(key, (int)len64, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (r->rank != 0) {
            psi_settings_default(&st);
            st.suite = (psi_suite)r->s.o.suite;
            prc = psi_engine_create_from_key(&r->s.key, &st, key, (size_t)len64);
            if (prc != PSI_OK) {
                psi_app_offline_fail_psi(&r->s, "cannot load the key", NULL, prc);
                status = PSI_APP_EXIT_FAIL;
            }
        }
        rc = psi_mpi_agree(r, status);
    }
    if (key != NULL) {
        sodium_memzero(key, 64);
        sodium_free(key);
    }
    return rc;
}

int psi_mpi_share_counts(psi_mpi_run *r, uint64_t n)
{
    MPI_Allgather(&n, 1, MPI_UINT64_T, r->counts, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    r->total = 0;
    for (int k = 0; k < r->size; k++) {
        r->offsets[k] = r->total;
        r->total += r->counts[k];
    }
    return 0;
}

int psi_mpi_shards(psi_mpi_run *r, psi_role role, int reveal)
{
    return psi_mpi_agree(r, psi_app_offline_shards(&r->s, role, reveal) != 0 ? PSI_APP_EXIT_FAIL : 0);
}

int psi_mpi_open(psi_mpi_run *r, psi_app_output *o, const char *path)
{
    int status = 0;

    if (r->rank == 0 && psi_app_offline_open(&r->s, o, path) != 0)
        status = PSI_APP_EXIT_USAGE;
    return psi_mpi_agree(r, status);
}

int psi_mpi_commit(psi_mpi_run *r, psi_app_output *o)
{
    int status = 0;

    if (r->rank == 0 && psi_app_output_commit(o, r->s.err, sizeof r->s.err) != 0)
        status = PSI_APP_EXIT_FAIL;
    return psi_mpi_agree(r, status);
}
