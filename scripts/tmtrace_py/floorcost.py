"""floorcost - each tracing level's cost against the floor of its clock
reads, and traced/untraced abort-rate ratios, with bootstrap intervals
(issue 28's "Done when" table, as tmbench/overhead and tmbench/stamp/run
print it).

Owns: the issue's bounds (a level's median time over its floor's, an abort
rate ratio's band), which floor each level is held to, the record-only
floor's name and the level it runs at, and its ratios (the record work
alone, the clock over the records), the judgement of a
cell (its ratio against the bound; its untraced abort rate's spread, run
count and run length; its traced/untraced interval against the band), the
rows of that table from a list of runs, and their text.
Never: runs anything; runs are dicts with workload, threads, level, the
time key the caller names (ns_per_op for tmbench/overhead, seconds for
STAMP), abort_rate (in %, or None) and, optionally, seconds (the run's
length, for the abort table's notes).
"""
import statistics

from .stats import (bootstrap_geomean_ratio_ci, bootstrap_median_ci, bootstrap_ratio_ci, geomean, median_ratio,
                    paired_ratios)

# A level's key (see level_key) -> (the floor it is held to, the most its
# median time may be over that floor's).
FLOOR_BOUND = {"default": ("floor-tx", 1.08), "tx": ("floor-tx", 1.05), "all/boundary": ("floor-tx", 1.25),
               "all": ("floor-all", 1.05), "detail16": ("floor-tx", 1.15)}
# A level's base -> the band the 95 % interval of traced/untraced median
# abort rate must lie in.
ABORT_BAND = {"default": (0.8, 1.25), "all": (0.67, 1.5)}
# The record-only measuring build (meson -Dclock_floor=records) joins as this
# level, run with RECORDS_AS's settings: the default's records, no clock read;
# and, where `all` is measured, as RECORDS_ALL_FLOOR at RECORDS_ALL_AS's: a
# record per access (its stamp a counter), the record work of `all` alone.
RECORDS_FLOOR = "floor-records"
RECORDS_AS = "default"
RECORDS_ALL_FLOOR = "floor-records-all"
RECORDS_ALL_AS = "all"
RECORDS_FLOORS = {RECORDS_FLOOR: RECORDS_AS, RECORDS_ALL_FLOOR: RECORDS_ALL_AS}
# Their ratios, where both levels were measured: (numerator, denominator, what it shows).
RECORDS_RATIOS = ((RECORDS_FLOOR, "off", "the record work alone"),
                  ("floor-tx", "off", "the clock reads alone"),
                  (RECORDS_AS, RECORDS_FLOOR, "what the clock adds to the records"),
                  (RECORDS_ALL_FLOOR, "off", "all's record work alone"),
                  ("floor-all", "off", "all's clock reads alone"),
                  (RECORDS_ALL_AS, RECORDS_ALL_FLOOR, "what the clock adds to all's records"))
PAIRED_NOTE = ("paired: the median of each repetition's ratio, whose interval leaves out what slowed the whole "
               "machine for a while; the verdict is the ratio of medians'")
ABORT_MIN_PCT = 0.1      # cells whose untraced median rate is below this are not judged
SPREAD_PCT = 25.0        # an untraced interval wider than +-this % of its median: spread too wide to judge
ABORT_MIN_RUNS = 21      # the runs per configuration for the abort rates
ABORT_MIN_SECONDS = 0.5  # and their least length


def level_key(level, stamp):
    """The key of FLOOR_BOUND for LEVEL (tx@memory, all/boundary, ...) run with TMTRACE_STAMP STAMP."""
    base = level.split("@")[0].split("/")[0]
    return "all/boundary" if base == "all" and stamp == "boundary" else base


def _runs_with(runs, cell, level, key):
    """The runs of CELL (workload, threads) at LEVEL that have a value of KEY."""
    return (r for r in runs if (r["workload"], r["threads"]) == cell and r["level"] == level
            and r.get(key) is not None)


def samples(runs, cell, level, key):
    """The values of KEY over the runs of CELL (workload, threads) at LEVEL, None and missing left out."""
    return [r[key] for r in _runs_with(runs, cell, level, key)]


def samples_by_rep(runs, cell, level, key):
    """{rep: value of KEY} over the runs of samples() that carry a
    repetition number (one run per repetition: the harnesses run each
    configuration once in each)."""
    return {r["rep"]: r[key] for r in _runs_with(runs, cell, level, key) if r.get("rep") is not None}


def cells_of(runs):
    out = []
    for r in runs:
        if (r["workload"], r["threads"]) not in out:
            out.append((r["workload"], r["threads"]))
    return out


