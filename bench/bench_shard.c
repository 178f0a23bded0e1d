/*
 * bench_shard: scaling of the sharding layer in shards N and threads T,
 * against the single engine measured in the same run.
 *
 *   bench_shard [FILTER...]   run the cases whose name contains any FILTER
 *                             (all cases when none is given)
 *   bench_shard help          list the cases
 *
 * Cases are engine_<op>_100k (psi.h, the baseline),
 * shard_<op>_100k_n<N>_t<T> (psi_shards_*) for N/T in 1/1, 2/2, 8/2, and
 * procs_<op>_100k_p2: the engine's call in two processes, each on half the
 * values, which share nothing at all: the ceiling of any sharding on this
 * machine at that moment (on shared virtual CPUs it can be well below 2);
 * and shard_match_serial_100k, the part of the sharded match step that runs
 * once (parse the setup, match all unmasked elements).  The ops are
 * setup (GCS setup of 100k server values, fpr 1e-6 for 100k client
 * inputs), request (100k values), response (to a 100k request) and match
 * (psi_client_get_intersection of a 100k response against the GCS setup).
 * The client and server share half their values.  Values, engines, shards
 * and prerequisite messages are built beforehand, untimed; each timed run is
 * one call.  Every output is compared with the single engine's, untimed, so
 * a fast wrong answer fails the case.  A selected shard case runs its
 * baseline first if the filter left it out.
 *
 * Output (stdout): one CSV row per case,
 *
 *   name,min_s,avg_s,max_s,values_per_s,speedup_vs_engine
 *
 * where speedup_vs_engine = baseline avg_s / avg_s.  The shard_memory case
 * prints its own block, `name,bytes`: resident memory (VmRSS) added per
 * extra shard, from psi_shards of 1, 9 and 65 shards (threads 1), and the
 * peak resident growth (VmHWM over VmRSS before the call, the peak reset
 * through /proc/self/clear_refs) of a 100k request with N=1/T=1 and
 * N=8/T=2 (with glibc's mmap threshold fixed at 64 KiB, so that freed
 * blocks return to the system).  Linux only.
 *
 * PSI_BENCH_ITERS sets the runs per case (default 1: a 100k engine call
 * takes ~10 s).  Errors go to stderr and the exit status is 1.
 */
#include "psi.h"
#include "psi_shard.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define N_VALUES 100000
#define FPR 1e-6
#define VALUE_MAX 32        /* bytes of one generated value, NUL included */

typedef enum op_kind { OP_SETUP, OP_REQUEST, OP_RESPONSE, OP_MATCH, OP_COUNT } op_kind;

/* Everything the cases share, built on first use. */
typedef struct fixture {
    size_t n;
    psi_engine *client, *server;
    char *text;                 /* 2n values of VALUE_MAX bytes */
    psi_value *cv, *sv;
    uint8_t *msg[OP_COUNT];     /* the engine's setup, request, response and
                                   intersection (as bytes): prerequisites
                                   and the reference for every check */
    size_t msg_len[OP_COUNT];   /* bytes (items for OP_MATCH) */
    double baseline[OP_COUNT];  /* the engine's avg_s, 0 until measured */
} fixture;

static fixture fx;

typedef struct shard_case {
    const char *name;
    op_kind op;
    size_t shards;              /* 0: the single engine */
    size_t threads;
    size_t procs;               /* > 0: the engine's call in this many
                                   processes, each on its slice (the
                                   ceiling case, see call_procs) */
} shard_case;

/* Per-case state: shards (NULL for the engine) and the output buffer. */
typedef struct state {
    const shard_case *c;
    psi_shards *g;
    psi_setup_params params;
    uint8_t *out;
    size_t cap, len;            /* bytes, or items for OP_MATCH */
    double proc_seconds;        /* procs cases: fork to last exit */
} state;

