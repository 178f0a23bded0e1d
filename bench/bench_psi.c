/*
 * bench_psi: single-thread timings of the engine's message-level calls.
 *
 *   bench_psi [FILTER...]   run the cases whose name contains any FILTER
 *                           (all cases when none is given)
 *   bench_psi help          list the cases
 *
 * Cases are engine_<op>_<size>: op in setup_raw, setup_gcs, setup_bloom,
 * request, response, intersection_raw, intersection_gcs,
 * intersection_bloom; size in 10k, 100k.  Each timed run is one call on N
 * values; everything it needs (values, engines, prerequisite messages) is
 * built beforehand, untimed.  The client holds N values, the server N
 * values, half of them shared; GCS and Bloom use fpr 1e-6 with
 * num_client_inputs = N.  The intersection cases time
 * psi_client_get_intersection only (response parsing, unmasking, matching).
 *
 * PSI_BENCH_ITERS sets the iterations per case.  Unset, 10k cases run 3
 * times and 100k cases once: a 100k call takes ~10 s at ~10k values/s, so
 * the whole suite (timed runs plus untimed preparation) stays within a few
 * minutes.  Output is CSV on stdout (bench.h); errors go to stderr and the
 * exit status is 1.
 */
#include "psi.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define FPR 1e-6
#define VALUE_MAX 32        /* bytes of one generated value, NUL included */
#define N_SIZES 2

/* Inputs and messages shared by every case of one size, built on first use
 * and reused: the untimed preparation would otherwise dominate the run. */
typedef struct fixture {
    size_t n;
    psi_engine *client;
    psi_engine *server;
    char *client_text;          /* n * VALUE_MAX bytes backing the values */
    char *server_text;
    psi_value *client_values;
    psi_value *server_values;
    uint8_t *request;           /* NULL until first needed */
    size_t request_len;
    uint8_t *response;
    size_t response_len;
    uint8_t *setup[3];          /* by psi_structure */
    size_t setup_len[3];
} fixture;

static fixture fixtures[N_SIZES];

typedef enum op_kind { OP_SETUP, OP_REQUEST, OP_RESPONSE, OP_INTERSECTION } op_kind;

typedef struct op {
    op_kind kind;
    psi_structure structure;    /* for OP_SETUP and OP_INTERSECTION */
} op;

/* Per-case state: the fixture and the output buffers of the timed call. */
typedef struct state {
    fixture *f;
    const op *op;
    psi_setup_params params;
    uint8_t *out;
    size_t out_cap;
    size_t out_len;
    size_t *idx;
    size_t idx_cap;
    size_t idx_count;
} state;

static int fail(const char *what, int rc)
{
    fprintf(stderr, "bench_psi: %s: %s (%d)\n", what, psi_strerror(rc), rc);
    return 1;
}

static psi_setup_params params_for(psi_structure structure, size_t n)
{
    psi_setup_params p;

    p.structure = structure;
    p.fpr = FPR;
    p.num_client_inputs = (int64_t)n;
    return p;
}

/* Value number k is "user<k>@example.com", so the client (numbers 0..n-1)
 * and the server (n/2..n/2+n-1) share exactly n/2 values, client indices
 * n/2..n-1. */
static int make_values(char **text, psi_value **values, size_t n, size_t first)
{
    size_t i;

    *text = malloc(n * VALUE_MAX);
    *values = malloc(n * sizeof **values);
    if (*text == NULL || *values == NULL)
        return 1;
    for (i = 0; i < n; i++) {
        char *v = *text + i * VALUE_MAX;
        int len = snprintf(v, VALUE_MAX, "user%zu@example.com", first + i);
        if (len < 0 || len >= VALUE_MAX)
            return 1;
        (*values)[i].data = (const uint8_t *)v;
        (*values)[i].len = (size_t)len;
    }
    return 0;
}

