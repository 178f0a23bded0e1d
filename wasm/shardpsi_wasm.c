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
_Static_assert(sizeof(psi_setup_params) == 24 && offsetof(psi_setup_params, structure) == 0 &&
                   offsetof(psi_setup_params, fpr) == 8 &&
                   offsetof(psi_setup_params, num_client_inputs) == 16,
               "psi_setup_params is {structure u32, pad, fpr f64 @8, num_client_inputs i64 @16}");
_Static_assert(sizeof(psi_op_args) == 112 && sizeof(psi_op) == 4 && sizeof(psi_step_kind) == 4 &&
                   offsetof(psi_op_args, op) == 0 && offsetof(psi_op_args, values) == 4 &&
                   offsetof(psi_op_args, n_values) == 8 && offsetof(psi_op_args, message) == 12 &&
                   offsetof(psi_op_args, message_len) == 16 &&
                   offsetof(psi_op_args, setup) == 20 && offsetof(psi_op_args, setup_len) == 24 &&
                   offsetof(psi_op_args, params) == 32 && offsetof(psi_op_args, step) == 56 &&
                   offsetof(psi_op_args, slices) == 60 &&
                   offsetof(psi_op_args, slice_counts) == 64 &&
                   offsetof(psi_op_args, external) == 68 &&
                   offsetof(psi_op_args, progress) == 72 &&
                   offsetof(psi_op_args, progress_arg) == 76 &&
                   offsetof(psi_op_args, setup_read) == 80 &&
                   offsetof(psi_op_args, setup_read_arg) == 84 &&
                   offsetof(psi_op_args, setup_max_held) == 88 &&
                   offsetof(psi_op_args, reserved) == 96,
               "psi_op_args is {op u32, values ptr, n_values, message ptr, message_len, setup ptr, "
               "setup_len, params @32 (24), step u32 @56, slices @60, slice_counts ptr @64, "
               "external i32 @68, progress ptr @72, progress_arg ptr @76, setup_read fn @80, "
               "setup_read_arg ptr @84, setup_max_held u64 @88, reserved[16] @96}, "
               "as js/lowlevel.mjs writes it");
_Static_assert(PSI_MESSAGE_HEAD_MAX == 16 && PSI_MESSAGE_REQUEST == 1 && PSI_MESSAGE_RESPONSE == 2 &&
                   PSI_MESSAGE_SETUP_RAW == 3,
               "js/lowlevel.mjs's MESSAGE and MESSAGE_HEAD_MAX");
_Static_assert(sizeof(psi_op_output) == 32 && offsetof(psi_op_output, bytes) == 0 &&
                   offsetof(psi_op_output, len) == 4 && offsetof(psi_op_output, sink) == 8 &&
                   offsetof(psi_op_output, sink_arg) == 12 &&
                   offsetof(psi_op_output, perm) == 16 && offsetof(psi_op_output, indices) == 20 &&
                   offsetof(psi_op_output, pairs) == 24 && offsetof(psi_op_output, count) == 28,
               "psi_op_output is {bytes ptr, len, sink fn, sink_arg ptr, perm ptr, indices ptr, "
               "pairs ptr, count}");
_Static_assert(sizeof(psi_step) == 20 && offsetof(psi_step, kind) == 0 &&
                   offsetof(psi_step, offset) == 4 && offsetof(psi_step, count) == 8 &&
                   offsetof(psi_step, values) == 12 && offsetof(psi_step, points) == 16,
               "psi_step is {kind u32, offset, count, values ptr, points ptr}, as js/lowlevel.mjs "
               "reads it");
