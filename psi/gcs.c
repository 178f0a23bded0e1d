/* Golomb-compressed sets (PROTOCOL.md §7.2, §9.2, §9.4): the parameters
 * with the reference's exact double arithmetic, the Golomb-Rice bit stream
 * (LSB-first within each byte) and the client-side merge. */
#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "cxx_sort.h"
#include "gcs.h"

/* 2^63: the first double that no longer converts to int64. */
#define TWO_POW_63 9223372036854775808.0
/* Shifts by 64 or more are undefined; honest parameters stay near 53. */
#define GCS_DIV_MAX 63
/* gcs_div_of() for a div the reference cannot produce (infinite or > 63). */
#define GCS_DIV_OVERFLOW (GCS_DIV_MAX + 1)

int psi_filter_params(double *fpr_c, int64_t *m, double fpr, int64_t num_client_inputs,
                      size_t ns)
{
    *fpr_c = 0.0;
    *m = 0;
    /* nc <= 0 passes the (0,1) test only with a negative fpr, which no
     * caller of the reference means; refuse it outright. */
    if (num_client_inputs <= 0)
        return psi_fail_at(PSI_E_FPR, "params.num_client_inputs", -1, -1);
    *fpr_c = fpr / (double)num_client_inputs;
    if (!(*fpr_c > 0.0 && *fpr_c < 1.0)) /* also refuses NaN */
        return psi_fail_at(PSI_E_FPR, "params.fpr", -1, -1);
    uint64_t ns64 = ns;
    if (ns64 > (uint64_t)INT64_MAX)
        return psi_fail_at(PSI_E_PARAM_OVERFLOW, "values", -1, -1);
    *m = num_client_inputs > (int64_t)ns64 ? num_client_inputs : (int64_t)ns64;
    return PSI_OK;
}

int psi_gcs_hash_range(int64_t *hash_range, double fpr, int64_t num_client_inputs,
                       size_t ns)
{
    PSI_CHECK_ARG(hash_range != NULL);
    *hash_range = 0;
    double fpr_c;
    int64_t m;
    int rc = psi_filter_params(&fpr_c, &m, fpr, num_client_inputs, ns);
    if (rc != PSI_OK)
        return rc;
    double q = (double)m / fpr_c;
    /* The reference casts unchecked: >= 2^63 is undefined there. */
    if (!(q < TWO_POW_63))
        return psi_fail_at(PSI_E_PARAM_OVERFLOW, "params.fpr", -1, -1);
    *hash_range = (int64_t)q; /* >= 1: m >= 1 and fpr_c < 1 */
    return PSI_OK;
}

uint64_t psi_digest_mod(const uint8_t *digest, size_t len, uint64_t m)
{
    assert(m >= 1);
    uint64_t r = 0;
    for (size_t i = 0; i < len; i++) {
        for (int b = 7; b >= 0; b--) {
            /* r < m, so 2r + bit < 2m: one subtraction reduces it.  When
             * m > 2^63 the doubling can carry out of 64 bits; the wrapped
             * difference is still the exact result. */
            uint64_t carry = r >> 63;
            r = (r << 1) | ((uint64_t)(digest[i] >> b) & 1u);
            if (carry != 0 || r >= m)
                r -= m;
        }
    }
    return r;
}

uint64_t psi_gcs_hash(const uint8_t *element, size_t len, int64_t hash_range)
{
    assert(hash_range >= 1);
    uint8_t md[crypto_hash_sha256_BYTES];
    /* libsodium's SHA-256 cannot fail.  OpenSSL's one-shot SHA256() goes
     * through EVP, which allocates, and on failure returns NULL with md
     * unwritten: a wrong filter with PSI_OK (found by test_fault). */
    crypto_hash_sha256(md, element, len);
    return psi_digest_mod(md, sizeof md, (uint64_t)hash_range);
}

/* The Golomb-Rice parameter for n sorted hashes whose largest is vlast
 * (§7.2), evaluated exactly as the reference does.  Nondecreasing in vlast
 * for a fixed n, which psi_gcs_bits_bound relies on.  vlast < INT64_MAX. */
