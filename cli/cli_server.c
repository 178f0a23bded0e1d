/*
 * `shardpsi server`: listens with its input and answers clients, each on its
 * own connection in its own process (at most --max-clients at once): TLS,
 * handshake, request, setup, response (PROTOCOL.md §15; the round is
 * cli_server_round.c).  Without --keep-serving it exits after the first
 * round past an agreed handshake, and a connection that ends before one (a
 * probe, a scanner, a peer TLS refused) does not end it.  With --setup it
 * serves a setup built beforehand by `shardpsi setup` (or shardpsi-mpi) with
 * the key of --key-file, instead of masking its input in each round (§15.5;
 * cli_server_setup.c reads and checks that setup).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app_clock.h"
#include "app_keyfile.h"
#include "app_output.h"
#include "app_payload.h"
#include "app_spill.h"
#include "app_util.h"
#include "cli_commands.h"
#include "cli_server.h"
#include "cli_server_pool.h"
#include "cli_round_spill.h"
#include "psi_shard.h"

#define SERVER_DEFAULT_MAX_CLIENTS 4
#define SERVER_MAX_CLIENTS 1024

typedef psi_cli_server_opts server_opts;

void psi_cli_server_usage(FILE *out)
{
    fprintf(out,
        "Usage: shardpsi server --listen HOST:PORT --input FILE TRANSPORT [options]\n"
        "       shardpsi server --listen HOST:PORT --key-file KEY --setup SETUP TRANSPORT\n"
        "                       [options]\n"
        "TRANSPORT: --tls-cert CERT --tls-key KEY (--tls-ca CA | --tls-peer-key FP),\n"
        "or --no-tls on loopback (see below)\n"
        "\n"
        "Waits for a `shardpsi client` on HOST:PORT, runs one private set intersection\n"
        "with it on the values of FILE and exits 0 after a successful round (a\n"
        "connection that ends before an agreed handshake is logged, and the server\n"
        "goes on waiting).  The\n"
        "client learns the intersection (with --reveal) or only its size; this side\n"
        "learns the client's set size and nothing else.  With --setup the server\n"
        "sends a setup built beforehand by `shardpsi setup` (or shardpsi-mpi setup) instead of\n"
        "masking an input in each round.\n"
        "\n"
        "Input (--input or --setup):\n"
        "  --input FILE         one value per line (bytes as they are; CRLF handled),\n"
        "                       or '-' for stdin; a FILE that looks like CSV (a ','\n"
        "                       in its first line, or a name ending in .csv) is\n"
        "                       refused unless --column or --lines says how to read it\n"
        "  --column NAME        read FILE as CSV (RFC 4180, header row) and take the\n"
        "                       values of column NAME\n"
        "  --lines              read every line as a value (the header too), even if\n"
        "                       FILE looks like CSV\n"
        "  --setup SETUP        serve the setup file `shardpsi setup --key-file KEY` wrote\n"
        "                       (its structure is the file's); needs --key-file KEY\n"
        "                       with the key it was made with.  Another key gives\n"
        "                       wrong answers, and nothing can detect it\n"
        "  --num-client-inputs N  with a gcs or bloom SETUP (required then): shardpsi\n"
        "                       setup's --num-client-inputs; clients with more\n"
        "                       values are refused.  --fpr must be shardpsi setup's too\n"
        "                       (the default is the same); the file records neither\n"
        "  --permutation PERM   with --setup and --association: the file shardpsi setup\n"
        "                       --permutation wrote with SETUP\n"
        "Protocol:\n"
        "  --suite NAME         the group and hash of the run: openmined-p256 (default,\n"
        "                       OpenMined PSI's), p256-sswu or ristretto255; the\n"
        "                       client must use the same\n"
        "  --structure S        setup: raw (exact, default), gcs or bloom (smaller,\n"
        "                       with false positives at rate --fpr)\n"
        "  --fpr F              false-positive rate of gcs and bloom for the whole\n"
        "                       client set, in (0, 1) (default %g); openmined-p256's\n"
        "                       bloom (psi.js's probes) gives more at small rates\n"
        "                       (README, Ciphersuites)\n"
        "  --reveal             let clients learn which of their rows intersect;\n"
        "                       without it they may only count (--count-only)\n"
        "  --association        also send the association table (server row <-> client\n"
        "                       row) to clients asking for it; needs --reveal and raw\n"
        "                       (and --permutation with --setup)\n"
        "  --payload-columns LIST  with a CSV input (--column): send clients that ask\n"
        "                       (client --payloads) the fields of these columns of\n"
        "                       their matched rows, encrypted so that only a matching\n"
        "                       value opens its row's (PROTOCOL.md §22); a value twice\n"
        "                       in the input is refused\n"
        "  --pad-to BYTES       every payload padded to this length (default: the\n"
        "                       longest payload's); a longer payload is refused\n"
        "  --payloads FILE      with a raw --setup: send clients that ask the payload\n"
        "                       file `shardpsi payloads` made with the setup's key and\n"
        "                       input (held in memory, in a quarter of --memory)\n"
        "  --share-result       run only with clients that also give --share-result:\n"
        "                       the client sends back which setup rows matched, and\n"
        "                       this side writes its matched rows to --output (raw\n"
        "                       setup, --reveal; one round: not with --keep-serving).\n"
        "                       It relies on the client reporting honestly\n"
        "  --output FILE        with --share-result: this side's matched rows, in\n"
        "                       input order (CSV: the header first), written when the\n"
        "                       round succeeded\n"
        "  --keep-serving       answer clients until killed, each on its own connection\n"
        "  --max-clients K      rounds served at once, each in its own process\n"
        "                       (default %d); a client that authenticated and sent an\n"
        "                       acceptable handshake waits for a slot, with keepalives\n"
        "  --max-per-identity K rounds of one client identity (its certificate key) at\n"
        "                       once, and as many waiting; more are refused (default:\n"
        "                       half of --max-clients, rounded up).  Without TLS there is\n"
        "                       no identity, and only --max-clients applies\n"
        "  --max-pending K      connections still in their TLS handshake and HELLO, or\n"
        "                       waiting for a slot (default %d): counted apart from the\n"
        "                       rounds, so silent connections take no round's slot; a\n"
        "                       connection past it is closed at once\n"
        "  --max-pending-per-address K  of those in their handshake, from one address\n"
        "                       (default %d)\n"
        "  --round-timeout S    end a round not done S seconds after its connection\n"
        "                       came, keepalives or not (default: 600 s and 1 ms for\n"
        "                       each value of both sets)\n"
        "  --max-peer-values N  refuse clients announcing more than N values\n"
        "                       (default %u)\n"
        "Keys and resources:\n"
        "  --key-file FILE      reuse the key in FILE (64 hex digits and the suite,\n"
        "                       mode 0600), or create FILE with a new key of the\n"
        "                       suite; default: a fresh key for every round.  Reusing\n"
        "                       a key lets clients link rounds; a raw setup held in\n"
        "                       memory is then masked once, at start, for every\n"
        "                       round.  With --setup: the existing key file the setup\n"
        "                       was made with\n"
        "  --threads N          worker threads (default: every online CPU)\n"
        "  --memory BYTES       memory budget (K, M, G: 256M; default a quarter of the\n"
        "                       machine's memory): an input file larger than a quarter\n"
        "                       of it is read again in each round and streamed through\n"
        "                       sorted runs on disk, with the same bytes, as is a\n"
        "                       client's request that would not fit; a --setup file\n"
        "                       that is raw is sent from the file (PROTOCOL.md §20)\n"
        "  --temp-dir DIR       where the runs and messages go (default $TMPDIR, else\n"
        "                       /var/tmp); they have no name\n"
        "  --timeout S          give up when the client sends nothing for S seconds\n"
        "                       (default %d); both sides send keepalives while working\n"
        "  --progress           progress lines on stderr even when it is not a\n"
        "                       terminal (--no-progress: never)\n",
        PSI_APP_DEFAULT_FPR, SERVER_DEFAULT_MAX_CLIENTS, PSI_CLI_POOL_DEFAULT_PENDING,
        PSI_CLI_POOL_DEFAULT_PER_ADDRESS,
        PSI_NET_DEFAULT_MAX_PEER,
        PSI_NET_DEFAULT_TIMEOUT_S);
    psi_cli_round_transport_usage(out, 1);
    fprintf(out,
        "\n"
        "Every connection gets one line on stderr: the peer's address and identity,\n"
        "the sizes, suite and outcome, the time; never a value or a key.\n"
        "\n"
        "Exit status: 0 after a successful round, 1 when a round failed (the message\n"
        "says why; nothing is written), 2 for a usage error or an unreadable or\n"
        "invalid input, key, setup, permutation, certificate or TLS key file.\n");
}

/* A limit of at least 1 (K of --name K).  Returns: 0 or -1 after a
 * message. */
