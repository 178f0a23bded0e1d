/* libc++'s std::sort (LLVM 20.1.4, as bundled with emscripten 4.0.10) for
 * (hash, index) pairs compared by hash alone; see cxx_sort.h.
 *
 * std::sort is not stable, so the order it leaves equal hashes in depends
 * on every comparison and every move it makes.  Each function below mirrors
 * one libc++ routine step for step: the same comparisons, in the same
 * order, and the same swaps and hole moves.  The pair type is not
 * arithmetic, so libc++ takes its branching (not branchless) sort3/4/5 and
 * its plain (not bitset) partition; these are the paths reproduced here.
 * Debug randomisation and hardening are off in that build. */
#include <stdbool.h>
#include <stddef.h>

#include "cxx_sort.h"

typedef psi_hash_index item;

/* Insertion sort is used below this length. */
#define SORT_INSERTION_LIMIT 24
/* Above this length the pivot is Tukey's ninther, else a median of 3. */
#define SORT_NINTHER_THRESHOLD 128
/* __insertion_sort_incomplete gives up after this many displacements. */
#define SORT_INCOMPLETE_LIMIT 8

static inline bool lt(const item *a, const item *b)
{
    return a->hash < b->hash;
}

static inline void swap_items(item *a, item *b)
{
    item t = *a;
    *a = *b;
    *b = t;
}

/* __sort3: orders *x, *y, *z with 2-3 comparisons. */
static void sort3(item *x, item *y, item *z)
{
    if (!lt(y, x)) {
        if (!lt(z, y))
            return;
        swap_items(y, z);
        if (lt(y, x))
            swap_items(x, y);
        return;
    }
    if (lt(z, y)) {
        swap_items(x, z);
        return;
    }
    swap_items(x, y);
    if (lt(z, y))
        swap_items(y, z);
}

/* __sort4: sort3 on the first three, then bubbles the fourth down. */
static void sort4(item *x1, item *x2, item *x3, item *x4)
{
    sort3(x1, x2, x3);
    if (lt(x4, x3)) {
        swap_items(x3, x4);
        if (lt(x3, x2)) {
            swap_items(x2, x3);
            if (lt(x2, x1))
                swap_items(x1, x2);
        }
    }
}

/* __sort5: sort4 on the first four, then bubbles the fifth down. */
static void sort5(item *x1, item *x2, item *x3, item *x4, item *x5)
{
    sort4(x1, x2, x3, x4);
    if (lt(x5, x4)) {
        swap_items(x4, x5);
        if (lt(x4, x3)) {
            swap_items(x3, x4);
            if (lt(x3, x2)) {
                swap_items(x2, x3);
                if (lt(x2, x1))
                    swap_items(x1, x2);
            }
        }
    }
}

/* __insertion_sort: guarded insertion sort of [first, last). */
static void insertion_sort(item *first, item *last)
{
    if (first == last)
        return;
    for (item *i = first + 1; i != last; ++i) {
        item *j = i - 1;
        if (lt(i, j)) {
            item t = *i;
            item *k = j;
            j = i;
            do {
                *j = *k;
                j = k;
            } while (j != first && lt(&t, --k));
            *j = t;
        }
    }
}

/* __insertion_sort_unguarded: the element before first is <= every element
 * of [first, last), so the inner loop needs no bound check. */
static void insertion_sort_unguarded(item *first, item *last)
{
    if (first == last)
        return;
    for (item *i = first + 1; i != last; ++i) {
        item *j = i - 1;
        if (lt(i, j)) {
            item t = *i;
            item *k = j;
            j = i;
            do {
                *j = *k;
                j = k;
            } while (lt(&t, --k));
            *j = t;
        }
    }
}

/* __insertion_sort_incomplete: sorts [first, last) unless more than
 * SORT_INCOMPLETE_LIMIT elements need moving; true when it finished. */
