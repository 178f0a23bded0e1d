/* `shardpsi demo`: both parties in one process, on generated sets, timed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_commands.h"
#include "cli_demo_spill.h"
#include "cli_round_spill.h"
#include "app_sets.h"
#include "app_spill.h"
#include "app_clock.h"
#include "app_util.h"

// Set sizes above this are refused: past the budget a demo of ten billion
// values would take days and terabytes.
#define DEMO_MAX_SIZE ((size_t)10000000000u)

static const char *const demo_structures[] = {"raw", "gcs", "bloom_filter"};

static const char demo_usage[] =
    "Usage: shardpsi demo [options]\n"
    "\n"
    "Runs the protocol in one process (server setup, client request, server\n"
    "response, client intersection) with random keys on two generated sets\n"
    "of distinct strings \"user-<16 hex digits>@example.org\", prints message\n"
    "sizes, time and values per second of each step, and checks the result\n"
    "against a plain comparison of the values.\n"
    "\n"
    "Each party runs on the sharding layer (psi_shard.h), by default with one\n"
    "thread per online CPU and 4 shards a thread: the results are those of\n"
    "one engine, only faster on more than one core.  A line \"parties:\n"
    "... each on N shards, T threads\" says how they ran.\n"
    "\n"
    "Options:\n"
    "  --seed S           seed of the generated sets (default 1)\n"
    "  --server-size N    values in the server set (default 100000)\n"
    "  --client-size N    values in the client set (default 10000)\n"
    "  --overlap F        fraction in [0, 1] of the client set that is also\n"
    "                     in the server set, rounded to a count (default 0.5)\n"
    "  --structure S      raw, gcs or bloom_filter (default gcs)\n"
    "  --fpr X            false-positive rate in (0, 1) for the whole client\n"
    "                     query, as OpenMined (default 1e-6)\n"
    "  --count-only       reveal only the intersection size\n"
    "  --suite NAME       ciphersuite of both parties: openmined-p256 (default),\n"
    "                     p256-sswu or ristretto255\n"
    "  --shards N         engines per party, 1 to " PSI_APP_STR(PSI_SHARD_MAX_SHARDS)
    " (default: 4 a\n"
    "                     worker thread, 1 without)\n"
    "  --threads T        worker threads per party, 1 to "
    PSI_APP_STR(PSI_SHARD_MAX_THREADS) "; 1 runs the\n"
    "                     shards in turn on the calling thread (default: the\n"
    "                     online CPUs, at most N)\n"
    "  --single-engine    run each party on one engine (psi.h), without the\n"
    "                     sharding layer (in memory only)\n"
    "  --memory BYTES     memory budget, with K, M, G or T (default: a quarter of\n"
    "                     physical memory, at least 64M).  Sets of more values\n"
    "                     than the budget over 256 bytes are written to nameless\n"
    "                     files, and each party runs the offline steps on them\n"
    "                     (`shardpsi setup`, ...; PROTOCOL.md section 20)\n"
    "  --temp-dir DIR     where those files go (default: $TMPDIR, else /var/tmp);\n"
    "                     about 36 bytes a value of the two sets, plus what\n"
    "                     the steps spill\n"
    "  -h, --help         show this help\n"
    "\n"
    "The result is wrong, and the exit status 1, if a true match is missing,\n"
    "or for raw if anything else is reported, or for gcs and bloom_filter if\n"
    "there are more than 10 x fpr + 5 false positives.  Usage errors give 2.\n";

void psi_cli_demo_usage(FILE *out)
{
    fputs(demo_usage, out);
}

static int demo_parse_structure(psi_structure *out, const char *text)
{
    for (int k = 0; k < 3; k++) {
        if (strcmp(text, demo_structures[k]) == 0) {
            *out = (psi_structure)k;
            return 0;
        }
    }
    psi_app_error("demo: --structure: unknown structure '%s' "
                  "(raw, gcs or bloom_filter)", text);
    return -1;
}

/* Parses argv[*i] (and its value).  Returns: 0, 1 after the help, -1 on a
 * usage error. */