static int server_parse_limit(size_t *out, const char *v, const char *name)
{
    char what[64];

    snprintf(what, sizeof what, "server: %s", name);
    if (psi_app_parse_count(out, v, 1u << 30, what) != 0)
        return -1;
    if (*out == 0) {
        psi_app_error("server: %s must be at least 1", name);
        return -1;
    }
    return 0;
}

/* The server's own options (psi_cli_own_opt_fn). */
static int server_own_opt(void *arg, int argc, char **argv, int *i)
{
    server_opts *o = arg;
    const char *v = NULL;

    if (strcmp(argv[*i], "--reveal") == 0)
        o->reveal = 1;
    else if (strcmp(argv[*i], "--association") == 0)
        o->association = 1;
    else if (strcmp(argv[*i], "--keep-serving") == 0)
        o->keep_serving = 1;
    else if (strcmp(argv[*i], "--share-result") == 0)
        o->share_result = 1;
    else if (psi_app_opt_value(argc, argv, i, "--payload-columns", &v))
        return v != NULL ? (o->payload_columns = v, 1) : -1;
    else if (psi_app_opt_value(argc, argv, i, "--output", &v))
        return v != NULL ? (o->output = v, 1) : -1;
    else if (psi_app_opt_value(argc, argv, i, "--payloads", &v))
        return v != NULL ? (o->payload_file = v, 1) : -1;
    else if (psi_app_opt_value(argc, argv, i, "--pad-to", &v))
        return v != NULL && psi_app_parse_count(&o->pad_len, v, PSI_PAYLOAD_MAX,
                                                "server: --pad-to") == 0 ? 1 : -1;
    else if (psi_app_opt_value(argc, argv, i, "--max-clients", &v)) {
        if (v == NULL || psi_app_parse_count(&o->max_clients, v, SERVER_MAX_CLIENTS,
                                             "server: --max-clients") != 0)
            return -1;
        if (o->max_clients == 0) {
            psi_app_error("server: --max-clients must be at least 1");
            return -1;
        }
    } else if (psi_app_opt_value(argc, argv, i, "--max-per-identity", &v)) {
        return v != NULL && server_parse_limit(&o->max_per_identity, v,
                                               "--max-per-identity") == 0 ? 1 : -1;
    } else if (psi_app_opt_value(argc, argv, i, "--max-pending", &v)) {
        return v != NULL && server_parse_limit(&o->max_pending, v, "--max-pending") == 0
                   ? 1 : -1;
    } else if (psi_app_opt_value(argc, argv, i, "--max-pending-per-address", &v)) {
        return v != NULL && server_parse_limit(&o->max_per_address, v,
                                               "--max-pending-per-address") == 0 ? 1 : -1;
    } else if (psi_app_opt_value(argc, argv, i, "--round-timeout", &v)) {
        size_t t = 0;
        if (v == NULL || server_parse_limit(&t, v, "--round-timeout") != 0)
            return -1;
        if (t > 86400 * 30) {
            psi_app_error("server: --round-timeout is at most 30 days (%d s)", 86400 * 30);
            return -1;
        }
        o->round_timeout_ms = (double)t * 1000;
    } else
        return psi_cli_server_setup_opt(&o->pre, &o->net, argc, argv, i);
    return 1;
}

