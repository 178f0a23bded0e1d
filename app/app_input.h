/*
 * Reading a party's values for `shardpsi server` and `shardpsi client`: one value per
 * line, or one column of a CSV file (RFC 4180), from a file or stdin.
 *
 * Line mode: every line is one value, its bytes as they are (UTF-8 is not
 * checked: a value is a byte string).  A line ends at "\n"; a "\r" right
 * before it is dropped (CRLF files).  A final newline is optional: a file
 * "a\nb" and "a\nb\n" both hold two values.  An empty line in the middle is
 * an empty value (so value i is always line i + 1).  An empty file holds no
 * values.  A "\r" anywhere else, even at the very end of the file, is part
 * of its value.
 *
 * CSV mode (column != NULL): RFC 4180.  The first record is the header and
 * names the columns; `column` must match exactly one header field (after
 * unquoting).  Records end at "\n" or "\r\n" outside quotes; fields are
 * separated by ","; a field is either bare (no '"' anywhere in it) or
 * quoted ("..." with "" for one quote, and commas and line breaks allowed
 * inside).  Every record must have as many fields as the header.  A final
 * line break is optional; empty lines (a record of zero characters) are
 * errors unless the header has exactly one column, where they are an empty
 * value.  A "\r" outside quotes that is not followed by "\n" is an error
 * ("bare carriage return"), not part of a field.  Errors name the record's
 * 1-based line number in the file (an unterminated quoted field: the line
 * where its quote opens) and, for errors inside a record, the field number.
 * A file holding only the header row is valid and has no values.
 *
 * The CSV guard of line mode (lines == 0): an input that looks like CSV is
 * refused (PSI_APP_INPUT_ELOOKS_CSV) instead of being read as lines, where
 * its header and whole rows would be hashed and silently match nothing.
 * It looks like CSV when its first line (up to the first "\n"; after a byte
 * order mark) contains a ',' -- the only delimiter CSV mode reads -- or when
 * path, not stdin, ends in ".csv" in any case.  Nothing else is looked at:
 * quotes, the other lines and the number of fields do not matter.  The
 * message names the input, quotes the first line (cleaned, at most
 * PSI_APP_INPUT_EXCERPT bytes) and says to add --column NAME or --lines.
 * lines == 1 reads lines without the guard.
 *
 * Both modes: a UTF-8 byte order mark (EF BB BF) at the very start is not
 * part of the input: spreadsheets write one before the header, and it would
 * otherwise stick to the first value or column name.  The span fields and
 * psi_app_input_write_header leave it out.
 *
 * Memory: the file's bytes once, plus 16 bytes per value (psi_value), plus
 * in CSV mode 16 bytes per record (its raw span) and the unescaped copies of
 * values that contained "" escapes.  Values point into that memory.  (In
 * CSV mode the two arrays are sized by the lines after the header, one more
 * entry for each line break inside quotes.)  Reading is linear in the input;
 * there is no allocation per value.
 */
#ifndef PSI_APP_INPUT_H
#define PSI_APP_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "psi.h"

/** A byte span of the input. */
typedef struct psi_app_span {
    size_t off, len;
} psi_app_span;

typedef struct psi_app_input {
    uint8_t *data;        // the input's bytes as read (not modified)
    size_t data_len;
    psi_value *values;    // n values, pointing into data or into extra
    size_t n;
    // CSV mode only (NULL in line mode):
    psi_app_span header;  // the header record's raw bytes, without its line break
    psi_app_span *records;// n raw records (without line break), in input order;
                          // allocated even for n = 0, so non-NULL exactly in CSV mode
    uint8_t *extra;       // unescaped copies of values with "" escapes (NULL if none)
    size_t extra_len;
} psi_app_input;

/* Errors of psi_app_input_read. */
#define PSI_APP_INPUT_OK 0
#define PSI_APP_INPUT_EOPEN (-1)   // cannot open (missing, permission, a directory)
#define PSI_APP_INPUT_EREAD (-2)   // a read failed
#define PSI_APP_INPUT_ENOMEM (-3)  // out of memory (or the file is too large)
#define PSI_APP_INPUT_ECSV (-4)    // malformed CSV: unterminated quote, a quote in a
                                   // bare field, text after a closing quote, wrong
                                   // field count, no header, column not found or
                                   // named twice
#define PSI_APP_INPUT_ELOOKS_CSV (-5) // line mode without lines = 1 on an input
                                      // that looks like CSV (see the guard above)

/* The most bytes of the first line the guard's message quotes. */
#define PSI_APP_INPUT_EXCERPT 60

/** Reads the whole input.  path "-" reads stdin.  column: NULL for line mode,
 *  else the CSV column's name.  lines: in line mode, 1 to read every line
 *  as a value whatever the input looks like (--lines), 0 to refuse an input
 *  that looks like CSV (the guard above); column and lines are not both
 *  given (the commands refuse it; here column wins).  Returns:
 *  PSI_APP_INPUT_OK or an error above, with a one-line message in err
 *  (naming the path and, for CSV, the line number and what is wrong, e.g.
 *  "data.csv: line 7: 3 fields, the header has 4").  Out: *in (zeroed on
 *  failure; free it with psi_app_input_free in any case). */
int psi_app_input_read(psi_app_input *in, const char *path, const char *column,
                       int lines, char *err, size_t err_len);

