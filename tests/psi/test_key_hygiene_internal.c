/* Key hygiene (STYLE.md §5): no heap block freed while a key is in use may
 * still hold that key.  This program interposes malloc and its relatives
 * (forwarding to glibc's __libc_* functions), gives OpenSSL the wiping
 * allocator of psi_openssl_wipe_on_free (or its own: see main), hooks the
 * library's (psi_alloc_set_hooks), and scans every freed block for the
 * key, its inverse mod n, both byte-reversed (a BIGNUM's words), their hex
 * in either case, and any 16-byte (32-digit) window of those.
 * Scenarios: an engine from a known key and every operation; a random key;
 * clones; the sharding layer on threads; the CLI's key file; rejected keys.
 * The blocks of a random key's creation are held back (quarantine) until
 * the key is known, then scanned.  Not built under a sanitizer, which
 * interposes malloc itself; under valgrind the scan still runs (valgrind
 * replaces the __libc_* functions this file forwards to). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <sodium.h>

#if __has_include(<valgrind/memcheck.h>) /* marks scanned blocks defined */
#include <valgrind/memcheck.h>
#endif
#ifndef VALGRIND_MAKE_MEM_DEFINED
#define VALGRIND_MAKE_MEM_DEFINED(p, n) ((void)(p), (void)(n))
#endif

#include "app_keyfile.h"
#include "common.h"
#include "engine.h"
#include "psi_shard.h"

/* ------------------------------------------------------------ patterns */

#define MAX_SECRETS 2
#define MAX_PATTERNS (MAX_SECRETS * 12) /* key, inverse; reversed; hex, HEX */
#define SLOTS 4096 /* power of two, over 4 times the windows (< 800) */
#define BIN_WINDOW 16
#define HEX_WINDOW 32

/* One byte string that must not survive in a freed block. */
typedef struct pattern {
    char name[48];
    uint8_t bytes[2 * 33];
    size_t len;
    size_t win;      /* window length: BIN_WINDOW or HEX_WINDOW */
    int bn_words;    /* the bytes reversed: a BIGNUM's words */
} pattern;

/* One window of a pattern, found through its first 8 bytes. */
typedef struct slot {
    uint64_t prefix;
    uint16_t pat, off;
    uint8_t used;
} slot;

/* A freed block that held a pattern. */
typedef struct hit {
    char origin[64]; /* the allocator, and OpenSSL's file:line */
    char pattern[48];
    size_t block_size, offset, window_off;
    int full; /* the whole pattern, not only a window of it */
} hit;

#define MAX_HITS 16
#define QUARANTINE_MAX 16384

/* OpenSSL 3.0's ecp_nistz256_windowed_mul (crypto/ec/ecp_nistz256.c, the
 * P-256 code of x86-64 and arm64 builds) copies each scalar, little-endian,
 * into p_str = OPENSSL_malloc(33 a point) and frees it with OPENSSL_free,
 * unwiped: every EC_POINT_mul the engine makes leaves k or k^-1 in a freed
 * block.  With OpenSSL on this file's own hooks these blocks are counted
 * apart and printed (failed with PSI_KEY_HYGIENE_STRICT=1); with the wiping
 * allocator they are wiped.  Anything else the scan finds fails. */
#define KNOWN_UPSTREAM_FILE "OpenSSL (ecp_nistz256.c:"

/* Written by the test's main thread while no other thread allocates
 * (arm, disarm, quarantine_end); read by every freeing thread. */
static pattern patterns[MAX_PATTERNS];
static size_t n_patterns;
static slot slots[SLOTS];
static atomic_int armed;
static atomic_int quarantining;
static atomic_int suspended;
/* OpenSSL allocates through this file's own hooks (PSI_KEY_HYGIENE_OPENSSL=raw),
 * not through psi_openssl_wipe_on_free.  Set once in main. */
static int openssl_raw;
/* Under `lock`: the hits, the quarantine, the counters. */
static atomic_flag lock = ATOMIC_FLAG_INIT;
static hit hits[MAX_HITS];
static size_t n_hits;
static hit known_hit;   /* the first block KNOWN_UPSTREAM_FILE describes */
static size_t n_known;
static int strict;      /* set in main: count known blocks as hits */
static struct held {
    void *p;
    char origin[64];
} quarantine[QUARANTINE_MAX];
static size_t n_quarantined, quarantine_overflow;
static uint64_t blocks_scanned, bytes_scanned;

static void lock_take(void)
{
    while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire))
        ;
}

static void lock_give(void)
{
    atomic_flag_clear_explicit(&lock, memory_order_release);
}

static size_t slot_of(uint64_t prefix)
{
    return (size_t)((prefix * 0x9e3779b97f4a7c15u) >> 52) & (SLOTS - 1);
}

