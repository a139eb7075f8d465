/* cache-bench's chart: an SVG 1.1 file of throughput and batch latency per pass, stores side by
 * side (bench_write_svg, bench.h). */
#include "cmd/cache-bench/bench_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- SVG --------------------------------------------------------------------------------------- */
static void xml_str(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '<')
      fputs("&lt;", f);
    else if (*p == '>')
      fputs("&gt;", f);
    else if (*p == '&')
      fputs("&amp;", f);
    else if (*p == '"')
      fputs("&quot;", f);
    else if (*p < 0x20)
      fputc(' ', f);
    else
      fputc(*p, f);
  }
}

/* A "nice" upper bound for a linear axis: 1, 2 or 5 × 10^k at or above x. */
static double nice_ceil(double x) {
  if (!(x > 0)) return 1;
  double e = pow(10, floor(log10(x))), m = x / e;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * e;
}

static const char *const store_hue[][2] = {
    {"#1f4e99", "#8fb3e8"}, /* store 1: cold, warm */
    {"#a33a16", "#f0a582"},
    {"#2a7a3b", "#9fd6a8"},
    {"#6b3d99", "#c5a8e3"},
};

int bench_write_svg(FILE *f, const bench_report *r, size_t n) {
  const bench_result **g;
  size_t rows = bench_side_by_side(r, n, &g);
  if (!g) return ENOMEM;
  /* bar slots: passes × stores, with a gap whenever the pattern changes */
  size_t groups = 0;
  int last_pattern = -1;
  for (size_t i = 0; i < rows; i++) {
    const bench_result *p0 = g[i * (n + 1) + n];
    if (p0->pattern != last_pattern) groups++;
    last_pattern = p0->pattern;
  }
  const double gap = 24, left = 78, right = 230, top = 56, h1 = 230, mid = 62, h2 = 170;
  /* bars 16..40 px wide: a chart of few passes fills about 560 px */
  double bw = (rows && n) ? (560 - (double)groups * gap) / (double)(rows * n) : 16;
  if (bw < 16) bw = 16;
  if (bw > 40) bw = 40;
  double plot_w = (double)(rows * n) * bw + (double)groups * gap + gap / 2;
  double width = left + plot_w + right, height = top + h1 + mid + h2 + 110;

  double max_mb = 0, lat_lo = INFINITY, lat_hi = 0;
  for (size_t s = 0; s < n; s++)
    for (size_t i = 0; i < r[s].n_passes; i++) {
      const bench_result *p = &r[s].passes[i];
      if (p->mb_per_s > max_mb) max_mb = p->mb_per_s;
      if (p->batch_ms.p50 > 0 && p->batch_ms.p50 < lat_lo) lat_lo = p->batch_ms.p50;
      if (p->batch_ms.p99 > lat_hi) lat_hi = p->batch_ms.p99;
    }
  double ymax = nice_ceil(max_mb);
  if (!isfinite(lat_lo)) lat_lo = 0.001;
  if (lat_hi <= lat_lo) lat_hi = lat_lo * 10;
  int d_lo = (int)floor(log10(lat_lo)), d_hi = (int)ceil(log10(lat_hi));
  if (d_hi <= d_lo) d_hi = d_lo + 1;
  double y1 = top + h1; /* baseline of the throughput panel */
  double y2t = y1 + mid, y2 = y2t + h2; /* latency panel top and bottom */
#define LATY(ms) (y2 - (log10(ms) - d_lo) / (double)(d_hi - d_lo) * h2)

  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
          "<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
          "\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n");
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
          "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, "
          "Arial, sans-serif\" font-size=\"11\">\n",
          width, height, width, height);
  fputs("<title>cache-bench: throughput and batch latency per pass</title>\n", f);
  fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n", width,
          height);
  fprintf(f,
          "<text x=\"%.0f\" y=\"24\" font-size=\"15\" font-weight=\"bold\">cache-bench: how "
          "fast ",
          left);
  for (size_t s = 0; s < n; s++) {
    if (s) fputs(n > 2 && s + 1 < n ? ", " : " vs ", f);
    xml_str(f, bench_shown(&r[s]));
    fputs(" (", f);
    xml_str(f, bench_device_name(r[s].device));
    fputs(")", f);
  }
  fputs(" feeds training</text>\n", f);

  /* panel 1: axes, grid, ticks */
  fputs("<g id=\"throughput-axis\" stroke=\"#444444\" fill=\"none\">\n", f);
  for (int t = 0; t <= 5; t++) {
    double y = y1 - h1 * t / 5.0;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", left, y,
            left + plot_w, y, t ? "#e3e3e3" : "#444444");
  }
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n</g>\n", left, top, left,
          y1);
  fputs("<g id=\"throughput-ticks\" text-anchor=\"end\" fill=\"#222222\">\n", f);
  for (int t = 0; t <= 5; t++)
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%g</text>\n", left - 6, y1 - h1 * t / 5.0 + 4,
            ymax * t / 5.0);
  fputs("</g>\n", f);
  fprintf(f,
          "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\" "
          "font-size=\"12\">throughput (MB/s)</text>\n",
          left - 52, top + h1 / 2);

  /* panel 2: log axis of batch latency */
  fputs("<g id=\"latency-axis\" stroke=\"#444444\" fill=\"none\">\n", f);
  for (int dd = d_lo; dd <= d_hi; dd++) {
    double y = LATY(pow(10, dd));
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", left, y,
            left + plot_w, y, dd == d_lo ? "#444444" : "#e3e3e3");
  }
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n</g>\n", left, y2t, left,
          y2);
  fputs("<g id=\"latency-ticks\" text-anchor=\"end\" fill=\"#222222\">\n", f);
  for (int dd = d_lo; dd <= d_hi; dd++)
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%g</text>\n", left - 6, LATY(pow(10, dd)) + 4,
            pow(10, dd));
  fputs("</g>\n", f);
  fprintf(f,
          "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\" "
          "font-size=\"12\">batch latency (ms, log)</text>\n",
          left - 52, y2t + h2 / 2);

  /* bars, markers and labels */
  fputs("<g id=\"passes\">\n", f);
  double x = left;
  last_pattern = -1;
  double group_x0 = left;
  for (size_t i = 0; i <= rows; i++) {
    const bench_result *p0 = i < rows ? g[i * (n + 1) + n] : NULL;
    if (i == rows || p0->pattern != last_pattern) {
      if (last_pattern >= 0) /* close the previous group with its name under both panels */
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\" "
                "font-weight=\"bold\">%s</text>\n",
                (group_x0 + x) / 2, y2 + 62, bench_pattern_name(last_pattern));
      if (i == rows) break;
      x += gap / 2 + (last_pattern >= 0 ? gap / 2 : 0);
      group_x0 = x;
      last_pattern = p0->pattern;
    }
    for (size_t s = 0; s < n; s++) {
      const bench_result *p = g[i * (n + 1) + s];
      if (!p) {
        x += bw;
        continue;
      }
      double hgt = ymax > 0 ? h1 * p->mb_per_s / ymax : 0;
      const char *color = store_hue[s % 4][p->state == BENCH_WARM];
      fprintf(f,
              "<rect class=\"pass\" id=\"pass-%zu-%zu\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
              "height=\"%.1f\" fill=\"%s\" stroke=\"#ffffff\" stroke-width=\"0.5\"><title>",
              s + 1, i + 1, x + 1, y1 - hgt, bw - 2, hgt, color);
      xml_str(f, bench_shown(&r[s]));
      fprintf(f,
              ": %s %s %s, %u thread%s, batch %u: %.1f MB/s, %.1f records/s, batch p50 %.3f "
              "ms, p99 %.3f ms, resident before %.1f%%</title></rect>\n",
              bench_pattern_name(p->pattern), bench_state_name(p->state), bench_io_name(p),
              p->threads, p->threads == 1 ? "" : "s", p->batch, p->mb_per_s, p->records_per_s,
              p->batch_ms.p50, p->batch_ms.p99, 100 * p->resident_before);
      double cx = x + bw / 2;
      if (bw >= 24) /* the value over the bar, when there is room */
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"middle\">%.0f</text>\n",
                cx, y1 - hgt - 3, p->mb_per_s);
      if (p->batch_ms.p50 > 0 && p->batch_ms.p99 > 0) {
        double ya = LATY(p->batch_ms.p50), yb = LATY(p->batch_ms.p99);
        fprintf(f,
                "<g class=\"latency\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"%s\" stroke-width=\"1.5\"/>"
                "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>"
                "<path d=\"M %.1f %.1f l -4 7 l 8 0 z\" fill=\"#ffffff\" stroke=\"%s\" "
                "stroke-width=\"1.5\"/></g>\n",
                cx, ya, cx, yb, color, cx, ya, color, cx, yb - 4, store_hue[s % 4][0]);
      }
      /* a short label under each bar: state letter, batch, threads */
      fprintf(f,
              "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"end\" "
              "transform=\"rotate(-90 %.1f %.1f)\">%c b%u t%u%s</text>\n",
              cx + 3, y2 + 6, cx + 3, y2 + 6, p->state == BENCH_COLD ? 'C' : 'W', p->batch,
              p->threads, p->direct ? " D" : "");
      x += bw;
    }
  }
  fputs("</g>\n", f);

  /* legend */
  double lx = left + plot_w + 24, ly = top + 6;
  fputs("<g id=\"legend\">\n", f);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">legend</text>\n", lx, ly);
  ly += 16;
  for (size_t s = 0; s < n; s++) {
    for (int st = 0; st < 2; st++) {
      fprintf(f,
              "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
              "<text x=\"%.1f\" y=\"%.1f\">",
              lx, ly - 10, store_hue[s % 4][st], lx + 18, ly);
      if (n > 1) fprintf(f, "[%zu] ", s + 1);
      fprintf(f, "%s</text>\n", st ? "warm (page cache)" : "cold (evicted)");
      ly += 17;
    }
  }
  fprintf(f,
          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#444444\"/><text x=\"%.1f\" "
          "y=\"%.1f\">batch latency p50</text>\n",
          lx + 6, ly - 4, lx + 18, ly);
  ly += 17;
  fprintf(f,
          "<path d=\"M %.1f %.1f l -4 7 l 8 0 z\" fill=\"#ffffff\" stroke=\"#444444\" "
          "stroke-width=\"1.5\"/><text x=\"%.1f\" y=\"%.1f\">batch latency p99</text>\n",
          lx + 6, ly - 9, lx + 18, ly);
  ly += 22;
  fprintf(f,
          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\">labels: C/W cold/warm, bN batch, tN "
          "threads,</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\">D O_DIRECT; MB = "
          "10^6 bytes</text>\n",
          lx, ly, lx, ly + 12);
  ly += 30;
  if (n > 1)
    for (size_t s = 0; s < n; s++) {
      fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">[%zu] ", lx, ly, s + 1);
      xml_str(f, bench_shown(&r[s]));
      fputs("</text>\n", f);
      ly += 14;
    }
  fputs("</g>\n</svg>\n", f);
#undef LATY
  free(g);
  return 0; /* a write error stays in f (ferror): the caller's commit says which */
}
