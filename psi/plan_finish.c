/* The step API's second half (PROTOCOL.md §14, §19): the steps' outputs in
 * the operation's order (concatenated in slice order, or the k-way merge
 * of sorted slices by (bytes, input index)), then the operation's rule:
 * the encoding of a message, or the match of §9 on the unmasked elements.
 * The one place the merge rules are written. */
#include <string.h>

#include "bloom.h"
#include "codec.h"
#include "gcs.h"
#include "plan.h"
#include "sort.h"

/* --------------------------------------------------- the steps' outputs */

/* A slice being read: the rest of its current chunk, and what is left of
 * the slice (chunk included). */
typedef struct cursor {
    const uint8_t *elem;
    const size_t *idx;
    size_t avail, left, k, next; /* next: input index of an unsorted slice's head */
} cursor;

/* Gets slice c->k's next chunk when the current one is used up. */
static int cursor_fill(psi_plan *p, cursor *c)
{
    if (c->avail > 0 || c->left == 0)
        return PSI_OK;
    const plan_slice *sl = &p->slices[c->k];
    if (!p->external) {
        c->elem = p->out + sl->offset * PSI_ELEMENT_BYTES;
        c->idx = p->perm != NULL ? p->perm + sl->offset : NULL;
        c->avail = sl->count;
        return PSI_OK;
    }
    if (p->source == NULL)
        return PSI_E_INVALID_ARG;
    const uint8_t *elem = NULL;
    const size_t *idx = NULL;
    size_t got = 0;
    int rc = p->source(p->source_arg, c->k, &elem, &idx, &got);
    if (rc != PSI_OK)
        return rc;
    if (got == 0 || got > c->left || elem == NULL || (psi_step_sorts(p->kind) && idx == NULL))
        return PSI_E_INVALID_ARG;
    if (!psi_step_sorts(p->kind))
        idx = NULL; /* an unsorted slice's indices are its positions */
    // A slice's indices are its own inputs': anything else is a broken source.
    for (size_t i = 0; idx != NULL && i < got; i++)
        if (idx[i] < sl->offset || idx[i] - sl->offset >= sl->count)
            return PSI_E_INVALID_ARG;
    c->elem = elem;
    c->idx = idx;
    c->avail = got;
    return PSI_OK;
}

static size_t cursor_index(const cursor *c)
{
    return c->idx != NULL ? *c->idx : c->next;
}

static void cursor_advance(cursor *c)
{
    c->elem += PSI_ELEMENT_BYTES;
    if (c->idx != NULL)
        c->idx++;
    c->next++;
    c->avail--;
    c->left--;
}

/* Receives the elements in order with their input indices. */
typedef int (*emit_fn)(void *arg, const uint8_t *elem, size_t index);

/* Unsorted steps: the slices one after another (§14.3). */
static int walk_concat(psi_plan *p, cursor *cs, emit_fn emit, void *arg)
{
    int rc = PSI_OK;
    for (size_t k = 0; k < p->n_slices && rc == PSI_OK; k++) {
        cursor *c = &cs[k];
        while (rc == PSI_OK && c->left > 0 && (rc = cursor_fill(p, c)) == PSI_OK) {
            rc = emit(arg, c->elem, cursor_index(c));
            cursor_advance(c);
        }
    }
    return rc;
}

/* (bytes, input index): the order of one stable sort of the whole input. */
static int cursor_less(const cursor *a, const cursor *b)
{
    int d = memcmp(a->elem, b->elem, PSI_ELEMENT_BYTES);
    return d != 0 ? d < 0 : cursor_index(a) < cursor_index(b);
}

static void heap_down(cursor **heap, size_t size, size_t i)
{
    for (;;) {
        size_t least = i, l = 2 * i + 1, r = l + 1;
        if (l < size && cursor_less(heap[l], heap[least]))
            least = l;
        if (r < size && cursor_less(heap[r], heap[least]))
            least = r;
        if (least == i)
            return;
        cursor *t = heap[i];
        heap[i] = heap[least];
        heap[least] = t;
        i = least;
    }
}

/* Sorted steps: the k-way merge of the sorted slices (§14.2), the least
 * head first.  Every slice must be in (bytes, index) order, which holds
 * exactly when the merged output never goes down: PSI_E_SETUP_UNSORTED
 * otherwise (a broken executor or source). */
