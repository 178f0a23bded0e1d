/* A main for the fuzz harnesses without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on every file under the directories (or on
 * the files) named on the command line, in sorted order, so that every
 * build replays the committed corpora and regressions (meson test --suite
 * fuzz).  Files whose names start with '.' or "README" are skipped.  A
 * harness that finds a violation aborts; a missing argument path is an
 * error (exit 2). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Optional in a harness (libFuzzer's rule); none defines it today. */
#if defined(__GNUC__)
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);
#endif

static size_t files_run;

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads a whole file.  Returns: 0 or -1.  Out: *data (malloc'd), *size. */
static int read_file(const char *path, uint8_t **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    int bad = 0;

    if (f == NULL)
        return -1;
    for (;;) {
        if (len == cap) {
            uint8_t *p = realloc(buf, cap = cap ? 2 * cap : 4096);

            if (p == NULL) {
                bad = 1;
                break;
            }
            buf = p;
        }
        size_t got = fread(buf + len, 1, cap - len, f);

        len += got;
        if (got == 0)
            break;
    }
    bad |= ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return -1;
    }
    *data = buf;
    *size = len;
    return 0;
}

static int run_path(const char *path);

/* Runs every entry of a directory, in sorted order. */
static int run_dir(const char *path)
{
    DIR *d = opendir(path);
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;

    if (d == NULL) {
        perror(path);
        return -1;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, "README", 6) == 0)
            continue;
        if (n == cap) {
            char **p = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);

            if (p == NULL) {
                rc = -1;
                break;
            }
            names = p;
        }
        size_t len = strlen(path) + strlen(e->d_name) + 2;

        if ((names[n] = malloc(len)) == NULL) {
            rc = -1;
            break;
        }
        snprintf(names[n++], len, "%s/%s", path, e->d_name);
    }
    closedir(d);
    if (n > 0)
        qsort(names, n, sizeof *names, compare_names);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0)
            rc = run_path(names[i]);
        free(names[i]);
    }
    free(names);
    return rc;
}

static int run_path(const char *path)
{
    struct stat st;
    uint8_t *data;
    size_t size;

    if (stat(path, &st) != 0) {
        perror(path);
        return -1;
    }
    if (S_ISDIR(st.st_mode))
        return run_dir(path);
    if (read_file(path, &data, &size) != 0) {
        fprintf(stderr, "%s: cannot read\n", path);
        return -1;
    }
    // a copy of exactly size bytes, so that ASan sees reads past the end
    uint8_t *copy = malloc(size > 0 ? size : 1);

    if (copy == NULL) {
        free(data);
        return -1;
    }
    memcpy(copy, data, size);
    free(data);
    (void)LLVMFuzzerTestOneInput(copy, size);
    free(copy);
    files_run++;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
        return 2;
    }
#if defined(__GNUC__)
    if (LLVMFuzzerInitialize != NULL)
        (void)LLVMFuzzerInitialize(&argc, &argv);
#endif
    for (int i = 1; i < argc; i++) {
        if (run_path(argv[i]) != 0)
            return 2;
    }
    printf("%zu inputs run\n", files_run);
    return 0;
}