/* The options of a private join (payloads, a shared result) together.
 * Returns: 0 or -1 after a message. */
static int server_check_join(const server_opts *o)
{
    const char *bad = NULL;

    if (o->payload_columns == NULL && o->pad_len != 0)
        bad = "--pad-to needs --payload-columns";
    else if (o->payload_columns != NULL && o->net.column == NULL)
        bad = "--payload-columns needs a CSV input (--column NAME)";
    else if ((o->payload_columns != NULL || o->share_result || o->payload_file != NULL) &&
             !o->reveal)
        bad = "--payload-columns, --payloads and --share-result need --reveal";
    else if (o->payload_file != NULL && o->pre.setup == NULL)
        bad = "--payloads FILE goes with --setup (with --input, --payload-columns makes the "
              "table in each round)";
    else if (o->payload_file != NULL && o->net.structure != PSI_NET_STRUCTURE_ANY &&
             o->net.structure != PSI_STRUCTURE_RAW)
        bad = "--payloads needs a raw --setup";
    else if ((o->payload_columns != NULL || o->share_result) && o->pre.setup != NULL)
        bad = "--payload-columns and --share-result need the input, not --setup (a "
              "prebuilt setup with payloads or a shared result is not built yet)";
    else if (o->share_result && o->net.structure != PSI_STRUCTURE_RAW)
        bad = "--share-result needs the raw setup (the client names the setup rows it "
              "matched)";
    else if (o->share_result && o->output == NULL)
        bad = "--share-result needs --output FILE for this side's matched rows";
    else if (o->output != NULL && !o->share_result)
        bad = "--output is this side's shared result: it needs --share-result";
    else if (o->share_result && o->keep_serving)
        bad = "--share-result runs one round (its --output is that round's): not with "
              "--keep-serving";
    if (bad != NULL)
        psi_app_error("server: %s", bad);
    return bad != NULL ? -1 : 0;
}