static int walk_merge(psi_plan *p, cursor *cs, emit_fn emit, void *arg)
{
    cursor **heap = psi_calloc(p->n_slices, sizeof *heap);
    if (heap == NULL)
        return PSI_E_NOMEM;
    uint8_t last[PSI_ELEMENT_BYTES];
    size_t size = 0, last_idx = 0, j = 0;
    int rc = PSI_OK;
    for (size_t k = 0; k < p->n_slices && rc == PSI_OK; k++)
        if (cs[k].left > 0 && (rc = cursor_fill(p, &cs[k])) == PSI_OK)
            heap[size++] = &cs[k];
    for (size_t i = size / 2; i-- > 0;)
        heap_down(heap, size, i);
    while (rc == PSI_OK && size > 0) {
        cursor *c = heap[0];
        size_t idx = cursor_index(c);
        int d = j == 0 ? 1 : memcmp(c->elem, last, PSI_ELEMENT_BYTES);
        if (d < 0 || (d == 0 && idx <= last_idx)) {
            rc = PSI_E_SETUP_UNSORTED;
            break;
        }
        memcpy(last, c->elem, PSI_ELEMENT_BYTES);
        last_idx = idx;
        if (p->progress != NULL && j % PSI_PLAN_TICK == PSI_PLAN_TICK - 1)
            p->progress(p->progress_arg, p->n, p->n);
        j++;
        rc = emit(arg, c->elem, idx);
        cursor_advance(c);
        if (rc == PSI_OK && c->left == 0)
            heap[0] = heap[--size];
        else if (rc == PSI_OK)
            rc = cursor_fill(p, c);
        heap_down(heap, size, 0);
    }
    psi_free(heap);
    return rc;
}

/* Every element of the plan in the operation's order. */
static int plan_walk(psi_plan *p, emit_fn emit, void *arg)
{
    cursor *cs = psi_calloc(p->n_slices, sizeof *cs);
    if (cs == NULL)
        return PSI_E_NOMEM;
    for (size_t k = 0; k < p->n_slices; k++) {
        cs[k].k = k;
        cs[k].left = p->slices[k].count;
        cs[k].next = p->slices[k].offset;
    }
    int rc = psi_step_sorts(p->kind) ? walk_merge(p, cs, emit, arg) : walk_concat(p, cs, emit, arg);
    psi_free(cs);
    return rc;
}

/* Every element contiguous, in slice order (GCS, Bloom): the plan's own
 * array, or an external plan's chunks gathered into *owned. */
static int emit_gather(void *arg, const uint8_t *elem, size_t index)
{
    uint8_t **at = arg;
    (void)index;
    memcpy(*at, elem, PSI_ELEMENT_BYTES);
    *at += PSI_ELEMENT_BYTES;
    return PSI_OK;
}

static int plan_contiguous(psi_plan *p, const uint8_t **elements, uint8_t **owned)
{
    *owned = NULL;
    if (!p->external) {
        *elements = p->out;
        return PSI_OK;
    }
    if (p->n_slices == 1 && p->n > 0) {
        // One slice handed over in one piece: used where it is, not copied.
        cursor c = {NULL, NULL, 0, p->n, 0, 0};
        int rc = cursor_fill(p, &c);
        if (rc != PSI_OK || c.avail == p->n) {
            *elements = c.elem;
            return rc;
        }
        *owned = psi_calloc(p->n, PSI_ELEMENT_BYTES);
        if (*owned == NULL)
            return PSI_E_NOMEM;
        uint8_t *at = *owned;
        *elements = *owned;
        for (; rc == PSI_OK && c.left > 0; rc = cursor_fill(p, &c)) {
            memcpy(at, c.elem, c.avail * PSI_ELEMENT_BYTES);
            at += c.avail * PSI_ELEMENT_BYTES;
            c.left -= c.avail;
            c.avail = 0;
        }
        return rc;
    }
    *owned = psi_calloc(p->n, PSI_ELEMENT_BYTES);
    if (*owned == NULL)
        return PSI_E_NOMEM;
    uint8_t *at = *owned;
    *elements = *owned;
    return plan_walk(p, emit_gather, &at);
}

/* -------------------------------------------------------------- writing */

