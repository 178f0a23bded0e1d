/* Stable byte-order sorting of masked elements (PROTOCOL.md §7.1, §8) and
 * ordering of association pairs (§9.6).  qsort with an index tie-break is
 * used: the order is total, so the result is the stable one. */
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "sort.h"

static int keyed_cmp(const void *a, const void *b)
{
    const psi_keyed *x = a, *y = b;
    int c = memcmp(x->bytes, y->bytes, PSI_ELEMENT_BYTES);
    if (c != 0)
        return c;
    return (x->index > y->index) - (x->index < y->index);
}

/* Items already in order cost one pass, not a sort: the sharding layer
 * hands the raw match its unmasked elements merged in (bytes, index) order
 * (PROTOCOL.md §14.3), and the check stops at the first pair out of order
 * otherwise. */
static int keyed_in_order(const psi_keyed *items, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (keyed_cmp(&items[i - 1], &items[i]) > 0)
            return 0;
    return 1;
}

void psi_keyed_sort(psi_keyed *items, size_t n)
{
    if (n > 1 && !keyed_in_order(items, n))
        qsort(items, n, sizeof *items, keyed_cmp);
}

static int pair_cmp(const void *a, const void *b)
{
    const psi_pair *x = a, *y = b;
    if (x->server_index != y->server_index)
        return (x->server_index > y->server_index) - (x->server_index < y->server_index);
    return (x->client_index > y->client_index) - (x->client_index < y->client_index);
}

void psi_pairs_sort(psi_pair *pairs, size_t n)
{
    if (n > 1)
        qsort(pairs, n, sizeof *pairs, pair_cmp);
}

int psi_elements_sort(uint8_t *elements, size_t *perm, size_t n)
{
    PSI_CHECK_ARG(elements != NULL || n == 0);
    if (n == 0)
        return PSI_OK;
    PSI_CHECK_ARG(n <= SIZE_MAX / PSI_ELEMENT_BYTES);
    int rc = PSI_E_NOMEM;
    psi_keyed *items = psi_calloc(n, sizeof *items);
    uint8_t *sorted = psi_alloc(n * PSI_ELEMENT_BYTES);
    if (items == NULL || sorted == NULL)
        goto done;
    for (size_t i = 0; i < n; i++)
        items[i] = (psi_keyed){elements + i * PSI_ELEMENT_BYTES, i};
    psi_keyed_sort(items, n);
    for (size_t j = 0; j < n; j++) {
        memcpy(sorted + j * PSI_ELEMENT_BYTES, items[j].bytes, PSI_ELEMENT_BYTES);
        if (perm != NULL)
            perm[j] = items[j].index;
    }
    memcpy(elements, sorted, n * PSI_ELEMENT_BYTES);
    rc = PSI_OK;
done:
    psi_free(items);
    psi_free(sorted);
    return rc;
}

static int index_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

void psi_index_sort(size_t *idx, size_t n)
{
    if (n > 1)
        qsort(idx, n, sizeof *idx, index_cmp);
}