static void add_pattern(const char *name, const uint8_t *bytes, size_t len, size_t win)
{
    assert_true(n_patterns < MAX_PATTERNS && len <= sizeof patterns[0].bytes && len >= win);
    pattern *p = &patterns[n_patterns];
    snprintf(p->name, sizeof p->name, "%s", name);
    memcpy(p->bytes, bytes, len);
    p->len = len;
    p->win = win;
    for (size_t off = 0; off + win <= len; off++) {
        uint64_t prefix;
        memcpy(&prefix, bytes + off, sizeof prefix);
        size_t h = slot_of(prefix);
        while (slots[h].used)
            h = (h + 1) & (SLOTS - 1);
        slots[h] = (slot){prefix, (uint16_t)n_patterns, (uint16_t)off, 1};
    }
    n_patterns++;
}

static void to_hex(char *out, const uint8_t *in, size_t len, int upper)
{
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
}

/* Adds `bytes` and, if `reversed`, its byte-reversed form, each also as
 * lower- and upper-case hex. */
static void add_secret(const char *name, const uint8_t *bytes, size_t len, int reversed)
{
    uint8_t rev[33], hex[66];
    char label[48];
    assert_true(len <= sizeof rev);
    for (int r = 0; r <= reversed; r++) {
        const uint8_t *b = bytes;
        if (r) {
            for (size_t i = 0; i < len; i++)
                rev[i] = bytes[len - 1 - i];
            b = rev;
        }
        snprintf(label, sizeof label, "%s%s", name, r ? " reversed" : "");
        add_pattern(label, b, len, BIN_WINDOW);
        patterns[n_patterns - 1].bn_words = r;
        for (int upper = 0; upper < 2; upper++) {
            to_hex((char *)hex, b, len, upper);
            snprintf(label, sizeof label, "%s%s hex (%s)", name, r ? " reversed" : "",
                     upper ? "upper" : "lower");
            add_pattern(label, hex, 2 * len, HEX_WINDOW);
        }
    }
    sodium_memzero(rev, sizeof rev);
    sodium_memzero(hex, sizeof hex);
}

/* Records the first pattern window found in a block that is being freed;
 * true if one was found.  Called with the lock not held. */
static int scan_block(const void *block, size_t size, const char *origin)
{
    const uint8_t *p = block;
    if (p == NULL || !atomic_load(&armed) || atomic_load(&suspended))
        return 0;
    VALGRIND_MAKE_MEM_DEFINED(block, size); /* freed right after: hides nothing */
    int found = 0;
    for (size_t i = 0; !found && i + BIN_WINDOW <= size; i++) {
        uint64_t prefix;
        memcpy(&prefix, p + i, sizeof prefix);
        for (size_t h = slot_of(prefix); slots[h].used && !found; h = (h + 1) & (SLOTS - 1)) {
            const slot *s = &slots[h];
            const pattern *pt = &patterns[s->pat];
            if (s->prefix != prefix || i + pt->win > size ||
                memcmp(p + i, pt->bytes + s->off, pt->win) != 0)
                continue;
            found = 1;
            hit hh = {.block_size = size, .offset = i, .window_off = s->off};
            hh.full = i >= s->off && i - s->off + pt->len <= size &&
                      memcmp(p + i - s->off, pt->bytes, pt->len) == 0;
            snprintf(hh.origin, sizeof hh.origin, "%s", origin);
            snprintf(hh.pattern, sizeof hh.pattern, "%s", pt->name);
            int known = !strict && pt->bn_words && hh.full && i == 0 && size <= 64 &&
                        strncmp(origin, KNOWN_UPSTREAM_FILE, strlen(KNOWN_UPSTREAM_FILE)) == 0;
            lock_take();
            if (known && n_known++ == 0)
                known_hit = hh;
            if (!known && n_hits < MAX_HITS)
                hits[n_hits] = hh;
            n_hits += !known;
            lock_give();
        }
    }
    lock_take();
    blocks_scanned++;
    bytes_scanned += size;
    lock_give();
    return found;
}

/* ------------------------------------------------ the process's malloc */

extern void *__libc_malloc(size_t n);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_memalign(size_t align, size_t n);

/* Scans a block, then frees it, or keeps it for quarantine_end. */
static void release(void *p, const char *origin)
{
    if (p == NULL)
        return;
    if (atomic_load(&quarantining) && !atomic_load(&suspended)) {
        lock_take();
        int kept = n_quarantined < QUARANTINE_MAX;
        if (kept) {
            quarantine[n_quarantined].p = p;
            snprintf(quarantine[n_quarantined++].origin, 64, "%s", origin);
        } else
            quarantine_overflow++;
        lock_give();
        if (kept)
            return;
    }
    scan_block(p, malloc_usable_size(p), origin);
    __libc_free(p);
}

/* realloc as malloc, copy, scanned free: the old block is always scanned,
 * even where glibc would have grown it in place. */
static void *realloc_scanned(void *p, size_t n, const char *origin)
{
    if (p == NULL)
        return __libc_malloc(n);
    if (n == 0) {
        release(p, origin);
        return NULL;
    }
    void *q = __libc_malloc(n);
    if (q == NULL)
        return NULL;
    size_t old = malloc_usable_size(p);
    memcpy(q, p, old < n ? old : n);
    release(p, origin);
    return q;
}

