/*
 * The CLI's payloads (PROTOCOL.md §22.1): the server's chosen CSV columns of
 * each row as its payload, and the payload file that carries the table with
 * the columns' names.
 *
 * A payload is the raw text of the chosen fields of the row, as they appear
 * in the server's CSV (quotes kept), joined by ",": a CSV fragment.  A
 * client never appends it as it came: it checks it against the header
 * line's number of fields (psi_app_payload_check) and writes each field's
 * value as a cell of its own (psi_app_cell_write).  The payload file is the
 * chosen columns' header fields (raw, joined by ",") and "\n", then the
 * table of psi_payload_table_build.
 */
#ifndef PSI_APP_PAYLOAD_H
#define PSI_APP_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "app_input.h"
#include "app_offline.h"
#include "app_paytab.h"
#include "app_progress.h"
#include "app_spill.h"
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

/** psi_app_payloads of a chunk whose first row is row base + 1 of the
 *  input, as messages name it.  Both refuse a payload or header that
 *  psi_app_payload_check refuses (a control byte; a line break in the
 *  header), naming its row. */
int psi_app_payloads_at(const psi_app_input *in, uint64_t base, const char *list,
                        psi_value **pays, uint8_t **buf, char **head, char *err,
                        size_t err_len);

/* The most fields a payload (and the header line of its columns) has. */
#define PSI_APP_PAYLOAD_FIELDS_MAX PSI_APP_PAYLOAD_COLUMNS

/** Checks that p[0..len) is a payload as PROTOCOL.md §22.1 allows it (a
 *  payload is data, never structure): fields separated by ',', each bare
 *  (no '"', CR or LF) or quoted whole ("" for a quote; CR and LF allowed
 *  inside unless `head`, the columns' header line), and no control byte
 *  (0x00-0x1f but the tab, and 0x7f) anywhere.
 *  Returns: 0, or -1 with the reason (the byte at fault) in why.  Out:
 *  *fields, the number of fields (at most PSI_APP_PAYLOAD_FIELDS_MAX). */
int psi_app_payload_check(const uint8_t *p, size_t len, int head, size_t *fields, char *why,
                          size_t why_len);

/** The value of the field at *pos of a checked payload p[0..len), unquoted,
 *  into out (at least len bytes).  Returns: its length.  Out: *pos, the
 *  next field's start (len + 1 after the last field). */
size_t psi_app_payload_field(const uint8_t *p, size_t len, size_t *pos, uint8_t *out);

/** Writes value v as one cell of an output whose cells are separated by
 *  sep (',' for CSV, '\t' for line mode): unless raw, a cell that begins
 *  with '=', '+', '-', '@', a tab or CR gets a ' before it (OWASP's CSV
 *  injection rule); quoted (RFC 4180, "" for a quote) when it holds sep,
 *  '"', CR or LF.  Returns: 0 or -1 (write). */
int psi_app_cell_write(FILE *f, int sep, int raw, const uint8_t *v, size_t len);

/** Writes a checked payload after a row: for each of its fields, sep and
 *  the field's value as a cell (psi_app_cell_write).  scratch holds at
 *  least len bytes.  Returns: 0 or -1 (write). */
int psi_app_payload_write(FILE *f, int sep, int raw, const uint8_t *p, size_t len,
                          uint8_t *scratch);

/** Writes one matched line of a line-mode input with its checked payload:
 *  the value as a cell (never neutralised: it is the client's own), the
 *  payload's cells after tabs, and "\n".  scratch holds at least plen
 *  bytes.  Returns: 0 or -1 (write). */
int psi_app_payload_line_write(FILE *f, int raw, const uint8_t *v, size_t vlen,
                               const uint8_t *p, size_t plen, uint8_t *scratch);

/** What a payload file is built from past the budget. */
typedef struct psi_app_paybuild {
    psi_shards *g;            // the server's shards (its key)
    int suite;
    const char *input;        // a CSV file
    const char *column;       // the value's column
    const char *columns;      // the payload columns (--payload-columns)
    size_t pad_len;           // --pad-to (0: the longest payload)
    const uint8_t *salt;      // --salt (NULL: a fresh one)
    psi_app_budget budget;    // --memory
    const char *temp_dir;     // where the runs go
    psi_app_progress *prog;
} psi_app_paybuild;

