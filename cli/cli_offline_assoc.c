/*
 * `shardpsi match --association --permutation PERM` (PROTOCOL.md §9.6, §17,
 * §20): the association table, pairs 'CLIENT_INDEX<TAB>SERVER_INDEX' by
 * client index.  The pairs come from the library in setup order (setup
 * position ascending), so the server's permutation is read in order, as
 * the PERM frame's payload in a file, never held: from --permutation's
 * lines checked into a nameless file (psi_app_perm_load), or, in a round
 * (cli_round_spill.c), the PERM frame as it came.  Held whole when the
 * input and the messages fit the budget; past it the mapped pairs go to
 * sorted runs on disk (app_index_runs.h) and are merged by client index as
 * they are written.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_offline.h"
#include "app_perm.h"
#include "app_util.h"

int psi_cli_assoc_setup(psi_app_offline *s, const psi_setup *parsed, uint64_t *n_server)
{
    if (psi_setup_structure(parsed) != PSI_STRUCTURE_RAW)
        return psi_app_offline_fail(s, "setup %s is a %s setup: --association needs the raw "
                                    "setup (shardpsi setup --structure raw --permutation PERM)",
                                    s->o.setup,
                                    psi_app_structure_name((int)psi_setup_structure(parsed)));
    *n_server = psi_setup_raw_count(parsed);
    return 0;
}

int psi_cli_assoc_perm_open(psi_app_offline *s, uint64_t n_server, const char *dir,
                            uint64_t memory, int *fd)
{
    char err[4400];
    struct stat st;

    *fd = -1;
    if (!s->o.perm_payload) {
        if (psi_app_perm_load(fd, s->o.permutation, n_server, dir, memory, err,
                              sizeof err) != 0)
            return psi_app_offline_fail(s, "%s", err);
        return 0;
    }
    psi_app_msg_file f;
    if (psi_app_msg_open(&f, s->o.permutation, "the server's association table", err,
                         sizeof err) != 0)
        return psi_app_offline_fail(s, "%s", err);
    if (fstat(f.fd, &st) != 0 || (uint64_t)st.st_size / 8 != n_server ||
        st.st_size % 8 != 0) {
        psi_app_msg_close(&f);
        return psi_app_offline_fail(s, "the server's association table holds %" PRIu64
                                    " bytes, not 8 for each of its %" PRIu64 " values",
                                    (uint64_t)st.st_size, n_server);
    }
    *fd = f.fd; // the caller's now
    return 0;
}

void psi_cli_assoc_init(psi_cli_assoc *m, const char *dir, uint64_t memory)
{
    memset(m, 0, sizeof *m);
    m->perm.fd = -1;
    psi_app_index_runs_init_pairs(&m->runs, dir, memory);
}

int psi_cli_assoc_begin(psi_cli_assoc *m, int fd, uint64_t n_server)
{
    m->n_server = n_server;
    if (psi_app_perm_reader_open(&m->perm, fd, n_server) != 0) {
        snprintf(m->err, sizeof m->err, "%s", m->perm.err);
        return -1;
    }
    return 0;
}

int psi_cli_assoc_take(void *arg, const psi_pair *pairs, size_t n)
{
    psi_cli_assoc *m = arg;
    uint64_t row;

    for (size_t i = 0; i < n; i++) {
        if (psi_app_perm_reader_at(&m->perm, pairs[i].server_index, &row) != 0) {
            snprintf(m->err, sizeof m->err, "%s", m->perm.err);
            return 1;
        }
        if (row >= m->n_server) {
            snprintf(m->err, sizeof m->err, "the server's association table: entry %zu names "
                     "row %" PRIu64 " of %" PRIu64, pairs[i].server_index, row, m->n_server);
            return 1;
        }
        if (psi_app_index_runs_add_pair(&m->runs, pairs[i].client_index, (size_t)row) != 0) {
            snprintf(m->err, sizeof m->err, "%s", m->runs.file.err);
            return 1;
        }
    }
    return 0;
}

int psi_cli_assoc_write(psi_app_offline *s, psi_cli_assoc *m, size_t *count)
{
    size_t c = 0, r = 0;
    uint64_t i = 0;
    int have;

    if (psi_app_index_runs_read_begin(&m->runs) != 0)
        return psi_app_offline_fail(s, "%s", m->runs.file.err);
    psi_app_progress_begin(&s->prog, "writing the association table", m->runs.total);
    while ((have = psi_app_index_runs_next_pair(&m->runs, &c, &r)) > 0) {
        if (fprintf(s->out.f, "%zu\t%zu\n", c, r) < 0)
            break; // the commit names the failed write
        if (++i % 4096 == 0)
            psi_app_progress_update(&s->prog, i, m->runs.total);
    }
    psi_app_progress_end(&s->prog);
    if (have < 0)
        return psi_app_offline_fail(s, "%s", m->runs.file.err);
    *count = (size_t)m->runs.total;
    return 0;
}

void psi_cli_assoc_free(psi_cli_assoc *m)
{
    psi_app_perm_reader_close(&m->perm);
    psi_app_index_runs_close(&m->runs);
}