void *malloc(size_t n)
{
    return __libc_malloc(n);
}

void free(void *p)
{
    release(p, "heap");
}

void *calloc(size_t n, size_t size)
{
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    return realloc_scanned(p, n, "heap");
}

void *reallocarray(void *p, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    return realloc_scanned(p, n * size, "heap");
}

void *memalign(size_t align, size_t n)
{
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return 22; /* EINVAL */
    void *p = __libc_memalign(align, n);
    if (p == NULL)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}

/* OpenSSL's and the library's allocators, named in the reports. */
static void *ossl_malloc(size_t n, const char *file, int line)
{
    (void)file, (void)line;
    return __libc_malloc(n);
}

static void *ossl_realloc(void *p, size_t n, const char *file, int line)
{
    (void)file, (void)line;
    return realloc_scanned(p, n, "OpenSSL");
}

static void ossl_free(void *p, const char *file, int line)
{
    char origin[64];
    const char *base = file != NULL ? strrchr(file, '/') : NULL;
    snprintf(origin, sizeof origin, "OpenSSL (%s:%d)", base != NULL ? base + 1 :
             file != NULL ? file : "?", line);
    release(p, origin);
}

static void *lib_alloc(size_t n)
{
    return __libc_malloc(n);
}

static void lib_free(void *p)
{
    release(p, "psi_alloc");
}

/* ---------------------------------------------------- arming the scan */

typedef struct secret {
    const char *name;
    const uint8_t *key;
    size_t key_len;
    const uint8_t *kinv; /* NULL: none */
    int reversed;        /* also look for the reversed bytes */
} secret;

static void report_hit(const char *what, const hit *h)
{
    print_message("# %s: a %zu-byte block freed through %s holds %s%s at offset %zu "
                  "(window from pattern offset %zu)\n", what, h->block_size, h->origin,
                  h->full ? "the whole " : "part of ", h->pattern, h->offset, h->window_off);
}

static void report_hits(void)
{
    size_t n = n_hits < MAX_HITS ? n_hits : MAX_HITS;
    for (size_t i = 0; i < n; i++)
        report_hit("HIT", &hits[i]);
    if (n_known > 0) {
        report_hit("KNOWN UPSTREAM", &known_hit);
        print_message("#   and %zu more such blocks from OpenSSL's P-256 scalar "
                      "multiplication (see KNOWN_UPSTREAM_FILE)\n", n_known - 1);
    }
}

static void clear_counters(void)
{
    lock_take();
    n_hits = n_known = 0;
    memset(hits, 0, sizeof hits);
    blocks_scanned = bytes_scanned = 0;
    quarantine_overflow = 0;
    lock_give();
}

/* Sets the patterns of `n` secrets and starts scanning. */
static void arm(const secret *s, size_t n)
{
    atomic_store(&armed, 0);
    n_patterns = 0;
    memset(slots, 0, sizeof slots);
    for (size_t i = 0; i < n; i++) {
        char label[40];
        add_secret(s[i].name, s[i].key, s[i].key_len, s[i].reversed);
        if (s[i].kinv != NULL) {
            snprintf(label, sizeof label, "%s^-1", s[i].name);
            add_secret(label, s[i].kinv, PSI_KEY_BYTES, s[i].reversed);
        }
    }
    clear_counters();
    atomic_store(&armed, 1);
}

/* Holds every freed block back until quarantine_end: for a key that is
 * only known after the call that made it. */
static void quarantine_begin(void)
{
    clear_counters();
    n_quarantined = 0;
    atomic_store(&quarantining, 1);
}

/* Arms the patterns, then scans and frees every block held back. */
static void quarantine_end(const secret *s, size_t n)
{
    atomic_store(&quarantining, 0);
    uint64_t overflow = quarantine_overflow;
    arm(s, n);
    for (size_t i = 0; i < n_quarantined; i++)
        release(quarantine[i].p, quarantine[i].origin);
    n_quarantined = 0;
    assert_int_equal(overflow, 0);
}

/* Stops scanning, wipes the patterns and returns the number of hits. */
static size_t disarm(const char *scenario)
{
    atomic_store(&armed, 0);
    sodium_memzero(patterns, sizeof patterns);
    sodium_memzero(slots, sizeof slots);
    n_patterns = 0;
    report_hits();
    print_message("# %s: %llu freed blocks (%llu bytes) scanned, %zu holding a key\n",
                  scenario, (unsigned long long)blocks_scanned,
                  (unsigned long long)bytes_scanned, n_hits);
    return n_hits;
}

/* Ends a scenario that must leave no key behind. */
static void expect_clean(const char *scenario)
{
    uint64_t scanned = blocks_scanned;
    assert_int_equal(disarm(scenario), 0);
    assert_true(scanned > 0); /* the interposition is live */
}

/* ------------------------------------------------------------- keys */

/* n, the order of the P-256 group. */
static const uint8_t order_n[PSI_KEY_BYTES] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84,
    0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
};

/* A key and its inverse, computed with OpenSSL while the scan is
 * suspended: the test's own BIGNUMs are not the library's. */
