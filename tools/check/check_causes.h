/*
 * check_causes.h - the part of tmcheck's report that explains the aborts:
 * the top sites by wasted time, the top conflicting addresses and cache
 * lines by name, the abort classes and a short triage.
 *
 * Owns: choosing and ordering what leads the report, and naming addresses
 * through the trace's load map (symbols.h). Never: computes metrics
 * (the analyses do), calls the rest of the report, or decides the exit
 * code.
 */
#ifndef TMT_CHECK_CAUSES_H
#define TMT_CHECK_CAUSES_H

#include <stdio.h>

#include "check_report_input.h"

#include "check_triage.h"   /* cx_site_name, the one name of a site */

/* The sites by wasted time, most first (a copy; the caller frees it). */
struct ca_site *cx_sites_by_waste(const struct ca_state *st, size_t *n);

/* Text: top sites, top addresses and lines, classes, triage. */
void cx_text(FILE *f, const struct cr_input *in);
struct jw;
/* JSON members of tmcheck's object (json_writer.h): "classes",
 * "attribution", "top_sites", "top_addresses". */
void cx_json(struct jw *w, const struct cr_input *in);

#endif