static int make_engine(psi_engine **e, psi_role role)
{
    psi_settings s;
    int rc;

    psi_settings_default(&s);
    s.role = role;
    rc = psi_engine_create(e, &s);
    return rc == PSI_OK ? 0 : fail("psi_engine_create", rc);
}

static void fixture_clear(fixture *f)
{
    int i;

    psi_engine_free(f->client);
    psi_engine_free(f->server);
    free(f->client_text);
    free(f->server_text);
    free(f->client_values);
    free(f->server_values);
    free(f->request);
    free(f->response);
    for (i = 0; i < 3; i++)
        free(f->setup[i]);
    memset(f, 0, sizeof *f);
}

/* Returns the fixture for n values, building its engines and values on
 * first use; NULL on failure. */
static fixture *fixture_get(size_t n)
{
    fixture *f = NULL;
    int i;

    for (i = 0; i < N_SIZES && f == NULL; i++)
        if (fixtures[i].n == n || fixtures[i].n == 0)
            f = &fixtures[i];
    if (f == NULL)
        return NULL;
    if (f->n == n)
        return f;
    f->n = n;
    if (make_engine(&f->client, PSI_ROLE_CLIENT) != 0
        || make_engine(&f->server, PSI_ROLE_SERVER) != 0
        || make_values(&f->client_text, &f->client_values, n, 0) != 0
        || make_values(&f->server_text, &f->server_values, n, n / 2) != 0) {
        fprintf(stderr, "bench_psi: cannot prepare %zu values\n", n);
        fixture_clear(f);
        return NULL;
    }
    return f;
}

static int fixture_request(fixture *f)
{
    size_t cap = psi_request_bound(PSI_SUITE_OPENMINED_P256, f->n);
    int rc;

    if (f->request != NULL)
        return 0;
    if (cap == 0 || (f->request = malloc(cap)) == NULL)
        return fail("request buffer", PSI_E_NOMEM);
    f->request_len = cap;
    rc = psi_client_create_request(f->client, f->request, &f->request_len,
                                   f->client_values, f->n);
    return rc == PSI_OK ? 0 : fail("psi_client_create_request", rc);
}

static int fixture_response(fixture *f)
{
    size_t cap = psi_response_bound(PSI_SUITE_OPENMINED_P256, f->n);
    int rc;

    if (f->response != NULL)
        return 0;
    if (fixture_request(f) != 0)
        return 1;
    if (cap == 0 || (f->response = malloc(cap)) == NULL)
        return fail("response buffer", PSI_E_NOMEM);
    f->response_len = cap;
    rc = psi_server_process_request(f->server, f->response, &f->response_len,
                                    f->request, f->request_len);
    return rc == PSI_OK ? 0 : fail("psi_server_process_request", rc);
}

static int fixture_setup(fixture *f, psi_structure structure)
{
    psi_setup_params p = params_for(structure, f->n);
    size_t cap;
    int rc;

    if (f->setup[structure] != NULL)
        return 0;
    rc = psi_setup_bound(&cap, PSI_SUITE_OPENMINED_P256, &p, f->n);
    if (rc != PSI_OK)
        return fail("psi_setup_bound", rc);
    if ((f->setup[structure] = malloc(cap)) == NULL)
        return fail("setup buffer", PSI_E_NOMEM);
    f->setup_len[structure] = cap;
    rc = psi_server_create_setup(f->server, f->setup[structure],
                                 &f->setup_len[structure], NULL, &p,
                                 f->server_values, f->n);
    return rc == PSI_OK ? 0 : fail("psi_server_create_setup", rc);
}

/* ------------------------------------------------------------- callbacks */

static void case_teardown(void *p)
{
    state *st = p;

    free(st->out);
    free(st->idx);
    free(st);
}

/* Allocates the state and the fixture, and an output buffer of out_cap
 * bytes and idx_cap indices. */