typedef struct keypair {
    uint8_t k[PSI_KEY_BYTES], kinv[PSI_KEY_BYTES];
} keypair;

static void compute_inverse(keypair *kp)
{
    atomic_fetch_add(&suspended, 1);
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *k = BN_secure_new(), *n = BN_new(), *inv = BN_secure_new();
    assert_non_null(ctx);
    assert_true(k != NULL && n != NULL && inv != NULL);
    assert_non_null(BN_bin2bn(kp->k, PSI_KEY_BYTES, k));
    assert_non_null(BN_bin2bn(order_n, sizeof order_n, n));
    assert_non_null(BN_mod_inverse(inv, k, n, ctx));
    assert_int_equal(BN_bn2binpad(inv, kp->kinv, PSI_KEY_BYTES), PSI_KEY_BYTES);
    BN_clear_free(k);
    BN_clear_free(inv);
    BN_free(n);
    BN_CTX_free(ctx);
    atomic_fetch_sub(&suspended, 1);
}

/* A fresh key in [2^254, 2^255): in range, no leading zero byte. */
static void keypair_random(keypair *kp)
{
    randombytes_buf(kp->k, sizeof kp->k);
    kp->k[0] = (uint8_t)(0x40 | (kp->k[0] & 0x3f));
    compute_inverse(kp);
}

static void keypair_wipe(keypair *kp)
{
    sodium_memzero(kp, sizeof *kp);
}

static psi_engine *engine_from(const keypair *kp, psi_role role, int reveal)
{
    psi_settings s;
    psi_settings_default(&s);
    s.role = role;
    s.reveal_intersection = reveal;
    psi_engine *e = NULL;
    assert_int_equal(psi_engine_create_from_key(&e, &s, kp->k, sizeof kp->k), PSI_OK);
    return e;
}

/* The engine's key and inverse as the engine holds them. */
static void keypair_of(keypair *kp, const psi_engine *e)
{
    size_t len = sizeof kp->k;
    assert_int_equal(psi_engine_export_key(e, kp->k, &len), PSI_OK);
    assert_int_equal(len, PSI_KEY_BYTES);
    compute_inverse(kp);
    assert_true(sodium_memcmp(kp->kinv, e->secret->kinv, PSI_KEY_BYTES) == 0);
}

/* ------------------------------------------------- the operations run */

#define N_CLIENT 24
#define N_SERVER 20
#define N_COMMON 10
#define MSG_CAP 8192

typedef struct inputs {
    char text[N_CLIENT + N_SERVER][16];
    psi_value client[N_CLIENT], server[N_SERVER];
} inputs;

/* Client values 0..23, server values 14..33: ten in common. */
static void inputs_init(inputs *in)
{
    for (int i = 0; i < N_CLIENT + N_SERVER; i++)
        snprintf(in->text[i], sizeof in->text[i], "value-%d", i);
    for (int i = 0; i < N_CLIENT; i++)
        in->client[i] = (psi_value){(const uint8_t *)in->text[i], strlen(in->text[i])};
    for (int i = 0; i < N_SERVER; i++) {
        const char *t = in->text[N_CLIENT - N_COMMON + i];
        in->server[i] = (psi_value){(const uint8_t *)t, strlen(t)};
    }
}

/* Messages of one round, on the heap of the test (never holding a key). */
typedef struct round_msgs {
    uint8_t setup[3][MSG_CAP];
    size_t setup_len[3];
    size_t perm[N_SERVER];
    uint8_t request[MSG_CAP], response[MSG_CAP];
    size_t request_len, response_len;
} round_msgs;

/* Every operation of one party pair: the batch calls, point_check, every
 * setup, a request and response with reveal on, the three results, their
 * sizes and the association table, then a round with reveal off.  One body
 * for the engine (H psi_engine *, batch prefix B psi_engine_, message
 * prefix M psi_) and the sharding layer (psi_shards *, psi_shards_ for
 * both), whose calls take the same arguments. */