static int fail(const char *what, int rc)
{
    fprintf(stderr, "bench_shard: %s: %s (%d)\n", what, psi_strerror(rc), rc);
    return 1;
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

/* Value k is "user<k>@example.com"; the client holds 0..n-1 and the server
 * n/2..n/2+n-1. */
static int make_values(size_t n)
{
    size_t i;

    fx.text = malloc(2 * n * VALUE_MAX);
    fx.cv = malloc(n * sizeof *fx.cv);
    fx.sv = malloc(n * sizeof *fx.sv);
    if (fx.text == NULL || fx.cv == NULL || fx.sv == NULL)
        return 1;
    for (i = 0; i < 2 * n; i++) {
        char *v = fx.text + i * VALUE_MAX;
        size_t k = i < n ? i : i - n + n / 2;
        int len = snprintf(v, VALUE_MAX, "user%zu@example.com", k);
        psi_value *out = i < n ? &fx.cv[i] : &fx.sv[i - n];
        if (len < 0 || len >= VALUE_MAX)
            return 1;
        out->data = (const uint8_t *)v;
        out->len = (size_t)len;
    }
    return 0;
}

static int fixture_init(void)
{
    if (fx.n != 0)
        return 0;
    fx.n = N_VALUES;
    if (make_engine(&fx.client, PSI_ROLE_CLIENT) != 0
        || make_engine(&fx.server, PSI_ROLE_SERVER) != 0 || make_values(fx.n) != 0) {
        fprintf(stderr, "bench_shard: cannot prepare %zu values\n", (size_t)N_VALUES);
        return 1;
    }
    return 0;
}

static void fixture_clear(void)
{
    int i;

    psi_engine_free(fx.client);
    psi_engine_free(fx.server);
    free(fx.text);
    free(fx.cv);
    free(fx.sv);
    for (i = 0; i < OP_COUNT; i++)
        free(fx.msg[i]);
    memset(&fx, 0, sizeof fx);
}

static psi_setup_params gcs_params(void)
{
    psi_setup_params p;

    p.structure = PSI_STRUCTURE_GCS;
    p.fpr = FPR;
    p.num_client_inputs = N_VALUES;
    return p;
}

/* ---------------------------------------------------------- the calls */

static int call_setup(state *st)
{
    if (st->g != NULL)
        return psi_shards_server_create_setup(st->g, st->out, &st->len, NULL, &st->params,
                                              fx.sv, fx.n);
    return psi_server_create_setup(fx.server, st->out, &st->len, NULL, &st->params, fx.sv,
                                   fx.n);
}

static int call_request(state *st)
{
    if (st->g != NULL)
        return psi_shards_client_create_request(st->g, st->out, &st->len, fx.cv, fx.n);
    return psi_client_create_request(fx.client, st->out, &st->len, fx.cv, fx.n);
}

static int call_response(state *st)
{
    const uint8_t *req = fx.msg[OP_REQUEST];
    size_t req_len = fx.msg_len[OP_REQUEST];

    if (st->g != NULL)
        return psi_shards_server_process_request(st->g, st->out, &st->len, req, req_len);
    return psi_server_process_request(fx.server, st->out, &st->len, req, req_len);
}

static int call_match(state *st)
{
    size_t *idx = (size_t *)(void *)st->out;
    const uint8_t *setup = fx.msg[OP_SETUP], *resp = fx.msg[OP_RESPONSE];
    size_t setup_len = fx.msg_len[OP_SETUP], resp_len = fx.msg_len[OP_RESPONSE];

    if (st->g != NULL)
        return psi_shards_client_get_intersection(st->g, idx, &st->len, setup, setup_len,
                                                  resp, resp_len);
    return psi_client_get_intersection(fx.client, idx, &st->len, setup, setup_len, resp,
                                       resp_len);
}

/* The ceiling: the single engine's call on slice k of `procs` (the plan
 * of psi_shard_plan), in a child process of its own.  Separate processes
 * share nothing, not even an allocator, so their speed-up over one engine
 * is the most any sharding can reach on this machine at that moment.  The
 * slices' messages (request, response) are built untimed in prepare_procs. */
static int prerequisites(op_kind op);

typedef struct proc_slice {
    size_t off, count;
    uint8_t *msg;               /* OP_RESPONSE: the slice's request;
                                   OP_MATCH: the slice's response */
    size_t msg_len;
} proc_slice;

static int proc_call(op_kind op, const proc_slice *sl, uint8_t *out, size_t cap)
{
    psi_setup_params p = gcs_params();
    size_t len = cap, count = cap / sizeof(size_t);

    switch (op) {
    case OP_SETUP:
        return psi_server_create_setup(fx.server, out, &len, NULL, &p, fx.sv + sl->off,
                                       sl->count);
    case OP_REQUEST:
        return psi_client_create_request(fx.client, out, &len, fx.cv + sl->off, sl->count);
    case OP_RESPONSE:
        return psi_server_process_request(fx.server, out, &len, sl->msg, sl->msg_len);
    default:
        return psi_client_get_intersection(fx.client, (size_t *)(void *)out, &count,
                                           fx.msg[OP_SETUP], fx.msg_len[OP_SETUP], sl->msg,
                                           sl->msg_len);
    }
}

/* Re-encodes slice sl of the request (OP_RESPONSE) or response (OP_MATCH)
 * as a message of its own. */
static int slice_message(op_kind op, proc_slice *sl)
{
    const uint8_t *src = fx.msg[op == OP_RESPONSE ? OP_REQUEST : OP_RESPONSE];
    size_t src_len = fx.msg_len[op == OP_RESPONSE ? OP_REQUEST : OP_RESPONSE];
    size_t n = psi_message_element_bound(PSI_SUITE_OPENMINED_P256, src_len);
    uint8_t *el = malloc(n * PSI_ELEMENT_BYTES + 1);
    int reveal = 0, rc;

    sl->msg_len = psi_request_bound(PSI_SUITE_OPENMINED_P256, sl->count) + 1;
    sl->msg = malloc(sl->msg_len);
    if (el == NULL || sl->msg == NULL) {
        free(el);
        return fail("slice buffers", PSI_E_NOMEM);
    }
    rc = op == OP_RESPONSE ? psi_request_decode(el, &n, &reveal, PSI_SUITE_OPENMINED_P256, src, src_len)
                           : psi_response_decode(el, &n, PSI_SUITE_OPENMINED_P256, src, src_len);
    // The slice's message: the library's head, then its records (§10.1).
    psi_message_kind kind = op == OP_RESPONSE ? PSI_MESSAGE_REQUEST : PSI_MESSAGE_RESPONSE;
    size_t cap = sl->msg_len, head = cap, body = 0;
    if (rc == PSI_OK)
        rc = psi_message_head(sl->msg, &head, PSI_SUITE_OPENMINED_P256, kind, reveal, 0);
    if (rc == PSI_OK) {
        body = cap - head;
        rc = psi_message_records(sl->msg + head, &body, PSI_SUITE_OPENMINED_P256, kind,
                                 el + sl->off * PSI_ELEMENT_BYTES, sl->count);
    }
    sl->msg_len = head + body;
    free(el);
    return rc == PSI_OK ? 0 : fail("slice message", rc);
}

/* Forks one child per slice; each runs its call and exits 0 on success.
 * Returns PSI_OK when every child did. */
static int call_procs(state *st)
{
    const shard_case *c = st->c;
    proc_slice sl[8];
    pid_t pid[8];
    size_t k, started = 0;
    int rc = PSI_OK, status;

    if (c->procs > 8 || prerequisites(c->op) != 0)
        return PSI_E_INVALID_ARG;
    // The cut of §14.1, from an external plan (it holds no input).
    psi_op_args pa = {.op = PSI_OP_STEP, .step = PSI_STEP_MASK, .n_values = fx.n,
                      .slices = c->procs, .external = 1};
    psi_plan *plan = NULL;
    if (psi_plan_begin(&plan, fx.client, &pa) != PSI_OK)
        return PSI_E_INVALID_ARG;
    for (k = 0; k < c->procs; k++) {
        psi_step st;
        memset(&sl[k], 0, sizeof sl[k]);
        psi_plan_step(plan, &st, k);
        sl[k].off = st.offset;
        sl[k].count = st.count;
        if ((c->op == OP_RESPONSE || c->op == OP_MATCH) && slice_message(c->op, &sl[k]) != 0)
            rc = PSI_E_NOMEM;
    }
    psi_plan_free(plan);
    double t0 = bench_now();
    for (k = 0; rc == PSI_OK && k < c->procs; k++, started++) {
        pid[k] = fork();
        if (pid[k] < 0) {
            rc = PSI_E_THREAD;
            break;
        }
        if (pid[k] == 0)
            _exit(proc_call(c->op, &sl[k], st->out, st->cap * (c->op == OP_MATCH
                                                                    ? sizeof(size_t) : 1))
                  == PSI_OK ? 0 : 1);
    }
    for (k = 0; k < started; k++)
        if (waitpid(pid[k], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            rc = PSI_E_CRYPTO;
    st->proc_seconds = bench_now() - t0;
    for (k = 0; k < c->procs; k++)
        free(sl[k].msg);
    return rc;
}

static int (*const calls[OP_COUNT])(state *) = {call_setup, call_request, call_response,
                                                call_match};
static const char *const call_names[OP_COUNT] = {"create_setup", "create_request",
                                                 "process_request", "get_intersection"};

/* The output capacity of an op, in bytes (items for OP_MATCH). */
static size_t op_capacity(op_kind op)
{
    psi_setup_params p = gcs_params();
    size_t cap = 0;

    switch (op) {
    case OP_SETUP:
        return psi_setup_bound(&cap, PSI_SUITE_OPENMINED_P256, &p, fx.n) == PSI_OK ? cap : 0;
    case OP_REQUEST:
        return psi_request_bound(PSI_SUITE_OPENMINED_P256, fx.n);
    case OP_RESPONSE:
        return psi_response_bound(PSI_SUITE_OPENMINED_P256, fx.n);
    default:
        return psi_message_element_bound(PSI_SUITE_OPENMINED_P256, fx.msg_len[OP_RESPONSE]);
    }
}

/* ------------------------------------------------------- prerequisites */

static int reference(op_kind op);

/* The messages an op reads: the response needs the request, the match the
 * setup and the response. */
static int prerequisites(op_kind op)
{
    static const op_kind needs[OP_COUNT][2] = {
        {OP_COUNT, OP_COUNT}, {OP_COUNT, OP_COUNT}, {OP_REQUEST, OP_COUNT},
        {OP_SETUP, OP_RESPONSE}};
    int i;

    for (i = 0; i < 2; i++)
        if (needs[op][i] != OP_COUNT && reference(needs[op][i]) != 0)
            return 1;
    return 0;
}

/* Runs the engine's call once, untimed, to hold its output as a message
 * for later ops and as the reference, unless the engine's timed case
 * already left it. */
static int reference(op_kind op)
{
    state st;
    int rc;

    if (fx.msg[op] != NULL)
        return 0;
    if (prerequisites(op) != 0)
        return 1;
    memset(&st, 0, sizeof st);
    st.params = gcs_params();
    st.cap = st.len = op_capacity(op);
    st.out = malloc(op == OP_MATCH ? st.cap * sizeof(size_t) : st.cap);
    if (st.cap == 0 || st.out == NULL)
        return fail("reference buffer", PSI_E_NOMEM);
    rc = calls[op](&st);
    fx.msg[op] = st.out;
    fx.msg_len[op] = st.len;
    return rc == PSI_OK ? 0 : fail(call_names[op], rc);
}

static void state_free(state *st)
{
    if (st == NULL)
        return;
    psi_shards_free(st->g);
    free(st->out);
    free(st);
}

static state *state_new(const shard_case *c)
{
    state *st = calloc(1, sizeof *st);
    psi_shard_settings s;
    size_t item = c->op == OP_MATCH ? sizeof(size_t) : 1;
    int rc;

    if (st == NULL)
        return NULL;
    st->c = c;
    st->params = gcs_params();
    if (prerequisites(c->op) != 0) {
        state_free(st);
        return NULL;
    }
    st->cap = op_capacity(c->op);
    st->out = malloc(st->cap * item);
    if (c->shards > 0) {
        psi_shard_settings_default(&s);
        s.shards = c->shards;
        s.threads = c->threads;
        rc = psi_shards_create(&st->g, c->op == OP_SETUP || c->op == OP_RESPONSE ? fx.server
                                                                                  : fx.client,
                               &s);
        if (rc != PSI_OK)
            fail("psi_shards_create", rc);
        if (rc != PSI_OK || st->cap == 0 || st->out == NULL) {
            state_free(st);
            return NULL;
        }
    }
    return st;
}

/* The output equals the engine's, byte for byte. */
static int check(const state *st)
{
    op_kind op = st->c->op;
    size_t item = op == OP_MATCH ? sizeof(size_t) : 1;

    if (reference(op) != 0)
        return 1;
    return st->len != fx.msg_len[op] || memcmp(st->out, fx.msg[op], st->len * item) != 0;
}

/* ------------------------------------------------------------- running */

/* Times `iters` calls; avg, min and max in seconds.  Returns 0 or 1. */
static int time_case(const shard_case *c, unsigned iters, double *min, double *avg,
                     double *max)
{
    state *st = state_new(c);
    double sum = 0.0;
    unsigned i;
    int rc = 1;

    if (st == NULL) {
        fprintf(stderr, "%s: setup failed\n", c->name);
        return 1;
    }
    for (i = 0; i < iters; i++) {
        double t0, dt;
        st->len = st->cap;
        t0 = bench_now();
        rc = c->procs > 0 ? call_procs(st) : calls[c->op](st);
        dt = c->procs > 0 ? st->proc_seconds : bench_now() - t0;
        if (rc != PSI_OK) {
            fail(c->name, rc);
            rc = 1;
            goto done;
        }
        *min = i == 0 || dt < *min ? dt : *min;
        *max = i == 0 || dt > *max ? dt : *max;
        sum += dt;
    }
    *avg = sum / iters;
    if (c->procs > 0) {
        rc = 0; /* the children checked their own calls' success */
        goto done;
    }
    if (c->shards == 0 && fx.msg[c->op] == NULL) {
        /* The engine's output is the reference: keep it. */
        fx.msg[c->op] = st->out;
        fx.msg_len[c->op] = st->len;
        st->out = NULL;
        goto done;
    }
    rc = check(st);
    if (rc != 0)
        fprintf(stderr, "%s: output differs from the single engine's\n", c->name);
done:
    state_free(st);
    return rc;
}

static int run_case(const shard_case *c, unsigned iters)
{
    double min = 0.0, avg = 0.0, max = 0.0;

    if (time_case(c, iters, &min, &avg, &max) != 0)
        return 1;
    if (c->shards == 0 && c->procs == 0)
        fx.baseline[c->op] = avg;
    printf("%s,%.6f,%.6f,%.6f,%.1f,%.3f\n", c->name, min, avg, max,
           avg > 0.0 ? (double)fx.n / avg : 0.0, avg > 0.0 ? fx.baseline[c->op] / avg : 0.0);
    fflush(stdout);
    return 0;
}

/* ---------------------------------------------------------- shard_memory */

/* A "Vm...:" line of /proc/self/status in bytes, or -1. */
static long long status_bytes(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kb = -1;
    size_t n = strlen(field);

    if (f == NULL)
        return -1;
    while (kb < 0 && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            kb = strtoll(line + n + 1, NULL, 10);
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* Resets VmHWM to the current VmRSS (Linux >= 4.0).  Returns 0 or 1. */
static int reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    int bad;

    if (f == NULL)
        return 1;
    bad = fputs("5", f) < 0;
    return fclose(f) != 0 || bad;
}

/* RSS added by psi_shards of 1, 9 and 65 shards (threads 1), all kept
 * alive so freed memory cannot be reused; bytes per extra shard from the
 * differences. */
static int memory_per_shard(void)
{
    static const size_t counts[3] = {1, 9, 65};
    psi_shards *g[3] = {NULL, NULL, NULL};
    long long grew[3];
    psi_shard_settings s;
    int i, rc = 0;

    for (i = 0; i < 3 && rc == 0; i++) {
        long long before = status_bytes("VmRSS");
        psi_shard_settings_default(&s);
        s.shards = counts[i];
        s.threads = 1;
        rc = psi_shards_create(&g[i], fx.server, &s);
        grew[i] = status_bytes("VmRSS") - before;
    }
    if (rc != PSI_OK)
        fail("psi_shards_create", rc);
    else
        for (i = 1; i < 3; i++)
            printf("shard_memory_rss_per_extra_shard_1_to_%zu,%lld\n", counts[i],
                   (grew[i] - grew[0]) / (long long)(counts[i] - 1));
    for (i = 0; i < 3; i++)
        psi_shards_free(g[i]);
    return rc != PSI_OK;
}

/* Peak RSS growth of one 100k request on shards (n, t); the output buffer
 * is allocated before, so only the library's working memory counts. */
static int memory_request_peak(size_t n, size_t t)
{
    state st;
    psi_shard_settings s;
    long long before, peak;
    int rc;

    memset(&st, 0, sizeof st);
    psi_shard_settings_default(&s);
    s.shards = n;
    s.threads = t;
    st.cap = st.len = psi_request_bound(PSI_SUITE_OPENMINED_P256, fx.n);
    st.out = malloc(st.cap);
    rc = psi_shards_create(&st.g, fx.client, &s);
    if (st.out == NULL || rc != PSI_OK) {
        psi_shards_free(st.g);
        free(st.out);
        return fail("memory_request_peak", rc == PSI_OK ? PSI_E_NOMEM : rc);
    }
    memset(st.out, 0, st.cap); /* resident before the measurement */
    if (reset_peak() != 0)
        fprintf(stderr, "bench_shard: cannot reset VmHWM; peak is the process's\n");
    before = status_bytes("VmRSS");
    rc = call_request(&st);
    peak = status_bytes("VmHWM");
    if (rc == PSI_OK)
        printf("shard_memory_request_100k_n%zu_t%zu_peak_rss_growth,%lld\n", n, t,
               peak - before);
    psi_shards_free(st.g);
    free(st.out);
    return rc == PSI_OK ? 0 : fail("psi_shards_client_create_request", rc);
}

/* ---------------------------------------------------------- match_serial */

/* The unmasked elements of run_match_serial, in one piece. */
typedef struct serial_source {
    const uint8_t *plain;
    size_t n;
} serial_source;

static int serial_next(void *arg, size_t k, const uint8_t **elements, const size_t **index,
                       size_t *count)
{
    const serial_source *s = arg;
    (void)k;
    *elements = s->plain;
    *index = NULL;
    *count = s->n;
    return PSI_OK;
}

/* The part of the sharded match step that runs once, on one thread
 * (PROTOCOL.md §14.4): parsing the setup and matching all 100k unmasked
 * elements, from elements unmasked beforehand (untimed).  Against
 * engine_match_100k it is the share Amdahl's law leaves unsplit. */
static int run_match_serial(unsigned iters)
{
    const uint8_t *resp = fx.msg[OP_RESPONSE];
    size_t n = psi_message_element_bound(PSI_SUITE_OPENMINED_P256, fx.msg_len[OP_RESPONSE]), len, count = 0;
    uint8_t *masked = malloc(n * PSI_ELEMENT_BYTES + 1);
    uint8_t *plain = malloc(n * PSI_ELEMENT_BYTES + 1);
    size_t *idx = malloc(n * sizeof *idx + 1);
    double min = 0.0, max = 0.0, sum = 0.0;
    int rc = PSI_E_NOMEM;

    if (masked == NULL || plain == NULL || idx == NULL)
        goto done;
    rc = psi_response_decode(masked, &n, PSI_SUITE_OPENMINED_P256, resp, fx.msg_len[OP_RESPONSE]);
    len = n * PSI_ELEMENT_BYTES;
    if (rc == PSI_OK)
        rc = psi_engine_unmask(fx.client, plain, &len, masked, n);
    for (unsigned i = 0; rc == PSI_OK && i < iters; i++) {
        // An external plan of one slice whose unmasked elements are handed
        // over whole: its finish is the serial part (parse, then match).
        psi_op_args a;
        memset(&a, 0, sizeof a);
        a.op = PSI_OP_INTERSECTION;
        a.setup = fx.msg[OP_SETUP];
        a.setup_len = fx.msg_len[OP_SETUP];
        a.n_values = n;
        a.external = 1;
        serial_source src = {plain, n};
        psi_plan *plan = NULL;
        psi_op_output o;
        memset(&o, 0, sizeof o);
        o.indices = idx;
        o.count = n;
        double t0 = bench_now(), dt;
        rc = psi_plan_begin(&plan, fx.client, &a);
        if (rc == PSI_OK)
            rc = psi_plan_source(plan, serial_next, &src);
        if (rc == PSI_OK)
            rc = psi_plan_finish(plan, &o);
        count = o.count;
        dt = bench_now() - t0;
        psi_plan_free(plan);
        min = i == 0 || dt < min ? dt : min;
        max = i == 0 || dt > max ? dt : max;
        sum += dt;
    }
    if (rc == PSI_OK && (count != fx.msg_len[OP_MATCH]
                         || memcmp(idx, fx.msg[OP_MATCH], count * sizeof *idx) != 0)) {
        fprintf(stderr, "shard_match_serial_100k: output differs from the single engine's\n");
        rc = PSI_E_CRYPTO;
    }
    if (rc == PSI_OK)
        printf("shard_match_serial_100k,%.6f,%.6f,%.6f,%.1f,%.3f\n", min, sum / iters, max,
               (double)n * iters / sum, fx.baseline[OP_MATCH] > 0.0
                                            ? fx.baseline[OP_MATCH] / (sum / iters) : 0.0);
done:
    free(masked);
    free(plain);
    free(idx);
    return rc == PSI_OK ? 0 : fail("shard_match_serial_100k", rc);
}

static int run_memory(void)
{
#if defined(__GLIBC__)
    /* A fixed threshold: every large block is mapped on allocation and
     * unmapped on free, so the peak is not hidden by reused heap pages. */
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
#endif
    printf("\nname,bytes\n");
    if (memory_per_shard() != 0 || memory_request_peak(1, 1) != 0
        || memory_request_peak(8, 2) != 0)
        return 1;
    fflush(stdout);
    return 0;
}

/* ----------------------------------------------------------------- cases */

#define OP_CASES(op, kind) \
    { "engine_" op "_100k", kind, 0, 0, 0 }, \
    { "shard_" op "_100k_n1_t1", kind, 1, 1, 0 }, \
    { "shard_" op "_100k_n2_t2", kind, 2, 2, 0 }, \
    { "shard_" op "_100k_n8_t2", kind, 8, 2, 0 }, \
    { "procs_" op "_100k_p2", kind, 0, 0, 2 }

static const shard_case cases[] = {
    OP_CASES("setup", OP_SETUP),
    OP_CASES("request", OP_REQUEST),
    OP_CASES("response", OP_RESPONSE),
    OP_CASES("match", OP_MATCH),
};
#define N_CASES (sizeof cases / sizeof cases[0])
#define MEMORY_CASE "shard_memory"
#define SERIAL_CASE "shard_match_serial_100k"

static void usage(void)
{
    size_t i;

    printf("usage: bench_shard [FILTER...]  run cases whose name contains a FILTER\n"
           "       bench_shard help         this list\n"
           "PSI_BENCH_ITERS=k runs each timed case k times (default 1).\ncases:\n");
    for (i = 0; i < N_CASES; i++)
        printf("  %s\n", cases[i].name);
    printf("  %s\n", SERIAL_CASE);
    printf("  %s\n", MEMORY_CASE);
}

/* The engine case of op, run first when the filter left it out. */
static int ensure_baseline(op_kind op, unsigned iters)
{
    size_t i;

    if (fx.baseline[op] > 0.0)
        return 0;
    for (i = 0; i < N_CASES; i++)
        if (cases[i].op == op && cases[i].shards == 0 && cases[i].procs == 0)
            return run_case(&cases[i], iters);
    return 1;
}

int main(int argc, char **argv)
{
    unsigned iters = bench_iters(1);
    size_t i;
    int ran = 0, rc = 0;

    if (argc > 1 && (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "-h") == 0
                     || strcmp(argv[1], "--help") == 0)) {
        usage();
        return 0;
    }
    if (iters == 0) {
        fprintf(stderr, "bench_shard: PSI_BENCH_ITERS must be a positive integer\n");
        return 1;
    }
    for (i = 0; i < N_CASES && rc == 0; i++) {
        if (!bench_selected(cases[i].name, argc - 1, argv + 1))
            continue;
        if (ran++ == 0) {
            printf("name,min_s,avg_s,max_s,values_per_s,speedup_vs_engine\n");
            rc = fixture_init();
        }
        if (rc == 0)
            rc = ensure_baseline(cases[i].op, iters);
        if (rc == 0 && (cases[i].shards > 0 || cases[i].procs > 0))
            rc = run_case(&cases[i], iters);
    }
    if (rc == 0 && bench_selected(SERIAL_CASE, argc - 1, argv + 1)) {
        if (ran++ == 0) {
            printf("name,min_s,avg_s,max_s,values_per_s,speedup_vs_engine\n");
            rc = fixture_init();
        }
        if (rc == 0)
            rc = ensure_baseline(OP_MATCH, iters) != 0 || reference(OP_MATCH) != 0
                 || run_match_serial(iters) != 0;
    }
    if (rc == 0 && bench_selected(MEMORY_CASE, argc - 1, argv + 1)) {
        ran++;
        rc = fixture_init() != 0 || run_memory() != 0;
    }
    fixture_clear();
    if (ran == 0) {
        fprintf(stderr, "bench_shard: no case matches; try 'bench_shard help'\n");
        return 1;
    }
    return rc;
}