/* Message bytes to the caller's buffer or, in pieces, to a sink. */
typedef struct writer {
    uint8_t *buf;
    size_t cap, len;
    psi_sink_fn sink;
    void *sink_arg;
    uint8_t chunk[1 << 16];
    size_t total; /* bytes handed to the sink */
    size_t *perm; /* raw setup: each record's input index, in order */
    psi_perm_sink_fn perm_sink; /* or, in pieces, there */
    void *perm_sink_arg;
    size_t pbuf[PSI_PLAN_TICK];
    size_t plen;
    psi_suite suite;
    psi_message_kind kind;
} writer;

static int writer_put(writer *w, const uint8_t *bytes, size_t len)
{
    if (len == 0) /* an empty head: nothing to copy (the buffer may be NULL) */
        return PSI_OK;
    w->total += len;
    if (w->sink == NULL) {
        if (len > w->cap - w->len)
            return PSI_E_BUFFER_TOO_SMALL;
        memcpy(w->buf + w->len, bytes, len);
        w->len += len;
        return PSI_OK;
    }
    if (len > sizeof w->chunk - w->len) {
        if (w->len > 0 && w->sink(w->sink_arg, w->chunk, w->len) != 0)
            return PSI_E_IO;
        w->len = 0;
    }
    if (len > sizeof w->chunk)
        return w->sink(w->sink_arg, bytes, len) != 0 ? PSI_E_IO : PSI_OK;
    memcpy(w->chunk + w->len, bytes, len);
    w->len += len;
    return PSI_OK;
}

static int writer_flush(writer *w)
{
    if (w->sink == NULL || w->len == 0)
        return PSI_OK;
    int rc = w->sink(w->sink_arg, w->chunk, w->len) != 0 ? PSI_E_IO : PSI_OK;
    w->len = 0;
    return rc;
}

/* The indices gathered for the permutation's sink. */
static int perm_flush(writer *w)
{
    int rc = PSI_OK;
    if (w->perm_sink != NULL && w->plen > 0)
        rc = w->perm_sink(w->perm_sink_arg, w->pbuf, w->plen) != 0 ? PSI_E_IO : PSI_OK;
    w->plen = 0;
    return rc;
}

/* One element record (§10.1), from the library's one encoder. */
static int emit_record(void *arg, const uint8_t *elem, size_t index)
{
    writer *w = arg;
    uint8_t rec[2 + PSI_ELEMENT_BYTES];
    size_t len = sizeof rec;
    int rc = psi_message_records(rec, &len, w->suite, w->kind, elem, 1);
    if (rc != PSI_OK)
        return rc;
    if (w->perm != NULL)
        *w->perm++ = index;
    if (w->perm_sink != NULL) {
        w->pbuf[w->plen++] = index;
        if (w->plen == PSI_PLAN_TICK && (rc = perm_flush(w)) != PSI_OK)
            return rc;
    }
    return writer_put(w, rec, len);
}

/* SETUP (raw), REQUEST and RESPONSE: the head (§10.1), then the records in
 * the operation's order. */
static int write_records(psi_plan *p, writer *w, size_t *perm)
{
    uint8_t head[PSI_MESSAGE_HEAD_MAX];
    size_t hlen = sizeof head;
    w->suite = p->suite;
    w->kind = p->op == PSI_OP_REQUEST    ? PSI_MESSAGE_REQUEST
              : p->op == PSI_OP_RESPONSE ? PSI_MESSAGE_RESPONSE
                                         : PSI_MESSAGE_SETUP_RAW;
    w->perm = p->perm_sink != NULL ? NULL : perm;
    w->perm_sink = p->op == PSI_OP_SETUP ? p->perm_sink : NULL;
    w->perm_sink_arg = p->perm_sink_arg;
    int rc = psi_message_head(head, &hlen, p->suite, w->kind,
                              p->op == PSI_OP_REQUEST ? p->reveal : 0, p->n);
    if (rc == PSI_OK)
        rc = writer_put(w, head, hlen);
    if (rc == PSI_OK)
        rc = plan_walk(p, emit_record, w);
    if (rc == PSI_OK)
        rc = writer_flush(w);
    if (rc == PSI_OK)
        rc = perm_flush(w);
    return rc;
}

/* GCS and Bloom written to a sink: built from one walk over the elements,
 * each element used as it passes (§20), so only what the structure itself
 * needs is held: the Bloom filter's bit array, or the GCS hashes (8 bytes
 * a value, sorted in memory) and the bit stream.  The bytes are those of
 * psi_setup_encode, which builds from the same functions. */