#define DEFINE_ROUND(name, H, B, M)                                                      \
    static void name(H c, H s, H c0, H s0)                                                \
    {                                                                                     \
        static round_msgs m;                                                              \
        static uint8_t a[N_CLIENT * PSI_ELEMENT_BYTES], b[sizeof a], u[sizeof a];         \
        inputs in;                                                                        \
        inputs_init(&in);                                                                 \
        size_t la = sizeof a, lb = sizeof b, lu = sizeof u, count;                        \
        assert_int_equal(B##mask(c, a, &la, in.client, N_CLIENT), PSI_OK);                \
        assert_int_equal(B##remask(s, b, &lb, a, N_CLIENT), PSI_OK);                      \
        assert_int_equal(B##unmask(c, u, &lu, b, N_CLIENT), PSI_OK);                      \
        assert_int_equal(psi_point_check(u, PSI_ELEMENT_BYTES), PSI_OK);                  \
        for (int st = 0; st < 3; st++) {                                                  \
            psi_setup_params p = {(psi_structure)st, 0.001, N_CLIENT};                    \
            m.setup_len[st] = sizeof m.setup[st];                                         \
            assert_int_equal(M##server_create_setup(s, m.setup[st], &m.setup_len[st],     \
                                                    st == 0 ? m.perm : NULL, &p,          \
                                                    in.server, N_SERVER), PSI_OK);        \
        }                                                                                 \
        m.request_len = m.response_len = MSG_CAP;                                         \
        assert_int_equal(M##client_create_request(c, m.request, &m.request_len,           \
                                                  in.client, N_CLIENT), PSI_OK);          \
        assert_int_equal(M##server_process_request(s, m.response, &m.response_len,        \
                                                   m.request, m.request_len), PSI_OK);    \
        size_t idx[N_CLIENT];                                                             \
        for (int st = 0; st < 3; st++) {                                                  \
            count = N_CLIENT;                                                             \
            assert_int_equal(M##client_get_intersection(c, idx, &count, m.setup[st],      \
                                                        m.setup_len[st], m.response,      \
                                                        m.response_len), PSI_OK);         \
            assert_true(count >= N_COMMON);                                               \
            assert_int_equal(M##client_get_intersection_size(c, &count, m.setup[st],      \
                                                             m.setup_len[st], m.response, \
                                                             m.response_len), PSI_OK);    \
            assert_true(count >= N_COMMON);                                               \
        }                                                                                 \
        psi_pair pairs[N_CLIENT];                                                         \
        count = N_CLIENT;                                                                 \
        assert_int_equal(M##client_get_association(c, pairs, &count, m.setup[0],          \
                                                   m.setup_len[0], m.response,            \
                                                   m.response_len), PSI_OK);              \
        assert_int_equal(count, N_COMMON);                                                \
        assert_int_equal(psi_association_map(pairs, count, m.perm, N_SERVER), PSI_OK);    \
        m.request_len = m.response_len = MSG_CAP; /* reveal off: only the size */         \
        assert_int_equal(M##client_create_request(c0, m.request, &m.request_len,          \
                                                  in.client, N_CLIENT), PSI_OK);          \
        assert_int_equal(M##server_process_request(s0, m.response, &m.response_len,       \
                                                   m.request, m.request_len), PSI_OK);    \
        assert_int_equal(M##client_get_intersection_size(c0, &count, m.setup[0],          \
                                                         m.setup_len[0], m.response,      \
                                                         m.response_len), PSI_OK);        \
        assert_int_equal(count, N_COMMON);                                                \
    }

DEFINE_ROUND(run_engine_ops, psi_engine *, psi_engine_, psi_)
DEFINE_ROUND(run_shard_ops, psi_shards *, psi_shards_, psi_shards_)

/* ------------------------------------------------------------ tests */

/* Each test starts with the scan off and nothing held back, whatever a
 * failed one left. */
static int scan_reset(void **state)
{
    (void)state;
    atomic_store(&armed, 0);
    atomic_store(&quarantining, 0);
    atomic_store(&suspended, 0);
    for (size_t i = 0; i < n_quarantined; i++)
        __libc_free(quarantine[i].p);
    n_quarantined = 0;
    clear_counters();
    return 0;
}

/* Ends a self-test case: exactly one block, holding `pattern` (whole or
 * in part), freed through an allocator whose name starts with `origin`. */
static void expect_one_hit(const char *pattern, int full, const char *origin, const char *what)
{
    assert_int_equal(n_hits, 1);
    assert_string_equal(hits[0].pattern, pattern);
    assert_int_equal(hits[0].full, full);
    assert_memory_equal(hits[0].origin, origin, strlen(origin));
    assert_int_equal(disarm(what), 1);
}

/* The scanner itself: an unwiped copy of the key freed through each
 * allocator is reported, with the right pattern, and a wiped one is not. */
static void test_key_hygiene_scanner_catches_a_copy(void **state)
{
    (void)state;
    keypair kp;
    keypair_random(&kp);
    secret s = {"key", kp.k, PSI_KEY_BYTES, kp.kinv, 1};
    char hex[2 * PSI_KEY_BYTES];
    arm(&s, 1);
    uint8_t *p = malloc(100);
    assert_non_null(p);
    memset(p, 0x5a, 100);
    memcpy(p + 7, kp.k, PSI_KEY_BYTES);
    free(p);
    assert_int_equal(hits[0].offset, 7);
    expect_one_hit("key", 1, "heap", "self-test: a malloc'd copy (expected 1)");
    arm(&s, 1);
    p = psi_alloc(40); /* the last 16 bytes of the inverse */
    assert_non_null(p);
    memset(p, 0, 40);
    memcpy(p + 20, kp.kinv + 16, 16);
    psi_free(p);
    expect_one_hit("key^-1", 0, "psi_alloc", "self-test: part of the inverse (expected 1)");
    arm(&s, 1);
    char *t = OPENSSL_malloc(200);
    assert_non_null(t);
    memset(t, ' ', 200);
    to_hex(hex, kp.k, PSI_KEY_BYTES, 1);
    memcpy(t + 100, hex, sizeof hex);
    OPENSSL_free(t);
    if (openssl_raw)
        expect_one_hit("key hex (upper)", 1, "OpenSSL (", "self-test: hex via OpenSSL (expected 1)");
    else /* psi_openssl_wipe_on_free wipes before the block reaches free() */
        assert_int_equal(disarm("self-test: hex via OpenSSL's wiping allocator (expected 0)"), 0);
    arm(&s, 1);
    p = malloc(48); /* a BIGNUM's words: the reversed key */
    assert_non_null(p);
    for (size_t i = 0; i < PSI_KEY_BYTES; i++)
        p[i] = kp.k[PSI_KEY_BYTES - 1 - i];
    p = realloc(p, 4096); /* the old block is scanned as it is released */
    assert_non_null(p);
    sodium_memzero(p, 4096);
    free(p);
    t = OPENSSL_malloc(64);
    assert_non_null(t);
    memcpy(t, kp.k, PSI_KEY_BYTES);
    OPENSSL_clear_free(t, 64); /* wiped: not reported */
    expect_one_hit("key reversed", 1, "heap", "self-test: realloc'd, then wiped (expected 1)");
    sodium_memzero(hex, sizeof hex);
    keypair_wipe(&kp);
}

