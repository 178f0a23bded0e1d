/* The wasm module's own translation unit.  The module is the library
 * itself (psi/ and shard/, linked whole); this file only records what the
 * JS side may rely on, checked at compile time. */
#include <stddef.h>

#include "psi.h"
#include "psi_shard.h"

_Static_assert(sizeof(size_t) == 4, "wasm32: size_t is 32 bits, as the JS glue reads it");
_Static_assert(sizeof(psi_value) == 8, "psi_value is {pointer, length}");
_Static_assert(sizeof(psi_pair) == 8, "psi_pair is {client_index, server_index}");
_Static_assert(sizeof(psi_error_detail) == 24 && offsetof(psi_error_detail, code) == 0 &&
                   offsetof(psi_error_detail, field) == 4 &&
                   offsetof(psi_error_detail, index) == 8 &&
                   offsetof(psi_error_detail, offset) == 16,
               "psi_error_detail is {code i32, field ptr, index i64 @8, offset i64 @16}");
_Static_assert(sizeof(psi_settings) == 48 && offsetof(psi_settings, role) == 0 &&
                   offsetof(psi_settings, reveal_intersection) == 4 &&
                   offsetof(psi_settings, suite) == 16 && sizeof(psi_suite) == 4,
               "psi_settings is {role u32, reveal u32, progress ptr, progress_arg ptr, suite u32 @16, "
               "reserved[28]}, as js/lowlevel.mjs writes it");
