/*
 * JSON files for the CLI: libcjson plus the true byte length of strings.
 *
 * cJSON decodes "\u0000" into a NUL byte but keeps only a NUL-terminated
 * valuestring, so such a string would look cut short.  psi_app_json_load
 * therefore measures every string literal of the raw text itself and keeps
 * the length of those holding U+0000; psi_app_json_bytes returns it.
 */
#ifndef PSI_APP_JSON_H
#define PSI_APP_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* A string item whose bytes contain U+0000, with its decoded length. */
typedef struct psi_app_json_nul {
    const cJSON *item;
    size_t len;
} psi_app_json_nul;

typedef struct psi_app_json {
    cJSON *root;
    psi_app_json_nul *nul;  /* strings holding U+0000, usually none */
    size_t n_nul;
} psi_app_json;

/** Reads and parses the JSON file `path` (the whole file must be one JSON
 *  value, surrounded only by whitespace).
 *  Returns: 0, or -1 with a message in err (unreadable, not valid JSON with
 *  line and column, an object key holding U+0000, out of memory).
 *  Out: *j, freed with psi_app_json_free (also after a failure). */
int psi_app_json_load(psi_app_json *j, const char *path, char *err, size_t err_len);

/** Frees what psi_app_json_load made; a zeroed *j is fine. */
void psi_app_json_free(psi_app_json *j);

/** Out: the bytes of the string item `item` of `j`, U+0000 included
 *  (*data stays NUL-terminated). */
void psi_app_json_bytes(const psi_app_json *j, const cJSON *item,
                        const char **data, size_t *len);

#endif /* PSI_APP_JSON_H */
