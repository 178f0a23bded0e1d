/* Sorting helpers shared by the setup, response and association code. */
#ifndef PSI_SORT_H
#define PSI_SORT_H

#include "common.h"

/* An element with its original position, for sorting by (bytes, index). */
typedef struct psi_keyed {
    const uint8_t *bytes;
    size_t index;
} psi_keyed;

/* Sorts n keyed elements by (bytes, index): a total order, so the result
 * equals a stable sort by bytes. */
void psi_keyed_sort(psi_keyed *items, size_t n);

/* Sorts pairs by (server_index, client_index). */
void psi_pairs_sort(psi_pair *pairs, size_t n);

/* Sorts input indices ascending. */
void psi_index_sort(size_t *idx, size_t n);

#endif /* PSI_SORT_H */