/* (a) engines from known keys, every operation, freed. */
static void test_key_hygiene_known_keys(void **state)
{
    (void)state;
    keypair kc, ks;
    keypair_random(&kc);
    keypair_random(&ks);
    secret s[2] = {{"client key", kc.k, PSI_KEY_BYTES, kc.kinv, 1},
                   {"server key", ks.k, PSI_KEY_BYTES, ks.kinv, 1}};
    arm(s, 2);
    psi_engine *e[4] = {engine_from(&kc, PSI_ROLE_CLIENT, 1), engine_from(&ks, PSI_ROLE_SERVER, 1),
                        engine_from(&kc, PSI_ROLE_CLIENT, 0), engine_from(&ks, PSI_ROLE_SERVER, 0)};
    run_engine_ops(e[0], e[1], e[2], e[3]);
    for (int i = 0; i < 4; i++)
        psi_engine_free(e[i]);
    expect_clean("known keys, every operation");
    keypair_wipe(&kc);
    keypair_wipe(&ks);
}

/* (b) random keys: the blocks freed while the engines are made are held
 * back until the keys are exported. */
static void test_key_hygiene_random_keys(void **state)
{
    (void)state;
    psi_settings sc, ss;
    psi_settings_default(&sc);
    psi_settings_default(&ss);
    ss.role = PSI_ROLE_SERVER;
    psi_engine *c = NULL, *s = NULL, *c0 = NULL, *s0 = NULL;
    quarantine_begin();
    assert_int_equal(psi_engine_create(&c, &sc), PSI_OK);
    assert_int_equal(psi_engine_create(&s, &ss), PSI_OK);
    keypair kc, ks;
    keypair_of(&kc, c);
    keypair_of(&ks, s);
    secret sec[2] = {{"client key", kc.k, PSI_KEY_BYTES, kc.kinv, 1},
                     {"server key", ks.k, PSI_KEY_BYTES, ks.kinv, 1}};
    quarantine_end(sec, 2);
    sc.reveal_intersection = ss.reveal_intersection = 0;
    assert_int_equal(psi_engine_clone_with(&c0, c, &sc), PSI_OK);
    assert_int_equal(psi_engine_clone_with(&s0, s, &ss), PSI_OK);
    run_engine_ops(c, s, c0, s0);
    psi_engine_free(c);
    psi_engine_free(s);
    psi_engine_free(c0);
    psi_engine_free(s0);
    expect_clean("random keys, every operation");
    keypair_wipe(&kc);
    keypair_wipe(&ks);
}

/* (c) clone and clone_with, each clone used, all freed. */
static void test_key_hygiene_clones(void **state)
{
    (void)state;
    keypair kp;
    keypair_random(&kp);
    secret s = {"key", kp.k, PSI_KEY_BYTES, kp.kinv, 1};
    inputs in;
    inputs_init(&in);
    static uint8_t out[N_CLIENT * PSI_ELEMENT_BYTES], back[sizeof out];
    arm(&s, 1);
    psi_engine *e = engine_from(&kp, PSI_ROLE_CLIENT, 1), *c1 = NULL, *c2 = NULL;
    assert_int_equal(psi_engine_clone(&c1, e), PSI_OK);
    psi_settings st;
    psi_settings_default(&st);
    st.role = PSI_ROLE_SERVER;
    st.reveal_intersection = 0;
    assert_int_equal(psi_engine_clone_with(&c2, c1, &st), PSI_OK);
    psi_engine_free(e);
    size_t len = sizeof out;
    assert_int_equal(psi_engine_mask(c1, out, &len, in.client, N_CLIENT), PSI_OK);
    len = sizeof back;
    assert_int_equal(psi_engine_unmask(c2, back, &len, out, N_CLIENT), PSI_OK);
    psi_engine_free(c1);
    psi_engine_free(c2);
    expect_clean("clone and clone_with");
    keypair_wipe(&kp);
}

