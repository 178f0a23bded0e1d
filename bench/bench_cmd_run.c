/* `shardpsi bench`: the C columns, timed and checked; see bench_cmd.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_cmd.h"
#include "app_clock.h"
#include "app_util.h"

/* The output of one call, before it is checked and kept or freed. */
typedef struct brun_out {
    uint8_t *msg;      // setup, request, response
    size_t len;        // capacity in, bytes out
    size_t *idx;       // intersection
    psi_pair *pairs;   // association
    size_t count;      // capacity in, items out
} brun_out;

/* Makes the party of column col from engine e (of `role`, reveal on,
 * `suite`), which stays the caller's: each column gets its own copy of the
 * key. */
static int brun_party(psi_app_party *p, const psi_engine *e, psi_role role, int suite,
                      const psi_app_shard_opts *o, const char *who, int col)
{
    psi_app_party_spec spec = {.key = e, .suite = suite, .role = role, .reveal = 1,
                               .shard = *o};
    const char *step = NULL;
    int rc = psi_app_party_build(p, &spec, &step);

    if (rc != PSI_OK) {
        // A library built without threads refuses more than one.
        psi_app_error("bench: %s for %s: %s (error %d)%s", who,
                      psi_bench_col_name(col), psi_strerror(rc), rc,
                      rc == PSI_E_THREAD ? "; without worker threads give --threads 1" : "");
        return -1;
    }
    return 0;
}

/* One side's engine with a random key, then a party per C column, so all
 * columns share the key and must produce the same bytes. */
static int brun_side(psi_bench_c *c, psi_role role, const psi_app_shard_opts *o)
{
    psi_app_party *parties = role == PSI_ROLE_SERVER ? c->server : c->client;
    const char *who = role == PSI_ROLE_SERVER ? "server" : "client";
    psi_settings st;
    psi_engine *e = NULL;
    int rc;

    psi_settings_default(&st);
    st.role = role;
    st.reveal_intersection = 1;
    st.suite = (psi_suite)c->suite;
    if ((rc = psi_engine_create(&e, &st)) != PSI_OK) {
        psi_app_error("bench: %s engine: %s (error %d)", who, psi_strerror(rc), rc);
        return -1;
    }
    for (int col = 0; col < PSI_BENCH_CMD_COLS && rc == 0; col++)
        if (col != PSI_BENCH_CMD_PSIJS)
            rc = brun_party(&parties[col], e, role, c->suite, &o[col], who, col);
    psi_engine_free(e);
    return rc;
}

int psi_bench_c_init(psi_bench_c *c, const psi_app_demo_sets *s,
                         size_t threads, int mem, int suite)
{
    psi_app_shard_opts o[PSI_BENCH_CMD_COLS];

    memset(c, 0, sizeof *c);
    memset(o, 0, sizeof o);
    c->sets = s;
    c->mem = mem;
    c->suite = suite;
    // threads = 1 is the inline executor: the shards run in turn on the
    // calling thread, which isolates the cost of splitting and merging.
    o[PSI_BENCH_CMD_SHARDS4].sharded = 1;
    o[PSI_BENCH_CMD_SHARDS4].shards = 4;
    o[PSI_BENCH_CMD_SHARDS4].threads = 1;
    o[PSI_BENCH_CMD_ALL].sharded = 1;
    o[PSI_BENCH_CMD_ALL].shards = PSI_SHARD_DEFAULT_PER_THREAD * threads;
    o[PSI_BENCH_CMD_ALL].threads = threads;
    if (brun_side(c, PSI_ROLE_SERVER, o) != 0 || brun_side(c, PSI_ROLE_CLIENT, o) != 0)
        return -1;
    return 0;
}

void psi_bench_c_free(psi_bench_c *c)
{
    for (int col = 0; col < PSI_BENCH_CMD_COLS; col++) {
        psi_app_party_free(&c->server[col]);
        psi_app_party_free(&c->client[col]);
    }
    for (int op = 0; op <= PSI_BENCH_CMD_RESPONSE; op++)
        free(c->msg[op]);
    free(c->idx);
    free(c->pairs);
    memset(c, 0, sizeof *c);
}

