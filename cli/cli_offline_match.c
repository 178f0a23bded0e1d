/*
 * `shardpsi match` (PROTOCOL.md §17, §20): the client's last step, the
 * intersection of its input with the server's setup from the server's
 * response.  An input and a response that fit the memory budget are held
 * whole; past it, the response is read in pieces and unmasked a chunk at a
 * time into sorted runs on disk, the library's finish merges the runs
 * against the setup (psi_plan_match_sink), the matched indices are put in
 * input order through runs of their own (app_index_runs.h), and the input
 * is read a second time to write them, or the rows they name.  A raw
 * setup is read in windows as it is checked and matched, never whole; a
 * GCS or Bloom setup is held (8 bytes a server value, the bit array) and
 * refused up front past a quarter of the budget.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_offline.h"
#include "cli_offline_spill.h"
#include "app_payload.h"
#include "app_spill.h"
#include "app_util.h"

/* The files, for the library's messages. */
static const char *match_files(psi_app_offline *s, char *buf, size_t len)
{
    snprintf(buf, len, "setup %s, response %s", s->o.setup, s->o.response);
    return buf;
}

/* A response holds one element per request value: another size is the
 * answer to another input's request (checked after the library, which
 * names a malformed file or one of another suite first).  Returns: 0 or
 * -1 (reported). */
static int match_check_count(psi_app_offline *s, uint64_t n, uint64_t resp_len)
{
    size_t want = n <= SIZE_MAX / 64 ? psi_response_bound(s->o.suite, (size_t)n) : 0;
    if (resp_len == want)
        return 0;
    return psi_app_offline_fail(s, "response %s (%" PRIu64 " bytes) does not answer a request "
                                "of the %" PRIu64 " values of %s (%zu bytes expected): give "
                                "the response to this input's request", s->o.response,
                                resp_len, n, s->o.input, want);
}

/* The matched rows with the server's payload columns (PROTOCOL.md §22):
 * idx, ascending, from a response held whole.  A row without a payload is
 * a false positive of a GCS or Bloom setup (dropped, and not counted), or,
 * against a raw setup, a payload file that does not go with the setup
 * (refused).  Returns: 0 or -1 (reported).  Out: *count, the rows written. */
static int match_write_payloads(psi_app_offline *s, const uint8_t *setup, size_t setup_len,
                                const uint8_t *resp, size_t resp_len, const size_t *idx,
                                size_t k, size_t *count)
{
    psi_app_payfile pf;
    psi_setup *parsed = NULL;
    size_t kept = k;
    char source[4200];
    int code = PSI_OK, raw, rc;

    while (kept > 0 && idx[kept - 1] >= s->in.n)
        kept--; // refused later: the response is not this input's
    if (psi_app_payfile_open(&pf, s->o.payloads, s->o.suite,
                             s->o.memory != 0 ? s->o.memory : psi_app_memory_default(), s->err,
                             sizeof s->err) != 0)
        return psi_app_offline_fail(s, "%s", s->err);
    // Whether a row without a payload is refused (raw) or dropped.
    raw = psi_setup_parse(&parsed, s->o.suite, setup, setup_len) == PSI_OK &&
          psi_setup_structure(parsed) == PSI_STRUCTURE_RAW;
    psi_setup_free(parsed);
    snprintf(source, sizeof source, "payload file %s", s->o.payloads);
    psi_app_join j = {s->out.f, s->g, &pf.t, pf.head, pf.head_len, raw, source,
                      s->o.raw_cells};
    uint8_t *picked = NULL;
    rc = psi_app_payload_pick(s->o.suite, resp, resp_len, idx, kept, &picked);
    if (rc != PSI_OK)
        snprintf(s->err, sizeof s->err, "response %s: %s (%s)", s->o.response,
                 psi_strerror(rc), psi_error_name(rc) ? psi_error_name(rc) : "?");
    else
        rc = psi_app_payload_join(&j, &s->in, 1, picked, idx, kept, 0, count, &code, s->err,
                                  sizeof s->err);
    free(picked);
    psi_app_payfile_close(&pf);
    return rc != 0 ? psi_app_offline_fail(s, "%s", s->err) : 0;
}

