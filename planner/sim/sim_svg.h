/* sim_svg.h — memory over time as an SVG a person can read at 1200x600:
 * live bytes as a filled step curve, the budget as a dashed line, axes in ms
 * and GiB, and the compute / D2H / H2D streams' activity as bars underneath.
 *
 *   sim_svg_write(tl, &r, budget_bytes, "resnet50 @ 640, swap-all", f, &err);
 */
#ifndef OC_SIM_SVG_H
#define OC_SIM_SVG_H

#include <stdio.h>

#include "sim/simulator.h"

/* budget <= 0: no budget line. title: plain text (escaped here). */
int sim_svg_write(const sim_timeline *tl, const sim_result *r, int64_t budget, const char *title,
                  FILE *f, oc_err *err);

#endif