static psi_setup_params brun_params(int op, size_t n_client)
{
    psi_setup_params p;

    p.structure = op == PSI_BENCH_CMD_SETUP_RAW ? PSI_STRUCTURE_RAW : PSI_STRUCTURE_GCS;
    p.fpr = PSI_BENCH_CMD_FPR;
    p.num_client_inputs = (int64_t)(n_client ? n_client : 1);
    return p;
}

/* Output buffers for op, allocated before the memory window opens: pages
 * the call fills still count in its peak, as psi.js's outputs do. */
static int brun_alloc(const psi_bench_c *c, int op, brun_out *out)
{
    const psi_app_demo_sets *s = c->sets;
    psi_setup_params p = brun_params(op, s->n_client);
    size_t cap = 0;
    int rc;

    memset(out, 0, sizeof *out);
    if (op == PSI_BENCH_CMD_INTERSECTION || op == PSI_BENCH_CMD_ASSOCIATION) {
        out->count = psi_message_element_bound(c->suite,
                                                     c->msg_len[PSI_BENCH_CMD_RESPONSE]);
        if (op == PSI_BENCH_CMD_INTERSECTION)
            out->idx = psi_app_alloc(out->count, sizeof *out->idx);
        else
            out->pairs = psi_app_alloc(out->count, sizeof *out->pairs);
        return out->idx != NULL || out->pairs != NULL ? PSI_OK : PSI_E_NOMEM;
    }
    if (op <= PSI_BENCH_CMD_SETUP_GCS) {
        if ((rc = psi_setup_bound(&cap, c->suite, &p, s->n_server)) != PSI_OK)
            return rc;
    } else if (op == PSI_BENCH_CMD_REQUEST) {
        cap = psi_request_bound(c->suite, s->n_client);
    } else {
        size_t n = psi_message_element_bound(c->suite,
                                                   c->msg_len[PSI_BENCH_CMD_REQUEST]);
        cap = psi_response_bound(c->suite, n);
    }
    out->len = cap;
    out->msg = cap > 0 ? psi_app_alloc(cap, 1) : NULL;
    return out->msg != NULL ? PSI_OK : PSI_E_NOMEM;
}

static void brun_out_free(brun_out *out)
{
    free(out->msg);
    free(out->idx);
    free(out->pairs);
    memset(out, 0, sizeof *out);
}

/* The timed call.  Later ops read the single engine's kept outputs. */
static int brun_call(const psi_bench_c *c, int op, int col, brun_out *out)
{
    const psi_app_demo_sets *s = c->sets;
    const psi_app_party *srv = &c->server[col], *cli = &c->client[col];
    const uint8_t *const *m = (const uint8_t *const *)c->msg;
    const size_t *ml = c->msg_len;
    psi_setup_params p = brun_params(op, s->n_client);

    switch (op) {
    case PSI_BENCH_CMD_SETUP_RAW:
    case PSI_BENCH_CMD_SETUP_GCS:
        return psi_app_party_create_setup(srv, out->msg, &out->len, NULL, &p, s->server,
                                          s->n_server);
    case PSI_BENCH_CMD_REQUEST:
        return psi_app_party_create_request(cli, out->msg, &out->len, s->client,
                                            s->n_client);
    case PSI_BENCH_CMD_RESPONSE:
        return psi_app_party_process_request(srv, out->msg, &out->len,
                                             m[PSI_BENCH_CMD_REQUEST],
                                             ml[PSI_BENCH_CMD_REQUEST]);
    case PSI_BENCH_CMD_INTERSECTION:
        return psi_app_party_intersection(cli, out->idx, &out->count,
                                          m[PSI_BENCH_CMD_SETUP_GCS],
                                          ml[PSI_BENCH_CMD_SETUP_GCS],
                                          m[PSI_BENCH_CMD_RESPONSE],
                                          ml[PSI_BENCH_CMD_RESPONSE]);
    default:
        return psi_app_party_association(cli, out->pairs, &out->count,
                                         m[PSI_BENCH_CMD_SETUP_RAW],
                                         ml[PSI_BENCH_CMD_SETUP_RAW],
                                         m[PSI_BENCH_CMD_RESPONSE],
                                         ml[PSI_BENCH_CMD_RESPONSE]);
    }
}

