/* Replays one vector case through the library; see cli_vectors.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_util.h"
#include "cli_vectors.h"

// How many items of an index list a failure message shows.
#define VRUN_LIST_SHOWN 12

/* The differences found so far, joined by "; " into the caller's buffer. */
typedef struct vrun_report {
    char *buf;
    size_t cap;
    size_t len;
    int failed;
} vrun_report;

static void vrun_note(vrun_report *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void vrun_note(vrun_report *r, const char *fmt, ...)
{
    va_list ap;
    int n;

    r->failed = 1;
    if (r->len + 3 >= r->cap)
        return;  // the message is full; the first differences matter most
    if (r->len > 0)
        r->len += (size_t)snprintf(r->buf + r->len, r->cap - r->len, "; ");
    va_start(ap, fmt);
    n = vsnprintf(r->buf + r->len, r->cap - r->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        r->len += (size_t)n < r->cap - r->len ? (size_t)n : r->cap - r->len - 1;
}

static void vrun_error(vrun_report *r, const char *what, int rc)
{
    vrun_note(r, "%s: error %d (%s)", what, rc, psi_strerror(rc));
}

/* Compares a recomputed message with the stored one. */
static void vrun_bytes(vrun_report *r, const char *what, int rc, const uint8_t *got,
                       size_t got_len, const psi_cli_bytes *want)
{
    size_t n = got_len < want->len ? got_len : want->len, i = 0;

    if (rc != PSI_OK) {
        vrun_error(r, what, rc);
        return;
    }
    while (i < n && got[i] == want->data[i])
        i++;
    if (i == n && got_len == want->len)
        return;
    if (got_len == want->len)
        vrun_note(r, "%s differs at byte %zu of %zu (expected %02x, got %02x)",
                  what, i, n, want->data[i], got[i]);
    else
        vrun_note(r, "%s differs at byte %zu (expected %zu bytes, got %zu)",
                  what, i, want->len, got_len);
}

/* Formats at most VRUN_LIST_SHOWN items from index `from` on, as
 * "[..., a, b, ...]". */
static void vrun_list(char *out, size_t cap, const size_t *v, size_t n, size_t from)
{
    size_t len = (size_t)snprintf(out, cap, "[%s", from > 0 ? "..., " : "");
    size_t i;

    for (i = from; i < n && i < from + VRUN_LIST_SHOWN && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%zu",
                                i > from ? ", " : "", v[i]);
    if (len < cap)
        snprintf(out + len, cap - len, "%s]", i < n ? ", ..." : "");
}

static void vrun_compare_list(vrun_report *r, const char *what, const size_t *got,
                              size_t n, const size_t *want, size_t n_want)
{
    char want_s[256], got_s[256];
    size_t i = 0, from;

    while (i < n && i < n_want && got[i] == want[i])
        i++;
    if (i == n && n == n_want)
        return;
    // Show the lists from a little before the first difference.
    from = i > 2 ? i - 2 : 0;
    vrun_list(want_s, sizeof want_s, want, n_want, from);
    vrun_list(got_s, sizeof got_s, got, n, from);
    vrun_note(r, "%s differs at position %zu (expected %zu items %s, "
              "got %zu items %s)", what, i, n_want, want_s, n, got_s);
}

/* For an association case also the permutation, compared with the stored one. */
static void vrun_setup(vrun_report *r, const psi_app_party *server, const psi_cli_case *c)
{
    size_t bound = 0, len;
    uint8_t *buf;
    size_t *perm = NULL;
    int rc = psi_setup_bound(&bound, c->suite, &c->params, c->n_server);

    if (rc != PSI_OK) {
        vrun_error(r, "server_setup (size bound)", rc);
        return;
    }
    buf = psi_app_alloc(bound, 1);
    if (c->association)
        perm = psi_app_alloc(c->n_server, sizeof *perm);
    if (buf == NULL || (c->association && perm == NULL)) {
        vrun_note(r, "server_setup: out of memory");
    } else {
        len = bound;
        rc = psi_app_party_create_setup(server, buf, &len, perm, &c->params,
                                        c->server_inputs, c->n_server);
        vrun_bytes(r, "server_setup", rc, buf, len, &c->setup);
        if (rc == PSI_OK && perm != NULL)
            vrun_compare_list(r, "permutation", perm, c->n_server, c->perm, c->n_perm);
    }
    free(buf);
    free(perm);
}

static void vrun_request(vrun_report *r, const psi_app_party *client,
                         const psi_cli_case *c)
{
    size_t len = psi_request_bound(c->suite, c->n_client);
    uint8_t *buf = psi_app_alloc(len, 1);
    int rc;

    if (buf == NULL) {
        vrun_note(r, "request: out of memory");
        return;
    }
    rc = psi_app_party_create_request(client, buf, &len, c->client_inputs, c->n_client);
    vrun_bytes(r, "request", rc, buf, len, &c->request);
    free(buf);
}

/* The response is recomputed from the stored request, not our own. */
static void vrun_response(vrun_report *r, const psi_app_party *server,
                          const psi_cli_case *c)
{
    size_t len = psi_response_bound(
        c->suite, psi_message_element_bound(c->suite, c->request.len));
    uint8_t *buf = psi_app_alloc(len, 1);
    int rc;

    if (buf == NULL) {
        vrun_note(r, "response: out of memory");
        return;
    }
    rc = psi_app_party_process_request(server, buf, &len, c->request.data,
                                       c->request.len);
    vrun_bytes(r, "response", rc, buf, len, &c->response);
    free(buf);
}

/* Computed from the stored setup and response, with the client's key. */
static void vrun_intersection(vrun_report *r, const psi_app_party *client,
                              const psi_cli_case *c)
{
    size_t n = psi_message_element_bound(c->suite, c->response.len);
    size_t *got = psi_app_alloc(n, sizeof *got);
    int rc;

    if (got == NULL) {
        vrun_note(r, "intersection: out of memory");
        return;
    }
    rc = psi_app_party_intersection(client, got, &n, c->setup.data, c->setup.len,
                                    c->response.data, c->response.len);
    if (rc != PSI_OK)
        vrun_error(r, "intersection", rc);
    else
        vrun_compare_list(r, "intersection", got, n, c->intersection,
                          c->n_intersection);
    free(got);
}

static void vrun_size(vrun_report *r, const psi_app_party *client,
                      const psi_cli_case *c)
{
    size_t count = 0;
    int rc = psi_app_party_intersection_size(client, &count, c->setup.data,
                                             c->setup.len, c->response.data,
                                             c->response.len);

    if (rc != PSI_OK)
        vrun_error(r, "intersection_size", rc);
    else if (count != c->intersection_size)
        vrun_note(r, "intersection_size: expected %zu, got %zu",
                  c->intersection_size, count);
}

/* Formats pair i of v, or "none" past the end. */
static void vrun_pair(char *out, size_t cap, const psi_pair *v, size_t n, size_t i)
{
    if (i < n)
        snprintf(out, cap, "(%zu, %zu)", v[i].client_index, v[i].server_index);
    else
        snprintf(out, cap, "none");
}

/* From the stored setup and response, mapped with the stored permutation. */
static void vrun_association(vrun_report *r, const psi_app_party *client,
                             const psi_cli_case *c)
{
    size_t n = psi_message_element_bound(c->suite, c->response.len), i = 0;
    psi_pair *got = psi_app_alloc(n, sizeof *got);
    char want_s[64], got_s[64];
    int rc;

    if (got == NULL) {
        vrun_note(r, "association: out of memory");
        return;
    }
    rc = psi_app_party_association(client, got, &n, c->setup.data, c->setup.len,
                                   c->response.data, c->response.len);
    if (rc == PSI_OK)
        rc = psi_association_map(got, n, c->perm, c->n_perm);
    while (rc == PSI_OK && i < n && i < c->n_pairs &&
           got[i].client_index == c->pairs[i].client_index &&
           got[i].server_index == c->pairs[i].server_index)
        i++;
    if (rc != PSI_OK) {
        vrun_error(r, "association", rc);
    } else if (i < n || i < c->n_pairs) {
        vrun_pair(want_s, sizeof want_s, c->pairs, c->n_pairs, i);
        vrun_pair(got_s, sizeof got_s, got, n, i);
        vrun_note(r, "association differs at pair %zu (expected %zu pairs, %s; "
                  "got %zu pairs, %s)", i, c->n_pairs, want_s, n, got_s);
    }
    free(got);
}

int psi_cli_vparty(psi_app_party *p, const psi_app_shard_opts *so, int suite,
                   psi_role role, int reveal, const psi_cli_bytes *key, const char *what,
                   char *msg, size_t msg_len)
{
    psi_app_party_spec spec = {.key_bytes = key->data, .key_len = key->len,
                               .suite = suite, .role = role, .reveal = reveal,
                               .shard = *so};
    const char *step = NULL;
    int rc = psi_app_party_build(p, &spec, &step);

    if (rc != PSI_OK && strcmp(step, PSI_APP_PARTY_E_ENGINE) == 0) {
        snprintf(msg, msg_len, "%s: %s", what, psi_strerror(rc));
        return rc == PSI_E_KEY_OUT_OF_RANGE || rc == PSI_E_INVALID_ARG ? -1 : 1;
    }
    if (rc != PSI_OK) {
        snprintf(msg, msg_len, "%s: psi_shards_create: %s", what, psi_strerror(rc));
        return 1;
    }
    return 0;
}

int psi_cli_case_run(const psi_cli_case *c, const psi_app_shard_opts *so,
                     char *msg, size_t msg_len)
{
    vrun_report r = {msg, msg_len, 0, 0};
    psi_app_party server, client;
    int rc;

    msg[0] = '\0';
    memset(&client, 0, sizeof client);
    rc = psi_cli_vparty(&server, so, c->suite, PSI_ROLE_SERVER, c->reveal, &c->server_key,
                        "server_key", msg, msg_len);
    if (rc == 0)
        rc = psi_cli_vparty(&client, so, c->suite, PSI_ROLE_CLIENT, c->reveal, &c->client_key,
                            "client_key", msg, msg_len);
    if (rc == 0) {
        vrun_setup(&r, &server, c);
        vrun_request(&r, &client, c);
        vrun_response(&r, &server, c);
        if (c->association) {
            vrun_association(&r, &client, c);
        } else {
            if (c->reveal)
                vrun_intersection(&r, &client, c);
            vrun_size(&r, &client, c);
        }
        rc = r.failed;
    }
    psi_app_party_free(&server);
    psi_app_party_free(&client);
    return rc;
}