static int demo_parse_one(psi_app_demo_opts *o, int argc, char **argv, int *i)
{
    const char *v = NULL;
    int rc;

    if (psi_app_is_help(argv[*i])) {
        psi_cli_demo_usage(stdout);
        return 1;
    }
    if (strcmp(argv[*i], "--count-only") == 0) {
        o->reveal = 0;
        return 0;
    }
    if (strcmp(argv[*i], "--single-engine") == 0) {
        o->single = 1;
        return 0;
    }
    if (psi_app_opt_value(argc, argv, i, "--memory", &v)) {
        char err[160];
        if (v == NULL)
            return -1;
        if (psi_app_memory_parse(&o->memory, v, err, sizeof err) != 0)
            return psi_app_error("demo: %s", err), -1;
        return 0;
    }
    if (psi_app_opt_value(argc, argv, i, "--temp-dir", &v))
        return v != NULL ? (o->temp_dir = v, 0) : -1;
    if ((rc = psi_app_shard_opt(&o->shard, argc, argv, i, "demo")) != 0)
        return rc > 0 ? 0 : -1;
    if (psi_app_opt_value(argc, argv, i, "--seed", &v))
        return v ? psi_app_parse_u64(&o->seed, v, "demo: --seed") : -1;
    if (psi_app_opt_value(argc, argv, i, "--server-size", &v))
        return v ? psi_app_parse_size(&o->server_size, v, DEMO_MAX_SIZE,
                                      "demo: --server-size") : -1;
    if (psi_app_opt_value(argc, argv, i, "--client-size", &v))
        return v ? psi_app_parse_size(&o->client_size, v, DEMO_MAX_SIZE,
                                      "demo: --client-size") : -1;
    if (psi_app_opt_value(argc, argv, i, "--overlap", &v))
        return v ? psi_app_parse_double(&o->overlap, v, 0, 0, 1, 0,
                                        "demo: --overlap") : -1;
    if (psi_app_opt_value(argc, argv, i, "--fpr", &v))
        return v ? psi_app_parse_double(&o->fpr, v, 0, 1, 1, 1, "demo: --fpr") : -1;
    if (psi_app_opt_value(argc, argv, i, "--structure", &v))
        return v ? demo_parse_structure(&o->structure, v) : -1;
    if (psi_app_opt_value(argc, argv, i, "--suite", &v))
        return v ? psi_app_parse_suite(&o->suite, v, "demo: --suite") : -1;
    if (argv[*i][0] == '-')
        psi_app_error("demo: unknown option '%s' (see 'shardpsi demo --help')", argv[*i]);
    else
        psi_app_error("demo: unexpected argument '%s' (see 'shardpsi demo --help')",
                      argv[*i]);
    return -1;
}

static uint64_t demo_budget(const psi_app_demo_opts *o)
{
    return o->memory != 0 ? o->memory : psi_app_memory_default();
}

/* Whether the sets, their messages and the parties' state, at
 * PSI_CLI_ROUND_PER_VALUE bytes a value as a round's, exceed the budget. */
static int demo_past_budget(const psi_app_demo_opts *o)
{
    return (uint64_t)o->server_size + o->client_size >
           demo_budget(o) / PSI_CLI_ROUND_PER_VALUE;
}

static int demo_parse(psi_app_demo_opts *o, int argc, char **argv)
{
    size_t k;

    o->seed = 1;
    o->server_size = 100000;
    o->client_size = 10000;
    o->overlap = 0.5;
    o->structure = PSI_STRUCTURE_GCS;
    o->reveal = 1;
    o->fpr = 1e-6;
    o->suite = PSI_SUITE_OPENMINED_P256;
    // Sharded by default, as it measured faster than one engine (1.9x on
    // two cores); with one CPU it is a single shard run inline.
    memset(&o->shard, 0, sizeof o->shard);
    o->shard.sharded = 1;
    o->single = 0;
    o->memory = 0;
    o->temp_dir = NULL;
    for (int i = 1; i < argc; i++) {
        int rc = demo_parse_one(o, argc, argv, &i);
        if (rc != 0)
            return rc;
    }
    if (o->single && (o->shard.shards > 0 || o->shard.threads > 0)) {
        psi_app_error("demo: --single-engine excludes --shards and --threads");
        return -1;
    }
    if (o->single)
        o->shard.sharded = 0;
    if (o->single && demo_past_budget(o)) {
        psi_app_error("demo: --single-engine holds both sets in memory, and %zu values do "
                      "not fit --memory %" PRIu64 " at %d bytes a value: leave it out to "
                      "run past the budget, or raise --memory", o->server_size +
                      o->client_size, demo_budget(o), PSI_CLI_ROUND_PER_VALUE);
        return -1;
    }
    k = psi_app_demo_shared(o);
    if (k > o->server_size) {
        psi_app_error("demo: --overlap %g of %zu client values needs %zu shared "
                      "values, but the server set has %zu", o->overlap,
                      o->client_size, k, o->server_size);
        return -1;
    }
    return 0;
}