/* Parses the command line.  Returns: 0, 1 after --help, -1 after a message. */
static int server_parse(server_opts *o, int argc, char **argv)
{
    int rc;

    memset(o, 0, sizeof *o);
    o->max_clients = SERVER_DEFAULT_MAX_CLIENTS;
    o->max_pending = PSI_CLI_POOL_DEFAULT_PENDING;
    o->max_per_address = PSI_CLI_POOL_DEFAULT_PER_ADDRESS;
    rc = psi_cli_round_parse(&o->net, argc, argv, "server", "--listen", psi_cli_server_usage,
                           server_own_opt, o);
    if (rc != 0)
        return rc;
    if (psi_cli_server_setup_check_opts(&o->pre, &o->net, o->association) != 0)
        return -1;
    // With --setup the structure is the file's (psi_cli_server_setup_load
    // checks a given --structure against it).
    if (o->pre.setup == NULL && o->net.structure == PSI_NET_STRUCTURE_ANY)
        o->net.structure = PSI_STRUCTURE_RAW;
    if (o->net.fpr == 0)
        o->net.fpr = PSI_APP_DEFAULT_FPR;
    if (o->association && (!o->reveal || (o->pre.setup == NULL &&
                                          o->net.structure != PSI_STRUCTURE_RAW))) {
        psi_app_error("server: --association needs --reveal and the raw setup");
        return -1;
    }
    // One round, and one process writing --output.
    if (o->share_result)
        o->max_clients = 1;
    if (o->max_per_identity == 0)
        o->max_per_identity = (o->max_clients + 1) / 2;
    return server_check_join(o);
}

/* An input past the budget: read through once now, a chunk at a time, so
 * that a missing column, a payload past --pad-to (naming its row) or past
 * the most a table pads to fails the start, not a client's round.  Each
 * round reads it again to build its table.  Returns: 0 or -1 after a
 * message. */
static int server_check_payloads(psi_cli_server *s)
{
    const server_opts *o = s->o;
    psi_app_budget b;
    uint64_t n = 0;
    size_t L = 0;

    psi_app_budget_init(&b, o->net.memory != 0 ? o->net.memory : psi_app_memory_default());
    psi_app_paybuild pb = {NULL, o->net.suite, o->net.input, o->net.column, o->payload_columns,
                           o->pad_len, NULL, b, NULL, &s->prog};
    if (psi_app_payload_scan(&pb, &n, &L, s->err, sizeof s->err) != 0) {
        psi_app_error("server: %s", s->err);
        return -1;
    }
    return 0;
}

/* The payloads of --payload-columns (each row's fields, and the columns'
 * header), and a check that --output can be written.  Returns: 0 or -1
 * after a message. */