/** The guard alone, on the start of an input already read: data[0, len)
 *  holds at least the whole first line (shardpsi-mpi reads only that much);
 *  path as for psi_app_input_read.  Returns: PSI_APP_INPUT_OK, or
 *  PSI_APP_INPUT_ELOOKS_CSV with its message in err. */
int psi_app_input_guard(const char *path, const uint8_t *data, size_t len, char *err,
                        size_t err_len);

/** Line mode over bytes already read: data[0, len) is a run of whole lines
 *  of a file (the last one with or without its "\n"), such as a slice cut
 *  at line boundaries (shardpsi-mpi); at_start says it begins at the file's
 *  first byte, where a byte order mark is dropped.  Takes over `data`
 *  (malloc'd, freed with *in, also on failure).  `label` starts messages.
 *  Returns: PSI_APP_INPUT_OK or PSI_APP_INPUT_ENOMEM.  Out: *in. */
int psi_app_input_lines(psi_app_input *in, uint8_t *data, size_t len, int at_start,
                        const char *label, char *err, size_t err_len);

/** Frees everything; a zeroed *in is fine. */
void psi_app_input_free(psi_app_input *in);

/** Writes row i as the client outputs it, followed by "\n": in line mode the
 *  value's bytes; in CSV mode the raw record as it appears in the input
 *  (quotes and all, with any line breaks inside quotes kept as they are).
 *  Returns: 0, or -1 if the write failed (ferror). */
int psi_app_input_write_row(FILE *f, const psi_app_input *in, size_t i);

/** In CSV mode writes the header record and "\n"; in line mode nothing.
 *  Returns: 0 or -1. */
int psi_app_input_write_header(FILE *f, const psi_app_input *in);

/* ---- Reading in chunks (app_input_stream.c) ----------------------------
 *
 * The same values, errors and messages as psi_app_input_read, handed out a
 * chunk at a time so that no more than one chunk of the input is held: a
 * chunk is a run of whole records (lines, or CSV records, whose quoted
 * fields may hold line breaks) of at most max_values values, cut where a
 * block of block_bytes ends; a record longer than that is read whole, up to
 * record_max bytes, and a longer one is refused (PSI_APP_INPUT_ENOMEM, "does
 * not fit the memory budget").  Each chunk is a psi_app_input of its own: in
 * CSV mode its header is the file's and its records the chunk's.  The guard
 * of line mode looks at the first line, as psi_app_input_read does. */
#define PSI_APP_INPUT_ETOOLONG (-6) // a record longer than record_max

typedef struct psi_app_input_stream {
    const char *path;
    const char *column;
    int lines;
    char label[256];
    int fd;                  // -1: closed
    uint8_t *buf;            // [0, keep): the CSV header and "\n" after the first chunk
    size_t keep, start, len, cap;
    int eof, first;
    size_t line;             // file line of buf[start]
    size_t block_bytes, max_values, record_max;
    uint64_t values;         // handed out before the current chunk
    uint64_t consumed;       // input bytes before the current chunk
    uint64_t size;           // a regular file's size (0: not known)
    uint64_t left;           // bytes of the range still to read (UINT64_MAX: to the end)
    psi_app_input chunk;     // the current chunk; data points into buf
} psi_app_input_stream;

/** Opens path ("-": stdin) for reading in chunks (nothing is read yet).
 *  Returns: PSI_APP_INPUT_OK or PSI_APP_INPUT_EOPEN with its message. */
int psi_app_input_stream_open(psi_app_input_stream *s, const char *path, const char *column,
                              int lines, size_t block_bytes, size_t max_values,
                              size_t record_max, char *err, size_t err_len);

/** Limits an open stream of a regular file, before its first chunk, to
 *  the bytes [start, end), which must begin a line (start 0, or just after
 *  a '\n'): the part of the file one MPI rank reads (PROTOCOL.md §18.1).
 *  A range that does not start the file has no first line: no guard, no
 *  byte order mark, and its chunks' values are counted from the range's
 *  start.  Returns: PSI_APP_INPUT_OK, or PSI_APP_INPUT_EREAD with its
 *  message (the file cannot be positioned). */
int psi_app_input_stream_range(psi_app_input_stream *s, uint64_t start, uint64_t end,
                               char *err, size_t err_len);

/** Reads the next chunk into s->chunk (valid until the next call):
 *  s->chunk.n == 0 when the input has no more values.  Value i of the chunk
 *  is value s->values + i of the whole input.  Returns: PSI_APP_INPUT_OK
 *  or an error of psi_app_input_read (or PSI_APP_INPUT_ETOOLONG) with its
 *  message, as psi_app_input_read gives it for the whole input. */
int psi_app_input_stream_next(psi_app_input_stream *s, char *err, size_t err_len);

/** Returns: 1 when the current chunk holds the rest of the input (so a
 *  first chunk for which this holds is the whole input). */
int psi_app_input_stream_at_end(const psi_app_input_stream *s);

/** Returns: the number of values of the whole input as estimated from the
 *  bytes read so far and the file's size (exact at the end), or the values
 *  read so far for a pipe. */
uint64_t psi_app_input_stream_estimate(const psi_app_input_stream *s);

/** Closes the input and frees everything. */
void psi_app_input_stream_close(psi_app_input_stream *s);

#endif /* PSI_APP_INPUT_H */
