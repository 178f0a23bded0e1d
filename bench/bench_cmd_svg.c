/* `shardpsi bench`: the chart, bench.svg, written as SVG text (no plotting
 * tool needed); see bench_cmd.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_cmd.h"

// The canvas and the plot area inside it, in SVG user units (pixels).
#define SVG_W 960
#define SVG_H 540
#define SVG_X0 90.0
#define SVG_X1 (SVG_W - 130.0)  // the S label goes right of the plot
#define SVG_Y0 96.0
#define SVG_Y1 (SVG_H - 56.0)
#define SVG_S_COLOUR "#d62728"

/* The bars of a group, left to right, and their colours. */
static const int svg_cols[] = {
    PSI_BENCH_CMD_PSIJS, PSI_BENCH_CMD_ONE, PSI_BENCH_CMD_SHARDS4, PSI_BENCH_CMD_ALL,
};
static const char *const svg_colours[] = {"#8c8c8c", "#1f77b4", "#17becf", "#ff7f0e"};
static const char *const svg_labels[] = {
    "psi.js", "1 thread", "shards 4 / 1 thread", "all cores",
};
#define SVG_SERIES 4

/* Text with the five XML special characters escaped. */
static void svg_text(FILE *f, const char *s)
{
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* A bar label short enough for a bar's width: 950, 9.5k, 95k, 9.5M (the
 * table has the exact figures). */
static void svg_short(char *out, size_t cap, double v)
{
    if (v >= 1e7)
        snprintf(out, cap, "%.0fM", v / 1e6);
    else if (v >= 1e6)
        snprintf(out, cap, "%.1fM", v / 1e6);
    else if (v >= 1e4)
        snprintf(out, cap, "%.0fk", v / 1e3);
    else if (v >= 1e3)
        snprintf(out, cap, "%.1fk", v / 1e3);
    else
        snprintf(out, cap, "%.0f", v);
}

/* The data of the chart: medians per selected op. */
typedef struct svg_data {
    int ops[PSI_BENCH_CMD_OPS];   // selected ops, in order
    int n_ops;
    psi_bench_medians m[PSI_BENCH_CMD_OPS];  // by position in ops
    int series_on[SVG_SERIES];    // 1 if the series has any bar
    int n_series;
    double s;                     // S: the median of the ops' S
    double top, step;             // y axis
} svg_data;

static int svg_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* A round y axis: about five steps of 1, 2 or 5 times a power of ten. */
static void svg_axis(svg_data *d, double max)
{
    double raw, mag, norm;

    if (!(max > 0))
        max = 1;
    raw = max * 1.08 / 5;
    mag = pow(10, floor(log10(raw)));
    norm = raw / mag;
    d->step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
    d->top = ceil(max * 1.08 / d->step) * d->step;
}

static void svg_collect(svg_data *d, const psi_bench_report *r)
{
    double s[PSI_BENCH_CMD_OPS], max = 0;
    int n_s = 0;

    memset(d, 0, sizeof *d);
    for (int op = 0; op < PSI_BENCH_CMD_OPS; op++) {
        psi_bench_medians *m = &d->m[d->n_ops];
        if (r->rounds[op] == NULL)
            continue;
        d->ops[d->n_ops++] = op;
        psi_bench_medians_of(m, r, op);
        if (!isnan(m->s))
            s[n_s++] = m->s;
        for (int k = 0; k < SVG_SERIES; k++) {
            double v = m->rate[svg_cols[k]];
            if (isnan(v))
                continue;
            d->series_on[k] = 1;
            max = v > max ? v : max;
        }
    }
    qsort(s, (size_t)n_s, sizeof *s, svg_cmp);
    d->s = n_s == 0 ? NAN : n_s % 2 ? s[n_s / 2] : (s[n_s / 2 - 1] + s[n_s / 2]) / 2;
    if (!isnan(d->s) && d->s > max)
        max = d->s;
    for (int k = 0; k < SVG_SERIES; k++)
        d->n_series += d->series_on[k];
    svg_axis(d, max);
}

static double svg_y(const svg_data *d, double v)
{
    return SVG_Y1 - (SVG_Y1 - SVG_Y0) * v / d->top;
}

static void svg_title(FILE *f, const psi_bench_report *r)
{
    char n[32];

    psi_bench_fmt_rate(n, sizeof n, (double)r->o->values);
    fprintf(f, "<text x=\"%d\" y=\"28\" text-anchor=\"middle\" font-size=\"18\" "
            "font-weight=\"bold\">shardpsi bench: %s, %s values per side, %zu core%s</text>\n",
            SVG_W / 2, psi_suite_name(r->o->suite), n, r->online_cpus,
            r->online_cpus == 1 ? "" : "s");
    fprintf(f, "<text x=\"%d\" y=\"48\" text-anchor=\"middle\" font-size=\"12\" "
            "fill=\"#444\">values per second per operation (higher is better); ",
            SVG_W / 2);
    svg_text(f, r->cpu_model);
    fprintf(f, "; shardpsi %s; %s</text>\n", psi_version(), r->date);
}

