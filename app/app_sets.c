/* The example sets of `shardpsi demo` and `shardpsi bench`; see app_sets.h. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_sets.h"
#include "app_util.h"

// Every value is "user-" 16 hex digits "@example.org": distinct ids give
// distinct strings of one length.
#define DEMO_VALUE_LEN 34

/* The splitmix64 finaliser.  It is a bijection on 64-bit words, so distinct
 * inputs give distinct ids. */
static uint64_t demo_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t demo_next(uint64_t *state)
{
    *state += UINT64_C(0x9e3779b97f4a7c15);
    return demo_mix(*state);
}

size_t psi_app_demo_shared(const psi_app_demo_opts *o)
{
    return (size_t)floor(o->overlap * (double)o->client_size + 0.5);
}

/* Writes value number `i` (distinct i, distinct values) into the arena. */
static void demo_value(psi_value *v, char *arena, uint64_t key, size_t i)
{
    char *p = arena + i * (DEMO_VALUE_LEN + 1);

    snprintf(p, DEMO_VALUE_LEN + 1, "user-%016" PRIx64 "@example.org",
             demo_mix((uint64_t)i + key));
    v->data = (const uint8_t *)p;
    v->len = DEMO_VALUE_LEN;
}

/* Client value j < k copies a distinct random server value (a partial
 * Fisher-Yates draw); the others are fresh; then the client set is
 * shuffled so shared values are spread out. */
static int demo_fill(psi_app_demo_sets *s, size_t k, uint64_t seed)
{
    uint64_t key = demo_mix(seed), state = seed;
    size_t *pick = psi_app_alloc(s->n_server, sizeof *pick), i;

    if (pick == NULL)
        return -1;
    for (i = 0; i < s->n_server; i++) {
        demo_value(&s->server[i], s->arena, key, i);
        pick[i] = i;
    }
    for (i = 0; i < s->n_client; i++) {
        if (i < k) {
            size_t r = i + (size_t)(demo_next(&state) % (s->n_server - i));
            size_t t = pick[i];
            pick[i] = pick[r];
            pick[r] = t;
            s->client[i] = s->server[pick[i]];
        } else {
            demo_value(&s->client[i], s->arena, key, s->n_server + i - k);
        }
    }
    for (i = s->n_client; i > 1; i--) {
        size_t r = (size_t)(demo_next(&state) % i);
        psi_value t = s->client[i - 1];
        s->client[i - 1] = s->client[r];
        s->client[r] = t;
    }
    free(pick);
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

    memset(s, 0, sizeof *s);
    s->n_server = o->server_size;
    s->n_client = o->client_size;
    s->server = psi_app_alloc(s->n_server, sizeof *s->server);
    s->client = psi_app_alloc(s->n_client, sizeof *s->client);
    s->is_true = psi_app_alloc(s->n_client, 1);
    s->arena = psi_app_alloc(n_values, DEMO_VALUE_LEN + 1);
    if (s->server == NULL || s->client == NULL || s->is_true == NULL ||
        s->arena == NULL)
        return -1;
    if (demo_fill(s, k, o->seed) != 0)
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