static int state_new(void **p, const bench_case *c, size_t out_cap, size_t idx_cap)
{
    state *st = calloc(1, sizeof *st);

    *p = st;
    if (st == NULL)
        return 1;
    st->op = c->arg;
    st->params = params_for(st->op->structure, c->n);
    if ((st->f = fixture_get(c->n)) == NULL)
        return 1;
    st->out_cap = out_cap;
    st->idx_cap = idx_cap;
    if ((out_cap > 0 && (st->out = malloc(out_cap)) == NULL)
        || (idx_cap > 0 && (st->idx = malloc(idx_cap * sizeof *st->idx)) == NULL))
        return 1;
    return 0;
}

static int setup_setup(void **p, const bench_case *c)
{
    psi_setup_params sp = params_for(((const op *)c->arg)->structure, c->n);
    size_t cap;
    int rc = psi_setup_bound(&cap, PSI_SUITE_OPENMINED_P256, &sp, c->n);

    if (rc != PSI_OK)
        return fail("psi_setup_bound", rc);
    return state_new(p, c, cap, 0);
}

static int run_setup(void *p)
{
    state *st = p;
    int rc;

    st->out_len = st->out_cap;
    rc = psi_server_create_setup(st->f->server, st->out, &st->out_len, NULL,
                                 &st->params, st->f->server_values, st->f->n);
    return rc == PSI_OK ? 0 : fail("psi_server_create_setup", rc);
}

static int setup_request(void **p, const bench_case *c)
{
    size_t cap = psi_request_bound(PSI_SUITE_OPENMINED_P256, c->n);

    return cap == 0 ? 1 : state_new(p, c, cap, 0);
}

static int run_request(void *p)
{
    state *st = p;
    int rc;

    st->out_len = st->out_cap;
    rc = psi_client_create_request(st->f->client, st->out, &st->out_len,
                                   st->f->client_values, st->f->n);
    return rc == PSI_OK ? 0 : fail("psi_client_create_request", rc);
}

static int setup_response(void **p, const bench_case *c)
{
    size_t cap = psi_response_bound(PSI_SUITE_OPENMINED_P256, c->n);

    if (cap == 0 || state_new(p, c, cap, 0) != 0)
        return 1;
    return fixture_request(((state *)*p)->f);
}

static int run_response(void *p)
{
    state *st = p;
    int rc;

    st->out_len = st->out_cap;
    rc = psi_server_process_request(st->f->server, st->out, &st->out_len,
                                    st->f->request, st->f->request_len);
    return rc == PSI_OK ? 0 : fail("psi_server_process_request", rc);
}

/* Message outputs are checked by size: exact for a Request or Response. */
static int check_message(void *p)
{
    const state *st = p;

    if (st->op->kind == OP_REQUEST)
        return st->out_len != psi_request_bound(PSI_SUITE_OPENMINED_P256, st->f->n);
    if (st->op->kind == OP_RESPONSE)
        return st->out_len != psi_response_bound(PSI_SUITE_OPENMINED_P256, st->f->n);
    return st->out_len == 0;
}

static int setup_intersection(void **p, const bench_case *c)
{
    state *st;

    if (state_new(p, c, 0, c->n) != 0)
        return 1;
    st = *p;
    if (fixture_response(st->f) != 0 || fixture_setup(st->f, st->op->structure) != 0)
        return 1;
    if (psi_message_element_bound(PSI_SUITE_OPENMINED_P256, st->f->response_len) > st->idx_cap)
        return 1;
    return 0;
}

static int run_intersection(void *p)
{
    state *st = p;
    const fixture *f = st->f;
    int rc;

    st->idx_count = st->idx_cap;
    rc = psi_client_get_intersection(f->client, st->idx, &st->idx_count,
                                     f->setup[st->op->structure],
                                     f->setup_len[st->op->structure],
                                     f->response, f->response_len);
    return rc == PSI_OK ? 0 : fail("psi_client_get_intersection", rc);
}

/* Every shared value (client indices n/2..n-1) must be found once.  Raw is
 * exact; GCS and Bloom may add false positives (expected total 1e-6), a
 * handful of which is tolerated. */