/* Computes the result and writes it to s->out (not committed).  Out: *count. */
static int match_write_whole(psi_app_offline *s, const uint8_t *setup, size_t setup_len,
                             const uint8_t *resp, size_t resp_len, size_t *count)
{
    size_t cap = psi_message_element_bound(s->o.suite, resp_len), k = cap;
    size_t *idx = NULL;
    char files[512];
    int prc;

    match_files(s, files, sizeof files);
    if (s->o.mode == PSI_APP_OFFLINE_COUNT) {
        prc = psi_shards_client_get_intersection_size(s->g, count, setup, setup_len, resp,
                                                      resp_len);
        if (prc != PSI_OK)
            return psi_app_offline_fail_psi(s, "cannot count the intersection", files,
                                            prc);
        fprintf(s->out.f, "%zu\n", *count);
        return 0;
    }
    if ((idx = psi_app_alloc(cap, sizeof *idx)) == NULL)
        return psi_app_offline_fail(s, "out of memory for the intersection");
    prc = psi_shards_client_get_intersection(s->g, idx, &k, setup, setup_len, resp,
                                             resp_len);
    if (prc != PSI_OK) {
        free(idx);
        return psi_app_offline_fail_psi(s, "cannot compute the intersection", files,
                                        prc);
    }
    psi_app_sort_indices(idx, k);
    if (s->o.payloads != NULL) {
        int rc = match_write_payloads(s, setup, setup_len, resp, resp_len, idx, k, count);
        free(idx);
        return rc;
    }
    if (s->o.mode == PSI_APP_OFFLINE_ROWS)
        psi_app_input_write_header(s->out.f, &s->in);
    for (size_t i = 0; i < k; i++) {
        if (idx[i] >= s->in.n)
            break; // refused below: the response is not this input's
        if (s->o.mode == PSI_APP_OFFLINE_ROWS)
            psi_app_input_write_row(s->out.f, &s->in, idx[i]);
        else
            fprintf(s->out.f, "%zu\n", idx[i]);
    }
    free(idx);
    *count = k;
    return 0;
}

/* What a failed match could not do. */
static const char *match_what(const psi_app_offline *s)
{
    return s->o.mode == PSI_APP_OFFLINE_COUNT ? "cannot count the intersection"
           : s->o.mode == PSI_APP_OFFLINE_ASSOCIATION ? "cannot compute the association table"
                                                       : "cannot compute the intersection";
}

/* The association table, the setup and response held whole: the pairs of
 * the whole call mapped and written as the spilled path does (a raw setup,
 * the permutation checked, then the response).  Returns: 0 or -1
 * (reported).  Out: *count. */
static int match_assoc_whole(psi_app_offline *s, spill *x, const uint8_t *setup,
                             size_t setup_len, const uint8_t *resp, size_t resp_len,
                             size_t *count)
{
    const psi_app_budget *b = psi_cli_spill_budget(x);
    size_t cap = psi_message_element_bound(s->o.suite, resp_len), k = cap;
    psi_setup *parsed = NULL;
    psi_pair *pairs = NULL;
    psi_cli_assoc m;
    uint64_t n_server = 0;
    char files[512];
    int fd = -1, rc = -1, prc;

    match_files(s, files, sizeof files);
    psi_cli_assoc_init(&m, psi_cli_spill_dir(x), b->read_bytes);
    if ((prc = psi_setup_parse(&parsed, s->o.suite, setup, setup_len)) != PSI_OK) {
        psi_app_offline_fail_psi(s, match_what(s), files, prc);
        goto done;
    }
    if (psi_cli_assoc_setup(s, parsed, &n_server) != 0 ||
        psi_cli_assoc_perm_open(s, n_server, psi_cli_spill_dir(x), b->read_bytes, &fd) != 0)
        goto done;
    if (psi_cli_assoc_begin(&m, fd, n_server) != 0) {
        psi_app_offline_fail(s, "%s", m.err);
        goto done;
    }
    if ((pairs = psi_app_alloc(cap, sizeof *pairs)) == NULL) {
        psi_app_offline_fail(s, "out of memory for the association table");
        goto done;
    }
    prc = psi_shards_client_get_association(s->g, pairs, &k, setup, setup_len, resp, resp_len);
    if (prc != PSI_OK) {
        psi_app_offline_fail_psi(s, match_what(s), files, prc);
        goto done;
    }
    if (psi_cli_assoc_take(&m, pairs, k) != 0) {
        psi_app_offline_fail(s, "%s", m.err);
        goto done;
    }
    rc = psi_cli_assoc_write(s, &m, count);
done:
    if (fd >= 0)
        close(fd);
    psi_setup_free(parsed);
    free(pairs);
    psi_cli_assoc_free(&m);
    return rc;
}