/* (d) the sharding layer: shards on three threads from one key each side,
 * every sharded operation and the pure steps. */
static void test_key_hygiene_shards(void **state)
{
    (void)state;
    static uint8_t a[N_SERVER * PSI_ELEMENT_BYTES], b[sizeof a];
    keypair kc, ks;
    keypair_random(&kc);
    keypair_random(&ks);
    secret sec[2] = {{"client key", kc.k, PSI_KEY_BYTES, kc.kinv, 1},
                     {"server key", ks.k, PSI_KEY_BYTES, ks.kinv, 1}};
    inputs in;
    inputs_init(&in);
    arm(sec, 2);
    psi_engine *e[4] = {engine_from(&kc, PSI_ROLE_CLIENT, 1), engine_from(&ks, PSI_ROLE_SERVER, 1),
                        engine_from(&kc, PSI_ROLE_CLIENT, 0), engine_from(&ks, PSI_ROLE_SERVER, 0)};
    psi_shard_settings ss;
    psi_shard_settings_default(&ss);
    ss.threads = 3;
    ss.shards = 5;
    psi_shards *g[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(psi_shards_create(&g[i], e[i], &ss), PSI_OK);
    assert_int_equal(psi_shards_threads(g[0]), 3);
    run_shard_ops(g[0], g[1], g[2], g[3]);
    /* The pure steps on one engine: two sorted slices merged. */
    size_t perm[N_SERVER], merged_perm[N_SERVER];
    for (size_t k = 0; k < 2; k++) {
        size_t off, cnt;
        assert_int_equal(psi_shard_plan(&off, &cnt, N_SERVER, 2, k), PSI_OK);
        psi_shard_slice sl = {PSI_SHARD_MASK_SORT, off, cnt, in.server + off, NULL};
        assert_int_equal(psi_shard_run_one(e[1], a + off * PSI_ELEMENT_BYTES, perm + off, &sl),
                         PSI_OK);
    }
    assert_int_equal(psi_shard_merge_sorted(b, merged_perm, a, perm, N_SERVER, 2), PSI_OK);
    for (int i = 0; i < 4; i++) {
        psi_shards_free(g[i]);
        psi_engine_free(e[i]);
    }
    expect_clean("shards on three threads, every sharded operation");
    keypair_wipe(&kc);
    keypair_wipe(&ks);
}

/* A whole small file, by read(2): stdio would leave its buffer on the heap. */
static size_t read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    ssize_t n = read(fd, buf, cap);
    assert_true(n > 0);
    close(fd);
    return (size_t)n;
}

static void write_file(const char *path, const char *text, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    assert_int_equal(chmod(path, mode), 0);
}

/* True if msg holds any 16 consecutive hex digits of the key, either case. */
static int holds_key_hex(const char *msg, const uint8_t key[PSI_KEY_BYTES])
{
    char hex[2][2 * PSI_KEY_BYTES + 1];
    int found = 0;
    for (int upper = 0; upper < 2; upper++) {
        to_hex(hex[upper], key, PSI_KEY_BYTES, upper);
        hex[upper][2 * PSI_KEY_BYTES] = '\0';
        for (size_t off = 0; off + 16 <= 2 * PSI_KEY_BYTES; off++) {
            char w[17];
            memcpy(w, hex[upper] + off, 16);
            w[16] = '\0';
            if (strstr(msg, w) != NULL)
                found = 1;
        }
    }
    sodium_memzero(hex, sizeof hex);
    return found;
}

/* (e) the CLI's key file: created (the key known only afterwards, so the
 * creation's blocks are held back), loaded again, and refused when
 * malformed, with messages that never show the key. */