static int check_intersection(void *p)
{
    const state *st = p;
    size_t n = st->f->n, i, hits = 0, extra = 0;
    unsigned char *seen = calloc(n, 1);
    int bad = 0;

    if (seen == NULL)
        return 1;
    for (i = 0; i < st->idx_count && !bad; i++) {
        size_t k = st->idx[i];
        bad = k >= n || seen[k];
        if (!bad) {
            seen[k] = 1;
            if (k >= n / 2)
                hits++;
            else
                extra++;
        }
    }
    free(seen);
    if (bad || hits != n - n / 2)
        return 1;
    return st->op->structure == PSI_STRUCTURE_RAW ? extra != 0 : extra > 8;
}

/* ----------------------------------------------------------------- cases */

static const op op_setup_raw = { OP_SETUP, PSI_STRUCTURE_RAW };
static const op op_setup_gcs = { OP_SETUP, PSI_STRUCTURE_GCS };
static const op op_setup_bloom = { OP_SETUP, PSI_STRUCTURE_BLOOM_FILTER };
static const op op_request = { OP_REQUEST, PSI_STRUCTURE_RAW };
static const op op_response = { OP_RESPONSE, PSI_STRUCTURE_RAW };
static const op op_inter_raw = { OP_INTERSECTION, PSI_STRUCTURE_RAW };
static const op op_inter_gcs = { OP_INTERSECTION, PSI_STRUCTURE_GCS };
static const op op_inter_bloom = { OP_INTERSECTION, PSI_STRUCTURE_BLOOM_FILTER };

#define MSG(name, n, kind, o) \
    { "engine_" name, n, setup_##kind, run_##kind, check_message, case_teardown, &o }
#define INTER(name, n, o) \
    { "engine_" name, n, setup_intersection, run_intersection, check_intersection, \
      case_teardown, &o }
#define CASES(sz, n) \
    MSG("setup_raw_" sz, n, setup, op_setup_raw), \
    MSG("setup_gcs_" sz, n, setup, op_setup_gcs), \
    MSG("setup_bloom_" sz, n, setup, op_setup_bloom), \
    MSG("request_" sz, n, request, op_request), \
    MSG("response_" sz, n, response, op_response), \
    INTER("intersection_raw_" sz, n, op_inter_raw), \
    INTER("intersection_gcs_" sz, n, op_inter_gcs), \
    INTER("intersection_bloom_" sz, n, op_inter_bloom)

static const bench_case cases[] = {
    CASES("10k", 10000),
    CASES("100k", 100000),
};
#define N_CASES (sizeof cases / sizeof cases[0])

static void usage(void)
{
    size_t i;

    printf("usage: bench_psi [FILTER...]  run cases whose name contains a FILTER\n"
           "       bench_psi help         this list\n"
           "PSI_BENCH_ITERS=k runs each case k times (default: 3 for 10k, "
           "1 for 100k).\ncases:\n");
    for (i = 0; i < N_CASES; i++)
        printf("  %s\n", cases[i].name);
}

int main(int argc, char **argv)
{
    size_t i;
    int ran = 0, rc = 0;

    if (argc > 1 && (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "-h") == 0
                     || strcmp(argv[1], "--help") == 0)) {
        usage();
        return 0;
    }
    if (bench_iters(1) == 0) {
        fprintf(stderr, "bench_psi: PSI_BENCH_ITERS must be a positive integer\n");
        return 1;
    }
    for (i = 0; i < N_CASES && rc == 0; i++) {
        if (!bench_selected(cases[i].name, argc - 1, argv + 1))
            continue;
        if (ran++ == 0)
            bench_print_header();
        rc = bench_run_case(&cases[i], bench_iters(cases[i].n >= 100000 ? 1 : 3));
    }
    for (i = 0; i < N_SIZES; i++)
        fixture_clear(&fixtures[i]);
    if (ran == 0) {
        fprintf(stderr, "bench_psi: no case matches; try 'bench_psi help'\n");
        return 1;
    }
    return rc;
}