/* Input, setup and response held whole. */
static int match_whole(psi_app_offline *s, spill *x, size_t *count)
{
    size_t setup_len = 0, resp_len = 0;
    uint8_t *setup = NULL, *resp = NULL;
    int rc = PSI_APP_EXIT_USAGE;

    if (psi_app_offline_input(s) != 0 ||
        psi_app_offline_read_msg(s, s->o.setup, "setup", &setup, &setup_len) != 0 ||
        psi_app_offline_read_msg(s, s->o.response, "response", &resp, &resp_len) != 0 ||
        psi_app_offline_open(s, &s->out, s->o.output) != 0)
        goto done;
    rc = PSI_APP_EXIT_FAIL;
    if (psi_app_offline_shards(s, PSI_ROLE_CLIENT, s->o.mode != PSI_APP_OFFLINE_COUNT) != 0)
        goto done;
    if (s->o.mode == PSI_APP_OFFLINE_ASSOCIATION) {
        if (match_assoc_whole(s, x, setup, setup_len, resp, resp_len, count) != 0)
            goto done;
    } else {
        psi_app_progress_begin(&s->prog, "matching", s->in.n);
        if (match_write_whole(s, setup, setup_len, resp, resp_len, count) != 0) {
            psi_app_progress_end(&s->prog);
            goto done;
        }
        psi_app_progress_end(&s->prog);
    }
    if (match_check_count(s, s->in.n, resp_len) != 0)
        goto done;
    rc = PSI_APP_EXIT_OK;
done:
    free(setup);
    free(resp);
    return rc;
}

/* Opens the input in chunks of the budget.  Returns: 0 or -1 (reported). */
static int match_input_open(psi_app_offline *s, spill *x, psi_app_input_stream *in)
{
    const psi_app_budget *b = psi_cli_spill_budget(x);
    if (psi_app_input_stream_open(in, s->o.input, s->o.column, s->o.lines, b->block_bytes,
                                  b->chunk_values, b->record_max, s->err,
                                  sizeof s->err) != 0)
        return psi_app_offline_fail(s, "%s", s->err);
    return 0;
}

int psi_cli_offline_count(psi_app_offline *s, uint64_t *n)
{
    psi_app_input_stream in;
    psi_app_budget b;
    int rc = -1;

    *n = 0;
    psi_app_budget_init(&b, s->o.memory != 0 ? s->o.memory : psi_app_memory_default());
    if (psi_app_input_stream_open(&in, s->o.input, s->o.column, s->o.lines, b.block_bytes,
                                  b.chunk_values, b.record_max, s->err, sizeof s->err) != 0)
        return psi_app_offline_fail(s, "%s", s->err);
    psi_app_progress_begin(&s->prog, "reading the input", 0);
    do {
        if (psi_app_input_stream_next(&in, s->err, sizeof s->err) != 0) {
            psi_app_offline_fail(s, "%s", s->err);
            goto done;
        }
        *n += in.chunk.n;
        psi_app_progress_update(&s->prog, *n, psi_app_input_stream_estimate(&in));
    } while (in.chunk.n > 0);
    s->prog.total = *n;
    rc = 0;
done:
    psi_app_progress_end(&s->prog);
    psi_app_input_stream_close(&in);
    return rc;
}

