/* Small helpers shared by the test programs: hex, files, JSON. */
#ifndef PSI_TEST_UTIL_H
#define PSI_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Decodes hex into a malloc'ed buffer; *len receives its size. Aborts the
 * test program on bad hex. */
uint8_t *tu_unhex(const char *hex, size_t *len);
/* Lowercase hex of buf, malloc'ed, NUL-terminated. */
char *tu_hex(const uint8_t *buf, size_t len);
/* Reads and parses a JSON file; aborts the program if it cannot. */
cJSON *tu_load_json(const char *path);
/* The seed for randomised tests: PSI_TEST_SEED or the time; printed. */
uint64_t tu_seed(const char *test);
/* xorshift64* step. */
uint64_t tu_rand(uint64_t *state);

#endif
