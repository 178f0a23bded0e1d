/* `shardpsi demo` past its memory budget; see cli_demo_spill.h. */
#include "cli_demo_spill.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app_clock.h"
#include "app_progress.h"
#include "app_spill.h"
#include "app_util.h"
#include "cli_offline.h"
#include "cli_round_spill.h"

/* The demo's files: the two sets and the client's output, beside the
 * parties' message files (psi_cli_round_spill). */
enum { SET_SERVER = 0, SET_CLIENT = 1, OUT = 2, FILES = 3 };

typedef struct demo_spill {
    const psi_app_demo_opts *o;
    psi_app_demo_gen g;
    psi_app_progress prog;
    psi_cli_round_spill server, client;
    psi_cli_round_opts net[2];   // what the parties' steps are given
    int parties;                 // how many of server, client are set up
    FILE *out;                   // the client's output, on fd[OUT]
    int fd[FILES];
    char path[FILES][32];        // "/proc/self/fd/N"
    char err[1024];
} demo_spill;

static int demo_spill_fail(const char *what, const char *msg)
{
    psi_app_error("demo: %s: %s", what, msg);
    return -1;
}

/* Makes file i (nameless, in dir).  Returns: 0 or -1 (reported). */
static int demo_spill_file(demo_spill *d, int i, const char *dir)
{
    if (psi_app_spill_tmpfile(&d->fd[i], dir, d->err, sizeof d->err) != 0)
        return demo_spill_fail("temporary file", d->err);
    snprintf(d->path[i], sizeof d->path[i], "/proc/self/fd/%d", d->fd[i]);
    return 0;
}

/* Writes set `which` (SET_SERVER or SET_CLIENT), a value a line, through a
 * 1 MiB buffer.  Returns: 0 or -1 (reported: the disk). */
static int demo_spill_write_set(demo_spill *d, int which)
{
    uint64_t n = which == SET_SERVER ? d->g.n_server : d->g.n_client;
    char v[PSI_APP_DEMO_VALUE_LEN + 1];
    int fd = dup(d->fd[which]);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    int ok = f != NULL && setvbuf(f, NULL, _IOFBF, 1 << 20) == 0;

    if (f == NULL && fd >= 0)
        close(fd);
    psi_app_progress_begin(&d->prog, which == SET_SERVER ? "writing the server set"
                                                         : "writing the client set", n);
    for (uint64_t i = 0; ok && i < n; i++) {
        if (which == SET_SERVER)
            psi_app_demo_server_value(&d->g, i, v);
        else
            psi_app_demo_client_value(&d->g, i, v);
        v[PSI_APP_DEMO_VALUE_LEN] = '\n';
        ok = fwrite(v, 1, sizeof v, f) == sizeof v;
        if (i % 65536 == 0)
            psi_app_progress_update(&d->prog, i, n);
    }
    psi_app_progress_end(&d->prog);
    int e = errno;
    if (f != NULL && fclose(f) != 0 && ok) {
        e = errno;
        ok = 0;
    }
    if (!ok)
        return demo_spill_fail(which == SET_SERVER ? "the server set" : "the client set",
                               strerror(e));
    return 0;
}

/* Sets up party `role` of the round on its set's file.  Returns: 0 or -1
 * (reported). */
static int demo_spill_party(demo_spill *d, psi_cli_round_spill *r, int which,
                            uint64_t memory, const char *dir)
{
    psi_cli_round_opts *n = &d->net[which];

    d->parties++;
    memset(n, 0, sizeof *n);
    n->input = d->path[which];
    n->lines = 1;
    n->suite = d->o->suite;
    n->threads = d->o->shard.threads;
    n->progress = -1;
    n->memory = memory;
    n->temp_dir = dir;
    if (psi_cli_round_spill_init(r, n, NULL,
                                 which == SET_SERVER ? "shardpsi demo (server)"
                                                     : "shardpsi demo (client)", dir) != 0)
        return demo_spill_fail(which == SET_SERVER ? "server" : "client", r->off.err);
    r->off.o.shard.shards = d->o->shard.shards;
    return 0;
}

