/*
 * Helpers shared by the `shardpsi` commands: exit codes, messages, option and
 * number parsing, hex, timing.  Only the CLI includes this header.
 */
#ifndef PSI_CLI_UTIL_H
#define PSI_CLI_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Exit codes of every command. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1   /* runtime failure or a failed check */
#define CLI_EXIT_USAGE 2  /* bad command line or unreadable input file */

/* The value of a macro as a string literal, for help texts. */
#define PSI_CLI_STR(x) PSI_CLI_STR_(x)
#define PSI_CLI_STR_(x) #x

/** Prints "shardpsi: <message>\n" on stderr. */
void psi_cli_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/** Returns: 1 if argv[*i] is "--name" followed by a value or "--name=value",
 *  0 if it is another argument.  Out: *value (NULL after a usage message
 *  when "--name" is the last argument); *i is moved past the value. */
int psi_cli_opt_value(int argc, char **argv, int *i, const char *name,
                      const char **value);

/** Returns: 1 if `arg` is "-h" or "--help". */
int psi_cli_is_help(const char *arg);

/** Parses a decimal integer in [0, max]; prints a usage message naming
 *  `what` and returns -1 on anything else (sign, junk, overflow). */
int psi_cli_parse_size(size_t *out, const char *text, size_t max, const char *what);

/** As psi_cli_parse_size, for a count in [1, max]: 0 is refused with
 *  "0 is not allowed, give 1 to <max>". */
int psi_cli_parse_count(size_t *out, const char *text, size_t max, const char *what);

/** Parses an unsigned 64-bit decimal integer; -1 with a message on error. */
int psi_cli_parse_u64(uint64_t *out, const char *text, const char *what);

/** Parses a finite double in [lo, hi] (open at lo/hi if the flag is set);
 *  -1 with a usage message on error. */
int psi_cli_parse_double(double *out, const char *text, double lo, int lo_open,
                         double hi, int hi_open, const char *what);

/** The --suite option's names, for help texts and messages. */
#define PSI_CLI_SUITE_NAMES "openmined-p256, p256-sswu or ristretto255"

/** Parses a suite name (psi_suite_from_name: openmined-p256, p256-sswu,
 *  ristretto255); -1 with a usage message naming `what` on anything else.
 *  Out: *out. */
int psi_cli_parse_suite(int *out, const char *text, const char *what);

/** Decodes `len` hex characters (either case) into a new buffer.
 *  Returns: 0, or -1 with a reason in err (odd length, bad digit at N).
 *  Out: *out (malloc'd, at least 1 byte, freed by the caller), *out_len. */
int psi_cli_hex_decode(uint8_t **out, size_t *out_len, const char *hex,
                       size_t len, char *err, size_t err_len);

/** Stores the low `bytes` bytes of v at p, big-endian (bytes 1 to 8). */
void psi_cli_store_be(uint8_t *p, uint64_t v, int bytes);

/** Returns: the big-endian integer of `bytes` bytes at p (bytes 1 to 8). */
uint64_t psi_cli_load_be(const uint8_t *p, int bytes);

/** Returns: a monotonic clock reading in milliseconds. */
double psi_cli_now_ms(void);

/** Returns: the process's peak resident memory so far in MiB (VmHWM, from
 *  getrusage), or -1 when unknown. */
double psi_cli_peak_mib(void);

/** Refuses --column NAME together with --lines (the two ways of reading an
 *  --input), with a usage message naming cmd.  Returns: 0, or -1 after the
 *  message. */
int psi_cli_check_input_mode(const char *cmd, const char *column, int lines);

/** Copies text from outside (a peer's message, a line of an input file) into
 *  dst (cap bytes, NUL-terminated if cap > 0) for a one-line message:
 *  bytes below 0x20 and 0x7f become '?', other bytes are kept as they are.
 *  At most `max` bytes of src[0, len) are kept (fewer if dst is smaller);
 *  a shortened copy ends in "..." and is not cut inside a UTF-8 sequence.
 *  Returns: the length written. */
size_t psi_cli_clean_text(char *dst, size_t cap, const uint8_t *src, size_t len,
                          size_t max);

/** Returns: malloc(n ? n : 1) times `size`, or NULL on overflow/failure. */
void *psi_cli_alloc(size_t n, size_t size);

#endif /* PSI_CLI_UTIL_H */