def floor_rows(runs, levels, key="ns_per_op", apart=None):
    """For each (level, stamp) of LEVELS whose floor was measured: dict level,
    floor, bound, ratio (geomean over the cells not APART of median KEY / the
    floor's), ci, cells [(cell, ratio, ci, meets)], apart ({cell: why it is
    reported apart, out of the geomean}) and meets (the geomean ratio <= bound)."""
    apart = apart or {}
    rows = []
    cells = cells_of(runs)
    for level, stamp in levels:
        floor, bound = FLOOR_BOUND.get(level_key(level, stamp), (None, None))
        if floor is None or not any(r["level"] == floor for r in runs):
            continue
        g, ci, per = ratio_over_cells(runs, cells, level, floor, key, apart, bound)
        rows.append(dict(level=level, floor=floor, bound=bound, ratio=g, cells=per, apart=apart, ci=ci,
                         meets=g is not None and g <= bound,
                         paired=paired_over_cells(runs, cells, level, floor, key, apart)))
    return rows


def ratio_over_cells(runs, cells, num, den, key, apart, bound=None):
    """(geomean over the CELLS not APART of median KEY at NUM / at DEN, its 95 %
    bootstrap interval, [(cell, ratio, ci, ratio <= BOUND)] for every cell)."""
    pairs = {c: (samples(runs, c, num, key), samples(runs, c, den, key)) for c in cells}
    per = []
    for c in cells:
        r = median_ratio(*pairs[c])
        per.append((c, r, bootstrap_ratio_ci(*pairs[c]), r is not None and bound is not None and r <= bound))
    counted = [c for c in cells if c not in apart]
    g = geomean(r for c, r, _, _ in per if c not in apart)
    return g, bootstrap_geomean_ratio_ci([pairs[c] for c in counted]), per


def paired_over_cells(runs, cells, num, den, key, apart):
    """The same ratio from paired runs (stats.paired_ratios: a repetition's
    run at NUM over its run at DEN): (geomean over the CELLS not APART of
    each cell's median paired ratio, its 95 % bootstrap interval, {cell:
    (median, interval)}); None for a cell without pairs."""
    ratios = {c: paired_ratios(samples_by_rep(runs, c, num, key), samples_by_rep(runs, c, den, key)) for c in cells}
    per = {c: ((statistics.median(r), bootstrap_median_ci(r)) if r else None) for c, r in ratios.items()}
    counted = [c for c in cells if c not in apart and ratios[c]]
    g = geomean(per[c][0] for c in counted)
    return g, bootstrap_geomean_ratio_ci([(ratios[c], [1.0]) for c in counted]), per


def records_rows(runs, key="ns_per_op", apart=None):
    """With a record-only floor measured: for each of RECORDS_RATIOS whose two
    levels were run, dict num, den, what, ratio (geomean over the cells not
    APART), ci, cells [(cell, ratio, ci)]; [] without such a floor."""
    apart = apart or {}
    levels = {r["level"] for r in runs}
    if not levels & set(RECORDS_FLOORS):
        return []
    cells = cells_of(runs)
    rows = []
    for num, den, what in RECORDS_RATIOS:
        if num in levels and den in levels:
            g, ci, per = ratio_over_cells(runs, cells, num, den, key, apart)
            rows.append(dict(num=num, den=den, what=what, ratio=g, ci=ci, cells=[p[:3] for p in per],
                             paired=paired_over_cells(runs, cells, num, den, key, apart)))
    return rows


def abort_notes(off, seconds):
    """What keeps an untraced abort-rate sample OFF (runs of SECONDS) from
    resolving a change as the issue asks: fewer runs, shorter runs."""
    notes = []
    if len(off) < ABORT_MIN_RUNS:
        notes.append("%d runs, fewer than %d" % (len(off), ABORT_MIN_RUNS))
    if seconds and statistics.median(seconds) < ABORT_MIN_SECONDS:
        notes.append("runs of %.2f s, shorter than %g s" % (statistics.median(seconds), ABORT_MIN_SECONDS))
    return notes


def _time_ratio(runs, cell, level):
    """LEVEL's median ns/op over off's in CELL, or its median seconds' over off's where the runs give no ns/op."""
    for key in ("ns_per_op", "seconds"):
        num, off = samples(runs, cell, level, key), samples(runs, cell, "off", key)
        if num and off:
            return median_ratio(num, off)
    return None


def abort_rows(runs, levels):
    """For each cell whose untraced median abort rate is >= ABORT_MIN_PCT:
    dict cell, off (median), off_ci, spread_ok (the interval within
    +-SPREAD_PCT % of the median), notes (abort_notes) and levels [(level,
    ratio, ci, band, meets, time)], band None where the issue sets none
    (meets then None), time the level's median ns/op over off's (the
    median seconds' ratio for runs of fixed work without ns/op, as
    STAMP's; None without either): an abort rate that moves as 1/time is what time added
    outside the attempts' windows does (docs/tracer.md, "What moves the
    abort rates")."""
    rows = []
    for c in cells_of(runs):
        off = samples(runs, c, "off", "abort_rate")
        if not off or statistics.median(off) < ABORT_MIN_PCT:
            continue
        med, ci = statistics.median(off), bootstrap_median_ci(off)
        row = dict(cell=c, off=med, off_ci=ci, levels=[], notes=abort_notes(off, samples(runs, c, "off", "seconds")),
                   spread_ok=ci is not None and ci[0] >= med * (1 - SPREAD_PCT / 100) and
                   ci[1] <= med * (1 + SPREAD_PCT / 100))
        for level in levels:
            num = samples(runs, c, level, "abort_rate")
            lci = bootstrap_ratio_ci(num, off)
            band = ABORT_BAND.get(level.split("@")[0].split("/")[0])
            meets = None if band is None else (lci is not None and row["spread_ok"] and
                                               band[0] <= lci[0] and lci[1] <= band[1])
            time = _time_ratio(runs, c, level)
            row["levels"].append((level, median_ratio(num, off), lci, band, meets, time))
        rows.append(row)
    return rows