static int server_load_join(psi_cli_server *s)
{
    const server_opts *o = s->o;
    psi_app_output out;

    if (o->payload_columns != NULL && s->spilled)
        return server_check_payloads(s);
    if (o->share_result && s->spilled) {
        psi_app_error("server: --share-result keeps the setup's order in memory, and the "
                      "input is past --memory: give a larger --memory");
        return -1;
    }
    if (o->payload_columns != NULL &&
        psi_app_payloads(&s->in, o->payload_columns, &s->pays, &s->pay_buf, &s->pay_head,
                         s->err, sizeof s->err) != 0) {
        psi_app_error("server: %s: %s", o->net.input, s->err);
        return -1;
    }
    for (size_t i = 0; s->pays != NULL && o->pad_len != 0 && i < s->in.n; i++) {
        if (s->pays[i].len > o->pad_len) {
            psi_app_error("server: %s: the payload of row %zu is %zu bytes, longer than "
                          "--pad-to %zu", o->net.input, i + 1, s->pays[i].len, o->pad_len);
            return -1;
        }
    }
    // The output's directory is checked now; the round writes it.
    if (o->output != NULL) {
        if (psi_app_output_open(&out, o->output, s->err, sizeof s->err) != 0) {
            psi_app_error("server: %s", s->err);
            return -1;
        }
        psi_app_output_abort(&out);
    }
    return 0;
}

/* --payloads with a raw --setup: the payload file, checked where it lies
 * (never held whole: PROTOCOL.md §22.4) for the suite, the table, and one
 * record for each of the setup's elements.  Returns: 0 or -1 after a
 * message. */
static int server_load_payload_file(psi_cli_server *s)
{
    uint64_t budget = s->o->net.memory != 0 ? s->o->net.memory : psi_app_memory_default();

    if (s->pre.pb.structure != PSI_STRUCTURE_RAW) {
        psi_app_error("server: --payloads needs a raw setup, and %s is %s (a client checks "
                      "the table against the setup's count)", s->o->pre.setup,
                      psi_app_structure_name(s->pre.pb.structure));
        return -1;
    }
    if (psi_app_payfile_open(&s->pay_file, s->o->payload_file, s->o->net.suite, budget,
                             s->err, sizeof s->err) != 0) {
        psi_app_error("server: %s", s->err);
        return -1;
    }
    s->has_pay_file = 1;
    if (s->pay_file.t.n != s->pre.pb.n) {
        psi_app_error("server: payload file %s holds %llu records and setup %s %llu values: "
                      "give the payload file made from the setup's input", s->o->payload_file,
                      (unsigned long long)s->pay_file.t.n, s->o->pre.setup,
                      (unsigned long long)s->pre.pb.n);
        return -1;
    }
    psi_app_progress_note(&s->prog, "serving the payload file %s (%llu rows, padded to %zu "
                          "bytes)", s->o->payload_file, (unsigned long long)s->pay_file.t.n,
                          s->pay_file.t.pad_len);
    return 0;
}

/* Loads the input (or the setup file) and the key file.  Returns: 0 or an
 * exit code. */