/* Writes the matched indices, ascending from idx, or the rows they name
 * from a second read of the input; stops at an index past the input (the
 * count check then refuses the response).  Returns: 0 or -1 (reported). */
static int match_write_sorted(psi_app_offline *s, spill *x, psi_app_index_runs *idx,
                              psi_cli_payjoin *pj, size_t *count)
{
    psi_app_input_stream in;
    size_t next = 0, *mi = NULL, written = 0;
    int have, rc = -1, rows = s->o.mode == PSI_APP_OFFLINE_ROWS;

    if (psi_app_index_runs_read_begin(idx) != 0)
        return psi_app_offline_fail(s, "%s", idx->file.err);
    if ((have = psi_app_index_runs_next(idx, &next)) < 0)
        return psi_app_offline_fail(s, "%s", idx->file.err);
    if (!rows) {
        psi_app_progress_begin(&s->prog, "writing the indices", idx->total);
        for (uint64_t i = 0; have > 0; i++) {
            if (fprintf(s->out.f, "%zu\n", next) < 0)
                break;
            if (i % 4096 == 0)
                psi_app_progress_update(&s->prog, i, idx->total);
            have = psi_app_index_runs_next(idx, &next);
        }
        psi_app_progress_end(&s->prog);
        if (have < 0)
            return psi_app_offline_fail(s, "%s", idx->file.err);
        return 0;
    }
    if (match_input_open(s, x, &in) != 0)
        return -1;
    if (pj != NULL && (mi = psi_app_alloc(psi_cli_spill_budget(x)->chunk_values + 1,
                                          sizeof *mi)) == NULL) {
        psi_app_input_stream_close(&in);
        return psi_app_offline_fail(s, "out of memory for a chunk's matches");
    }
    psi_app_progress_begin(&s->prog, pj != NULL ? "writing the rows and their payloads"
                                                : "writing the rows", psi_cli_spill_values(x));
    for (int first = 1;; first = 0) {
        if (psi_app_input_stream_next(&in, s->err, sizeof s->err) != 0) {
            psi_app_offline_fail(s, "%s", s->err); // the file changed since the first read
            goto done;
        }
        if (first && pj == NULL)
            psi_app_input_write_header(s->out.f, &in.chunk);
        if (in.chunk.n == 0 && !(first && pj != NULL))
            break;
        uint64_t end = in.values + in.chunk.n;
        size_t k = 0;
        while (have > 0 && next < end) {
            if (pj != NULL)
                mi[k++] = next;
            else
                psi_app_input_write_row(s->out.f, &in.chunk, (size_t)(next - in.values));
            have = psi_app_index_runs_next(idx, &next);
        }
        if (have < 0) {
            psi_app_offline_fail(s, "%s", idx->file.err);
            goto done;
        }
        // With payloads, every chunk goes to the join (its elements are
        // decoded in step), the first with the header line.
        if (pj != NULL && psi_cli_payjoin_chunk(s, pj, &in.chunk, in.values, mi, k, first,
                                                &written) != 0)
            goto done;
        if (in.chunk.n == 0)
            break;
        psi_app_progress_update(&s->prog, end, s->prog.total);
    }
    if (pj != NULL)
        *count = written;
    rc = 0;
done:
    free(mi);
    psi_app_progress_end(&s->prog);
    psi_app_input_stream_close(&in);
    return rc;
}

/* Past the budget: the input counted, the setup checked, the response
 * unmasked in chunks and spilled, merged against the setup, the result
 * written in input order. */
