/* The permutation file as the PERM frame's payload, checked and read in
 * order within a budget; see app_perm.h. */
#include "app_perm.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app_index_runs.h"
#include "app_offline.h"
#include "app_spill.h"
#include "app_util.h"

/* The loader's rows: the payload (8-byte big-endian entries) written as
 * they come, and the rows gathered in sorted runs to see that each comes
 * once. */
typedef struct perm_load {
    FILE *out;
    psi_app_index_runs rows;
    int failed;               // the payload's write or the runs failed
} perm_load;

static int perm_load_row(void *arg, uint64_t line, uint64_t row)
{
    perm_load *p = arg;
    size_t r = (size_t)row;
    uint8_t be[8];

    (void)line;
    psi_app_store_be(be, row, 8);
    if (fwrite(be, 1, 8, p->out) != 8 || psi_app_index_runs_add(&p->rows, &r, 1) != 0) {
        p->failed = 1;
        return PSI_APP_PERM_NOMEM;
    }
    return PSI_APP_PERM_OK;
}

/* Reads the permutation file through 64 KiB into the payload.  Returns: a
 * psi_app_perm_status, or -1 (err: reading). */
static int perm_load_read(const char *path, perm_load *pl, psi_app_perm_parse *pp, char *err,
                          size_t err_len)
{
    psi_app_msg_file f;
    uint8_t *buf = malloc(65536);
    uint64_t off = 0;
    int st = -1;

    if (buf == NULL) {
        snprintf(err, err_len, "out of memory for the permutation");
        return -1;
    }
    if (psi_app_msg_open(&f, path, "permutation file", err, err_len) != 0)
        goto done;
    for (st = PSI_APP_PERM_OK; st == PSI_APP_PERM_OK && off < f.len;) {
        size_t len = f.len - off < 65536 ? (size_t)(f.len - off) : 65536;
        if (psi_app_msg_read(&f, off, buf, len) != 0) {
            snprintf(err, err_len, "permutation file %s", f.err);
            st = -1;
            goto done;
        }
        st = psi_app_perm_parse_feed(pp, buf, len, perm_load_row, pl);
        off += len;
    }
    if (st == PSI_APP_PERM_OK)
        st = psi_app_perm_parse_end(pp, perm_load_row, pl);
done:
    psi_app_msg_close(&f);
    free(buf);
    return st;
}

/* Reads the rows back in ascending order: n rows below n are a permutation
 * unless two neighbours are equal.  Returns: 0, or -1 (err). */
static int perm_load_once(const char *path, uint64_t n, perm_load *pl, char *err,
                          size_t err_len)
{
    size_t prev = 0, v = 0;
    int have;

    if (psi_app_index_runs_read_begin(&pl->rows) != 0) {
        snprintf(err, err_len, "the permutation: %s", pl->rows.file.err);
        return -1;
    }
    for (size_t i = 0; (have = psi_app_index_runs_next(&pl->rows, &v)) > 0; i++, prev = v) {
        if (i > 0 && v == prev) {
            snprintf(err, err_len, "permutation file %s: row %zu is given twice (the setup "
                     "has %" PRIu64 " elements): is it the file shardpsi setup --permutation "
                     "wrote with this setup?", path, v, n);
            return -1;
        }
    }
    if (have < 0) {
        snprintf(err, err_len, "the permutation: %s", pl->rows.file.err);
        return -1;
    }
    return 0;
}

int psi_app_perm_load(int *fd, const char *path, uint64_t n, const char *dir, uint64_t memory,
                      char *err, size_t err_len)
{
    perm_load pl;
    psi_app_perm_parse pp;
    int st, dup_fd = -1, rc = -1;

    *fd = -1;
    memset(&pl, 0, sizeof pl);
    psi_app_index_runs_init(&pl.rows, dir, memory);
    if (psi_app_spill_tmpfile(fd, dir, err, err_len) != 0)
        goto done;
    if ((dup_fd = dup(*fd)) < 0 || (pl.out = fdopen(dup_fd, "wb")) == NULL) {
        snprintf(err, err_len, "the permutation's temporary file: %s", strerror(errno));
        if (dup_fd >= 0)
            close(dup_fd);
        goto done;
    }
    psi_app_perm_parse_init(&pp, n);
    st = perm_load_read(path, &pl, &pp, err, err_len);
    if (st < 0)
        goto done;
    if (fflush(pl.out) != 0)
        pl.failed = 1;
    if (pl.failed) {
        snprintf(err, err_len, "the permutation's temporary file in %s: %s", dir,
                 pl.rows.file.err[0] ? pl.rows.file.err : strerror(errno));
        goto done;
    }
    switch (st) {
    case PSI_APP_PERM_OK:
        rc = perm_load_once(path, n, &pl, err, err_len);
        break;
    case PSI_APP_PERM_SYNTAX:
        snprintf(err, err_len, "permutation file %s, line %" PRIu64 ": not a 0-based row "
                 "index", path, pp.line + 1);
        break;
    case PSI_APP_PERM_SHORT:
        snprintf(err, err_len, "permutation file %s holds %" PRIu64 " rows, and the setup has "
                 "%" PRIu64 " elements: is it the file shardpsi setup --permutation wrote with "
                 "this setup?", path, pp.line, n);
        break;
    default:
        snprintf(err, err_len, "permutation file %s, line %" PRIu64 ": %s (the setup has %"
                 PRIu64 " elements): is it the file shardpsi setup --permutation wrote with "
                 "this setup?", path, pp.line + 1,
                 st == PSI_APP_PERM_EXTRA ? "more lines than setup elements"
                                          : "a row beyond the setup's", n);
        break;
    }
done:
    if (pl.out != NULL)
        fclose(pl.out);
    psi_app_index_runs_close(&pl.rows);
    if (rc != 0 && *fd >= 0) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

#define PERM_READ_BYTES 65536

int psi_app_perm_reader_open(psi_app_perm_reader *r, int fd, uint64_t n)
{
    memset(r, 0, sizeof *r);
    r->fd = fd;
    r->n = n;
    if ((r->buf = malloc(PERM_READ_BYTES)) == NULL) {
        snprintf(r->err, sizeof r->err, "out of memory for reading the permutation");
        return -1;
    }
    return 0;
}

int psi_app_perm_reader_at(psi_app_perm_reader *r, uint64_t j, uint64_t *row)
{
    if (j >= r->n || j < r->base) {
        snprintf(r->err, sizeof r->err, "the permutation has no entry %" PRIu64 " after %"
                 PRIu64 " (of %" PRIu64 ")", j, r->base, r->n);
        return -1;
    }
    if (j >= r->base + r->have) {
        uint64_t left = r->n - j;
        size_t want = left < PERM_READ_BYTES / 8 ? (size_t)left * 8 : PERM_READ_BYTES;
        size_t got = 0;
        while (got < want) {
            ssize_t k = pread(r->fd, r->buf + got, want - got, (off_t)(8 * j + got));
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                snprintf(r->err, sizeof r->err, "the permutation: cannot read: %s",
                         k < 0 ? strerror(errno) : "the file is shorter than its entries");
                return -1;
            }
            got += (size_t)k;
        }
        r->base = j;
        r->have = want / 8;
    }
    *row = psi_app_load_be(r->buf + 8 * (j - r->base), 8);
    return 0;
}

void psi_app_perm_reader_close(psi_app_perm_reader *r)
{
    free(r->buf);
    r->buf = NULL;
}
