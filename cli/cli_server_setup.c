/*
 * `shardpsi server --setup` (PROTOCOL.md §15.5): the options, and the setup file
 * built beforehand by `shardpsi setup` (or shardpsi-mpi setup) with its permutation
 * file, checked against the options before the server listens: a raw setup
 * through a window of the file, which stays open and is sent from with
 * pread (never held whole), a GCS or Bloom setup read whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_server_setup.h"
#include "app_perm.h"
#include "app_spill.h"
#include "app_util.h"
#include "psi_shard.h"

/* One psi_cli_server_setup_load. */
typedef struct setup_load {
    psi_cli_server_setup *ss;
    const psi_cli_server_setup_opts *so;
    const psi_cli_round_opts *net;
    int association;
    char *err;
    size_t err_len;
} setup_load;

int psi_cli_server_setup_opt(psi_cli_server_setup_opts *so, psi_cli_round_opts *net,
                             int argc, char **argv, int *i)
{
    const char *v = NULL;

    if (psi_app_opt_value(argc, argv, i, "--setup", &v)) {
        if (v == NULL)
            return -1;
        so->setup = v;
        net->input_replaced = 1;
    } else if (psi_app_opt_value(argc, argv, i, "--permutation", &v)) {
        if (v == NULL)
            return -1;
        so->permutation = v;
    } else if (psi_app_opt_value(argc, argv, i, "--num-client-inputs", &v)) {
        if (v == NULL || psi_app_parse_count(&so->num_client, v, (size_t)INT64_MAX,
                                             "server: --num-client-inputs") != 0)
            return -1;
    } else
        return 0;
    return 1;
}

int psi_cli_server_setup_check_opts(const psi_cli_server_setup_opts *so,
                                    const psi_cli_round_opts *net, int association)
{
    const char *msg = NULL;

    if (so->setup == NULL) {
        if (so->permutation != NULL)
            msg = "--permutation is for --setup (without it the server keeps the "
                  "permutation of the setup it builds)";
        else if (so->num_client != 0)
            msg = "--num-client-inputs is for --setup (without it each round's setup is "
                  "sized for the client's own count)";
    } else if (net->input != NULL || net->column != NULL || net->lines) {
        msg = "give --input FILE or --setup SETUP, not both: the setup already holds the "
              "server's values";
    } else if (net->key_file == NULL) {
        msg = "--setup needs --key-file KEY, the key file the setup was made with (shardpsi "
              "setup --key-file KEY); another key gives wrong answers, and nothing can "
              "detect it";
    } else if (association && so->permutation == NULL) {
        msg = "--association with --setup needs --permutation PERM, the file shardpsi setup "
              "--permutation wrote with this setup";
    } else if (!association && so->permutation != NULL) {
        msg = "--permutation is only used with --association";
    }
    if (msg != NULL) {
        psi_app_error("server: %s", msg);
        return -1;
    }
    return 0;
}

/* Reads the open file f whole (`what` names it in messages).  Returns: 0,
 * or -1 with a message in l->err.  Out: *buf (malloc'd, at least 1 byte),
 * *len. */
/* Parses the setup file as a ServerSetup of `suite`: a raw setup through
 * a window of the open file (never whole, PROTOCOL.md §20), a GCS or Bloom
 * setup read whole into ss->bytes (the server sends it from memory).
 * Returns: a psi code. */
static int setup_parse_file(setup_load *l, psi_setup **ps, int suite)
{
    psi_cli_server_setup *ss = l->ss;
    psi_error_detail d;
    int rc = psi_setup_parse_read(ps, suite, psi_app_msg_read, &ss->file, ss->file.len, 0);

    psi_error_detail_get(&d);
    if (psi_app_setup_held_refused(rc, &d) == NULL)
        return rc;
    if (ss->bytes == NULL && psi_app_msg_read_whole(&ss->file, "setup file", &ss->bytes,
                                                    &ss->pb.len, l->err, l->err_len) != 0)
        return PSI_E_IO;
    return psi_setup_parse(ps, suite, ss->bytes, ss->pb.len);
}

/* Checks the setup file's bytes as a ServerSetup of the run's suite and
 * learns its structure and element count.  Returns: 0 or -1 (message in
 * l->err). */
static int setup_parse(setup_load *l)
{
    psi_cli_server_setup *ss = l->ss;
    const char *path = l->so->setup;
    int suite = l->net->suite;
    psi_setup *ps = NULL;
    char detail[PSI_ERROR_MESSAGE_BYTES];
    int rc = setup_parse_file(l, &ps, suite);

    if (rc == PSI_E_IO) {
        if (ss->file.err[0] != '\0')
            snprintf(l->err, l->err_len, "setup file %s", ss->file.err);
        return -1;
    }
    if (rc == PSI_E_SUITE_MISMATCH) {
        // Name the file's suite when it is one this build knows.
        for (int t = 0; psi_suite_name(t) != NULL; t++) {
            if (t != suite && setup_parse_file(l, &ps, t) == PSI_OK) {
                psi_setup_free(ps);
                snprintf(l->err, l->err_len, "setup file %s is a setup of suite %s, "
                         "and the key file and this run are of suite %s: serve it with "
                         "the key file (and --suite) it was made with", path,
                         psi_suite_name(t), psi_app_suite_label(suite));
                return -1;
            }
        }
    }
    if (rc != PSI_OK) {
        psi_error_message(detail, sizeof detail, rc);
        snprintf(l->err, l->err_len, "setup file %s is not a valid ServerSetup of "
                 "suite %s: %s (%s); is it whole, and made by shardpsi setup?", path,
                 psi_app_suite_label(suite), detail,
                 psi_error_name(rc) ? psi_error_name(rc) : "?");
        return -1;
    }
    ss->pb.structure = (int)psi_setup_structure(ps);
    ss->pb.len = (size_t)ss->file.len;
    ss->n = psi_setup_raw_count(ps);
    psi_setup_free(ps);
    return 0;
}