/* The state of one run: both parties and the three messages. */
typedef struct demo_run {
    const psi_app_demo_opts *o;
    const psi_app_demo_sets *s;
    psi_app_party server, client;
    uint8_t *setup, *request, *response;
    size_t setup_len, request_len, response_len;
    size_t *idx;
} demo_run;

void psi_cli_demo_step_line(const char *step, size_t values, size_t bytes, double ms)
{
    char rate[32] = "-";

    if (ms > 0)
        snprintf(rate, sizeof rate, "%.0f", (double)values / (ms / 1000.0));
    if (bytes == SIZE_MAX)
        printf("%-20s %9zu values %12s       %10.1f ms %12s values/s\n",
               step, values, "", ms, rate);
    else
        printf("%-20s %9zu values %12zu bytes %10.1f ms %12s values/s\n",
               step, values, bytes, ms, rate);
    fflush(stdout);
}

static int demo_fail(const char *step, int rc)
{
    psi_app_error("demo: %s: %s (error %d)", step, psi_strerror(rc), rc);
    return -1;
}

/* Random keys; each engine then becomes a party (on shards if asked). */
static int demo_party(psi_app_party *p, const psi_app_demo_opts *o, psi_role role)
{
    psi_app_party_spec spec = {.suite = o->suite, .role = role, .reveal = o->reveal,
                               .shard = o->shard};
    const char *who = role == PSI_ROLE_SERVER ? "server" : "client";
    const char *step = NULL;
    int rc = psi_app_party_build(p, &spec, &step);

    if (rc != PSI_OK) {
        psi_app_error("demo: %s %s: %s (error %d)", who,
                      strcmp(step, PSI_APP_PARTY_E_ENGINE) == 0 ? "engine" : "shards",
                      psi_strerror(rc), rc);
        return -1;
    }
    return 0;
}

static int demo_engines(demo_run *r)
{
    double t0 = psi_app_now_ms();
    char what[96];

    if (demo_party(&r->server, r->o, PSI_ROLE_SERVER) != 0 ||
        demo_party(&r->client, r->o, PSI_ROLE_CLIENT) != 0)
        return -1;
    psi_app_party_describe(&r->server, what, sizeof what);
    printf("parties: server and client each on %s, made in %.1f ms\n", what,
           psi_app_now_ms() - t0);
    return 0;
}

static int demo_setup(demo_run *r)
{
    psi_setup_params p;
    size_t bound = 0;
    double t0;
    int rc;

    p.structure = r->o->structure;
    p.fpr = r->o->fpr;
    // OpenMined divides fpr by the client count; an empty client set
    // would make that infinite.
    p.num_client_inputs = (int64_t)(r->s->n_client ? r->s->n_client : 1);
    if ((rc = psi_setup_bound(&bound, r->o->suite, &p, r->s->n_server)) != PSI_OK)
        return demo_fail("server setup", rc);
    if ((r->setup = psi_app_alloc(bound, 1)) == NULL)
        return demo_fail("server setup", PSI_E_NOMEM);
    r->setup_len = bound;
    t0 = psi_app_now_ms();
    rc = psi_app_party_create_setup(&r->server, r->setup, &r->setup_len, NULL, &p,
                                    r->s->server, r->s->n_server);
    if (rc != PSI_OK)
        return demo_fail("server setup", rc);
    psi_cli_demo_step_line("server setup", r->s->n_server, r->setup_len, psi_app_now_ms() - t0);
    return 0;
}

static int demo_request(demo_run *r)
{
    double t0;
    int rc;

    r->request_len = psi_request_bound(r->o->suite, r->s->n_client);
    if ((r->request = psi_app_alloc(r->request_len, 1)) == NULL)
        return demo_fail("client request", PSI_E_NOMEM);
    t0 = psi_app_now_ms();
    rc = psi_app_party_create_request(&r->client, r->request, &r->request_len,
                                      r->s->client, r->s->n_client);
    if (rc != PSI_OK)
        return demo_fail("client request", rc);
    psi_cli_demo_step_line("client request", r->s->n_client, r->request_len,
                   psi_app_now_ms() - t0);
    return 0;
}

static int demo_response(demo_run *r)
{
    double t0;
    int rc;

    r->response_len = psi_response_bound(
        r->o->suite, psi_message_element_bound(r->o->suite, r->request_len));
    if ((r->response = psi_app_alloc(r->response_len, 1)) == NULL)
        return demo_fail("server response", PSI_E_NOMEM);
    t0 = psi_app_now_ms();
    rc = psi_app_party_process_request(&r->server, r->response, &r->response_len,
                                       r->request, r->request_len);
    if (rc != PSI_OK)
        return demo_fail("server response", rc);
    psi_cli_demo_step_line("server response", r->s->n_client, r->response_len,
                   psi_app_now_ms() - t0);
    return 0;
}