/* GCS may report a few client values that are not server values. */
static size_t brun_fp_limit(void)
{
    psi_app_demo_opts o;

    memset(&o, 0, sizeof o);
    o.structure = PSI_STRUCTURE_GCS;
    o.fpr = PSI_BENCH_CMD_FPR;
    return psi_app_demo_fp_limit(&o);
}

int psi_bench_count_ok(const psi_app_demo_sets *s, int op, size_t count)
{
    if (op == PSI_BENCH_CMD_ASSOCIATION)
        return count == s->n_true ? 0 : -1;
    return count >= s->n_true && count - s->n_true <= brun_fp_limit() ? 0 : -1;
}

/* Each index in range and once; every true match found, false positives
 * within the limit.  Returns: 0, or -1 with the reason in why. */
static int brun_check_indices(const psi_app_demo_sets *s, const size_t *idx, size_t n,
                              char *why, size_t cap)
{
    unsigned char *seen = calloc(s->n_client ? s->n_client : 1, 1);
    size_t hits = 0, fp = 0, j;

    if (seen == NULL) {
        snprintf(why, cap, "out of memory for the check");
        return -1;
    }
    for (j = 0; j < n && idx[j] < s->n_client && !seen[idx[j]]; j++) {
        seen[idx[j]] = 1;
        if (s->is_true[idx[j]])
            hits++;
        else
            fp++;
    }
    free(seen);
    if (j < n)
        snprintf(why, cap, "index %zu at position %zu is out of range or repeated",
                 idx[j], j);
    else if (hits != s->n_true)
        snprintf(why, cap, "found %zu of the %zu true matches", hits, s->n_true);
    else if (fp > brun_fp_limit())
        snprintf(why, cap, "%zu false positives, more than the %zu allowed", fp,
                 brun_fp_limit());
    else
        return 0;
    return -1;
}

/* Each pair joins a true match to a setup position, neither used twice,
 * and every true match is there. */
static int brun_check_pairs(const psi_app_demo_sets *s, const psi_pair *pairs, size_t n,
                            char *why, size_t cap)
{
    unsigned char *seen_c = calloc(s->n_client ? s->n_client : 1, 1);
    unsigned char *seen_s = calloc(s->n_server ? s->n_server : 1, 1);
    size_t j = 0;

    if (seen_c == NULL || seen_s == NULL) {
        snprintf(why, cap, "out of memory for the check");
    } else {
        for (; j < n; j++) {
            size_t ci = pairs[j].client_index, si = pairs[j].server_index;
            if (ci >= s->n_client || si >= s->n_server || seen_c[ci] || seen_s[si] ||
                !s->is_true[ci])
                break;
            seen_c[ci] = seen_s[si] = 1;
        }
        if (j < n)
            snprintf(why, cap, "pair %zu (%zu, %zu) is out of range, repeated or "
                     "not a true match", j, pairs[j].client_index,
                     pairs[j].server_index);
        else if (n != s->n_true)
            snprintf(why, cap, "%zu pairs for %zu true matches", n, s->n_true);
    }
    free(seen_c);
    free(seen_s);
    return seen_c == NULL || seen_s == NULL || j < n || n != s->n_true ? -1 : 0;
}

/* Returns: 1 if the arrays a (na items of `size` bytes) and b are equal. */
static int brun_same(const void *a, size_t na, const void *b, size_t nb, size_t size)
{
    return na == nb && (na == 0 || memcmp(a, b, na * size) == 0);
}

