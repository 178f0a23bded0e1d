/*
 * The CLI's payloads (PROTOCOL.md §22.1): the server's chosen CSV columns of
 * each row as its payload, and the payload file that carries the table with
 * the columns' names.
 *
 * A payload is the raw text of the chosen fields of the row, as they appear
 * in the server's CSV (quotes kept), joined by ",": a CSV fragment that a
 * client appends to its own CSV row unchanged.  The payload file is the
 * chosen columns' header fields (raw, joined by ",") and "\n", then the
 * table of psi_payload_table_build.
 */
#ifndef PSI_APP_PAYLOAD_H
#define PSI_APP_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "app_input.h"
#include "psi_shard.h"

/* The most columns a payload names, and the longest header line of a file. */
#define PSI_APP_PAYLOAD_COLUMNS 64
#define PSI_APP_PAYLOAD_HEAD_MAX 65536

/** Splits a CSV record as the reader accepted it into the raw spans of its
 *  fields (quotes kept; commas inside quotes are not separators).
 *  Returns: the number of fields (at most max are stored). */
size_t psi_app_csv_fields(const uint8_t *rec, size_t len, psi_app_span *f, size_t max);

/** The payloads of a CSV input: for the columns named in `list` (a comma-
 *  separated list of header names, each matched once after unquoting), the
 *  payload of every row and the header line of the chosen columns.
 *  Returns: 0, or -1 with a message in err (a name not in the header, named
 *  twice, the input not CSV).  Out: *pays (in->n values pointing into *buf;
 *  free both), *head (the header fragment, malloc'd, NUL-terminated). */
int psi_app_payloads(const psi_app_input *in, const char *list, psi_value **pays,
                     uint8_t **buf, char **head, char *err, size_t err_len);

/** Writes a payload after a row: "," and the payload in CSV mode; in line
 *  mode a tab and its fields, each unquoted (a field holding a tab or a
 *  line break stays in its quoted CSV form).  Returns: 0 or -1 (write). */
int psi_app_payload_write(FILE *f, int csv, const uint8_t *p, size_t len);

/** The message of a failed payload table build (psi_payload_table_build
 *  or the shards', code prc, with its error detail) of the rows of `input`:
 *  a value twice, naming its row; a payload past pad_len (naming the row)
 *  or past PSI_PAYLOAD_MAX; else the library's message. */
void psi_app_payload_build_error(char *err, size_t err_len, const char *input, int prc,
                                 const psi_value *pays, size_t pad_len);

/** Decodes --salt HEX: exactly PSI_PAYLOAD_SALT_BYTES bytes.  Returns: 0, or
 *  -1 with a message in err.  Out: out. */
int psi_app_payload_salt(uint8_t out[PSI_PAYLOAD_SALT_BYTES], const char *hex, char *err,
                         size_t err_len);

/** A payload file (the columns' header line, "\n", the table) read whole
 *  and checked for `suite`: at most max_bytes (else refused, naming the
 *  size), a header line of at most PSI_APP_PAYLOAD_HEAD_MAX bytes, a table
 *  psi_payload_table_check accepts.  Returns: 0, or -1 with a message
 *  naming the file in err.  Out: *buf (malloc'd, *len bytes: free it),
 *  *head_len (the table starts at *buf + *head_len + 1), *count, *pad_len. */
int psi_app_payload_file_load(const char *path, int suite, uint64_t max_bytes, uint8_t **buf,
                              size_t *len, size_t *head_len, size_t *count, size_t *pad_len,
                              char *err, size_t err_len);

/** The payload table of a raw setup made in memory with its permutation
 *  (perm[i]: the input row of setup position i): the setup's elements are
 *  the masked elements, so nothing is masked again.  pays are the n input
 *  rows' payloads.  Returns: a psi code of psi_payload_table_build (its
 *  detail's index an input row for _DUPLICATE and _LENGTH), or a decoding
 *  error of the setup.  Out: *table (malloc'd), *table_len. */
int psi_app_payload_table_raw(int suite, const uint8_t *setup, size_t setup_len,
                              const size_t *perm, const psi_value *pays, size_t n,
                              size_t pad_len, uint8_t **table, size_t *table_len);

/** The payloads of the k matched rows idx (input indices, below the
 *  response's element count) of a client whose shards g made the request
 *  answered by resp: their response elements unmasked again (the client's
 *  ser(k_s * H(y)), a server value's masked element) and opened in table, a
 *  table whose padded length is pad_len (psi_payload_table_check's).
 *  Returns: a psi code; on failure the library's detail names the position
 *  in idx (PSI_E_PAYLOAD_AUTH, _LENGTH) and *out, *lens are NULL.  Out:
 *  *out (k * pad_len bytes), *lens (k lengths, PSI_PAYLOAD_NONE: no
 *  record); free both. */
int psi_app_payload_open(psi_shards *g, int suite, const uint8_t *table, size_t table_len,
                         size_t pad_len, const uint8_t *resp, size_t resp_len,
                         const size_t *idx, size_t k, uint8_t **out, size_t **lens);

/** Writes the matched rows idx[0..k) of `in` that have a payload (lens[i] not
 *  PSI_PAYLOAD_NONE), each followed by its payload (psi_app_payload_write),
 *  after, for a CSV input, a header line: the input's header, ",", head.
 *  Returns: 0 or -1 (a write failed).  Out: *written, the rows written. */
int psi_app_payload_rows_write(FILE *f, const psi_app_input *in, const uint8_t *head,
                               size_t head_len, const size_t *idx, size_t k,
                               const uint8_t *pays, size_t pad_len, const size_t *lens,
                               size_t *written);

#endif /* PSI_APP_PAYLOAD_H */