static int gcs_div_of(uint64_t vlast, size_t n)
{
    double avg = (double)(vlast + 1) / (double)n;
    double prob = 1.0 / avg;
    double t = round(-log2(-log2(1.0 - prob)));
    /* std::max(0.0, t) returns 0.0 unless 0.0 < t, so NaN and -inf give 0.
     * +inf (1 - prob rounded to 1) would be an undefined cast there. */
    double d = 0.0 < t ? t : 0.0;
    if (!(d <= GCS_DIV_MAX))
        return GCS_DIV_OVERFLOW;
    return (int)d;
}

/* Exact stream length in bits of sorted values under div; false if it
 * exceeds 64 bits (then no buffer can hold it). */
static bool gcs_stream_bits(uint64_t *nbits, const uint64_t *v, size_t n, int div)
{
    uint64_t total = 0, prev = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && v[i] == prev)
            continue; /* duplicates are coded once */
        uint64_t q = (v[i] - prev) >> div, len = q + 1 + (uint64_t)div;
        if (len < q || total > UINT64_MAX - len)
            return false;
        total += len;
        prev = v[i];
    }
    *nbits = total;
    return true;
}

static void gcs_set_bit(uint8_t *bits, uint64_t pos)
{
    bits[(size_t)(pos >> 3)] |= (uint8_t)(1u << (pos & 7));
}

/* Writes the stream into bits, which the caller zeroed and sized with
 * gcs_stream_bits: per distinct value, the delta's quotient in unary (zeros
 * ended by a one), then its div low bits, least significant first. */
static void gcs_write(uint8_t *bits, const uint64_t *v, size_t n, int div)
{
    uint64_t pos = 0, prev = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && v[i] == prev)
            continue;
        uint64_t d = v[i] - prev;
        pos += d >> div; /* the zeros are already there */
        gcs_set_bit(bits, pos++);
        for (int j = 0; j < div; j++, pos++)
            if ((d >> j) & 1u)
                gcs_set_bit(bits, pos);
        prev = v[i];
    }
}

static int gcs_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int psi_gcs_encode_values(int32_t *div, uint8_t *bits, size_t *bits_len, uint64_t *values,
                          size_t n)
{
    PSI_CHECK_ARG(div != NULL && bits_len != NULL);
    size_t cap = *bits_len;
    *bits_len = 0;
    *div = 0;
    PSI_CHECK_ARG((bits != NULL || cap == 0) && (values != NULL || n == 0));
    if (n == 0)
        return PSI_OK;
    qsort(values, n, sizeof *values, gcs_cmp_u64);
    PSI_CHECK_ARG(values[n - 1] < (uint64_t)INT64_MAX);
    int d = gcs_div_of(values[n - 1], n);
    if (d == GCS_DIV_OVERFLOW)
        return PSI_E_PARAM_OVERFLOW;
    uint64_t nbits;
    if (!gcs_stream_bits(&nbits, values, n, d))
        return PSI_E_BUFFER_TOO_SMALL;
    uint64_t nbytes = nbits / 8 + (nbits % 8 != 0);
    if (nbytes > cap)
        return PSI_E_BUFFER_TOO_SMALL;
    memset(bits, 0, (size_t)nbytes);
    gcs_write(bits, values, n, d);
    *div = d;
    *bits_len = (size_t)nbytes;
    return PSI_OK;
}

