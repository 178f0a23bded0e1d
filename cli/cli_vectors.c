/* `psi vectors check FILE...`: replays wire vector files. */
#include <stdio.h>
#include <string.h>

#include "cli_commands.h"
#include "cli_util.h"
#include "cli_vectors.h"

#define VCHECK_FORMAT "psi-wire-vectors/1"

static const char vectors_usage[] =
    "Usage: psi vectors check [--quiet | --verbose] FILE...\n"
    "\n"
    "Checks wire vector files (format \"" VCHECK_FORMAT "\") against this\n"
    "library.  For every case it rebuilds the server setup, the request and\n"
    "the response (from the stored request) from the case's keys and inputs,\n"
    "and the intersection (when revealed) and its size from the stored setup\n"
    "and response, and compares each with the stored value byte for byte.\n"
    "\n"
    "Prints \"FAIL <file>: <case>: <what differed>\" for each failing case and\n"
    "a last line \"N passed, M failed\".\n"
    "\n"
    "Options:\n"
    "  --verbose   also print \"ok <file>: <case>\" for each passing case\n"
    "  --quiet     print nothing for passing cases (the default)\n"
    "  -h, --help  show this help\n"
    "\n"
    "Exit status: 0 if every case passed; 1 if a case failed; 2 on a usage\n"
    "error or a file that cannot be read, is not valid JSON, has another\n"
    "format or holds a malformed case (which counts as failed).\n";

typedef struct vcheck_stats {
    size_t passed, failed;
    int file_errors;  // unreadable files and malformed cases
    int verbose;
} vcheck_stats;

void psi_cli_vectors_usage(FILE *out)
{
    fputs(vectors_usage, out);
}

static void vcheck_case(vcheck_stats *st, const char *path, const psi_cli_json *j,
                        const cJSON *obj, size_t index)
{
    psi_cli_case c;
    char msg[1024];
    int rc = psi_cli_case_read(&c, j, obj, msg, sizeof msg);

    if (rc == 0)
        rc = psi_cli_case_run(&c, msg, sizeof msg);
    if (rc < 0) {
        psi_cli_error("%s: cases[%zu]%s%s%s: malformed: %s", path, index,
                      c.name ? " (" : "", c.name ? c.name : "", c.name ? ")" : "", msg);
        st->file_errors++;
        st->failed++;
    } else if (rc > 0) {
        printf("FAIL %s: %s: %s\n", path, c.name, msg);
        st->failed++;
    } else {
        if (st->verbose)
            printf("ok %s: %s\n", path, c.name);
        st->passed++;
    }
    psi_cli_case_free(&c);
}

/* Returns: the "cases" array of a well-formed file, or NULL with a message. */
static const cJSON *vcheck_cases(const char *path, const psi_cli_json *j)
{
    const cJSON *format, *cases;
    const char *text;
    size_t len;

    if (!cJSON_IsObject(j->root)) {
        psi_cli_error("%s: the top level is not a JSON object", path);
        return NULL;
    }
    format = cJSON_GetObjectItemCaseSensitive(j->root, "format");
    if (!cJSON_IsString(format)) {
        psi_cli_error("%s: \"format\" is %s, expected \"%s\"", path,
                      format ? "not a string" : "missing", VCHECK_FORMAT);
        return NULL;
    }
    psi_cli_json_bytes(j, format, &text, &len);
    if (len != strlen(VCHECK_FORMAT) || memcmp(text, VCHECK_FORMAT, len) != 0) {
        psi_cli_error("%s: unknown format \"%.60s\", expected \"%s\"", path,
                      format->valuestring, VCHECK_FORMAT);
        return NULL;
    }
    cases = cJSON_GetObjectItemCaseSensitive(j->root, "cases");
    if (!cJSON_IsArray(cases)) {
        psi_cli_error("%s: \"cases\" is %s", path,
                      cases ? "not an array" : "missing");
        return NULL;
    }
    return cases;
}

static void vcheck_file(vcheck_stats *st, const char *path)
{
    psi_cli_json j;
    const cJSON *cases, *obj;
    char err[256];
    size_t index = 0;

    if (psi_cli_json_load(&j, path, err, sizeof err) != 0) {
        psi_cli_error("%s: %s", path, err);
        st->file_errors++;
    } else if ((cases = vcheck_cases(path, &j)) == NULL) {
        st->file_errors++;
    } else {
        cJSON_ArrayForEach(obj, cases)
            vcheck_case(st, path, &j, obj, index++);
    }
    psi_cli_json_free(&j);
}

static int vcheck_run(int argc, char **argv)
{
    vcheck_stats st = {0, 0, 0, 0};
    int i = 1;

    for (; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        if (psi_cli_is_help(argv[i])) {
            psi_cli_vectors_usage(stdout);
            return CLI_EXIT_OK;
        } else if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0) {
            st.verbose = 1;
        } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
            st.verbose = 0;
        } else if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else {
            psi_cli_error("vectors check: unknown option '%s'", argv[i]);
            return CLI_EXIT_USAGE;
        }
    }
    if (i >= argc) {
        psi_cli_error("vectors check: no FILE given (see 'psi vectors check --help')");
        return CLI_EXIT_USAGE;
    }
    for (; i < argc; i++)
        vcheck_file(&st, argv[i]);
    printf("%zu passed, %zu failed\n", st.passed, st.failed);
    if (st.file_errors > 0)
        return CLI_EXIT_USAGE;
    return st.failed > 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

int psi_cli_cmd_vectors(int argc, char **argv)
{
    if (argc < 2) {
        psi_cli_error("vectors: missing subcommand (see 'psi vectors --help')");
        return CLI_EXIT_USAGE;
    }
    if (psi_cli_is_help(argv[1])) {
        psi_cli_vectors_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "check") == 0)
        return vcheck_run(argc - 1, argv + 1);
    psi_cli_error("vectors: unknown subcommand '%s' (see 'psi vectors --help')",
                  argv[1]);
    return CLI_EXIT_USAGE;
}
