/* The codec and matching functions the plans (plan.c, plan_finish.c) are
 * built from: internal since every operation is a plan (psi.h's step API),
 * so no caller outside the library composes them.  Not installed. */
#ifndef PSI_CODEC_H
#define PSI_CODEC_H

#include "common.h"

/* Sorts n PSI_ELEMENT_BYTES slots by bytes, stably; perm (may be NULL, n
 * entries) gets perm[j] = the original index of the element now at j.
 * Returns PSI_OK, PSI_E_INVALID_ARG, PSI_E_NOMEM. */
int psi_elements_sort(uint8_t *elements, size_t *perm, size_t n);

/* Whole messages of `suite` from elements in the given order (§6-§8,
 * §10, §16.1); a raw setup's elements must be in byte order
 * (PSI_E_SETUP_UNSORTED).  (out, *out_len) as psi.h's rules. */
int psi_setup_encode(uint8_t *out, size_t *out_len, int suite, const psi_setup_params *p,
                     const uint8_t *elements, size_t n);
/* The bytes of a GCS or Bloom setup before its bits (the message's last
 * field): a writer in pieces sends these, then the bits from where they
 * are.  div_or_k: GCS div or Bloom num_hash_functions; hash_range: GCS.
 * (head, *head_len): capacity in, length out; PSI_SETUP_HEAD_MAX is
 * enough. */
#define PSI_SETUP_HEAD_MAX 64
int psi_setup_built_head(uint8_t *head, size_t *head_len, int suite, psi_structure structure,
                         int32_t div_or_k, int64_t hash_range, size_t bits_len);
int psi_request_encode(uint8_t *out, size_t *out_len, int suite, int reveal,
                       const uint8_t *elements, size_t n);
int psi_response_encode(uint8_t *out, size_t *out_len, int suite, const uint8_t *elements,
                        size_t n);

/* The match of §9 of unmasked elements against a parsed setup: indices
 * into `elements` in the structure's order, their number, or the
 * association pairs (raw only: PSI_E_STRUCTURE otherwise). */
int psi_setup_match(const psi_setup *s, size_t *out, size_t *out_count,
                    const uint8_t *elements, size_t n);
int psi_setup_count(const psi_setup *s, size_t *count, const uint8_t *elements, size_t n);
int psi_setup_associate(const psi_setup *s, psi_pair *out, size_t *out_count,
                        const uint8_t *elements, size_t n);

#endif /* PSI_CODEC_H */
