/* Whether a received ServerSetup is one an honest server sends
 * (PROTOCOL.md §9.7): psi_setup_parse only checks that a setup is well
 * formed, which still lets a hostile server pick its own sizes, hash
 * count or stream; the client, knowing the agreed parameters and the
 * server's announced count, refuses every setup the encoders of §7 could
 * not have written for them. */
#include "gcs.h"
#include "bloom.h"
#include "setup.h"
#include "suite.h"

static int mismatch(const char *field)
{
    return psi_fail_at(PSI_E_SETUP_MISMATCH, field, -1, -1);
}

/* n as the size_t count the sizing functions take: a count past size_t
 * sizes past anything that fits, as SIZE_MAX does. */
static size_t clamp_count(uint64_t n)
{
    return n > SIZE_MAX ? SIZE_MAX : (size_t)n;
}

/* A predicate on a count, false then true as the count grows. */
typedef int (*count_pred)(const void *ctx, uint64_t ns);

/* The smallest ns in [lo, hi] (hi < UINT64_MAX) where pred holds, or
 * hi + 1 when it holds nowhere. */
static uint64_t first_where(count_pred pred, const void *ctx, uint64_t lo, uint64_t hi)
{
    uint64_t end = hi + 1;
    while (lo < end) {
        uint64_t mid = lo + (end - lo) / 2;
        if (pred(ctx, mid))
            end = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* What is compared against a function of the count. */
typedef struct band_ctx {
    const psi_setup_params *p;
    uint64_t target;
    uint64_t vlast; /* GCS div */
} band_ctx;

/* n_bytes for ns values, an overflow as SIZE_MAX (past every filter). */
static uint64_t bloom_bytes_at(const psi_setup_params *p, uint64_t ns)
{
    int32_t k;
    size_t nb;
    if (psi_bloom_params(&k, &nb, p->fpr, p->num_client_inputs, clamp_count(ns)) != PSI_OK) {
        psi_detail_clear();
        return SIZE_MAX;
    }
    return nb;
}

/* hash_range for ns values, an overflow as INT64_MAX (past every
 * hash_range a parsed setup has). */
static uint64_t gcs_range_at(const psi_setup_params *p, uint64_t ns)
{
    int64_t hr;
    if (psi_gcs_hash_range(&hr, p->fpr, p->num_client_inputs, clamp_count(ns)) != PSI_OK) {
        psi_detail_clear();
        return INT64_MAX;
    }
    return (uint64_t)hr;
}

static int bytes_at_least(const void *ctx, uint64_t ns)
{
    const band_ctx *c = ctx;
    return bloom_bytes_at(c->p, ns) >= c->target;
}

static int bytes_above(const void *ctx, uint64_t ns)
{
    const band_ctx *c = ctx;
    return bloom_bytes_at(c->p, ns) > c->target;
}

static int range_at_least(const void *ctx, uint64_t ns)
{
    const band_ctx *c = ctx;
    return gcs_range_at(c->p, ns) >= c->target;
}

static int range_above(const void *ctx, uint64_t ns)
{
    const band_ctx *c = ctx;
    return gcs_range_at(c->p, ns) > c->target;
}

/* div is nonincreasing in the count: these are "div <= target" and
 * "div < target". */
static int div_at_most(const void *ctx, uint64_t ns)
{
    const band_ctx *c = ctx;
    return (uint64_t)psi_gcs_div_of(c->vlast, clamp_count(ns)) <= c->target;
}

static int div_below(const void *ctx, uint64_t ns)
{
    const band_ctx *c = ctx;
    return (uint64_t)psi_gcs_div_of(c->vlast, clamp_count(ns)) < c->target;
}

/* The counts ns in [lo, hi] where a monotone function of ns equals the
 * target: `reach` holds from the first count where the function reaches
 * the target, `pass` from the first where it has passed it.  Returns 0
 * when there is none, else 1 with the counts as [*from, *to]. */
static int band(uint64_t *from, uint64_t *to, count_pred reach, count_pred pass,
                const band_ctx *c, uint64_t lo, uint64_t hi)
{
    if (lo > hi)
        return 0;
    uint64_t a = first_where(reach, c, lo, hi);
    if (a > hi)
        return 0;
    uint64_t b = first_where(pass, c, a, hi);
    if (b == a)
        return 0; /* jumps over the target */
    *from = a;
    *to = b - 1;
    return 1;
}

/* An honest Bloom setup of p has the k of §7.3 (one for every count) and
 * n_bytes(p, ns) bytes for some ns in [0, n_server]. */
static int check_bloom(const psi_setup *s, const psi_setup_params *p, uint64_t n_server)
{
    int32_t k;
    size_t nb;
    int rc = psi_bloom_params(&k, &nb, p->fpr, p->num_client_inputs, 0);
    if (rc != PSI_OK)
        return rc;
    if (s->bloom_k != k)
        return mismatch("ServerSetup.bloom_filter.num_hash_functions");
    band_ctx c = {p, s->bloom_bytes, 0};
    uint64_t from, to;
    if (!band(&from, &to, bytes_at_least, bytes_above, &c, 0, n_server))
        return mismatch("ServerSetup.bloom_filter.bits");
    return PSI_OK;
}

/* For GCS an honest server's true count ns (duplicates included) is
 * unknown; the stream shows m <= ns distinct values.  An honest setup has
 * hash_range(p, ns) and the div of §7.2 for its largest value and that
 * same ns, for some ns in [m, n_server]: hash_range is nondecreasing and
 * div nonincreasing in ns, so each holds on an interval of counts, and
 * the two must meet. */
static int check_gcs(const psi_setup *s, const psi_setup_params *p, uint64_t n_server)
{
    size_t m = s->gcs_count;
    uint64_t from, to;
    band_ctx c = {p, (uint64_t)s->gcs_hash_range, 0};
    if (!band(&from, &to, range_at_least, range_above, &c, m, n_server))
        return mismatch("ServerSetup.gcs.hash_range");
    if (m == 0) {
        // Only an empty server set gives no value: div 0 and no bits.
        if (s->gcs_div != 0)
            return mismatch("ServerSetup.gcs.div");
        if (s->gcs_bits_len != 0)
            return mismatch("ServerSetup.gcs.bits");
        return PSI_OK;
    }
    uint64_t dfrom, dto;
    c = (band_ctx){p, (uint64_t)s->gcs_div, s->gcs_values[m - 1]};
    if (!band(&dfrom, &dto, div_at_most, div_below, &c, from, to))
        return mismatch("ServerSetup.gcs.div");
    // The encoder writes each distinct value once and pads the last byte
    // only: no repeats (zero deltas), no trailing bytes.
    uint64_t nbits;
    if (psi_gcs_stream_bits(&nbits, s->gcs_values, m, s->gcs_div) != PSI_OK ||
        nbits != s->gcs_end_bit)
        return mismatch("ServerSetup.gcs.bits");
    if ((uint64_t)s->gcs_bits_len != nbits / 8 + (nbits % 8 != 0))
        return mismatch("ServerSetup.gcs.bits");
    return PSI_OK;
}

/* The parameters first: a client with impossible ones learns that
 * before anything of the server's is read. */
static int check_params(int suite, const psi_setup_params *p)
{
    psi_detail_clear();
    if (!psi_suite_known(suite))
        return PSI_E_SUITE;
    int rc;
    switch (p->structure) {
    case PSI_STRUCTURE_RAW:
        break;
    case PSI_STRUCTURE_GCS: {
        int64_t hr;
        rc = psi_gcs_hash_range(&hr, p->fpr, p->num_client_inputs, 0);
        if (rc != PSI_OK)
            return rc;
        break;
    }
    case PSI_STRUCTURE_BLOOM_FILTER: {
        int32_t k;
        size_t nb;
        rc = psi_bloom_params(&k, &nb, p->fpr, p->num_client_inputs, 0);
        if (rc != PSI_OK)
            return rc;
        break;
    }
    default:
        return psi_fail_at(PSI_E_STRUCTURE, "params.structure", -1, -1);
    }
    return PSI_OK;
}

/* Past 2^63 values every size overflows: no larger count changes a
 * bound, and first_where needs room for hi + 1. */
static uint64_t clamp_server(uint64_t n_server)
{
    return n_server > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : n_server;
}

/* The checks of a parsed setup `s` of `len` bytes, which it frees. */
static int check_parsed(psi_setup *s, const psi_setup_params *p, uint64_t n_server,
                        uint64_t len)
{
    size_t canonical;
    int rc;
    if (s->structure != p->structure) {
        rc = mismatch("ServerSetup");
    } else if ((rc = psi_setup_canonical_len(&canonical, s)) != PSI_OK || canonical != len) {
        // An unknown, repeated or overlong field, or bytes after the member.
        rc = psi_fail_at(PSI_E_SETUP_MISMATCH, "ServerSetup", -1,
                         rc == PSI_OK && canonical < len ? (int64_t)canonical : -1);
    } else if (s->structure == PSI_STRUCTURE_RAW) {
        rc = (uint64_t)s->raw_count == n_server ? PSI_OK
                                                 : mismatch("ServerSetup.raw.encrypted_elements");
    } else if (s->structure == PSI_STRUCTURE_GCS) {
        rc = check_gcs(s, p, n_server);
    } else {
        rc = check_bloom(s, p, n_server);
    }
    psi_setup_free(s);
    return rc;
}

int psi_setup_check(int suite, const psi_setup_params *p, uint64_t n_server,
                    const uint8_t *msg, size_t len)
{
    PSI_CHECK_ARG(p != NULL && (msg != NULL || len == 0));
    int rc = check_params(suite, p);
    if (rc != PSI_OK)
        return rc;
    n_server = clamp_server(n_server);
    psi_setup *s = NULL;
    rc = psi_setup_parse_bounded(&s, suite, msg, len,
                                 p->structure == PSI_STRUCTURE_GCS ? n_server : UINT64_MAX);
    return rc != PSI_OK ? rc : check_parsed(s, p, n_server, len);
}

int psi_setup_check_read(int suite, const psi_setup_params *p, uint64_t n_server,
                         psi_read_fn fn, void *arg, uint64_t len, uint64_t max_held)
{
    PSI_CHECK_ARG(p != NULL && fn != NULL);
    int rc = check_params(suite, p);
    if (rc != PSI_OK)
        return rc;
    n_server = clamp_server(n_server);
    psi_setup *s = NULL;
    rc = psi_setup_parse_read_bounded(&s, suite, fn, arg, len, max_held,
                                      p->structure == PSI_STRUCTURE_GCS ? n_server
                                                                        : UINT64_MAX,
                                      PSI_WIRE_WINDOW);
    return rc != PSI_OK ? rc : check_parsed(s, p, n_server, len);
}