typedef struct built {
    psi_structure structure;
    size_t elen;
    int32_t k;          /* Bloom */
    psi_bloom_prober prober; /* Bloom */
    uint8_t *bits;
    size_t bits_len;
    uint64_t *hashes;   /* GCS */
    int64_t hash_range;
    size_t n;
} built;

static int emit_built(void *arg, const uint8_t *elem, size_t index)
{
    built *b = arg;
    (void)index;
    if (b->structure == PSI_STRUCTURE_BLOOM_FILTER)
        psi_bloom_insert(b->bits, &b->prober, elem, b->elen);
    else
        b->hashes[b->n++] = psi_gcs_hash(elem, b->elen, b->hash_range);
    return PSI_OK;
}

static int write_built_sink(psi_plan *p, writer *w)
{
    const psi_setup_params *sp = &p->params;
    built b = {.structure = sp->structure, .elen = psi_suite_element_bytes(p->suite)};
    uint8_t head[PSI_SETUP_HEAD_MAX];
    size_t hlen = sizeof head, bound = 0;
    int32_t div_or_k = 0;
    int rc;
    if (b.structure == PSI_STRUCTURE_BLOOM_FILTER) {
        PSI_TRY(psi_bloom_params(&b.k, &b.bits_len, sp->fpr, sp->num_client_inputs, p->n));
        PSI_TRY(psi_bloom_prober_init(&b.prober, psi_bloom_format_of(p->suite), b.k,
                                      b.bits_len));
        if ((b.bits = psi_calloc(b.bits_len, 1)) == NULL) {
            rc = PSI_E_NOMEM;
            goto done;
        }
        PSI_TRY(plan_walk(p, emit_built, &b));
        div_or_k = b.k;
    } else {
        PSI_TRY(psi_gcs_hash_range(&b.hash_range, sp->fpr, sp->num_client_inputs, p->n));
        PSI_TRY(psi_gcs_bits_bound(&bound, b.hash_range, p->n));
        b.hashes = psi_calloc(p->n ? p->n : 1, sizeof *b.hashes);
        b.bits = psi_alloc(bound ? bound : 1);
        if (b.hashes == NULL || b.bits == NULL) {
            rc = PSI_E_NOMEM;
            goto done;
        }
        PSI_TRY(plan_walk(p, emit_built, &b));
        b.bits_len = bound;
        PSI_TRY(psi_gcs_encode_values(&div_or_k, b.bits, &b.bits_len, b.hashes, b.n));
    }
    PSI_TRY(psi_setup_built_head(head, &hlen, p->suite, b.structure, div_or_k, b.hash_range,
                                 b.bits_len));
    if (w->sink(w->sink_arg, head, hlen) != 0 ||
        (b.bits_len > 0 && w->sink(w->sink_arg, b.bits, b.bits_len) != 0)) {
        rc = PSI_E_IO;
        goto done;
    }
    w->total = hlen + b.bits_len;
done:
    psi_bloom_prober_free(&b.prober);
    psi_free(b.bits); /* public: the structure is what gets sent */
    psi_free(b.hashes);
    return rc;
}

/* GCS and Bloom into the caller's buffer: built once from all elements
 * (§14.2). */
static int write_built(psi_plan *p, writer *w)
{
    if (w->sink != NULL)
        return write_built_sink(p, w);
    const uint8_t *elements;
    uint8_t *owned = NULL;
    size_t len;
    int rc = plan_contiguous(p, &elements, &owned);
    if (rc == PSI_OK) {
        len = w->cap;
        rc = psi_setup_encode(w->buf, &len, p->suite, &p->params, elements, p->n);
        w->len = rc == PSI_OK ? len : 0;
    }
    psi_free(owned);
    return rc;
}

/* -------------------------------------------------------------- results */

/* The first failing slice's error: the first bad input overall, the
 * single engine's (§14.4), with its place named as the message call
 * names it. */
static int slices_outcome(psi_plan *p)
{
    for (size_t k = 0; k < p->n_slices; k++) {
        const plan_slice *sl = &p->slices[k];
        if (!sl->done && !p->external)
            return PSI_E_INVALID_ARG; /* an executor left a slice out */
        if (sl->rc != PSI_OK) {
            if (sl->index >= 0)
                return psi_fail_at(sl->rc, p->field, sl->index, -1);
            return sl->rc;
        }
    }
    return PSI_OK;
}

