"""The C library through cffi's ABI mode: the declarations of psi.h and
psi_shard.h this package calls, and the shared libraries loaded once.

Every call is one batch (a whole set, a whole message): nothing crosses the
boundary per value.  cffi releases the GIL around every C call, so a long
call never blocks the other Python threads.
"""
from __future__ import annotations

import os
import pathlib

import cffi

# The declarations, as psi.h and psi_shard.h give them (ABI mode checks
# nothing at build time: python/tests/test_cdef.py compares each with the
# headers).
CDEF = """
    typedef enum { PSI_ROLE_CLIENT = 1, PSI_ROLE_SERVER = 2 } psi_role;
    typedef enum { PSI_SUITE_OPENMINED_P256 = 0, PSI_SUITE_P256_SSWU = 1,
                   PSI_SUITE_RISTRETTO255 = 2 } psi_suite;
    typedef enum { PSI_STRUCTURE_RAW = 0, PSI_STRUCTURE_GCS = 1,
                   PSI_STRUCTURE_BLOOM_FILTER = 2 } psi_structure;
    typedef void (*psi_progress_fn)(void *arg, uint64_t done, uint64_t total);
    typedef struct psi_settings {
        psi_role role;
        int reveal_intersection;
        psi_progress_fn progress;
        void *progress_arg;
        psi_suite suite;
        unsigned char reserved[28];
    } psi_settings;
    typedef struct psi_engine psi_engine;
    typedef struct psi_value { const uint8_t *data; size_t len; } psi_value;
    typedef struct psi_setup_params {
        psi_structure structure;
        double fpr;
        int64_t num_client_inputs;
    } psi_setup_params;
    typedef struct psi_pair { size_t client_index; size_t server_index; } psi_pair;
    typedef struct psi_error_detail {
        int code; const char *field; int64_t index; int64_t offset;
    } psi_error_detail;

    const char *psi_version(void);
    const char *psi_strerror(int code);
    const char *psi_error_name(int code);
    void psi_error_detail_get(psi_error_detail *d);
    const char *psi_suite_name(int suite);
    int psi_suite_from_name(psi_suite *suite, const char *name);

    void psi_settings_default(psi_settings *s);
    int psi_engine_create(psi_engine **out, const psi_settings *s);
    int psi_engine_create_from_key(psi_engine **out, const psi_settings *s,
                                   const uint8_t *key, size_t key_len);
    void psi_engine_free(psi_engine *e);
    int psi_engine_export_key(const psi_engine *e, uint8_t *out, size_t *out_len);

    size_t psi_request_bound(int suite, size_t n);
    size_t psi_response_bound(int suite, size_t n);
    size_t psi_message_element_bound(int suite, size_t msg_len);
    int psi_setup_bound(size_t *bound, int suite, const psi_setup_params *p, size_t n_server);
    int psi_setup_check(int suite, const psi_setup_params *p, uint64_t n_server,
                        const uint8_t *msg, size_t len);

    int psi_server_create_setup(const psi_engine *e, uint8_t *out, size_t *out_len,
                                size_t *perm, const psi_setup_params *p,
                                const psi_value *values, size_t n);
    int psi_server_process_request(const psi_engine *e, uint8_t *out, size_t *out_len,
                                   const uint8_t *request, size_t request_len);
    int psi_client_create_request(const psi_engine *e, uint8_t *out, size_t *out_len,
                                  const psi_value *values, size_t n);
    int psi_client_get_intersection(const psi_engine *e, size_t *out, size_t *out_count,
                                    const uint8_t *setup, size_t setup_len,
                                    const uint8_t *response, size_t response_len);
    int psi_client_get_intersection_size(const psi_engine *e, size_t *count,
                                         const uint8_t *setup, size_t setup_len,
                                         const uint8_t *response, size_t response_len);
    int psi_client_get_association(const psi_engine *e, psi_pair *out, size_t *out_count,
                                   const uint8_t *setup, size_t setup_len,
                                   const uint8_t *response, size_t response_len);
    int psi_association_map(psi_pair *pairs, size_t n_pairs, const size_t *perm,
                            size_t n_perm);
    int psi_response_decode(uint8_t *elements, size_t *count, int suite,
                            const uint8_t *msg, size_t len);
    int psi_engine_mask(const psi_engine *e, uint8_t *out, size_t *out_len,
                        const psi_value *values, size_t n);
    int psi_engine_unmask(const psi_engine *e, uint8_t *out, size_t *out_len,
                          const uint8_t *points, size_t n);
    size_t psi_payload_table_bytes(size_t n, size_t pad_len);
    int psi_payload_table_build(int suite, uint8_t *out, size_t *out_len,
                                const uint8_t *elements, const psi_value *payloads,
                                size_t n, size_t pad_len, const uint8_t *salt);
    int psi_payload_table_check(int suite, const uint8_t *table, size_t len, size_t *n,
                                size_t *pad_len);
    int psi_payload_head_check(int suite, const uint8_t *head, size_t len, uint64_t *n,
                               size_t *pad_len);
    int psi_payload_open(int suite, const uint8_t *table, size_t len,
                         const uint8_t *elements, size_t k, uint8_t *out, size_t out_len,
                         size_t *lens);

    typedef struct psi_shard_settings {
        size_t threads;
        size_t max_threads;
        size_t shards;
        psi_progress_fn progress;
        void *progress_arg;
        unsigned char reserved[32];
    } psi_shard_settings;
    typedef struct psi_shards psi_shards;
    void psi_shard_settings_default(psi_shard_settings *s);
    int psi_shards_create(psi_shards **out, const psi_engine *e, const psi_shard_settings *s);
    void psi_shards_free(psi_shards *g);
    size_t psi_shards_count(const psi_shards *g);
    size_t psi_shards_threads(const psi_shards *g);
    int psi_shards_server_create_setup(psi_shards *g, uint8_t *out, size_t *out_len,
                                       size_t *perm, const psi_setup_params *p,
                                       const psi_value *values, size_t n);
    int psi_shards_server_process_request(psi_shards *g, uint8_t *out, size_t *out_len,
                                          const uint8_t *request, size_t request_len);
    int psi_shards_client_create_request(psi_shards *g, uint8_t *out, size_t *out_len,
                                         const psi_value *values, size_t n);
    int psi_shards_client_get_intersection(psi_shards *g, size_t *out, size_t *out_count,
                                           const uint8_t *setup, size_t setup_len,
                                           const uint8_t *response, size_t response_len);
    int psi_shards_client_get_intersection_size(psi_shards *g, size_t *count,
                                                const uint8_t *setup, size_t setup_len,
                                                const uint8_t *response, size_t response_len);
    int psi_shards_client_get_association(psi_shards *g, psi_pair *out, size_t *out_count,
                                          const uint8_t *setup, size_t setup_len,
                                          const uint8_t *response, size_t response_len);
    int psi_shards_mask(psi_shards *g, uint8_t *out, size_t *out_len,
                        const psi_value *values, size_t n);
    int psi_shards_unmask(psi_shards *g, uint8_t *out, size_t *out_len,
                          const uint8_t *points, size_t n);
    int psi_shards_payload_table_build(psi_shards *g, uint8_t *out, size_t *out_len,
                                       const psi_value *values, const psi_value *payloads,
                                       size_t n, size_t pad_len, const uint8_t *salt);
"""
ffi = cffi.FFI()
ffi.cdef(CDEF)


def _load():
    """The libraries: SHARDPSI_LIB_DIR, else the copies bundled in _lib/
    (python/install.sh puts them there), else the system's."""
    here = pathlib.Path(__file__).resolve().parent
    dirs = [os.environ.get("SHARDPSI_LIB_DIR"), str(here / "_lib")]
    for d in dirs:
        if d and (pathlib.Path(d) / "libshardpsi_shard.so.0").exists():
            core = ffi.dlopen(str(pathlib.Path(d) / "libshardpsi.so.0"), ffi.RTLD_GLOBAL)
            return core, ffi.dlopen(str(pathlib.Path(d) / "libshardpsi_shard.so.0"))
    core = ffi.dlopen("libshardpsi.so.0", ffi.RTLD_GLOBAL)
    return core, ffi.dlopen("libshardpsi_shard.so.0")


lib, shard = _load()
