/* The client's sort of (hash, index) pairs in GCS intersection
 * (PROTOCOL.md §9.2): OpenMined PSI 2.0.6 calls std::sort comparing the
 * hash alone, so equal hashes come out in whatever order that std::sort
 * leaves them.  psi.js 2.0.6 is built with emscripten 4.0.10, whose libc++
 * is LLVM 20.1.4's; this is a C reimplementation of that libc++'s std::sort
 * (introsort with insertion-sort cut-offs and the heap-sort fallback) for a
 * non-arithmetic value type and a custom comparator, making the same
 * comparisons and moves so that ties land exactly where libc++ puts them. */
#ifndef PSI_CXX_SORT_H
#define PSI_CXX_SORT_H

#include <stddef.h>
#include <stdint.h>

typedef struct psi_hash_index {
    uint64_t hash;
    size_t index;
} psi_hash_index;

/* Sorts items[0..n) ascending by hash only, ordering equal hashes exactly
 * as libc++ (LLVM 20) std::sort does for std::pair<int64_t, int64_t> with
 * the comparator a.first < b.first.  Hashes must be below 2^63 for the
 * int64 order and the uint64 order to agree (GCS hashes are). */
void psi_cxx_sort_by_hash(psi_hash_index *items, size_t n);

#endif /* PSI_CXX_SORT_H */