/* The raw walk of §9.1 over the merged (bytes, response index) order:
 * each setup element matches at most one client element. */
typedef struct raw_match {
    const psi_setup *setup;
    psi_raw_cursor cur; /* the setup's elements, in order */
    size_t b;           /* next setup element */
    size_t m, cap;      /* matches, output capacity */
    size_t *indices;    /* may be NULL */
    psi_pair *pairs;    /* may be NULL */
    psi_perm_sink_fn sink; /* may be NULL: the indices in pieces */
    void *sink_arg;
    size_t *piece;      /* PSI_PLAN_TICK indices for the sink */
    psi_pair_sink_fn pair_sink; /* may be NULL: the pairs in pieces */
    void *pair_sink_arg;
    psi_pair *pair_piece; /* PSI_PLAN_TICK pairs for the pair sink */
    size_t in_piece;
} raw_match;

/* Hands the sink its piece.  Returns: PSI_OK or PSI_E_IO. */
static int match_flush(psi_perm_sink_fn sink, void *arg, const size_t *piece, size_t *n)
{
    size_t len = *n;
    *n = 0;
    if (len == 0)
        return PSI_OK;
    return sink(arg, piece, len) != 0 ? PSI_E_IO : PSI_OK;
}

/* Hands the pair sink its piece.  Returns: PSI_OK or PSI_E_IO. */
static int pair_flush(raw_match *r)
{
    size_t len = r->in_piece;
    r->in_piece = 0;
    if (len == 0)
        return PSI_OK;
    return r->pair_sink(r->pair_sink_arg, r->pair_piece, len) != 0 ? PSI_E_IO : PSI_OK;
}

static int emit_raw_match(void *arg, const uint8_t *elem, size_t index)
{
    raw_match *r = arg;
    const psi_setup *s = r->setup;
    const uint8_t *at;
    int c = 1, rc;
    while (r->b < s->raw_count) {
        if ((rc = psi_raw_cursor_at(&r->cur, r->b, &at)) != PSI_OK)
            return rc;
        if ((c = memcmp(at, elem, PSI_ELEMENT_BYTES)) >= 0)
            break;
        r->b++;
    }
    if (r->b >= s->raw_count || c != 0)
        return PSI_OK;
    if (r->pair_sink != NULL) {
        r->pair_piece[r->in_piece++] = (psi_pair){index, r->b};
        r->m++;
        r->b++;
        return r->in_piece == PSI_PLAN_TICK ? pair_flush(r) : PSI_OK;
    }
    if (r->sink != NULL) {
        r->piece[r->in_piece++] = index;
        r->m++;
        r->b++;
        return r->in_piece == PSI_PLAN_TICK
                   ? match_flush(r->sink, r->sink_arg, r->piece, &r->in_piece)
                   : PSI_OK;
    }
    if (r->m < r->cap && r->indices != NULL)
        r->indices[r->m] = index;
    if (r->m < r->cap && r->pairs != NULL)
        r->pairs[r->m] = (psi_pair){index, r->b};
    r->m++;
    r->b++;
    return PSI_OK;
}

/* GCS and Bloom, chunk by chunk (§20): an element's match against these
 * structures depends on it alone, so each chunk of each slice is matched
 * as it comes, its indices handed to the match sink ascending (or only
 * counted), and the elements are never gathered. */
static int finish_client_chunks(psi_plan *p, psi_op_output *o)
{
    size_t *found = NULL, *piece = NULL, in_piece = 0, total = 0, cap = 0;
    int rc = PSI_OK;
    if (p->match_sink != NULL && (piece = psi_calloc(PSI_PLAN_TICK, sizeof *piece)) == NULL)
        return PSI_E_NOMEM;
    for (size_t k = 0; k < p->n_slices && rc == PSI_OK; k++) {
        cursor c = {NULL, NULL, 0, p->slices[k].count, k, p->slices[k].offset};
        while (rc == PSI_OK && c.left > 0 && (rc = cursor_fill(p, &c)) == PSI_OK) {
            size_t got = c.avail, m = got;
            if (p->match_sink == NULL) {
                rc = psi_setup_count(p->setup, &m, c.elem, got);
            } else if (got > cap) {
                psi_free(found);
                cap = 0;
                if ((found = psi_calloc(got, sizeof *found)) == NULL)
                    rc = PSI_E_NOMEM;
                else
                    cap = got;
            }
            if (rc == PSI_OK && p->match_sink != NULL) {
                m = cap;
                rc = psi_setup_match(p->setup, found, &m, c.elem, got);
                psi_index_sort(found, m);
            }
            for (size_t i = 0; rc == PSI_OK && p->match_sink != NULL && i < m; i++) {
                piece[in_piece++] = c.next + found[i];
                if (in_piece == PSI_PLAN_TICK)
                    rc = match_flush(p->match_sink, p->match_sink_arg, piece, &in_piece);
            }
            total += m;
            c.elem += got * PSI_ELEMENT_BYTES;
            c.next += got;
            c.left -= got;
            c.avail = 0;
            if (p->progress != NULL)
                p->progress(p->progress_arg, p->n, p->n);
        }
    }
    if (rc == PSI_OK && p->match_sink != NULL)
        rc = match_flush(p->match_sink, p->match_sink_arg, piece, &in_piece);
    if (rc == PSI_OK)
        o->count = total;
    psi_free(found);
    psi_free(piece);
    return rc;
}