/* Reads --permutation: ss->n lines, line j the 0-based input row of the
 * setup's element j, each row once, into the PERM frame's payload in a
 * nameless file (sent from it each round, §20), holding nothing of it
 * (psi_app_perm_load: a sixteenth of the budget for its runs).  Returns: 0
 * or -1 (l->err). */
static int setup_load_perm(setup_load *l)
{
    psi_cli_server_setup *ss = l->ss;
    const char *dir = psi_app_temp_dir(l->net->temp_dir, "/var/tmp");
    uint64_t budget = l->net->memory != 0 ? l->net->memory : psi_app_memory_default();

    if (psi_app_perm_load(&ss->perm_fd, l->so->permutation, ss->n, dir, budget / 16, l->err,
                          l->err_len) != 0)
        return -1;
    ss->perm_open = 1;
    ss->perm_len = 8 * (uint64_t)ss->n;
    return 0;
}

/* The checks and description of a raw setup.  Returns: 0 or -1 (l->err). */
static int setup_check_raw(setup_load *l, const psi_net_handshake *self)
{
    psi_cli_server_setup *ss = l->ss;
    const char *path = l->so->setup;
    psi_net_handshake h = *self;
    psi_setup_params p;

    if (l->so->num_client != 0) {
        snprintf(l->err, l->err_len, "--num-client-inputs is for a gcs or bloom "
                 "setup, and %s is raw", path);
        return -1;
    }
    // A raw setup is exactly its elements: a client checks it as the setup
    // of n = its element count (psi_setup_check), and refuses anything more
    // (unknown fields).
    h.setup_clients = 1;
    psi_net_session_params(&p, &h);
    ss->pb.n = ss->n;
    if (psi_setup_check_read(self->suite, &p, ss->n, psi_app_msg_read, &ss->file, ss->pb.len,
                             0) != PSI_OK) {
        snprintf(l->err, l->err_len, "setup file %s holds more than the raw setup "
                 "of its %zu elements (not made by shardpsi setup?)", path, ss->n);
        return -1;
    }
    if (l->association && setup_load_perm(l) != 0)
        return -1;
    snprintf(ss->what, sizeof ss->what, "the setup file %s of %zu values", path, ss->n);
    return 0;
}

/* The checks and description of a gcs or Bloom setup.  Returns: 0 or -1
 * (l->err). */
static int setup_check_sized(setup_load *l, const psi_net_handshake *self)
{
    psi_cli_server_setup *ss = l->ss;
    const char *path = l->so->setup, *st = psi_app_structure_name(ss->pb.structure);
    size_t num_client = l->so->num_client;
    double fpr = l->net->fpr;

    if (num_client == 0) {
        snprintf(l->err, l->err_len, "setup file %s holds a %s setup: give "
                 "--num-client-inputs N, and --fpr F unless it was the default, as shardpsi "
                 "setup was given them (the file records neither)", path, st);
        return -1;
    }
    if (l->association) {
        snprintf(l->err, l->err_len, "--association needs a raw setup, and %s is %s",
                 path, st);
        return -1;
    }
    // The n the ACCEPT announces: the smallest a client's check accepts.
    if (psi_net_session_prebuilt_size(&ss->pb.n, self, num_client, ss->bytes,
                                      ss->pb.len) != 0) {
        snprintf(l->err, l->err_len, "setup file %s is not a %s setup of --fpr %g for "
                 "--num-client-inputs %zu of any size: give the values shardpsi setup "
                 "was given", path, st, fpr, num_client);
        return -1;
    }
    snprintf(ss->what, sizeof ss->what, "the setup file %s", path);
    snprintf(ss->sized, sizeof ss->sized, " of fpr %g for at most %zu client values", fpr,
             num_client);
    return 0;
}

int psi_cli_server_setup_load(psi_cli_server_setup *ss, const psi_cli_server_setup_opts *so,
                              const psi_cli_round_opts *net, int association, char *err,
                              size_t err_len)
{
    setup_load l = {ss, so, net, association, err, err_len};
    psi_net_handshake self;

    memset(ss, 0, sizeof *ss);
    ss->file.fd = -1;
    ss->perm_fd = -1;
    if (psi_app_msg_open(&ss->file, so->setup, "setup file", err, err_len) != 0 ||
        setup_parse(&l) != 0)
        return -1;
    ss->pb.num_client = so->num_client;
    if (net->structure != PSI_NET_STRUCTURE_ANY && net->structure != ss->pb.structure) {
        snprintf(err, err_len, "setup file %s holds a %s setup, not the %s of "
                 "--structure (leave it out: the file says)", so->setup,
                 psi_app_structure_name(ss->pb.structure),
                 psi_app_structure_name(net->structure));
        return -1;
    }
    memset(&self, 0, sizeof self);
    self.structure = ss->pb.structure;
    self.fpr = net->fpr;
    self.suite = net->suite;
    return ss->pb.structure == PSI_STRUCTURE_RAW ? setup_check_raw(&l, &self)
                                                 : setup_check_sized(&l, &self);
}

void psi_cli_server_setup_free(psi_cli_server_setup *ss)
{
    psi_app_msg_close(&ss->file);
    free(ss->bytes);
    ss->bytes = NULL;
    if (ss->perm_open && ss->perm_fd >= 0)
        close(ss->perm_fd);
    ss->perm_open = 0;
    ss->perm_fd = -1;
}
