/*
 * What the two halves of the input reader share (app_input.c: the file,
 * line mode, the guard; app_input_csv.c: CSV mode).  Only they include it.
 */
#ifndef PSI_APP_INPUT_PRIV_H
#define PSI_APP_INPUT_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "app_input.h"

/* printf checks for the message functions (format is argument 3). */
#if defined(__GNUC__)
#define INPUT_PRINTF __attribute__((format(printf, 3, 4)))
#else
#define INPUT_PRINTF
#endif

/* Where messages go and how they start. */
typedef struct input_ctx {
    const char *label;  // the path, or "stdin": the start of every message
    char *err;          // may be NULL
    size_t err_len;
    size_t rows_line;   // CSV: if non-zero, the file's line number of the
                        // first record after the header (a chunk's header is
                        // a copy of the file's, app_input_stream.c)
} input_ctx;

/** Writes "<label>: <message>" into c->err.  Returns: code. */
INPUT_PRINTF int app_input_fail(const input_ctx *c, int code, const char *fmt, ...);

/** Returns: n * size bytes from malloc (at least one element, so never NULL
 *  on success), or NULL with a message (product overflow or no memory). */
void *app_input_alloc(const input_ctx *c, size_t n, size_t size);

/** Returns: the number of '\n' in [p, end). */
size_t app_input_count_nl(const uint8_t *p, const uint8_t *end);

/** Returns: the number of lines in [p, end), the last one with or without
 *  its '\n'; an upper bound of the CSV records there too. */
size_t app_input_count_lines(const uint8_t *p, const uint8_t *end);

/** Line mode: one value per line of in->data from offset start on. */
int app_input_lines(const input_ctx *c, psi_app_input *in, size_t start);

/** CSV mode from offset start on: the header, then column `column` of every
 *  record, into in->values and in->records.  Returns: PSI_APP_INPUT_OK or
 *  an error with its message. */
int app_input_csv(const input_ctx *c, psi_app_input *in, size_t start, const char *column);

#endif /* PSI_APP_INPUT_PRIV_H */