static int finish_client(psi_plan *p, psi_op_output *o)
{
    size_t cap = o->count;
    o->count = 0;
    if (p->op == PSI_OP_ASSOCIATION && psi_setup_structure(p->setup) != PSI_STRUCTURE_RAW)
        return psi_fail_at(PSI_E_STRUCTURE, "ServerSetup", -1, -1);
    if (p->op == PSI_OP_INTERSECTION && p->match_sink == NULL)
        PSI_CHECK_ARG(o->indices != NULL || cap == 0);
    if (p->op == PSI_OP_ASSOCIATION && p->pair_sink == NULL)
        PSI_CHECK_ARG(o->pairs != NULL || cap == 0);
    if (p->kind == PSI_STEP_UNMASK_SORT) {
        raw_match r = {p->setup, {0}, 0, 0, p->op == PSI_OP_INTERSECTION_SIZE ? 0 : cap,
                       p->op == PSI_OP_INTERSECTION ? o->indices : NULL,
                       p->op == PSI_OP_ASSOCIATION ? o->pairs : NULL,
                       p->match_sink, p->match_sink_arg, NULL,
                       p->op == PSI_OP_ASSOCIATION ? p->pair_sink : NULL,
                       p->pair_sink_arg, NULL, 0};
        if (r.sink != NULL || r.pair_sink != NULL) {
            r.indices = NULL;
            r.pairs = NULL;
            r.cap = 0;
            if (r.sink != NULL && (r.piece = psi_calloc(PSI_PLAN_TICK, sizeof *r.piece)) == NULL)
                return PSI_E_NOMEM;
            if (r.pair_sink != NULL &&
                (r.pair_piece = psi_calloc(PSI_PLAN_TICK, sizeof *r.pair_piece)) == NULL)
                return PSI_E_NOMEM;
        }
        int rc = psi_raw_cursor_init(&r.cur, p->setup);
        if (rc == PSI_OK)
            rc = plan_walk(p, emit_raw_match, &r);
        if (rc == PSI_OK && r.sink != NULL)
            rc = match_flush(r.sink, r.sink_arg, r.piece, &r.in_piece);
        if (rc == PSI_OK && r.pair_sink != NULL)
            rc = pair_flush(&r);
        psi_raw_cursor_free(&r.cur);
        psi_free(r.piece);
        psi_free(r.pair_piece);
        if (rc == PSI_OK && (r.sink != NULL || r.pair_sink != NULL)) {
            o->count = r.m;
            return rc;
        }
        if (rc == PSI_OK && p->op != PSI_OP_INTERSECTION_SIZE && r.m > cap)
            rc = PSI_E_BUFFER_TOO_SMALL;
        if (rc != PSI_OK && r.cap > 0 && r.indices != NULL)
            memset(r.indices, 0, r.cap * sizeof *r.indices);
        if (rc != PSI_OK && r.cap > 0 && r.pairs != NULL)
            memset(r.pairs, 0, r.cap * sizeof *r.pairs);
        if (rc == PSI_OK)
            o->count = r.m;
        return rc;
    }
    // GCS and Bloom: chunk by chunk where the order of the whole call's
    // result does not matter (a count; the sink's ascending pieces), else
    // once over all unmasked elements (§14.4).
    if (p->match_sink != NULL || (p->op == PSI_OP_INTERSECTION_SIZE && p->external))
        return finish_client_chunks(p, o);
    const uint8_t *elements;
    uint8_t *owned = NULL;
    int rc = plan_contiguous(p, &elements, &owned);
    if (rc == PSI_OK && p->op == PSI_OP_INTERSECTION_SIZE) {
        rc = psi_setup_count(p->setup, &o->count, elements, p->n);
    } else if (rc == PSI_OK) {
        o->count = cap;
        rc = psi_setup_match(p->setup, o->indices, &o->count, elements, p->n);
    }
    psi_free(owned);
    return rc;
}

