/* Progress lines; see app_progress.h. */
#include "app_progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app_clock.h"
#include "app_util.h"

/* A line on a terminal is redrawn at most this often, elsewhere printed at
 * most this often; steps shorter than the delay show no running line. */
#define PROGRESS_TTY_MS 200.0
#define PROGRESS_LOG_MS 5000.0
#define PROGRESS_DELAY_MS 1000.0

void psi_app_progress_init(psi_app_progress *p, const char *who, int enabled)
{
    memset(p, 0, sizeof *p);
    p->tty = isatty(STDERR_FILENO);
    p->enabled = enabled < 0 ? p->tty : enabled;
    p->who = who;
}

/* Writes v with thousands separators: 12,345,678. */
static void progress_count(char *out, size_t cap, uint64_t v)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    size_t o = 0;

    for (int i = 0; i < n && o + 2 < cap; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
}

/* Writes a duration: "45 s", "3 min 20 s", "2 h 05 min". */
static void progress_duration(char *out, size_t cap, double ms)
{
    unsigned long long s = (unsigned long long)(ms / 1000.0 + 0.5);

    if (s < 60)
        snprintf(out, cap, "%llu s", s);
    else if (s < 3600)
        snprintf(out, cap, "%llu min %02llu s", s / 60, s % 60);
    else
        snprintf(out, cap, "%llu h %02llu min", s / 3600, s / 60 % 60);
}

/* Writes an amount of the step's unit: a count of values, or bytes in MiB. */
static void progress_amount(char *out, size_t cap, const psi_app_progress *p, double v)
{
    if (p->transfer)
        snprintf(out, cap, "%.1f MiB", v / 1048576.0);
    else
        progress_count(out, cap, (uint64_t)v);
}

/* Starts a step: a computation over values or a transfer of bytes. */
static void progress_start(psi_app_progress *p, const char *step, int transfer,
                           uint64_t total)
{
    p->step = step;
    p->transfer = transfer;
    p->total = total;
    p->start_ms = psi_app_now_ms();
    p->last_ms = p->start_ms;
    p->first_ms = 0;
    p->shown = 0;
    p->chunked = 0;
    p->base = 0;
}

void psi_app_progress_begin(psi_app_progress *p, const char *step, uint64_t total)
{
    progress_start(p, step, 0, total);
}

void psi_app_progress_begin_transfer(psi_app_progress *p, const char *step, uint64_t total)
{
    progress_start(p, step, 1, total);
}

/* Prints the running line of the step. */
static void progress_line(psi_app_progress *p, uint64_t done, uint64_t total, double now)
{
    char d[48], t[48], r[48], left[48] = "", tail[64] = "";
    double secs = (now - p->start_ms) / 1000.0;
    double rate = secs > 0 ? (double)done / secs : 0;

    progress_amount(d, sizeof d, p, (double)done);
    progress_amount(t, sizeof t, p, (double)total);
    progress_amount(r, sizeof r, p, rate);
    if (rate > 0 && done < total) {
        progress_duration(left, sizeof left, (double)(total - done) / rate * 1000.0);
        snprintf(tail, sizeof tail, ", %s left", left);
    } else if (!p->transfer && total > 0 && done >= total) {
        // The shards' serial tail (sorts, merges) reports done = total.
        snprintf(tail, sizeof tail, ", finishing");
    }
    psi_app_stderr_printf("%s%s: %s: %s / %s %s (%.0f%%), %s/s%s%s", p->tty ? "\r" : "",
                          p->who, p->step, d, t, p->transfer ? "" : "values",
                          total ? 100.0 * (double)done / (double)total : 100.0, r, tail,
                          p->tty ? "\033[K" : "\n");
    p->shown = p->tty;
}

void psi_app_progress_update(void *arg, uint64_t done, uint64_t total)
{
    psi_app_progress *p = arg;
    double now;

    if (!p->transfer && p->tick != NULL)
        p->tick(p->tick_arg);
    if (!p->enabled || p->step == NULL)
        return;
    now = psi_app_now_ms();
    // A receive waits for the peer's work first: its rate counts from the
    // first data (reported after the first MiB, or at the end).
    if (p->transfer && p->first_ms == 0 && done > 0)
        p->first_ms = now;
    if (now - p->start_ms < PROGRESS_DELAY_MS ||
        now - p->last_ms < (p->tty ? PROGRESS_TTY_MS : PROGRESS_LOG_MS))
        return;
    p->last_ms = now;
    if (p->chunked) {
        // One chunk's call of a step spread over many (a spilled set).
        done += p->base;
        total = p->total > done ? p->total : done;
    }
    progress_line(p, done, total ? total : p->total, now);
}

void psi_app_progress_end(psi_app_progress *p)
{
    char t[48], r[48], dur[48], wait[64] = "";
    double now, from, ms;

    if (!p->enabled || p->step == NULL)
        return;
    now = psi_app_now_ms();
    from = p->start_ms;
    if (p->first_ms > 0 && p->first_ms - p->start_ms >= 1000) {
        snprintf(wait, sizeof wait, ", after waiting %.1f s for the peer",
                 (p->first_ms - p->start_ms) / 1000.0);
        from = p->first_ms;
    }
    ms = now - from;
    progress_amount(t, sizeof t, p, (double)p->total);
    progress_amount(r, sizeof r, p, ms > 0 ? (double)p->total * 1000.0 / ms : 0);
    if (ms < 1000)
        snprintf(dur, sizeof dur, "%.0f ms", ms);
    else
        snprintf(dur, sizeof dur, "%.1f s", ms / 1000.0);
    psi_app_stderr_printf("%s%s: %s: %s%s in %s (%s/s)%s%s\n", p->shown ? "\r" : "",
                          p->who, p->step, t, p->transfer ? "" : " values", dur, r, wait,
                          p->shown ? "\033[K" : "");
    p->shown = 0;
    p->step = NULL;
}

void psi_app_progress_note(psi_app_progress *p, const char *fmt, ...)
{
    va_list ap;

    // A running line on a terminal is ended by the same write.
    va_start(ap, fmt);
    psi_app_stderr_line(p->shown ? "\n" : NULL, p->who, "\n", fmt, ap);
    va_end(ap);
    p->shown = 0;
}