/* Runs offline step `step` of party r, timed, and prints its line.
 * Returns: 0 or -1 (reported). */
static int demo_spill_step(psi_cli_round_spill *r, int (*step)(psi_app_offline *),
                           const char *name, uint64_t values, int msg)
{
    double t0 = psi_app_now_ms();

    if (step(&r->off) != PSI_APP_EXIT_OK)
        return demo_spill_fail(name, r->off.err);
    psi_cli_demo_step_line(name, (size_t)values,
                           msg >= 0 ? (size_t)psi_cli_round_spill_size(r, msg) : SIZE_MAX,
                           psi_app_now_ms() - t0);
    return 0;
}

/* The four steps, each party on its own key and files. */
static int demo_spill_protocol(demo_spill *d)
{
    psi_app_offline *sv = &d->server.off, *cl = &d->client.off;
    const psi_app_demo_opts *o = d->o;

    if (psi_cli_round_spill_file(&d->server, PSI_CLI_MSG_SETUP, "the setup's file") != 0 ||
        psi_cli_round_spill_file(&d->server, PSI_CLI_MSG_RESPONSE, "the response's file") != 0)
        return demo_spill_fail("server", sv->err);
    if (psi_cli_round_spill_file(&d->client, PSI_CLI_MSG_REQUEST, "the request's file") != 0)
        return demo_spill_fail("client", cl->err);
    sv->o.output = d->server.path[PSI_CLI_MSG_SETUP];
    sv->o.structure = (int)o->structure;
    sv->o.fpr = o->fpr;
    // OpenMined divides fpr by the client count; an empty client set
    // would make that infinite.
    sv->o.num_client = d->g.n_client ? (size_t)d->g.n_client : 1;
    if (demo_spill_step(&d->server, psi_cli_offline_setup, "server setup", d->g.n_server,
                        PSI_CLI_MSG_SETUP) != 0)
        return -1;
    cl->o.output = d->client.path[PSI_CLI_MSG_REQUEST];
    cl->o.mode = o->reveal ? PSI_APP_OFFLINE_INDICES : PSI_APP_OFFLINE_COUNT;
    if (demo_spill_step(&d->client, psi_cli_offline_request, "client request",
                        d->g.n_client, PSI_CLI_MSG_REQUEST) != 0)
        return -1;
    sv->o.request = d->client.path[PSI_CLI_MSG_REQUEST];
    sv->o.output = d->server.path[PSI_CLI_MSG_RESPONSE];
    sv->o.reveal = o->reveal;
    if (demo_spill_step(&d->server, psi_cli_offline_response, "server response",
                        d->g.n_client, PSI_CLI_MSG_RESPONSE) != 0)
        return -1;
    cl->o.setup = d->server.path[PSI_CLI_MSG_SETUP];
    cl->o.response = d->server.path[PSI_CLI_MSG_RESPONSE];
    cl->o.output = d->path[OUT];
    psi_cli_round_spill_output(&d->client, cl->o.output, d->out);
    return demo_spill_step(&d->client, psi_cli_offline_match,
                           o->reveal ? "client intersection" : "client size", d->g.n_client,
                           -1);
}

/* Reads the matched indices back (ascending, as `shardpsi match` writes
 * them) and checks each against how the sets were drawn.  Returns: 0 if
 * right, 1 if wrong, -1 (reported) when the file cannot be read. */