/** Writes the payload file of o->input to f (its header line, "\n", the
 *  table) within o->budget (app_payload_build.c, PROTOCOL.md §22.4): the
 *  input read twice a chunk at a time, the sealed records spilled in runs
 *  ordered by tag to a nameless file in o->temp_dir and merged; the same
 *  bytes as psi_payload_table_build for a given salt.  Returns: 0, or -1
 *  with a message in err (the input's errors as the whole reading gives
 *  them, a value twice naming both rows, a payload past --pad-to naming
 *  its row, the disk).  Out: *n (rows), *pad_len (L). */
int psi_app_payload_build_file(const psi_app_paybuild *o, FILE *f, uint64_t *n,
                               size_t *pad_len, char *err, size_t err_len);

/** The first reading of psi_app_payload_build_file alone, a chunk at a time:
 *  every row's payload columns, each payload against o->pad_len (when not 0)
 *  and PSI_PAYLOAD_MAX.  o->g, o->salt and o->temp_dir are not used.
 *  Returns: 0, or -1 with a message in err naming the input (and the row of
 *  a payload too long).  Out: *n (rows), *pad_len (L). */
int psi_app_payload_scan(const psi_app_paybuild *o, uint64_t *n, size_t *pad_len, char *err,
                         size_t err_len);

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

/** A payload file (the columns' header line, "\n", the table) opened for
 *  lookups: its header line read (at most PSI_APP_PAYLOAD_HEAD_MAX bytes),
 *  its table checked for the suite and indexed where it lies in the file,
 *  within `memory` (psi_app_paytab_file), never held whole. */
typedef struct psi_app_payfile {
    psi_app_msg_file f;
    char *head;             // the header line, NUL-terminated (head_len bytes)
    size_t head_len;
    uint64_t table_at, table_len;   // the table's place in the file
    psi_app_paytab t;
} psi_app_payfile;

/** Opens `path` as above.  Returns: 0, or -1 with a message naming the
 *  file in err (no header line, a table of another suite, an invalid table
 *  with its code's name, a read failure, an index past `memory`).  Out: *p
 *  (psi_app_payfile_close it, also after a failure). */
int psi_app_payfile_open(psi_app_payfile *p, const char *path, int suite, uint64_t memory,
                         char *err, size_t err_len);

void psi_app_payfile_close(psi_app_payfile *p);

/** The payload table of a raw setup made in memory with its permutation
 *  (perm[i]: the input row of setup position i): the setup's elements are
 *  the masked elements, so nothing is masked again.  pays are the n input
 *  rows' payloads.  Returns: a psi code of psi_payload_table_build (its
 *  detail's index an input row for _DUPLICATE and _LENGTH), or a decoding
 *  error of the setup.  Out: *table (malloc'd), *table_len. */
int psi_app_payload_table_raw(int suite, const uint8_t *setup, size_t setup_len,
                              const size_t *perm, const psi_value *pays, size_t n,
                              size_t pad_len, uint8_t **table, size_t *table_len);

/** The response elements of the k matched rows idx (input indices) of a
 *  response held whole, decoded.  Returns: a psi code (the response's
 *  decoding; PSI_E_INVALID_ARG for an index past its elements).  Out:
 *  *picked (k * PSI_ELEMENT_BYTES, malloc'd; NULL on failure). */
int psi_app_payload_pick(int suite, const uint8_t *resp, size_t resp_len, const size_t *idx,
                         size_t k, uint8_t **picked);

/** The payloads of k matched rows of a client whose shards g made the
 *  request, from their response elements `picked`: unmasked again (the
 *  client's ser(k_s * H(y)), a server value's masked element), looked up
 *  and opened in table t.  Returns: a psi code; PSI_E_PAYLOAD_AUTH and
 *  _LENGTH with the detail's index the position in picked; PSI_E_IO with
 *  the reason in err (a table file that cannot be read back); on failure
 *  *out, *lens are NULL.  Out: *out (k * L bytes), *lens (k lengths,
 *  PSI_PAYLOAD_NONE: no record); free both. */