static int emit_element(void *arg, const uint8_t *elem, size_t index)
{
    psi_op_output *o = arg;
    memcpy(o->bytes + o->len, elem, PSI_ELEMENT_BYTES);
    if (o->perm != NULL)
        o->perm[o->len / PSI_ELEMENT_BYTES] = index;
    o->len += PSI_ELEMENT_BYTES;
    return PSI_OK;
}

static int finish_step(psi_plan *p, psi_op_output *o)
{
    size_t cap = o->len;
    o->len = 0;
    PSI_CHECK_ARG(o->bytes != NULL || cap == 0);
    if (cap < p->n * PSI_ELEMENT_BYTES)
        return PSI_E_BUFFER_TOO_SMALL;
    int rc = plan_walk(p, emit_element, o);
    if (rc != PSI_OK) {
        if (cap > 0)
            memset(o->bytes, 0, cap);
        if (o->perm != NULL && p->n > 0)
            memset(o->perm, 0, p->n * sizeof *o->perm);
        o->len = 0;
    }
    return rc;
}

/* The message ops into a writer. */
static int finish_message(psi_plan *p, writer *w, size_t *perm)
{
    if (p->op == PSI_OP_SETUP && p->params.structure != PSI_STRUCTURE_RAW)
        return write_built(p, w);
    int rc = write_records(p, w, p->op == PSI_OP_SETUP ? perm : NULL);
    if (rc != PSI_OK && p->op == PSI_OP_SETUP && perm != NULL && p->n > 0)
        memset(perm, 0, p->n * sizeof *perm); /* no partial permutation */
    return rc;
}

int psi_plan_finish(psi_plan *p, psi_op_output *o)
{
    PSI_CHECK_ARG(p != NULL && o != NULL);
    int rc = slices_outcome(p);
    int message = p->op == PSI_OP_SETUP || p->op == PSI_OP_REQUEST || p->op == PSI_OP_RESPONSE;
    if (rc != PSI_OK) {
        // As the engine's batch calls: a failed step leaves its output wiped.
        if (p->op == PSI_OP_STEP && o->bytes != NULL && o->len >= p->n * PSI_ELEMENT_BYTES &&
            p->n > 0)
            memset(o->bytes, 0, p->n * PSI_ELEMENT_BYTES);
        o->len = 0;
        o->count = 0;
        return rc;
    }
    if (p->op == PSI_OP_STEP)
        return finish_step(p, o);
    if (!message)
        return finish_client(p, o);
    size_t cap = o->len;
    o->len = 0;
    PSI_CHECK_ARG(o->sink != NULL || o->bytes != NULL || cap == 0);
    writer *w = psi_calloc(1, sizeof *w);
    if (w == NULL)
        return PSI_E_NOMEM;
    w->buf = o->bytes;
    w->cap = cap;
    w->sink = o->sink;
    w->sink_arg = o->sink_arg;
    rc = finish_message(p, w, o->perm);
    if (rc == PSI_OK)
        o->len = w->sink != NULL ? w->total : w->len;
    else if (w->sink == NULL && cap > 0)
        memset(o->bytes, 0, w->len < cap ? w->len : cap); /* no partial message */
    psi_free(w);
    return rc;
}

size_t psi_plan_bound(const psi_plan *p)
{
    size_t bound = 0;
    if (p == NULL)
        return 0;
    switch (p->op) {
    case PSI_OP_SETUP:
        return psi_setup_bound(&bound, p->suite, &p->params, p->n) == PSI_OK ? bound : 0;
    case PSI_OP_REQUEST:
        return psi_request_bound(p->suite, p->n);
    case PSI_OP_RESPONSE:
        return psi_response_bound(p->suite, p->n);
    case PSI_OP_STEP:
        return p->n * PSI_ELEMENT_BYTES;
    default:
        return p->n;
    }
}