/* Checks out against the truth and the kept output of the single engine.
 * Returns: 0, or -1 with the reason in why. */
static int brun_check(const psi_bench_c *c, int op, const brun_out *out,
                      char *why, size_t cap)
{
    const psi_app_demo_sets *s = c->sets;
    size_t want = op == PSI_BENCH_CMD_REQUEST
                      ? psi_request_bound(c->suite, s->n_client)
                      : psi_response_bound(c->suite, s->n_client);
    int same = 1;

    if (op == PSI_BENCH_CMD_INTERSECTION) {
        if (brun_check_indices(s, out->idx, out->count, why, cap) != 0)
            return -1;
        same = !c->have[op] || brun_same(out->idx, out->count, c->idx, c->idx_count,
                                         sizeof *c->idx);
    } else if (op == PSI_BENCH_CMD_ASSOCIATION) {
        if (brun_check_pairs(s, out->pairs, out->count, why, cap) != 0)
            return -1;
        same = !c->have[op] || brun_same(out->pairs, out->count, c->pairs, c->pairs_count,
                                         sizeof *c->pairs);
    } else if (c->have[op]) {
        same = brun_same(out->msg, out->len, c->msg[op], c->msg_len[op], 1);
    } else if ((op == PSI_BENCH_CMD_REQUEST || op == PSI_BENCH_CMD_RESPONSE) &&
               out->len != want) {
        // A message's size is fixed by its element count.
        snprintf(why, cap, "%zu bytes, not the %zu of %zu elements", out->len, want,
                 s->n_client);
        return -1;
    }
    if (!same) {
        snprintf(why, cap, "differs from the single engine's");
        return -1;
    }
    return 0;
}

/* Keeps the first output of op (the single engine's) for later ops and
 * later comparisons; frees any other. */
static void brun_keep(psi_bench_c *c, int op, brun_out *out)
{
    if (!c->have[op]) {
        c->have[op] = 1;
        if (op == PSI_BENCH_CMD_INTERSECTION) {
            c->idx = out->idx;
            c->idx_count = out->count;
            out->idx = NULL;
        } else if (op == PSI_BENCH_CMD_ASSOCIATION) {
            c->pairs = out->pairs;
            c->pairs_count = out->count;
            out->pairs = NULL;
        } else {
            c->msg[op] = out->msg;
            c->msg_len[op] = out->len;
            out->msg = NULL;
        }
    }
    brun_out_free(out);
}

int psi_bench_c_run(psi_bench_c *c, int op, int col, psi_bench_figure *fig)
{
    brun_out out;
    char why[160];
    long base = -1;
    double t0, ms;
    int rc = brun_alloc(c, op, &out);

    memset(fig, 0, sizeof *fig);
    if (rc == PSI_OK) {
        if (c->mem)
            base = psi_bench_mem_begin();
        t0 = psi_app_now_ms();
        rc = brun_call(c, op, col, &out);
        ms = psi_app_now_ms() - t0;
        fig->peak_mib = psi_bench_mem_end(base);
    }
    if (rc != PSI_OK) {
        psi_app_error("bench: %s on %s: %s (error %d)", psi_bench_op_name(op),
                      psi_bench_col_name(col), psi_strerror(rc), rc);
        brun_out_free(&out);
        return -1;
    }
    if (brun_check(c, op, &out, why, sizeof why) != 0) {
        psi_app_error("bench: %s on %s: wrong result: %s", psi_bench_op_name(op),
                      psi_bench_col_name(col), why);
        brun_out_free(&out);
        return 1;
    }
    fig->done = 1;
    fig->seconds = ms / 1000.0;
    fig->rate = ms > 0 ? (double)c->sets->n_client / fig->seconds : NAN;
    fig->count = out.msg != NULL ? out.len : out.count;
    brun_keep(c, op, &out);
    return 0;
}