int psi_gcs_build(int32_t *div, uint8_t *bits, size_t *bits_len, int64_t hash_range,
                  const uint8_t *elements, size_t n, size_t elen)
{
    PSI_CHECK_ARG(div != NULL && bits_len != NULL);
    size_t cap = *bits_len;
    *bits_len = 0;
    *div = 0;
    PSI_CHECK_ARG((bits != NULL || cap == 0) && (elements != NULL || n == 0));
    PSI_CHECK_ARG(hash_range >= 1 && n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    PSI_CHECK_ARG(elen <= PSI_ELEMENT_BYTES);
    if (n == 0)
        return PSI_OK;
    int rc;
    uint64_t *values = psi_calloc(n, sizeof *values);
    if (values == NULL) {
        rc = PSI_E_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        values[i] = psi_gcs_hash(elements + i * PSI_ELEMENT_BYTES, elen, hash_range);
    size_t len = cap;
    PSI_TRY(psi_gcs_encode_values(div, bits, &len, values, n));
    *bits_len = len;
done:
    psi_free(values); /* hashes of published points: nothing to wipe */
    return rc;
}

/* The largest vlast < hash_range whose div is <= d, by binary search over
 * the monotone gcs_div_of; false if even vlast = 0 gives a larger div. */
static bool gcs_vmax(uint64_t *vmax, int64_t hash_range, size_t n, int d)
{
    uint64_t lo = 0, hi = (uint64_t)hash_range - 1;
    if (gcs_div_of(lo, n) > d)
        return false;
    if (gcs_div_of(hi, n) <= d) {
        *vmax = hi;
        return true;
    }
    while (hi - lo > 1) { /* div(lo) <= d < div(hi) */
        uint64_t mid = lo + (hi - lo) / 2;
        if (gcs_div_of(mid, n) <= d)
            lo = mid;
        else
            hi = mid;
    }
    *vmax = lo;
    return true;
}

/* Bits of a stream whose largest value is vmax under div d: the quotients
 * sum to at most vmax >> d (sum of floors <= floor of the sum of deltas),
 * plus at most n terminators and n remainders. */
static bool gcs_bits_at(uint64_t *nbits, uint64_t vmax, size_t n, int d)
{
    uint64_t n64 = n, per = 1 + (uint64_t)d, quot = vmax >> d;
    if (n64 > UINT64_MAX / per || n64 * per > UINT64_MAX - quot)
        return false;
    *nbits = quot + n64 * per;
    return true;
}

int psi_gcs_bits_bound(size_t *bound, int64_t hash_range, size_t n)
{
    PSI_CHECK_ARG(bound != NULL);
    *bound = 0;
    PSI_CHECK_ARG(hash_range >= 1);
    if (n == 0)
        return PSI_OK;
    uint64_t worst = 0;
    /* Any real stream has some div d and a largest value <= vmax(d), so
     * the maximum over d covers it.  Once vmax(d) is hash_range - 1 every
     * value gives div <= d, so no larger d occurs. */
    for (int d = 0; d <= GCS_DIV_MAX; d++) {
        uint64_t vmax, nbits;
        if (!gcs_vmax(&vmax, hash_range, n, d))
            continue;
        if (!gcs_bits_at(&nbits, vmax, n, d))
            return PSI_E_PARAM_OVERFLOW;
        if (nbits > worst)
            worst = nbits;
        if (vmax == (uint64_t)hash_range - 1)
            break;
    }
    uint64_t nbytes = worst / 8 + (worst % 8 != 0);
    if (nbytes != (size_t)nbytes)
        return PSI_E_PARAM_OVERFLOW;
    *bound = (size_t)nbytes;
    return PSI_OK;
}

/* Finds the next 1 bit at or after *pos.  On success *zeros gets the zero
 * bits skipped and *pos moves past the one.  Whole zero bytes are skipped
 * at once: a hostile stream may be one long zero run. */
static bool gcs_next_one(const uint8_t *bits, size_t len, uint64_t *pos, uint64_t *zeros)
{
    size_t i = (size_t)(*pos >> 3);
    if (i >= len)
        return false;
    uint64_t at = *pos;
    unsigned x = (unsigned)bits[i] >> (at & 7);
    if (x == 0) {
        do
            i++;
        while (i < len && bits[i] == 0);
        if (i == len)
            return false; /* trailing zeros: the stream ends normally */
        x = bits[i];
        at = (uint64_t)i * 8;
    }
    for (; (x & 1u) == 0; x >>= 1)
        at++;
    *zeros = at - *pos;
    *pos = at + 1;
    return true;
}

/* The div bits at pos, least significant first; the caller checked that
 * they lie inside the stream. */
static uint64_t gcs_read_bits(const uint8_t *bits, uint64_t pos, int div)
{
    uint64_t r = 0;
    for (int j = 0; j < div; j++, pos++)
        r |= (uint64_t)((bits[(size_t)(pos >> 3)] >> (pos & 7)) & 1u) << j;
    return r;
}

#define GCS_BITS_NAME "ServerSetup.gcs.bits"

/* One pass over a stream (§9.2) with full validation.  Counts the distinct
 * values into *count and, when out is not NULL, stores them there; *end
 * gets the bit position just past the last value.  A (max + 1)th distinct
 * value stops the walk with PSI_E_SETUP_MISMATCH.  A failure's detail
 * gives the index of the value in the stream, repeats counted. */
static int gcs_walk(uint64_t *out, size_t *count, uint64_t *end, uint64_t max,
                    uint64_t hash_range, int div, const uint8_t *bits, size_t len)
{
    uint64_t nbits = (uint64_t)len * 8, pos = 0, acc = 0, q;
    size_t m = 0;
    int64_t k = 0;
    *end = 0;
    for (; gcs_next_one(bits, len, &pos, &q); k++) {
        if (nbits - pos < (uint64_t)div) /* cut inside a remainder */
            return psi_fail_at(PSI_E_GCS_STREAM, GCS_BITS_NAME, k, -1);
        uint64_t r = gcs_read_bits(bits, pos, div);
        pos += (uint64_t)div;
        if (q > ((uint64_t)INT64_MAX >> div)) /* the delta alone would reach 2^63 */
            return psi_fail_at(PSI_E_GCS_STREAM, GCS_BITS_NAME, k, -1);
        uint64_t delta = (q << div) | r;
        acc += delta; /* acc < 2^63 and delta < 2^63: no wrap */
        if (acc >= hash_range)
            return psi_fail_at(PSI_E_GCS_STREAM, GCS_BITS_NAME, k, -1);
        *end = pos;
        if (m > 0 && delta == 0)
            continue; /* a repeated value adds nothing to the set */
        if ((uint64_t)m >= max)
            return psi_fail_at(PSI_E_SETUP_MISMATCH, GCS_BITS_NAME, k, -1);
        if (out != NULL)
            out[m] = acc;
        m++;
    }
    *count = m;
    return PSI_OK;
}

int psi_gcs_stream_bits(uint64_t *nbits, const uint64_t *values, size_t n, int32_t div)
{
    *nbits = 0;
    if (div < 0 || div > GCS_DIV_MAX)
        return PSI_E_INVALID_ARG;
    return gcs_stream_bits(nbits, values, n, div) ? PSI_OK : PSI_E_PARAM_OVERFLOW;
}

int psi_gcs_div_of(uint64_t vlast, size_t n)
{
    return n == 0 || vlast >= (uint64_t)INT64_MAX ? GCS_DIV_OVERFLOW : gcs_div_of(vlast, n);
}

int psi_gcs_decode(uint64_t **values, size_t *count, int64_t hash_range, int32_t div,
                   const uint8_t *bits, size_t bits_len)
{
    uint64_t end;
    return psi_gcs_decode_bounded(values, count, &end, UINT64_MAX, hash_range, div, bits,
                                  bits_len);
}

int psi_gcs_decode_bounded(uint64_t **values, size_t *count, uint64_t *end_bit,
                           uint64_t max_count, int64_t hash_range, int32_t div,
                           const uint8_t *bits, size_t bits_len)
{
    PSI_CHECK_ARG(values != NULL && count != NULL && end_bit != NULL);
    *values = NULL;
    *count = 0;
    *end_bit = 0;
    PSI_CHECK_ARG(bits != NULL || bits_len == 0);
    if (hash_range < 1)
        return psi_fail_at(PSI_E_GCS_HASH_RANGE, "ServerSetup.gcs.hash_range", -1, -1);
    if (div < 0 || div > GCS_DIV_MAX)
        return psi_fail_at(PSI_E_GCS_DIV, "ServerSetup.gcs.div", -1, -1);
    /* Count first, then fill: sizing by bits alone could ask for 64 bytes
     * of output per byte of input.  The count pass also enforces
     * max_count, so a stream of more values than the caller expects (a
     * div-0 stream yields up to 4 values a byte) is refused before
     * anything is allocated for it. */
    size_t m;
    uint64_t end;
    int rc = gcs_walk(NULL, &m, &end, max_count, (uint64_t)hash_range, div, bits, bits_len);
    if (rc != PSI_OK || m == 0)
        return rc;
    uint64_t *out = psi_calloc(m, sizeof *out);
    if (out == NULL)
        return PSI_E_NOMEM;
    rc = gcs_walk(out, &m, &end, max_count, (uint64_t)hash_range, div, bits, bits_len);
    assert(rc == PSI_OK);
    *values = out;
    *count = m;
    *end_bit = end;
    return PSI_OK;
}

/* The client's (hash, index) pairs are built in index order and sorted by
 * hash alone with libc++'s std::sort, exactly as the reference's
 * GCS::Intersect: equal hashes keep the (unstable) order that sort leaves
 * them in, which is the order psi.js emits their indices (cxx_sort.h). */
typedef psi_hash_index gcs_pair;

/* The merge of §9.2 (the reference's golomb_intersect): for each value in
 * ascending order, skip the pairs with a smaller hash and emit every pair
 * with an equal one, stopping when the pairs run out; so indices come out in
 * pair order, and a value repeated in the stream (which the decoder drops
 * anyway) could not emit anything twice.  Written pair-first, with a
 * galloping search over the values, so that a few pairs against many
 * values (a chunk of a large set, §20) cost n log(n_values / n), not
 * n_values: the same indices in the same order.  Writes at most cap
 * indices; returns how many matched. */
static size_t gcs_merge(size_t *out, size_t cap, const gcs_pair *pairs, size_t n,
                        const uint64_t *values, size_t n_values)
{
    size_t a = 0, m = 0, v = 0;
    while (a < n && v < n_values) {
        uint64_t h = pairs[a].hash;
        if (values[v] < h) {
            // Gallop to a bound past h, then bisect: the first value >= h.
            size_t lo = v, step = 1;
            while (lo + step < n_values && values[lo + step] < h) {
                lo += step;
                step *= 2;
            }
            size_t hi = lo + step < n_values ? lo + step : n_values;
            while (lo + 1 < hi) { // values[lo] < h, and values[hi] >= h or hi is the end
                size_t mid = lo + (hi - lo) / 2;
                if (values[mid] < h)
                    lo = mid;
                else
                    hi = mid;
            }
            v = hi;
            if (v == n_values)
                break;
        }
        int hit = values[v] == h;
        for (; a < n && pairs[a].hash == h; a++) {
            if (!hit)
                continue;
            if (m < cap)
                out[m] = pairs[a].index;
            m++;
        }
    }
    return m;
}

int psi_gcs_match(size_t *out, size_t *out_count, const uint64_t *values, size_t n_values,
                  int64_t hash_range, const uint8_t *elements, size_t n, size_t elen)
{
    PSI_CHECK_ARG(out_count != NULL);
    size_t cap = *out_count;
    *out_count = 0;
    PSI_CHECK_ARG((out != NULL || cap == 0) && (values != NULL || n_values == 0));
    PSI_CHECK_ARG((elements != NULL || n == 0) && n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    PSI_CHECK_ARG(hash_range >= 1 && elen <= PSI_ELEMENT_BYTES);
    if (cap > 0)
        memset(out, 0, cap * sizeof *out);
    int rc = PSI_OK;
    gcs_pair *pairs = psi_calloc(n, sizeof *pairs);
    if (pairs == NULL) {
        rc = PSI_E_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        pairs[i] = (gcs_pair){psi_gcs_hash(elements + i * PSI_ELEMENT_BYTES, elen, hash_range), i};
    psi_cxx_sort_by_hash(pairs, n);
    size_t m = gcs_merge(out, cap, pairs, n, values, n_values);
    if (m > cap) {
        memset(out, 0, cap * sizeof *out); /* no partial result */
        rc = PSI_E_BUFFER_TOO_SMALL;
        goto done;
    }
    *out_count = m;
done:
    psi_free(pairs);
    return rc;
}
