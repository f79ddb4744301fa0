/* sim_svg.c — see sim_svg.h. */
#include "sim/sim_svg.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define W 1200.0
#define H 600.0
#define X0 90.0 /* plot area */
#define X1 1170.0
#define Y0 60.0
#define Y1 400.0
#define LANE0 440.0
#define LANE_H 30.0
#define LANE_GAP 8.0

static const char *stream_color[] = {"#3b6fb6", "#2e9e5b", "#8a4fbf"};
#define RECOMPUTE_COLOR "#e08a1e"

/* A "nice" tick step (1, 2, 5 × 10^k) giving about n ticks over span. */
static double nice_step(double span, int n) {
    double raw = span / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void put_escaped(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

int sim_svg_write(const sim_timeline *tl, const sim_result *r, int64_t budget, const char *title,
                  FILE *f, oc_err *err) {
    double tmax = r->time_s > 0 ? r->time_s : 1e-3;
    int64_t ymax_b = r->peak_bytes > budget ? r->peak_bytes : budget;
    double gib = (double)((int64_t)1 << 30), ymax = (double)ymax_b / gib * 1.08;
    if (ymax <= 0) ymax = 1;
    double xs = (X1 - X0) / (tmax * 1e3), ys = (Y1 - Y0) / ymax; /* px per ms, per GiB */
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Arial, sans-serif\" "
            "font-size=\"13\">\n",
            W, H, W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%.0f\" y=\"28\" font-size=\"17\" font-weight=\"bold\">", X0);
    put_escaped(f, title);
    fprintf(f,
            "</text>\n<text x=\"%.0f\" y=\"48\" fill=\"#444\">iteration %.2f ms, peak %.2f "
            "GiB, stall %.2f ms%s</text>\n",
            X0, r->time_s * 1e3, (double)r->peak_bytes / gib, r->stall_s * 1e3,
            r->feasible ? "" : " (infeasible)");
    /* Grid and axes. */
    double ystep = nice_step(ymax, 6), xstep = nice_step(tmax * 1e3, 10);
    for (double v = 0; v <= ymax + 1e-12; v += ystep) {
        double y = Y1 - v * ys;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                X0, y, X1, y, X0 - 6, y + 4, v);
    }
    for (double v = 0; v <= tmax * 1e3 + 1e-12; v += xstep) {
        double x = X0 + v * xs;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                x, Y0, x, LANE0 + 3 * (LANE_H + LANE_GAP), x, LANE0 + 3 * (LANE_H + LANE_GAP) + 16,
                v);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time (ms)</text>\n",
            (X0 + X1) / 2, H - 12);
    fprintf(f,
            "<text transform=\"translate(24 %.1f) rotate(-90)\" text-anchor=\"middle\">"
            "live device memory (GiB)</text>\n",
            (Y0 + Y1) / 2);
    /* Memory: filled step curve. */
    fprintf(f,
            "<path fill=\"#9cc3e6\" fill-opacity=\"0.75\" stroke=\"#2a5d8f\" "
            "stroke-width=\"1\" d=\"M%.1f %.1f",
            X0, Y1);
    double py = Y1;
    for (int i = 0; i < tl->n_samples; i++) {
        double x = X0 + tl->samples[i].t * 1e3 * xs,
               y = Y1 - (double)tl->samples[i].bytes / gib * ys;
        fprintf(f, " L%.1f %.1f L%.1f %.1f", x, py, x, y);
        py = y;
    }
    fprintf(f, " L%.1f %.1f L%.1f %.1f Z\"/>\n", X1, py, X1, Y1);
    if (budget > 0) {
        double y = Y1 - (double)budget / gib * ys;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
                "stroke-width=\"2\" stroke-dasharray=\"8 5\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#d62728\">budget "
                "%.2f GiB</text>\n",
                X0, y, X1, y, X1 - 4, y - 6, (double)budget / gib);
    }
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>"
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
            X0, Y0, X0, Y1, X0, Y1, X1, Y1);
    /* Stream lanes. */
    for (int s = 0; s < SIM_STREAM__COUNT; s++) {
        double y = LANE0 + s * (LANE_H + LANE_GAP);
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f4f4f4\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                X0, y, X1 - X0, LANE_H, X0 - 6, y + LANE_H / 2 + 4, sim_stream_name((sim_stream)s));
    }
    for (int i = 0; i < tl->n_events; i++) {
        const sim_event *e = &tl->events[i];
        double x = X0 + e->start * 1e3 * xs, w = (e->end - e->start) * 1e3 * xs;
        double y = LANE0 + (double)e->stream * (LANE_H + LANE_GAP);
        fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"/>\n", x,
                y + 2, w < 0.4 ? 0.4 : w, LANE_H - 4,
                e->kind == SIM_EVENT_RECOMPUTE ? RECOMPUTE_COLOR : stream_color[e->stream]);
    }
    /* Legend. */
    static const char *lbl[] = {"compute", "recompute", "SwapOut (D2H)", "SwapIn (H2D)"};
    const char *col[] = {stream_color[0], RECOMPUTE_COLOR, stream_color[1], stream_color[2]};
    for (int i = 0; i < 4; i++) {
        double x = X1 - 520 + i * 130;
        fprintf(f,
                "<rect x=\"%.1f\" y=\"18\" width=\"14\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"29\">%s</text>\n",
                x, col[i], x + 19, lbl[i]);
    }
    if (fputs("</svg>\n", f) == EOF || ferror(f))
        return oc_fail(err, "svg: write error: %s", strerror(errno));
    return OC_OK;
}
