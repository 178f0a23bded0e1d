#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int nibble(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

uint8_t *tu_unhex(const char *hex, size_t *len)
{
    size_t n = strlen(hex);
    if (n % 2 != 0) {
        fprintf(stderr, "odd hex length\n");
        abort();
    }
    uint8_t *out = malloc(n / 2 + 1);
    for (size_t i = 0; i < n / 2; i++) {
        int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
        if (out == NULL || hi < 0 || lo < 0) {
            fprintf(stderr, "bad hex\n");
            abort();
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    *len = n / 2;
    return out;
}

char *tu_hex(const uint8_t *buf, size_t len)
{
    char *out = malloc(2 * len + 1);
    if (out == NULL)
        abort();
    for (size_t i = 0; i < len; i++)
        snprintf(out + 2 * i, 3, "%02x", buf[i]);
    out[2 * len] = '\0';
    return out;
}

cJSON *tu_load_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        abort();
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    if (text == NULL || fread(text, 1, (size_t)size, f) != (size_t)size)
        abort();
    fclose(f);
    text[size] = '\0';
    cJSON *json = cJSON_ParseWithLength(text, (size_t)size);
    free(text);
    if (json == NULL) {
        fprintf(stderr, "invalid JSON in %s\n", path);
        abort();
    }
    return json;
}

uint64_t tu_seed(const char *test)
{
    const char *env = getenv("PSI_TEST_SEED");
    uint64_t seed = env != NULL ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    if (seed == 0)
        seed = 1;
    printf("# %s: PSI_TEST_SEED=%llu\n", test, (unsigned long long)seed);
    return seed;
}

uint64_t tu_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}