static int match_spill(psi_app_offline *s, spill *x, uint64_t resp_len, size_t *count,
                       uint64_t *n_out)
{
    const psi_app_budget *b = psi_cli_spill_budget(x);
    psi_cli_spill_fault f = {"Response.encrypted_elements", PSI_OK, {0, NULL, -1, -1}};
    psi_app_index_runs idx;
    psi_cli_assoc assoc;
    psi_app_msg_file setup = {.fd = -1};
    psi_setup *parsed = NULL;
    psi_error_detail d;
    const char *held;
    uint64_t n = 0, n_server = 0;
    int rc = PSI_APP_EXIT_USAGE, prc, reveal = 0, perm_fd = -1;
    int pairs = s->o.mode == PSI_APP_OFFLINE_ASSOCIATION;
    const char *what = match_what(s);
    char files[512];
    psi_cli_payjoin pj;
    int pj_open = 0;

    memset(&pj, 0, sizeof pj);
    pj.resp.fd = -1;
    psi_app_index_runs_init(&idx, psi_cli_spill_dir(x), b->read_bytes);
    psi_cli_assoc_init(&assoc, psi_cli_spill_dir(x), b->read_bytes);
    match_files(s, files, sizeof files);
    if (strcmp(s->o.input, "-") == 0) {
        psi_app_offline_fail(s, "match reads its input twice when the response or the setup "
                             "does not fit --memory %" PRIu64 ": give the input as a file, "
                             "not -, or a larger --memory", b->bytes);
        goto done;
    }
    if (psi_cli_offline_count(s, &n) != 0)
        goto done;
    if (psi_app_offline_open_msg(s, s->o.setup, "setup", &setup) != 0 ||
        psi_app_offline_open(s, &s->out, s->o.output) != 0)
        goto done;
    rc = PSI_APP_EXIT_FAIL;
    if (psi_app_offline_shards(s, PSI_ROLE_CLIENT, s->o.mode != PSI_APP_OFFLINE_COUNT) != 0)
        goto done;
    // The setup's errors come first, as the whole call's; its structure
    // says whether the unmasked chunks are sorted (raw) or not.  A raw
    // setup is read in windows; GCS and Bloom are held whole (§20), so
    // one past a quarter of the budget is refused before it is read.
    prc = psi_setup_parse_read(&parsed, s->o.suite, psi_app_msg_read, &setup, setup.len,
                               b->bytes / 4);
    psi_error_detail_get(&d);
    if ((held = psi_app_setup_held_refused(prc, &d)) != NULL) {
        psi_app_offline_fail(s, "setup %s (%" PRIu64 " bytes) does not fit --memory %" PRIu64
                             ": match holds a %s setup whole, in at most a quarter of the "
                             "budget: raise --memory to at least %" PRIu64 " (PROTOCOL.md "
                             "§20)", s->o.setup, setup.len, b->bytes, held, setup.len * 4);
        goto done;
    }
    if (prc == PSI_E_IO) {
        psi_app_offline_fail(s, "setup %s", setup.err);
        goto done;
    }
    if (prc != PSI_OK) {
        psi_app_offline_fail_psi(s, what, files, prc);
        goto done;
    }
    psi_step_kind kind = psi_setup_structure(parsed) == PSI_STRUCTURE_RAW
                             ? PSI_STEP_UNMASK_SORT : PSI_STEP_UNMASK;
    // --payloads: the payload file checked and indexed before the work.
    if (s->o.payloads != NULL) {
        pj_open = 1;
        if (psi_cli_payjoin_open(s, &pj, kind == PSI_STEP_UNMASK_SORT) != 0)
            goto done;
    }
    // The association table: a raw setup, and its permutation checked
    // before the response, as in memory.
    if (pairs && (psi_cli_assoc_setup(s, parsed, &n_server) != 0 ||
                  psi_cli_assoc_perm_open(s, n_server, psi_cli_spill_dir(x), b->read_bytes,
                                          &perm_fd) != 0))
        goto done;
    if (pairs && psi_cli_assoc_begin(&assoc, perm_fd, n_server) != 0) {
        psi_app_offline_fail(s, "%s", assoc.err);
        goto done;
    }
    psi_setup_free(parsed);
    parsed = NULL;
    if (psi_cli_spill_message(x, s->o.response, "response", PSI_MESSAGE_RESPONSE, kind, -1,
                              "unmasking the response", psi_message_element_bound(
                                  s->o.suite, (size_t)resp_len), &prc, &reveal, &f) != 0)
        goto done;
    if (prc != PSI_OK) {
        psi_app_offline_fail_psi(s, what, files, prc);
        goto done;
    }
    if (f.rc != PSI_OK) {
        psi_cli_spill_report(s, &f, what, files);
        goto done;
    }
    psi_op_args a;
    psi_cli_match_sink sink = {psi_app_index_runs_add, NULL, &idx, idx.file.err};
    if (pairs)
        sink = (psi_cli_match_sink){NULL, psi_cli_assoc_take, &assoc, assoc.err};
    memset(&a, 0, sizeof a);
    a.op = s->o.mode == PSI_APP_OFFLINE_COUNT ? PSI_OP_INTERSECTION_SIZE
           : pairs                            ? PSI_OP_ASSOCIATION
                                              : PSI_OP_INTERSECTION;
    if (psi_cli_spill_match(x, &a, &setup, s->o.mode == PSI_APP_OFFLINE_COUNT ? NULL : &sink,
                            count, what, files) != 0)
        goto done;
    if (s->o.mode == PSI_APP_OFFLINE_COUNT)
        fprintf(s->out.f, "%zu\n", *count);
    else if (pj_open && match_check_count(s, n, resp_len) != 0)
        goto done; // before the response is read again for the payloads
    else if (pairs ? psi_cli_assoc_write(s, &assoc, count) != 0
                   : match_write_sorted(s, x, &idx, pj_open ? &pj : NULL, count) != 0)
        goto done;
    if (match_check_count(s, n, resp_len) != 0)
        goto done;
    *n_out = n;
    rc = PSI_APP_EXIT_OK;
done:
    if (pj_open)
        psi_cli_payjoin_close(&pj);
    psi_setup_free(parsed);
    psi_app_msg_close(&setup);
    psi_app_index_runs_close(&idx);
    psi_cli_assoc_free(&assoc);
    if (perm_fd >= 0)
        close(perm_fd);
    return rc;
}

