/*
 * What the `shardpsi` commands, `shardpsi-mpi` and the network code share:
 * exit codes, messages, option and number parsing, hex, names for messages.
 */
#ifndef PSI_APP_UTIL_H
#define PSI_APP_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Exit codes of every command. */
#define PSI_APP_EXIT_OK 0
#define PSI_APP_EXIT_FAIL 1   /* runtime failure or a failed check */
#define PSI_APP_EXIT_USAGE 2  /* bad command line or unreadable input file */

/* The value of a macro as a string literal, for help texts. */
#define PSI_APP_STR(x) PSI_APP_STR_(x)
#define PSI_APP_STR_(x) #x

/** The program that psi_app_error names ("shardpsi" unless set): set once,
 *  before any other thread starts, by a program sharing app/ (shardpsi-mpi). */
void psi_app_set_program(const char *name);

/** Prints "<program>: <message>\n" on stderr, in one write. */
void psi_app_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/** Formats a whole line (or a terminal's redrawn line) and writes it to
 *  stderr with one write(2), so that the lines of processes sharing stderr
 *  (the server's rounds) never interleave: a pipe keeps writes of up to
 *  PIPE_BUF (4096) bytes whole, a file opened for appending any write.
 *  `pre` and `who` go before the message as "<pre><who>: " (either may be
 *  NULL), `post` after it.  A line that cannot be formatted is dropped. */
void psi_app_stderr_line(const char *pre, const char *who, const char *post, const char *fmt,
                         va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 0)))
#endif
    ;

/** As psi_app_stderr_line with its arguments inline and no pre, who or post. */
void psi_app_stderr_printf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/** Returns: 1 if argv[*i] is "--name" followed by a value or "--name=value",
 *  0 if it is another argument.  Out: *value (NULL after a usage message
 *  when "--name" is the last argument); *i is moved past the value. */
int psi_app_opt_value(int argc, char **argv, int *i, const char *name,
                      const char **value);

/** Returns: 1 if `arg` is "-h" or "--help". */
int psi_app_is_help(const char *arg);

/** Parses a decimal integer in [0, max]; prints a usage message naming
 *  `what` and returns -1 on anything else (sign, junk, overflow). */
int psi_app_parse_size(size_t *out, const char *text, size_t max, const char *what);

/** As psi_app_parse_size, for a count in [1, max]: 0 is refused with
 *  "0 is not allowed, give 1 to <max>". */
int psi_app_parse_count(size_t *out, const char *text, size_t max, const char *what);

/** Parses an unsigned 64-bit decimal integer; -1 with a message on error. */
int psi_app_parse_u64(uint64_t *out, const char *text, const char *what);

/** Parses a finite double in [lo, hi] (open at lo/hi if the flag is set);
 *  -1 with a usage message on error. */
int psi_app_parse_double(double *out, const char *text, double lo, int lo_open,
                         double hi, int hi_open, const char *what);

/** The --suite option's names, for help texts and messages. */
#define PSI_APP_SUITE_NAMES "openmined-p256, p256-sswu or ristretto255"

/** Parses a suite name (psi_suite_from_name: openmined-p256, p256-sswu,
 *  ristretto255); -1 with a usage message naming `what` on anything else.
 *  Out: *out. */
int psi_app_parse_suite(int *out, const char *text, const char *what);

/** Decodes `len` hex characters (either case) into a new buffer.
 *  Returns: 0, or -1 with a reason in err (odd length, bad digit at N).
 *  Out: *out (malloc'd, at least 1 byte, freed by the caller), *out_len. */
int psi_app_hex_decode(uint8_t **out, size_t *out_len, const char *hex,
                       size_t len, char *err, size_t err_len);

/** Stores the low `bytes` bytes of v at p, big-endian (bytes 1 to 8). */
void psi_app_store_be(uint8_t *p, uint64_t v, int bytes);

/** Returns: the big-endian integer of `bytes` bytes at p (bytes 1 to 8). */
uint64_t psi_app_load_be(const uint8_t *p, int bytes);

/** Refuses --column NAME together with --lines (the two ways of reading an
 *  --input), with a usage message naming cmd.  Returns: 0, or -1 after the
 *  message. */
int psi_app_check_input_mode(const char *cmd, const char *column, int lines);

/** Copies text from outside (a peer's message, a line of an input file) into
 *  dst (cap bytes, NUL-terminated if cap > 0) for a one-line message:
 *  bytes below 0x20 and 0x7f become '?', other bytes are kept as they are.
 *  At most `max` bytes of src[0, len) are kept (fewer if dst is smaller);
 *  a shortened copy ends in "..." and is not cut inside a UTF-8 sequence.
 *  Returns: the length written. */
size_t psi_app_clean_text(char *dst, size_t cap, const uint8_t *src, size_t len,
                          size_t max);

/** Returns: malloc(n ? n : 1) times `size`, or NULL on overflow/failure. */
void *psi_app_alloc(size_t n, size_t size);

/** Sorts n result indices ascending.  The commands write an intersection's
 *  rows or indices in input order, whatever order the library gives them
 *  in (§9: by ciphertext, by hash or ascending): a rule of the commands'
 *  output, not of the protocol. */
void psi_app_sort_indices(size_t *idx, size_t n);

/** Returns: the suite's name, or "suite N" (in a static buffer) for an
 *  unknown number. */
const char *psi_app_suite_label(int suite);

/** Returns: "raw", "gcs", "bloom" or "any". */
const char *psi_app_structure_name(int structure);

/** The default false-positive rate of a GCS or Bloom setup, for the whole
 *  client set (OpenMined's). */
#define PSI_APP_DEFAULT_FPR 1e-9

/** Has the C library map and unmap every buffer of 1 MiB or more (glibc's
 *  M_MMAP_THRESHOLD; nothing elsewhere).  Without it, glibc raises its
 *  threshold to the size of each large buffer freed, later ones come from
 *  the heap, and its fragmentation grew the peak of a step spilled in
 *  chunks with the number of chunks (a request under --memory 16M: 11.8
 *  MiB at 8 chunks, 13.0 MiB at 31; with a fixed threshold 11.8 both).
 *  Call first thing in main. */
void psi_app_malloc_setup(void);

#endif /* PSI_APP_UTIL_H */