static void test_key_hygiene_keyfile(void **state)
{
    (void)state;
    char dir[] = "/tmp/psi-key-hygiene-XXXXXX", path[64], bad[64], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/key", dir);
    snprintf(bad, sizeof bad, "%s/bad", dir);
    psi_engine *e = NULL, *again = NULL;
    int created = -1;

    quarantine_begin();
    err[0] = '\0';
    assert_int_equal(psi_app_keyfile_engine(&e, &created, path, err, sizeof err), 0);
    assert_int_equal(created, 1);
    char text[2 * PSI_KEY_BYTES + 8];
    size_t n = read_file(path, text, sizeof text);
    assert_int_equal(n, 2 * PSI_KEY_BYTES + 1);
    keypair kp;
    size_t bin_len = 0;
    assert_int_equal(sodium_hex2bin(kp.k, sizeof kp.k, text, 2 * PSI_KEY_BYTES, NULL, &bin_len,
                                    NULL), 0);
    assert_int_equal(bin_len, PSI_KEY_BYTES);
    keypair exported;
    keypair_of(&exported, e);
    assert_true(sodium_memcmp(exported.k, kp.k, PSI_KEY_BYTES) == 0);
    compute_inverse(&kp);
    secret s = {"key file's key", kp.k, PSI_KEY_BYTES, kp.kinv, 1};
    quarantine_end(&s, 1);
    psi_engine_free(e);

    assert_int_equal(psi_app_keyfile_engine(&again, &created, path, err, sizeof err), 0);
    assert_int_equal(created, 0);
    keypair_of(&exported, again);
    assert_true(sodium_memcmp(exported.k, kp.k, PSI_KEY_BYTES) == 0);
    psi_engine_free(again);

    /* Malformed files: a valid key line with one character more (a 65th
     * digit, or a letter), and the right text with a group-readable mode. */
    static const char extra[] = {'0', 'g', 'Z'};
    for (size_t i = 0; i < sizeof extra + 1; i++) {
        char t[2 * PSI_KEY_BYTES + 2];
        memcpy(t, text, 2 * PSI_KEY_BYTES);
        t[2 * PSI_KEY_BYTES] = i < sizeof extra ? extra[i] : '\n';
        t[2 * PSI_KEY_BYTES + 1] = '\n';
        unlink(bad);
        write_file(bad, t, sizeof t, i < sizeof extra ? 0600 : 0644);
        e = (psi_engine *)&s;
        err[0] = '\0';
        assert_int_equal(psi_app_keyfile_engine(&e, &created, bad, err, sizeof err), -1);
        assert_null(e);
        assert_true(err[0] != '\0');
        assert_false(holds_key_hex(err, kp.k));
        sodium_memzero(t, sizeof t);
    }
    expect_clean("CLI key file: created, loaded, malformed");
    unlink(bad);
    unlink(path);
    rmdir(dir);
    sodium_memzero(text, sizeof text);
    keypair_wipe(&kp);
    keypair_wipe(&exported);
}

/* (f) rejected keys leave nothing behind either: a 32-byte key above n,
 * a 33-byte key with a leading non-zero byte, and n itself. */
static void test_key_hygiene_rejected_keys(void **state)
{
    (void)state;
    psi_settings st;
    psi_settings_default(&st);
    uint8_t big[PSI_KEY_BYTES], wide[PSI_KEY_BYTES + 1];
    randombytes_buf(big, sizeof big);
    memset(big, 0xff, 4); /* ff ff ff ff then a non-zero byte: above n */
    big[4] = (uint8_t)(0x10 | big[4]);
    randombytes_buf(wide, sizeof wide);
    wide[0] = 0x01;
    /* n is public and sits, reversed, in every BIGNUM of the group order,
     * so only its big-endian forms count. */
    const secret cases[3] = {{"rejected key", big, sizeof big, NULL, 1},
                             {"rejected key", wide, sizeof wide, NULL, 1},
                             {"rejected key", order_n, sizeof order_n, NULL, 0}};
    for (size_t i = 0; i < 3; i++) {
        const secret *s = &cases[i];
        arm(s, 1);
        psi_engine *e = (psi_engine *)&st;
        assert_int_equal(psi_engine_create_from_key(&e, &st, s->key, s->key_len),
                         PSI_E_KEY_OUT_OF_RANGE);
        assert_null(e);
        expect_clean(i == 0 ? "rejected key above n" : i == 1 ? "rejected 33-byte key" :
                     "rejected key n");
    }
    sodium_memzero(big, sizeof big);
    sodium_memzero(wide, sizeof wide);
}

int main(void)
{
    /* By default OpenSSL allocates as in the shardpsi command (its wiping
     * allocator) and nothing may hold a key; PSI_KEY_HYGIENE_OPENSSL=raw
     * uses this file's hooks and tolerates the upstream leak above. */
    const char *mode = getenv("PSI_KEY_HYGIENE_OPENSSL");
    const char *env = getenv("PSI_KEY_HYGIENE_STRICT");
    strict = env != NULL && strcmp(env, "1") == 0;
    openssl_raw = mode != NULL && strcmp(mode, "raw") == 0;
    /* Before any other OpenSSL call: afterwards OpenSSL refuses. */
    if (openssl_raw) {
        if (!CRYPTO_set_mem_functions(ossl_malloc, ossl_realloc, ossl_free)) {
            fprintf(stderr, "CRYPTO_set_mem_functions refused: OpenSSL already allocated\n");
            return 1;
        }
    } else {
        if (psi_openssl_wipe_on_free() != PSI_OK) {
            fprintf(stderr, "psi_openssl_wipe_on_free refused: OpenSSL already allocated\n");
            return 1;
        }
        strict = 1;
    }
    psi_alloc_set_hooks(lib_alloc, lib_free);
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_key_hygiene_scanner_catches_a_copy, scan_reset),
        cmocka_unit_test_setup(test_key_hygiene_known_keys, scan_reset),
        cmocka_unit_test_setup(test_key_hygiene_random_keys, scan_reset),
        cmocka_unit_test_setup(test_key_hygiene_clones, scan_reset),
        cmocka_unit_test_setup(test_key_hygiene_shards, scan_reset),
        cmocka_unit_test_setup(test_key_hygiene_keyfile, scan_reset),
        cmocka_unit_test_setup(test_key_hygiene_rejected_keys, scan_reset),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    psi_alloc_set_hooks(NULL, NULL);
    return failed;
}