int psi_cli_offline_match(psi_app_offline *s)
{
    struct stat st, in_st;
    spill *x = NULL;
    size_t count = 0;
    uint64_t n = 0;
    int rc = PSI_APP_EXIT_USAGE, spilled;

    if (psi_app_offline_key(s) != 0 ||
        psi_cli_spill_init(&x, s, PSI_ROLE_CLIENT, s->o.mode != PSI_APP_OFFLINE_COUNT) != 0)
        goto done;
    // A response of more elements than a chunk holds (or an input larger
    // than one, or a setup larger than a quarter of the budget) is read in
    // pieces; a response that is not a regular file is named by the whole
    // reader.
    const psi_app_budget *b = psi_cli_spill_budget(x);
    spilled = stat(s->o.response, &st) == 0 && S_ISREG(st.st_mode) &&
              (psi_message_element_bound(s->o.suite, (size_t)st.st_size) > b->chunk_values ||
               (stat(s->o.input, &in_st) == 0 && S_ISREG(in_st.st_mode) &&
                (uint64_t)in_st.st_size > b->block_bytes) ||
               (stat(s->o.setup, &in_st) == 0 && S_ISREG(in_st.st_mode) &&
                (uint64_t)in_st.st_size > b->bytes / 4) ||
               (s->o.mode == PSI_APP_OFFLINE_ASSOCIATION &&
                stat(s->o.permutation, &in_st) == 0 && S_ISREG(in_st.st_mode) &&
                (uint64_t)in_st.st_size > b->bytes / 4));
    if (spilled) {
        rc = match_spill(s, x, (uint64_t)st.st_size, &count, &n);
    } else {
        rc = match_whole(s, x, &count);
    }
    if (rc != PSI_APP_EXIT_OK)
        goto done;
    rc = PSI_APP_EXIT_FAIL;
    if (psi_app_output_commit(&s->out, s->err, sizeof s->err) != 0) {
        psi_app_offline_fail(s, "%s", s->err);
        goto done;
    }
    if (!spilled)
        n = s->in.n;
    s->count = count;
    psi_app_progress_note(&s->prog, "%zu of %" PRIu64 " values in the intersection (suite %s)%s",
                          count, n, psi_app_suite_label(s->o.suite),
                          spilled ? ", matched from runs on disk" : "");
    rc = PSI_APP_EXIT_OK;
done:
    psi_cli_spill_free(x);
    return rc;
}