static bool insertion_sort_incomplete(item *first, item *last)
{
    switch (last - first) {
    case 0:
    case 1:
        return true;
    case 2:
        if (lt(last - 1, first))
            swap_items(first, last - 1);
        return true;
    case 3:
        sort3(first, first + 1, last - 1);
        return true;
    case 4:
        sort4(first, first + 1, first + 2, last - 1);
        return true;
    case 5:
        sort5(first, first + 1, first + 2, first + 3, last - 1);
        return true;
    default:
        break;
    }
    item *j = first + 2;
    sort3(first, first + 1, j);
    unsigned count = 0;
    for (item *i = j + 1; i != last; ++i) {
        if (lt(i, j)) {
            item t = *i;
            item *k = j;
            j = i;
            do {
                *j = *k;
                j = k;
            } while (j != first && lt(&t, --k));
            *j = t;
            if (++count == SORT_INCOMPLETE_LIMIT)
                return ++i == last;
        }
        j = i;
    }
    return true;
}

/* __partition_with_equals_on_right: *first is the pivot; elements equal to
 * it go right.  Returns the pivot's final place; *already tells whether no
 * swap was needed. */
static item *partition_equals_right(item *first, item *last, bool *already)
{
    item *const begin = first;
    item pivot = *first;
    do {
        ++first;
    } while (lt(first, &pivot));
    if (begin == first - 1) {
        while (first < last && !lt(--last, &pivot)) {
        }
    } else {
        do {
            --last;
        } while (!lt(last, &pivot));
    }
    *already = first >= last;
    while (first < last) {
        swap_items(first, last);
        do {
            ++first;
        } while (lt(first, &pivot));
        do {
            --last;
        } while (!lt(last, &pivot));
    }
    item *pivot_pos = first - 1;
    if (begin != pivot_pos)
        *begin = *pivot_pos;
    *pivot_pos = pivot;
    return pivot_pos;
}

/* __partition_with_equals_on_left: *first is the pivot; elements equal to
 * it go left.  Returns the first element greater than the pivot. */
static item *partition_equals_left(item *first, item *last)
{
    item *const begin = first;
    item pivot = *first;
    if (lt(&pivot, last - 1)) {
        do {
            ++first;
        } while (!lt(&pivot, first));
    } else {
        while (++first < last && !lt(&pivot, first)) {
        }
    }
    if (first < last) {
        do {
            --last;
        } while (lt(&pivot, last));
    }
    while (first < last) {
        swap_items(first, last);
        do {
            ++first;
        } while (!lt(&pivot, first));
        do {
            --last;
        } while (lt(&pivot, last));
    }
    item *pivot_pos = first - 1;
    if (begin != pivot_pos)
        *begin = *pivot_pos;
    *pivot_pos = pivot;
    return first;
}

/* __sift_down: restores the max-heap [first, first + len) below start. */
static void sift_down(item *first, ptrdiff_t len, item *start)
{
    ptrdiff_t child = start - first;
    if (len < 2 || (len - 2) / 2 < child)
        return;
    child = 2 * child + 1;
    item *child_i = first + child;
    if (child + 1 < len && lt(child_i, child_i + 1)) {
        ++child_i;
        ++child;
    }
    if (lt(child_i, start))
        return;
    item top = *start;
    do {
        *start = *child_i;
        start = child_i;
        if ((len - 2) / 2 < child)
            break;
        child = 2 * child + 1;
        child_i = first + child;
        if (child + 1 < len && lt(child_i, child_i + 1)) {
            ++child_i;
            ++child;
        }
    } while (!lt(child_i, &top));
    *start = top;
}

/* __floyd_sift_down: moves the larger child up into the hole at first
 * until the hole reaches a leaf; returns the hole.  len >= 2. */
static item *floyd_sift_down(item *first, ptrdiff_t len)
{
    item *hole = first, *child_i = first;
    ptrdiff_t child = 0;
    for (;;) {
        child_i += child + 1;
        child = 2 * child + 1;
        if (child + 1 < len && lt(child_i, child_i + 1)) {
            ++child_i;
            ++child;
        }
        *hole = *child_i;
        hole = child_i;
        if (child > (len - 2) / 2)
            return hole;
    }
}

