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

#endif /* PSI_APP_PAYLOAD_H */
