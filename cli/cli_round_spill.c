/* A network round past its memory budget; see cli_round_spill.h. */
#include "cli_round_spill.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app_perm.h"
#include "app_spill.h"
#include "cli_offline.h"
#include "app_util.h"

int psi_cli_round_spill_needed(const psi_cli_round_opts *o, const char *who, uint64_t *n,
                               char *err, size_t err_len)
{
    uint64_t budget = o->memory != 0 ? o->memory : psi_app_memory_default(), size;
    psi_app_offline off;
    struct stat st;
    int rc;

    *n = 0;
    if (o->input == NULL || strcmp(o->input, "-") == 0 || stat(o->input, &st) != 0 ||
        !S_ISREG(st.st_mode))
        return 0;
    // A value takes at least a byte of the file (its line end), and the
    // last one perhaps none.
    size = (uint64_t)st.st_size;
    if (size < budget / (PSI_CLI_ROUND_PER_VALUE + 1) - 1)
        return 0;
    memset(&off, 0, sizeof off);
    off.capture = 1;
    off.o.input = o->input;
    off.o.column = o->column;
    off.o.lines = o->lines;
    off.o.memory = o->memory;
    snprintf(off.who, sizeof off.who, "%s", who);
    psi_app_progress_init(&off.prog, off.who, o->progress);
    if ((rc = psi_cli_offline_count(&off, n)) != 0) {
        snprintf(err, err_len, "%s", off.err);
        return -1;
    }
    return *n > (budget - (size < budget ? size : budget)) / PSI_CLI_ROUND_PER_VALUE;
}

int psi_cli_round_spill_init(psi_cli_round_spill *r, const psi_cli_round_opts *o,
                             const psi_engine *key, const char *who, const char *default_dir)
{
    psi_settings st;
    int prc;

    memset(r, 0, sizeof *r);
    for (int i = 0; i < PSI_CLI_MSGS; i++)
        r->fd[i] = -1;
    snprintf(r->dir, sizeof r->dir, "%s", psi_app_temp_dir(o->temp_dir, default_dir));
    psi_app_offline *s = &r->off;
    s->capture = 1;
    s->o.cmd = who;
    s->o.input = o->input;
    s->o.column = o->column;
    s->o.lines = o->lines;
    s->o.suite = o->suite;
    s->o.shard.sharded = 1;
    s->o.shard.threads = o->threads;
    s->o.progress = o->progress;
    s->o.memory = o->memory;
    s->o.temp_dir = r->dir;
    s->o.structure = -1;
    snprintf(s->who, sizeof s->who, "%s", who);
    psi_app_progress_init(&s->prog, s->who, o->progress);
    psi_settings_default(&st);
    st.suite = (psi_suite)o->suite;
    prc = key != NULL ? psi_engine_clone(&s->key, key, &st) : psi_engine_create(&s->key, &st);
    if (prc != PSI_OK)
        return psi_app_offline_fail_psi(s, "cannot make the round's key", NULL, prc);
    return 0;
}

int psi_cli_round_spill_file(psi_cli_round_spill *r, int i, const char *label)
{
    psi_app_offline *s = &r->off;
    int fd, dup_fd;

    if (psi_app_spill_tmpfile(&fd, r->dir, s->err, sizeof s->err) != 0)
        return -1;
    if ((dup_fd = dup(fd)) < 0 || (s->file[i] = fdopen(dup_fd, "wb")) == NULL) {
        int e = errno;
        if (dup_fd >= 0)
            close(dup_fd);
        close(fd);
        return psi_app_offline_fail(s, "%s: %s", label, strerror(e));
    }
    r->fd[i] = fd;
    snprintf(r->path[i], sizeof r->path[i], "/proc/self/fd/%d", fd);
    s->file_path[i] = r->path[i];
    s->file_label[i] = label;
    return 0;
}