/* __sift_up: moves *(last - 1) up the heap [first, last) of length len. */
static void sift_up(item *first, item *last, ptrdiff_t len)
{
    if (len <= 1)
        return;
    len = (len - 2) / 2;
    item *ptr = first + len;
    if (lt(ptr, --last)) {
        item t = *last;
        do {
            *last = *ptr;
            last = ptr;
            if (len == 0)
                break;
            len = (len - 1) / 2;
            ptr = first + len;
        } while (lt(ptr, &t));
        *last = t;
    }
}

/* __pop_heap: moves the maximum of the heap [first, last) to last - 1. */
static void pop_heap(item *first, item *last, ptrdiff_t len)
{
    if (len <= 1)
        return;
    item top = *first;
    item *hole = floyd_sift_down(first, len);
    --last;
    if (hole == last) {
        *hole = top;
    } else {
        *hole = *last;
        ++hole;
        *last = top;
        sift_up(first, hole, hole - first);
    }
}

/* __partial_sort(first, last, last): __make_heap, then __sort_heap (the
 * loop over [middle, last) is empty). */
static void heap_sort(item *first, item *last)
{
    ptrdiff_t n = last - first;
    if (n == 0)
        return;
    if (n > 1)
        for (ptrdiff_t start = (n - 2) / 2; start >= 0; --start)
            sift_down(first, n, first + start);
    for (; n > 1; --last, --n)
        pop_heap(first, last, n);
}

/* __introsort. */
static void introsort(item *first, item *last, ptrdiff_t depth, bool leftmost)
{
    for (;;) {
        ptrdiff_t len = last - first;
        switch (len) {
        case 0:
        case 1:
            return;
        case 2:
            if (lt(last - 1, first))
                swap_items(first, last - 1);
            return;
        case 3:
            sort3(first, first + 1, last - 1);
            return;
        case 4:
            sort4(first, first + 1, first + 2, last - 1);
            return;
        case 5:
            sort5(first, first + 1, first + 2, first + 3, last - 1);
            return;
        default:
            break;
        }
        if (len < SORT_INSERTION_LIMIT) {
            if (leftmost)
                insertion_sort(first, last);
            else
                insertion_sort_unguarded(first, last);
            return;
        }
        if (depth == 0) {
            heap_sort(first, last);
            return;
        }
        --depth;
        ptrdiff_t half = len / 2;
        if (len > SORT_NINTHER_THRESHOLD) {
            sort3(first, first + half, last - 1);
            sort3(first + 1, first + (half - 1), last - 2);
            sort3(first + 2, first + (half + 1), last - 3);
            sort3(first + (half - 1), first + half, first + (half + 1));
            swap_items(first, first + half);
        } else {
            sort3(first + half, first, last - 1);
        }
        /* Not the leftmost part and the pivot equals the largest element
         * to its left: everything equal to it goes left, done. */
        if (!leftmost && !lt(first - 1, first)) {
            first = partition_equals_left(first, last);
            continue;
        }
        bool already;
        item *i = partition_equals_right(first, last, &already);
        if (already) {
            bool left_done = insertion_sort_incomplete(first, i);
            if (insertion_sort_incomplete(i + 1, last)) {
                if (left_done)
                    return;
                last = i;
                continue;
            }
            if (left_done) {
                first = i + 1;
                continue;
            }
        }
        introsort(first, i, depth, leftmost);
        leftmost = false;
        first = i + 1;
    }
}

/* __log2i: floor(log2(n)), 0 for 0. */
static ptrdiff_t log2i(size_t n)
{
    ptrdiff_t r = 0;
    while (n > 1) {
        r++;
        n >>= 1;
    }
    return r;
}

void psi_cxx_sort_by_hash(psi_hash_index *items, size_t n)
{
    if (items == NULL || n < 2)
        return;
    introsort(items, items + n, 2 * log2i(n), true);
}