/* Returns: 0 if right, 1 if the result is wrong, -1 on an error. */
static int demo_result(demo_run *r)
{
    size_t n = psi_message_element_bound(r->o->suite, r->response_len);
    double t0 = psi_app_now_ms();
    int rc;

    if (r->o->reveal) {
        if ((r->idx = psi_app_alloc(n, sizeof *r->idx)) == NULL)
            return demo_fail("client intersection", PSI_E_NOMEM);
        rc = psi_app_party_intersection(&r->client, r->idx, &n, r->setup,
                                        r->setup_len, r->response, r->response_len);
    } else {
        rc = psi_app_party_intersection_size(&r->client, &n, r->setup, r->setup_len,
                                             r->response, r->response_len);
    }
    if (rc != PSI_OK)
        return demo_fail(r->o->reveal ? "client intersection" : "client size", rc);
    psi_cli_demo_step_line(r->o->reveal ? "client intersection" : "client size",
                   r->s->n_client, SIZE_MAX, psi_app_now_ms() - t0);
    printf("intersection size: %zu\n", n);
    if (r->o->reveal)
        return psi_app_demo_check_indices(r->o, r->s, r->idx, n) != 0;
    return psi_app_demo_check_count(r->o, r->s->n_true, "plain comparison", n) != 0;
}

static int demo_protocol(const psi_app_demo_opts *o, const psi_app_demo_sets *s)
{
    demo_run r;
    int rc;

    memset(&r, 0, sizeof r);
    r.o = o;
    r.s = s;
    rc = demo_engines(&r);
    if (rc == 0)
        rc = demo_setup(&r);
    if (rc == 0)
        rc = demo_request(&r);
    if (rc == 0)
        rc = demo_response(&r);
    if (rc == 0)
        rc = demo_result(&r);
    psi_app_party_free(&r.server);
    psi_app_party_free(&r.client);
    free(r.setup);
    free(r.request);
    free(r.response);
    free(r.idx);
    return rc;
}

/* The whole process's peak resident memory: sets, messages and every
 * party's temporaries, for the sizes the demo is run at. */
static void demo_peak_memory(void)
{
    double mib = psi_app_peak_mib();

    if (mib > 0)
        printf("peak memory: %.1f MiB (VmHWM)\n", mib);
}

int psi_cli_cmd_demo(int argc, char **argv)
{
    psi_app_demo_opts o;
    psi_app_demo_sets s;
    double t0;
    int rc = demo_parse(&o, argc, argv);

    if (rc != 0)
        return rc > 0 ? PSI_APP_EXIT_OK : PSI_APP_EXIT_USAGE;
    printf("shardpsi demo: seed %" PRIu64 ", server set %zu values, client set %zu values "
           "(%zu shared), structure %s, fpr %g, %s, suite %s\n", o.seed, o.server_size,
           o.client_size, psi_app_demo_shared(&o), demo_structures[o.structure],
           o.fpr, o.reveal ? "intersection revealed" : "size only",
           psi_suite_name(o.suite));
    if (demo_past_budget(&o)) {
        rc = psi_cli_demo_spill(&o, demo_budget(&o), psi_app_temp_dir(o.temp_dir, "/var/tmp"));
        demo_peak_memory();
        if (rc >= 0)
            printf("result: %s\n", rc == 0 ? "OK" : "WRONG");
        return rc == 0 ? PSI_APP_EXIT_OK : PSI_APP_EXIT_FAIL;
    }
    t0 = psi_app_now_ms();
    if (psi_app_demo_sets_make(&s, &o) != 0) {
        psi_app_demo_sets_free(&s);
        psi_app_error("demo: out of memory for the sets");
        return PSI_APP_EXIT_FAIL;
    }
    printf("generated the sets and their plain intersection in %.1f ms\n",
           psi_app_now_ms() - t0);
    rc = demo_protocol(&o, &s);
    psi_app_demo_sets_free(&s);
    demo_peak_memory();
    if (rc == 0)
        printf("result: OK\n");
    else if (rc > 0)
        printf("result: WRONG\n");
    return rc == 0 ? PSI_APP_EXIT_OK : PSI_APP_EXIT_FAIL;
}
