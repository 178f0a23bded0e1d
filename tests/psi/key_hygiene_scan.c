/* The scanner of test_key_hygiene (see test_key_hygiene_internal.c): the
 * patterns of a key, the process's malloc interposed, the hooks given to
 * OpenSSL and the library, arming and quarantine, the keys and their
 * inverses, computed while the scan is suspended, and the scanner's own
 * test. */
#define _GNU_SOURCE
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#include "common.h"
#include "engine.h"
#include "key_hygiene_scan.h"

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
int openssl_raw;
/* Under `lock`: the hits, the quarantine, the counters. */
static atomic_flag lock = ATOMIC_FLAG_INIT;
hit hits[MAX_HITS];
size_t n_hits;
static hit known_hit;   /* the first block KNOWN_UPSTREAM_FILE describes */
static size_t n_known;
int strict;      /* set in main: count known blocks as hits */
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

void to_hex(char *out, const uint8_t *in, size_t len, int upper)
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
void *ossl_malloc(size_t n, const char *file, int line)
{
    (void)file, (void)line;
    return __libc_malloc(n);
}

void *ossl_realloc(void *p, size_t n, const char *file, int line)
{
    (void)file, (void)line;
    return realloc_scanned(p, n, "OpenSSL");
}

void ossl_free(void *p, const char *file, int line)
{
    char origin[64];
    const char *base = file != NULL ? strrchr(file, '/') : NULL;
    snprintf(origin, sizeof origin, "OpenSSL (%s:%d)", base != NULL ? base + 1 :
             file != NULL ? file : "?", line);
    release(p, origin);
}

void *lib_alloc(size_t n)
{
    return __libc_malloc(n);
}

void lib_free(void *p)
{
    release(p, "psi_alloc");
}

/* ---------------------------------------------------- arming the scan */

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
void arm(const secret *s, size_t n)
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
void quarantine_begin(void)
{
    clear_counters();
    n_quarantined = 0;
    atomic_store(&quarantining, 1);
}

/* Arms the patterns, then scans and frees every block held back. */
void quarantine_end(const secret *s, size_t n)
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
size_t disarm(const char *scenario)
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
void expect_clean(const char *scenario)
{
    uint64_t scanned = blocks_scanned;
    assert_int_equal(disarm(scenario), 0);
    assert_true(scanned > 0); /* the interposition is live */
}

/* ------------------------------------------------------------- keys */

/* n, the order of the P-256 group. */
const uint8_t order_n[PSI_KEY_BYTES] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84,
    0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
};

void compute_inverse(keypair *kp)
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
void keypair_random(keypair *kp)
{
    randombytes_buf(kp->k, sizeof kp->k);
    kp->k[0] = (uint8_t)(0x40 | (kp->k[0] & 0x3f));
    compute_inverse(kp);
}

void keypair_wipe(keypair *kp)
{
    sodium_memzero(kp, sizeof *kp);
}

psi_engine *engine_from(const keypair *kp, psi_role role, int reveal)
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
void keypair_of(keypair *kp, const psi_engine *e)
{
    size_t len = sizeof kp->k;
    assert_int_equal(psi_engine_export_key(e, kp->k, &len), PSI_OK);
    assert_int_equal(len, PSI_KEY_BYTES);
    compute_inverse(kp);
    assert_true(sodium_memcmp(kp->kinv, e->secret->kinv, PSI_KEY_BYTES) == 0);
}

/* ------------------------------------------------------ per test */

/* Each test starts with the scan off and nothing held back, whatever a
 * failed one left. */
int scan_reset(void **state)
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

/* ---------------------------------------------------- self-test */

/* In the file that defines malloc and free: elsewhere the compiler may
 * take them for the C library's and drop the stores into a block about
 * to be freed, and the copy this test plants would never be freed. */

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
void test_key_hygiene_scanner_catches_a_copy(void **state)
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