static int demo_spill_check(demo_spill *d, uint64_t count)
{
    FILE *f = fopen(d->path[OUT], "rb");
    uint64_t v = 0, lines = 0, found_true = 0, fp = 0, prev = 0;
    char text[PSI_APP_DEMO_VALUE_LEN + 1];
    int c, digits = 0, bad = 0;

    if (f == NULL)
        return demo_spill_fail("the matched indices", strerror(errno));
    while ((c = getc(f)) != EOF) {
        if (c >= '0' && c <= '9' && v <= (UINT64_MAX - 9) / 10) {
            v = 10 * v + (uint64_t)(c - '0');
            digits++;
            continue;
        }
        if (c != '\n' || digits == 0 || v >= d->g.n_client || (lines > 0 && v <= prev)) {
            printf("WRONG: line %" PRIu64 " of the matched indices is not an index below "
                   "%" PRIu64 " past the one before\n", lines + 1, d->g.n_client);
            bad = 1;
            break;
        }
        if (psi_app_demo_client_value(&d->g, v, text))
            found_true++;
        else
            psi_app_demo_print_fp(v, text, PSI_APP_DEMO_VALUE_LEN, (size_t)fp++);
        prev = v;
        v = 0;
        digits = 0;
        lines++;
    }
    if (ferror(f)) {
        fclose(f);
        return demo_spill_fail("the matched indices", "cannot read");
    }
    fclose(f);
    if (!bad && (digits > 0 || lines != count)) {
        printf("WRONG: %" PRIu64 " matched indices written for an intersection of %" PRIu64
               "\n", lines, count);
        bad = 1;
    }
    return psi_app_demo_judge(d->o, d->g.k, "by how the sets are drawn", found_true, fp) !=
                   0 || bad;
}

int psi_cli_demo_spill(const psi_app_demo_opts *o, uint64_t memory, const char *dir)
{
    demo_spill *d = calloc(1, sizeof *d);
    double t0 = psi_app_now_ms();
    int rc = -1;

    if (d == NULL) {
        psi_app_error("demo: out of memory");
        return -1;
    }
    d->o = o;
    for (int i = 0; i < FILES; i++)
        d->fd[i] = -1;
    psi_app_demo_gen_init(&d->g, o);
    psi_app_progress_init(&d->prog, "shardpsi demo", -1);
    printf("past the budget (--memory %" PRIu64 "): the sets and messages in nameless "
           "files in %s, each party on the offline steps\n", memory, dir);
    if (demo_spill_file(d, SET_SERVER, dir) != 0 || demo_spill_file(d, SET_CLIENT, dir) != 0 ||
        demo_spill_file(d, OUT, dir) != 0 || demo_spill_write_set(d, SET_SERVER) != 0 ||
        demo_spill_write_set(d, SET_CLIENT) != 0)
        goto done;
    printf("wrote the sets to their files in %.1f ms\n", psi_app_now_ms() - t0);
    int ofd = dup(d->fd[OUT]);
    if (ofd < 0 || (d->out = fdopen(ofd, "wb")) == NULL) {
        if (ofd >= 0)
            close(ofd);
        demo_spill_fail("the matched indices", strerror(errno));
        goto done;
    }
    if (demo_spill_party(d, &d->server, SET_SERVER, memory, dir) != 0 ||
        demo_spill_party(d, &d->client, SET_CLIENT, memory, dir) != 0)
        goto done;
    if (demo_spill_protocol(d) != 0)
        goto done;
    printf("intersection size: %zu\n", d->client.off.count);
    if (fflush(d->out) != 0) {
        demo_spill_fail("the matched indices", strerror(errno));
        goto done;
    }
    rc = o->reveal ? demo_spill_check(d, d->client.off.count)
                   : psi_app_demo_check_count(o, d->g.k, "by how the sets are drawn",
                                              d->client.off.count) != 0;
done:
    if (d->parties > 0)
        psi_cli_round_spill_free(&d->server);
    if (d->parties > 1)
        psi_cli_round_spill_free(&d->client);
    if (d->out != NULL)
        fclose(d->out);
    for (int i = 0; i < FILES; i++)
        if (d->fd[i] >= 0)
            close(d->fd[i]);
    free(d);
    return rc;
}
