/* The example sets of `shardpsi demo` and `shardpsi bench`; see app_sets.h. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_sets.h"
#include "app_util.h"

/* The splitmix64 finaliser.  It is a bijection on 64-bit words, so distinct
 * inputs give distinct ids. */
static uint64_t demo_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

size_t psi_app_demo_shared(const psi_app_demo_opts *o)
{
    return (size_t)floor(o->overlap * (double)o->client_size + 0.5);
}

/* A keyed bijection of [0, n): four Feistel rounds on the smallest
 * even-width power of two that holds n, walked until the result falls
 * below n (at most 4 steps on average).  It draws without replacement and
 * shuffles without a table, so the sets can be made value by value. */
static void demo_perm_init(psi_app_demo_perm *p, uint64_t n, uint64_t key)
{
    unsigned bits = 2;

    while (bits < 62 && (UINT64_C(1) << bits) < n)
        bits += 2;
    p->n = n;
    p->key = key;
    p->half = bits / 2;
}

static uint64_t demo_perm_at(const psi_app_demo_perm *p, uint64_t x)
{
    const uint64_t mask = (UINT64_C(1) << p->half) - 1;

    do {
        uint64_t l = x >> p->half, r = x & mask;
        for (uint64_t round = 0; round < 4; round++) {
            uint64_t t = l ^ (demo_mix(r ^ (p->key + round * UINT64_C(0x9e3779b97f4a7c15))) &
                              mask);
            l = r;
            r = t;
        }
        x = (l << p->half) | r;
    } while (x >= p->n);
    return x;
}

void psi_app_demo_gen_init(psi_app_demo_gen *g, const psi_app_demo_opts *o)
{
    g->key = demo_mix(o->seed);
    g->n_server = o->server_size;
    g->n_client = o->client_size;
    g->k = psi_app_demo_shared(o);
    demo_perm_init(&g->draw, g->n_server, demo_mix(g->key ^ UINT64_C(1)));
    demo_perm_init(&g->order, g->n_client, demo_mix(g->key ^ UINT64_C(2)));
}

/* Value number `id` (distinct ids, distinct values), PSI_APP_DEMO_VALUE_LEN
 * characters and a NUL. */
static void demo_text(char *out, uint64_t key, uint64_t id)
{
    snprintf(out, PSI_APP_DEMO_VALUE_LEN + 1, "user-%016" PRIx64 "@example.org",
             demo_mix(id + key));
}

void psi_app_demo_server_value(const psi_app_demo_gen *g, uint64_t i, char *out)
{
    demo_text(out, g->key, i);
}

uint64_t psi_app_demo_client_source(const psi_app_demo_gen *g, uint64_t i)
{
    uint64_t j = demo_perm_at(&g->order, i);

    return j < g->k ? demo_perm_at(&g->draw, j) : UINT64_MAX;
}

int psi_app_demo_client_value(const psi_app_demo_gen *g, uint64_t i, char *out)
{
    uint64_t j = demo_perm_at(&g->order, i);

    if (j < g->k) {
        demo_text(out, g->key, demo_perm_at(&g->draw, j));
        return 1;
    }
    demo_text(out, g->key, g->n_server + j - g->k);
    return 0;
}

/* Client value i is a server value when its place j in the shuffled order
 * is below k: then it is server value draw(j) (distinct j, distinct server
 * values); the others are fresh ids past the server's. */
static int demo_fill(psi_app_demo_sets *s, const psi_app_demo_gen *g)
{
    const size_t stride = PSI_APP_DEMO_VALUE_LEN + 1;
    size_t fresh = s->n_server;

    for (size_t i = 0; i < s->n_server; i++) {
        psi_app_demo_server_value(g, i, s->arena + i * stride);
        s->server[i].data = (const uint8_t *)(s->arena + i * stride);
        s->server[i].len = PSI_APP_DEMO_VALUE_LEN;
    }
    for (size_t i = 0; i < s->n_client; i++) {
        uint64_t src = psi_app_demo_client_source(g, i);
        if (src != UINT64_MAX) {
            s->client[i] = s->server[src];
            continue;
        }
        psi_app_demo_client_value(g, i, s->arena + fresh * stride);
        s->client[i].data = (const uint8_t *)(s->arena + fresh * stride);
        s->client[i].len = PSI_APP_DEMO_VALUE_LEN;
        fresh++;
    }
    return 0;
}

static int demo_cmp_value(const void *a, const void *b)
{
    const psi_value *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->data, y->data, n);

    if (c != 0)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

/* The plain intersection: each client value looked up in a sorted copy of
 * the server values.  It does not rely on how the sets were built. */
static int demo_truth(psi_app_demo_sets *s)
{
    psi_value *sorted = psi_app_alloc(s->n_server, sizeof *sorted);

    if (sorted == NULL)
        return -1;
    if (s->n_server > 0)
        memcpy(sorted, s->server, s->n_server * sizeof *sorted);
    qsort(sorted, s->n_server, sizeof *sorted, demo_cmp_value);
    s->n_true = 0;
    for (size_t i = 0; i < s->n_client; i++) {
        s->is_true[i] = bsearch(&s->client[i], sorted, s->n_server, sizeof *sorted,
                                demo_cmp_value) != NULL;
        s->n_true += s->is_true[i];
    }
    free(sorted);
    return 0;
}

int psi_app_demo_sets_make(psi_app_demo_sets *s, const psi_app_demo_opts *o)
{
    size_t k = psi_app_demo_shared(o);
    size_t n_values = o->server_size + o->client_size - k;
    psi_app_demo_gen g;

    memset(s, 0, sizeof *s);
    s->n_server = o->server_size;
    s->n_client = o->client_size;
    s->server = psi_app_alloc(s->n_server, sizeof *s->server);
    s->client = psi_app_alloc(s->n_client, sizeof *s->client);
    s->is_true = psi_app_alloc(s->n_client, 1);
    s->arena = psi_app_alloc(n_values, PSI_APP_DEMO_VALUE_LEN + 1);
    if (s->server == NULL || s->client == NULL || s->is_true == NULL ||
        s->arena == NULL)
        return -1;
    psi_app_demo_gen_init(&g, o);
    if (demo_fill(s, &g) != 0)
        return -1;
    return demo_truth(s);
}

void psi_app_demo_sets_free(psi_app_demo_sets *s)
{
    free(s->server);
    free(s->client);
    free(s->arena);
    free(s->is_true);
    memset(s, 0, sizeof *s);
}