static int server_load(psi_cli_server *s)
{
    int created = 0;
    struct stat st;

    s->prebuilt = s->o->pre.setup != NULL;
    s->what = s->prebuilt ? s->pre.what : s->in_what;
    // An input past the budget is read through once here, for its errors
    // and count; each round reads it again.
    uint64_t n = 0;
    int past = s->prebuilt ? 0 : psi_cli_round_spill_needed(&s->o->net, "shardpsi server", &n,
                                                            s->err, sizeof s->err);
    if (past < 0) {
        psi_app_error("server: %s", s->err);
        return PSI_APP_EXIT_USAGE;
    } else if (past) {
        s->spilled = 1;
        s->in.n = (size_t)n;
        snprintf(s->in_what, sizeof s->in_what, "%zu values", s->in.n);
    } else if (!s->prebuilt) {
        if (psi_app_input_read(&s->in, s->o->net.input, s->o->net.column,
                               s->o->net.lines, s->err, sizeof s->err) != PSI_APP_INPUT_OK) {
            psi_app_error("server: %s", s->err);
            return PSI_APP_EXIT_USAGE;
        }
        snprintf(s->in_what, sizeof s->in_what, "%zu values", s->in.n);
    }
    if (server_load_join(s) != 0)
        return PSI_APP_EXIT_USAGE;
    if (s->o->net.key_file == NULL)
        return 0;
    // A prebuilt setup answers only with its own key: never make one.
    if (s->prebuilt && lstat(s->o->net.key_file, &st) != 0 && errno == ENOENT) {
        psi_app_error("server: key file %s does not exist: --setup needs the key file the "
                      "setup was made with", s->o->net.key_file);
        return PSI_APP_EXIT_USAGE;
    }
    if (psi_app_keyfile_engine_suite(&s->key, &created, s->o->net.key_file,
                                     s->o->net.suite, s->err, sizeof s->err) != 0) {
        psi_app_error("server: %s", s->err);
        return PSI_APP_EXIT_USAGE;
    }
    if (created && s->prebuilt) {
        // It vanished after the check: a key made now would match nothing.
        unlink(s->o->net.key_file);
        psi_app_error("server: key file %s disappeared", s->o->net.key_file);
        return PSI_APP_EXIT_USAGE;
    }
    psi_app_progress_note(&s->prog, "%s key file %s", created ? "created" : "using the key of",
                          s->o->net.key_file);
    if (s->prebuilt && psi_cli_server_setup_load(&s->pre, &s->o->pre, &s->o->net,
                                                 s->o->association, s->err,
                                                 sizeof s->err) != 0) {
        psi_app_error("server: %s", s->err);
        return PSI_APP_EXIT_USAGE;
    }
    if (s->o->payload_file != NULL && server_load_payload_file(s) != 0)
        return PSI_APP_EXIT_USAGE;
    // A fixed key makes the raw setup the same for every round: masked
    // here once, it costs a round nothing before the client's request.
    return psi_cli_server_premask(s) != 0 ? PSI_APP_EXIT_FAIL : 0;
}

/* The listener's bookkeeping. */
typedef struct server_loop {
    psi_cli_server *s;
    int lfd;
    psi_cli_pool pool;      // the children: pending, waiting, running a round
    struct pollfd *pfd;     // the listener, the SIGCHLD pipe, the pool's pairs
    unsigned long refused;  // connections closed at once, not yet logged
    double refused_log_ms;  // when that was last logged
    int result;             // one-round mode: the first round's outcome, or -1
    unsigned long errors;   // accept() failures not yet logged
    double last_log_ms;     // when one was last logged
    int backoff_ms;         // the wait after a failure (doubling, at most 1 s)
} server_loop;

/* Reaps finished children, waiting for one when `block`. */
static void server_reap(server_loop *l, int block)
{
    int st;
    pid_t pid;

    while ((pid = waitpid(-1, &st, block ? 0 : WNOHANG)) > 0 ||
           (pid < 0 && errno == EINTR)) {
        int code;
        if (pid < 0)
            continue;
        psi_cli_pool_reaped(&l->pool, pid);
        block = 0;
        code = WIFEXITED(st) ? WEXITSTATUS(st) : PSI_CLI_ROUND_FAILED;
        if (WIFSIGNALED(st))
            psi_app_progress_note(&l->s->prog, "error: the process of a round ended by "
                                  "signal %d", WTERMSIG(st));
        if (l->result < 0 && code != PSI_CLI_ROUND_NO_CLIENT && code != PSI_CLI_ROUND_NO_SLOT)
            l->result = code == PSI_CLI_ROUND_OK ? PSI_APP_EXIT_OK : PSI_APP_EXIT_FAIL;
    }
}

/* A failed accept(): logged at once, then at most every 10 s with a count,
 * and survived after a wait (EMFILE clears when a round ends). */