/* The series present, then the S line, in one row. */
static void svg_legend(FILE *f, const svg_data *d)
{
    double x = SVG_X0;

    for (int k = 0; k < SVG_SERIES; k++) {
        if (!d->series_on[k])
            continue;
        fprintf(f, "<rect x=\"%.1f\" y=\"62\" width=\"14\" height=\"14\" fill=\"%s\"/>\n"
                "<text x=\"%.1f\" y=\"74\" font-size=\"13\">%s</text>\n", x, svg_colours[k],
                x + 20, svg_labels[k]);
        x += 40 + 7.5 * (double)strlen(svg_labels[k]);
    }
    if (!isnan(d->s))
        fprintf(f, "<line x1=\"%.1f\" y1=\"69\" x2=\"%.1f\" y2=\"69\" stroke=\"%s\" "
                "stroke-width=\"2\" stroke-dasharray=\"6,4\"/>\n<text x=\"%.1f\" y=\"74\" "
                "font-size=\"13\">S (ECDH/s, 1 core)</text>\n", x, x + 28, SVG_S_COLOUR,
                x + 34);
}

static void svg_axes(FILE *f, const svg_data *d)
{
    char num[32];

    for (int t = 0; t * d->step <= d->top * (1 + 1e-9); t++) {
        double v = t * d->step, y = svg_y(d, v);
        psi_bench_fmt_rate(num, sizeof num, v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"%s\"/>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
                "font-size=\"12\">%s</text>\n", SVG_X0, y, SVG_X1, y,
                v == 0 ? "#000" : "#e0e0e0", SVG_X0 - 6, y + 4, num);
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>\n",
            SVG_X0, SVG_Y0, SVG_X0, SVG_Y1);
    fprintf(f, "<text transform=\"translate(18,%.1f) rotate(-90)\" text-anchor=\"middle\" "
            "font-size=\"13\">values per second</text>\n", (SVG_Y0 + SVG_Y1) / 2);
}

static void svg_groups(FILE *f, const svg_data *d)
{
    double gw = (SVG_X1 - SVG_X0) / (d->n_ops > 0 ? d->n_ops : 1);
    double bw = gw * 0.8 / (d->n_series > 0 ? d->n_series : 1);
    char num[32];

    for (int g = 0; g < d->n_ops; g++) {
        double x = SVG_X0 + gw * g + gw * 0.1;
        for (int k = 0; k < SVG_SERIES; k++) {
            double v = d->m[g].rate[svg_cols[k]], y;
            if (!d->series_on[k])
                continue;
            if (!isnan(v)) {
                y = svg_y(d, v);
                svg_short(num, sizeof num, v);
                fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                        "fill=\"%s\"><title>%s: %.0f values/s</title></rect>\n"
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                        "font-size=\"10\">%s</text>\n", x + 1, y, bw - 2, SVG_Y1 - y,
                        svg_colours[k], svg_labels[k], v, x + bw / 2, y - 3, num);
            }
            x += bw;
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"13\">"
                "%s</text>\n", SVG_X0 + gw * (g + 0.5), SVG_Y1 + 20,
                psi_bench_op_name(d->ops[g]));
    }
}

static void svg_s_line(FILE *f, const svg_data *d)
{
    char num[32];
    double y;

    if (isnan(d->s))
        return;
    y = svg_y(d, d->s);
    psi_bench_fmt_rate(num, sizeof num, d->s);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
            "stroke-width=\"2\" stroke-dasharray=\"6,4\"/>\n", SVG_X0, y, SVG_X1, y,
            SVG_S_COLOUR);
    // In the right margin, where no bar can hide it.
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"%s\">"
            "S (ECDH/s, 1 core)</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
            "fill=\"%s\">%s</text>\n", SVG_X1 + 6, y - 3, SVG_S_COLOUR, SVG_X1 + 6,
            y + 12, SVG_S_COLOUR, num);
}

int psi_bench_svg(FILE *f, const psi_bench_report *r)
{
    svg_data d;

    svg_collect(&d, r);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n", SVG_W, SVG_H, SVG_W,
            SVG_H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
    svg_title(f, r);
    svg_legend(f, &d);
    svg_axes(f, &d);
    svg_groups(f, &d);
    svg_s_line(f, &d);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"11\" "
            "fill=\"#444\">shards 4 / 1 thread: 4 shards in turn on one thread; all cores: "
            "%zu threads, %zu shards; medians of %zu round%s</text>\n</svg>\n", SVG_W / 2,
            SVG_H - 12, r->o->threads, 4 * r->o->threads, r->o->rounds,
            r->o->rounds == 1 ? "" : "s");
    return ferror(f) ? -1 : 0;
}