def _ci(ci, spec="%.3f"):
    return "n/a" if ci is None else ("[" + spec + ", " + spec + "]") % ci


def _num(v, spec="%.3f"):
    return "n/a" if v is None else spec % v


def _paired(x, ci):
    return "" if x is None else "  paired %s %s" % (_num(x), _ci(ci))


def _met(ok):
    return "met" if ok else "not met"


def floor_text(rows):
    """The lines of the cost-above-the-floor table: per level its geomean,
    then each cell's ratio and verdict."""
    out = ["cost above the floor (median time over the floor build's, 95 % bootstrap interval; "
           "geomean over the cells not reported apart; " + PAIRED_NOTE + "):"]
    if not rows:
        return out + ["  no floor measured (give --floor-build for a -Dclock_floor=tx and =all build, and =records "
                      "for the record work)"]
    for r in rows:
        g, gci, per = r["paired"]
        out.append("  %-14s / %-9s geomean %s %s%s  bound %.2f: %s" % (
            r["level"], r["floor"], _num(r["ratio"]), _ci(r["ci"]), _paired(g, gci), r["bound"],
            _met(r["meets"]) if r["ratio"] is not None else "no cell counted"))
        for c, x, ci, ok in r["cells"]:
            why = r["apart"].get(c)
            out.append("    %-16s %s %-16s%s  %s%s" % ("%s/%d" % c, _num(x), _ci(ci), _paired(*(per[c] or (None,) * 2)),
                                                      _met(ok), " (apart: %s)" % why if why else ""))
    return out


def records_text(rows):
    """The lines of the record-only floor's table (records_rows); none without that floor."""
    if not rows:
        return []
    out = ["the record work beside the clock's floor (%s: the record-only build at %s's settings, no clock "
           "read; %s: the same at %s, a record per access; median time ratios, 95 %% bootstrap interval; geomean "
           "over the cells not reported apart; %s):" % (RECORDS_FLOOR, RECORDS_AS, RECORDS_ALL_FLOOR, RECORDS_ALL_AS,
                                                        PAIRED_NOTE)]
    for r in rows:
        g, gci, per = r["paired"]
        out.append("  %-17s / %-17s geomean %s %s%s  %s" % (r["num"], r["den"], _num(r["ratio"]), _ci(r["ci"]),
                                                             _paired(g, gci), r["what"]))
        out += ["    %-16s %s %-16s%s" % ("%s/%d" % c, _num(x), _ci(ci), _paired(*(per[c] or (None, None))))
                for c, x, ci in r["cells"]]
    return out


def abort_text(rows):
    """The lines of the abort-rate ratio table."""
    out = ["abort rate, traced/untraced median, 95 %% bootstrap interval (cells with an untraced rate >= %g %%; "
           "the interval must lie in the level's band; floors: what the clock reads alone, or with %s and %s the "
           "records alone, move it; pads: time added outside or inside each attempt), beside the time ratio: "
           "a rate near 1/time is what time added outside the attempts' windows does:"
           % (ABORT_MIN_PCT, RECORDS_FLOOR, RECORDS_ALL_FLOOR)]
    if not rows:
        return out + ["  no cell's untraced rate reaches %g %%" % ABORT_MIN_PCT]
    for r in rows:
        c = r["cell"]
        out.append("  %s/%d untraced %.3f %% %s%s%s" % (
            c[0], c[1], r["off"], _ci(r["off_ci"]),
            ": within +-%g %% of the median" % SPREAD_PCT if r["spread_ok"]
            else ": spread too wide (beyond +-%g %% of the median), not judged" % SPREAD_PCT,
            "".join("; " + n for n in r["notes"])))
        for level, ratio, ci, band, meets, time in r["levels"]:
            verdict = "" if band is None else "  band [%.2f, %.2f]: %s" % (
                band[0], band[1], "not judged" if not r["spread_ok"] else _met(meets))
            out.append(("    %-16s %s %-16s time %s (1/time %s)%s" % (
                level, _num(ratio), _ci(ci), _num(time), _num(None if not time else 1 / time), verdict)).rstrip())
    return out