int psi_app_payload_open(psi_shards *g, psi_app_paytab *t, const uint8_t *picked, size_t k,
                         uint8_t **out, size_t **lens, char *err, size_t err_len);

/** The message of a failed psi_app_payload_open (code rc; why: its PSI_E_IO
 *  reason) of the table `source` names: AUTH and LENGTH name the matched
 *  row (0-based `row` of the whole input; UINT64_MAX: not known). */
void psi_app_payload_open_error(char *err, size_t err_len, const char *source, int rc,
                                const char *why, uint64_t row);

/** The client's side of the join (PROTOCOL.md §22.1, §22.2, §22.4). */
typedef struct psi_app_join {
    FILE *f;                  // the output
    psi_shards *g;            // the client's shards (its key)
    psi_app_paytab *t;        // the server's table
    const char *head;         // the payload columns' header line
    size_t head_len;
    int raw;                  // the setup is raw: a matched row has a record
    const char *source;       // names the table in messages ("payload file X")
    int raw_cells;            // --raw-cells: the server's cells not neutralised
} psi_app_join;

/** Writes the k matched rows idx (ascending, indices into `in`, a chunk
 *  whose first row is row `base` of the whole input) with their payloads:
 *  picked are their response elements, opened (psi_app_payload_open) and
 *  written (psi_app_payload_rows_write; with `header`, the header line
 *  first).  A matched row without a record: against a raw setup, a table
 *  of another key or input (refused); else a false positive of a GCS or
 *  Bloom match (dropped, not counted).  Messages name rows of the whole
 *  input.  Returns: 0, or -1 with a message in err and *code the library's
 *  code (PSI_OK for a missing record or a failed write).  Out: *written. */
int psi_app_payload_join(const psi_app_join *j, const psi_app_input *in, int header,
                         const uint8_t *picked, const size_t *idx, size_t k, uint64_t base,
                         size_t *written, int *code, char *err, size_t err_len);

/** The first half of psi_app_payload_join, for a caller that writes its
 *  rows itself: the k payloads opened, and a matched row without a record
 *  refused against a raw setup (kept, PSI_PAYLOAD_NONE, otherwise); the
 *  head and every opened payload checked (psi_app_payload_check), a payload
 *  refused naming its row unless it has the head's number of fields.
 *  Returns: 0, or -1 with a message in err and *code as above (*pays and
 *  *lens NULL).  Out: *pays (k * pad_len bytes), *lens (k lengths): free
 *  both with psi_app_payload_join_free. */
int psi_app_payload_join_open(const psi_app_join *j, const uint8_t *picked, const size_t *idx,
                              size_t k, uint64_t base, uint8_t **pays, size_t **lens, int *code,
                              char *err, size_t err_len);

/** Wipes and frees what psi_app_payload_join_open gave (NULLs allowed). */
void psi_app_payload_join_free(const psi_app_join *j, uint8_t *pays, size_t *lens, size_t k);

/** Writes the matched rows idx[0..k) of `in` that have a payload (lens[i] not
 *  PSI_PAYLOAD_NONE), each followed by its payload, checked by
 *  psi_app_payload_join_open (CSV: the record as read, then
 *  psi_app_payload_write with ','; lines: psi_app_payload_line_write),
 *  after, for a CSV input and head not NULL, a header line: the input's
 *  header, then head's fields as cells.  raw: --raw-cells.
 *  Returns: 0 or -1 (a write failed).  Out: *written, the rows written. */
int psi_app_payload_rows_write(FILE *f, const psi_app_input *in, const uint8_t *head,
                               size_t head_len, const size_t *idx, size_t k,
                               const uint8_t *pays, size_t pad_len, const size_t *lens,
                               int raw, size_t *written);

#endif /* PSI_APP_PAYLOAD_H */
