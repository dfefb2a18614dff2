/*
 * check_compare.h - tmcheck --compare BEFORE AFTER: what changed between
 * two analysed traces of one program (after a fix), per site, per data
 * object and per triage group.
 *
 * Owns: matching the two runs' rows by name (a site by its label and file,
 * not its line, which a fix may move; an object by its name; a group by all
 * four of its names), the change's text and JSON. Never: computes a metric
 * the analyses do not; compares rows by id (ids differ between runs).
 */
#ifndef TMT_CHECK_COMPARE_H
#define TMT_CHECK_COMPARE_H

#include <stdio.h>

#include "check_report_input.h"

void cr_compare_text(FILE *f, const struct cr_input *before, const struct cr_input *after);
void cr_compare_json(FILE *f, const struct cr_input *before, const struct cr_input *after);

#endif