static void server_accept_failed(server_loop *l, const char *msg)
{
    double now = psi_app_now_ms();
    struct timespec ts;

    l->errors++;
    if (now - l->last_log_ms >= 10000) {
        psi_app_progress_note(&l->s->prog, "error: %s (%lu time%s since the last report; "
                              "still listening)", msg, l->errors, l->errors == 1 ? "" : "s");
        l->errors = 0;
        l->last_log_ms = now;
    }
    l->backoff_ms = l->backoff_ms == 0 ? 62 : l->backoff_ms * 2 > 1000 ? 1000
                                                                        : l->backoff_ms * 2;
    ts.tv_sec = l->backoff_ms / 1000;
    ts.tv_nsec = (long)(l->backoff_ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* Frees what a round's process holds and ends it with `code`. */
static void server_child_exit(psi_cli_server *s, int code)
{
    psi_engine_free(s->key);
    psi_net_tls_free(s->tls);
    psi_app_input_free(&s->in);
    psi_cli_server_setup_free(&s->pre);
    free(s->pays);
    free(s->pay_buf);
    free(s->pay_head);
    if (s->has_pay_file)
        psi_app_payfile_close(&s->pay_file);
    s->has_pay_file = 0;
    fflush(NULL);
    _exit(code);
}

/* SIGCHLD writes a byte to this pipe, so that the accept loop's poll wakes
 * as soon as a round's process ends: a one-round server exits right after
 * its round, not up to a poll timeout later.  Without the pipe (it could
 * not be made) the loop still reaps every second. */
static int chld_pipe[2] = {-1, -1};

static void on_chld(int sig)
{
    int e = errno;
    ssize_t r = write(chld_pipe[1], "", 1); /* a full pipe already wakes */
    (void)r;
    (void)sig;
    errno = e;
}

static void chld_watch(int on)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    if (!on) {
        sa.sa_handler = SIG_DFL;
        sigaction(SIGCHLD, &sa, NULL);
        for (int i = 0; i < 2; i++) {
            if (chld_pipe[i] >= 0)
                close(chld_pipe[i]);
            chld_pipe[i] = -1;
        }
        return;
    }
    if (pipe(chld_pipe) != 0) {
        chld_pipe[0] = chld_pipe[1] = -1;
        return;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(chld_pipe[i], F_SETFD, FD_CLOEXEC);
        fcntl(chld_pipe[i], F_SETFL, fcntl(chld_pipe[i], F_GETFL) | O_NONBLOCK);
    }
    sa.sa_handler = on_chld;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    if (sigaction(SIGCHLD, &sa, NULL) != 0)
        chld_watch(0);
}

/* A connection closed at once (the pending pool is full): logged at once,
 * then at most every 10 s with a count. */
static void server_refused(server_loop *l, const char *why)
{
    double now = psi_app_now_ms();

    l->refused++;
    if (now - l->refused_log_ms < 10000)
        return;
    psi_app_progress_note(&l->s->prog, "%s (%lu connection%s closed so since the last "
                          "report)", why, l->refused, l->refused == 1 ? "" : "s");
    l->refused = 0;
    l->refused_log_ms = now;
}

/* Starts the process of connection c (just accepted, the pool has room for
 * it): TLS, the HELLO, a slot from the pool, the round.  Returns: 0 or -1
 * (logged). */
static int server_start(server_loop *l, psi_net_conn *c)
{
    psi_cli_server *s = l->s;
    int sv[2];
    pid_t pid;

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(s->err, sizeof s->err, "cannot make the round's channel for the "
                 "connection from %s: %s", c->peer, strerror(errno));
        server_accept_failed(l, s->err);
        return -1;
    }
    if ((pid = fork()) == 0) {
        close(l->lfd);
        chld_watch(0);
        close(sv[0]);
        psi_cli_pool_free(&l->pool); // the listener's ends of the others' pairs
        free(l->pfd);
        s->ctl_fd = sv[1];
        server_child_exit(s, psi_cli_server_round(s, c));
    }
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        snprintf(s->err, sizeof s->err, "cannot start a process for the connection "
                 "from %s: %s", c->peer, strerror(errno));
        server_accept_failed(l, s->err);
        return -1;
    }
    psi_cli_pool_add(&l->pool, pid, sv[0], c->peer);
    return 0;
}

/* Accepts connections and serves each in a child process.  Returns: the
 * exit status (one-round mode; --keep-serving runs until killed). */