void psi_cli_round_spill_output(psi_cli_round_spill *r, const char *path, FILE *f)
{
    r->off.file_path[PSI_CLI_OUTPUT] = path;
    r->off.file[PSI_CLI_OUTPUT] = f;
}

uint64_t psi_cli_round_spill_size(const psi_cli_round_spill *r, int i)
{
    struct stat st;

    return r->fd[i] >= 0 && fstat(r->fd[i], &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* The PERM payload as the permutation's rows are parsed: 8-byte big-endian
 * entries through a 64 KiB buffer into message `to`'s file. */
typedef struct spill_perm_out {
    psi_cli_round_spill *r;
    int to;
    uint8_t *buf;
    size_t len;
    int failed;           // a write failed (message set)
} spill_perm_out;

static int spill_perm_row(void *arg, uint64_t line, uint64_t row)
{
    spill_perm_out *w = arg;
    psi_app_offline *s = &w->r->off;

    (void)line;
    psi_app_store_be(w->buf + w->len, row, 8);
    w->len += 8;
    if (w->len == 65536 && fwrite(w->buf, 1, w->len, s->file[w->to]) != w->len) {
        psi_app_offline_fail(s, "%s: cannot write: %s", s->file_label[w->to], strerror(errno));
        w->failed = 1;
        return PSI_APP_PERM_NOMEM;
    }
    if (w->len == 65536)
        w->len = 0;
    return PSI_APP_PERM_OK;
}

int psi_cli_round_spill_perm(psi_cli_round_spill *r, int to, uint64_t n)
{
    psi_app_offline *s = &r->off;
    FILE *in = fopen(r->path[PSI_CLI_MSG_PERM], "rb");
    uint8_t *rbuf = malloc(65536);
    spill_perm_out w = {r, to, malloc(65536), 0, 0};
    psi_app_perm_parse pp;
    size_t got;
    int st = PSI_APP_PERM_OK, rc = -1;

    if (in == NULL || rbuf == NULL || w.buf == NULL) {
        psi_app_offline_fail(s, "the permutation: %s%s", in == NULL ? "cannot open: " : "",
                             in == NULL ? strerror(errno) : "out of memory");
        goto done;
    }
    // The setup step's own file, in the grammar of psi_app_perm_decode;
    // each row is once by construction (the setup's sort).
    psi_app_perm_parse_init(&pp, n);
    while (st == PSI_APP_PERM_OK && (got = fread(rbuf, 1, 65536, in)) > 0)
        st = psi_app_perm_parse_feed(&pp, rbuf, got, spill_perm_row, &w);
    if (st == PSI_APP_PERM_OK && !ferror(in))
        st = psi_app_perm_parse_end(&pp, spill_perm_row, &w);
    if (w.failed)
        goto done;
    if (ferror(in) || st != PSI_APP_PERM_OK) {
        psi_app_offline_fail(s, "the permutation: %s at line %" PRIu64 " of %" PRIu64,
                             ferror(in) ? "cannot read" : st == PSI_APP_PERM_SHORT
                                 ? "it ends" : "not an index below the count",
                             pp.line + 1, n);
        goto done;
    }
    if ((w.len > 0 && fwrite(w.buf, 1, w.len, s->file[to]) != w.len) ||
        fflush(s->file[to]) != 0) {
        psi_app_offline_fail(s, "%s: cannot write: %s", s->file_label[to], strerror(errno));
        goto done;
    }
    rc = 0;
done:
    if (in != NULL)
        fclose(in);
    free(rbuf);
    free(w.buf);
    return rc;
}

void psi_cli_round_spill_free(psi_cli_round_spill *r)
{
    for (int i = 0; i < PSI_CLI_MSGS; i++) {
        if (r->off.file[i] != NULL)
            fclose(r->off.file[i]);
        r->off.file[i] = NULL;
        if (r->fd[i] >= 0)
            close(r->fd[i]);
        r->fd[i] = -1;
    }
    r->off.file[PSI_CLI_OUTPUT] = NULL; // the command's
    psi_app_offline_free(&r->off);
}