static int server_serve(server_loop *l)
{
    psi_cli_server *s = l->s;
    const server_opts *o = s->o;
    size_t npfd = 2 + l->pool.cap;

    if ((l->pfd = calloc(npfd, sizeof *l->pfd)) == NULL) {
        psi_app_error("server: out of memory");
        return PSI_APP_EXIT_FAIL;
    }
    chld_watch(1);
    for (;;) {
        psi_net_conn c;
        char drain[64], why[300];
        size_t k;

        server_reap(l, 0);
        if (!o->keep_serving && l->result >= 0)
            break;
        l->pfd[0] = (struct pollfd){.fd = l->lfd, .events = POLLIN};
        l->pfd[1] = (struct pollfd){.fd = chld_pipe[0], .events = POLLIN};
        k = psi_cli_pool_pollfds(&l->pool, l->pfd + 2, npfd - 2);
        if (poll(l->pfd, 2 + k, 1000) <= 0)
            continue;
        if (l->pfd[1].revents & POLLIN) {
            while (read(chld_pipe[0], drain, sizeof drain) > 0) {
            }
        }
        psi_cli_pool_events(&l->pool, l->pfd + 2, k);
        if (!(l->pfd[0].revents & POLLIN))
            continue;
        if (psi_net_accept(&c, l->lfd, o->net.timeout_ms) != 0) {
            server_accept_failed(l, c.err);
            continue;
        }
        l->backoff_ms = 0;
        if (psi_cli_pool_may_join(&l->pool, c.peer, why, sizeof why) != 0)
            server_refused(l, why);
        else
            server_start(l, &c);
        // The child owns the connection: only our descriptor goes.
        close(c.fd);
        free(c.rx);
    }
    // One round was served: the connections still before their slot go.
    psi_cli_pool_stop(&l->pool);
    while (l->pool.n > 0)
        server_reap(l, 1);
    chld_watch(0);
    free(l->pfd);
    l->pfd = NULL;
    return l->result;
}

int psi_cli_cmd_server(int argc, char **argv)
{
    server_opts o;
    psi_cli_server s;
    server_loop l = {.s = &s, .lfd = -1, .result = -1, .last_log_ms = -1e12,
                     .refused_log_ms = -1e12};
    psi_cli_pool_limits lim;
    char bound[160], transport[300];
    int rc = server_parse(&o, argc, argv);

    if (rc != 0)
        return rc > 0 ? PSI_APP_EXIT_OK : PSI_APP_EXIT_USAGE;
    memset(&s, 0, sizeof s);
    s.o = &o;
    s.ctl_fd = -1;
    lim = (psi_cli_pool_limits){o.max_clients, o.max_pending, o.max_per_address,
                                o.max_per_identity};
    if (psi_cli_pool_init(&l.pool, &lim) != 0) {
        psi_app_error("server: out of memory");
        return PSI_APP_EXIT_FAIL;
    }
    psi_app_progress_init(&s.prog, "shardpsi server", o.net.progress);
    signal(SIGPIPE, SIG_IGN);
    if (psi_cli_round_transport(&s.tls, &o.net, "server", 1) != 0) {
        psi_cli_pool_free(&l.pool);
        return PSI_APP_EXIT_USAGE;
    }
    rc = server_load(&s);
    if (rc == 0 && psi_net_listen(&l.lfd, bound, sizeof bound, o.net.addr, s.err,
                                  sizeof s.err) != 0) {
        psi_app_error("server: %s", s.err);
        rc = PSI_APP_EXIT_FAIL;
    }
    if (rc == 0) {
        psi_cli_round_transport_name(transport, sizeof transport, &o.net);
        psi_app_progress_note(&s.prog, "listening on %s with %s (suite %s, %s setup%s, %s; "
                              "%s; at most %zu client%s at once)", bound, s.what,
                              psi_app_suite_label(o.net.suite),
                              psi_app_structure_name(s.prebuilt ? s.pre.pb.structure
                                                                : o.net.structure),
                              s.pre.sized, o.reveal ? "intersection revealed" : "size only",
                              transport, o.max_clients, o.max_clients == 1 ? "" : "s");
        rc = server_serve(&l);
    }
    if (l.lfd >= 0)
        close(l.lfd);
    psi_cli_pool_free(&l.pool);
    psi_engine_free(s.key);
    psi_net_tls_free(s.tls);
    psi_app_input_free(&s.in);
    psi_cli_server_setup_free(&s.pre);
    free(s.pays);
    free(s.pay_buf);
    free(s.pay_head);
    free(s.raw_setup);
    free(s.raw_perm);
    if (s.has_pay_file)
        psi_app_payfile_close(&s.pay_file);
    return rc;
}
