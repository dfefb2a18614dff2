"""schema - the documents the scripts read, by exactly the keys their writers use.

Owns: one description per document a script reads - the JSON of `tmcheck
--json` and `tmcheck --compare --json`, `tmsync --json` and tmbench's result line (their keys are
documented in docs/json.md; a description lists the ones scripts read), the
CSV of `tmcheck --csv`, `tmexport --samples-csv` and of validate/run
(docs/validation.md) and of tmbench/overhead (docs/tmbench.md) - and checking a document against its
description: a missing key or column, or a value of another type, is a
SchemaError naming the document and the key.
Never: guesses another name for a key, fills a missing key with a default,
or reads keys a description does not list (a script reads what is listed).
"""
import csv
import io

from . import cli


class SchemaError(cli.ScriptError):
    """A document lacks a key or column, or a value has the wrong type: one line (exit 2
    unless a script says otherwise)."""


class Nullable(object):
    """A value of SPEC, or null."""

    def __init__(self, spec):
        self.spec = spec


class Optional(object):
    """A key that may be absent; when present its value is of SPEC."""

    def __init__(self, spec):
        self.spec = spec


class Doc(object):
    """A JSON object's description: key -> spec, where a spec is int, float
    (any number), str, bool, a dict (a nested object), [spec] (an array of
    spec), Nullable(spec) or, for a key, Optional(spec)."""

    def __init__(self, name, keys):
        self.name = name
        self.keys = keys

    def extended(self, name, more):
        """This description with more keys (a workload's own, say)."""
        keys = dict(self.keys)
        keys.update(more)
        return Doc(name, keys)


def _type_ok(value, spec):
    if spec is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if spec is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, spec)


def _check(doc, where, value, spec):
    if isinstance(spec, Nullable):
        if value is None:
            return
        spec = spec.spec
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            raise SchemaError("%s: %s is not an object" % (doc, where or "the document"))
        for key, sub in spec.items():
            path = "%s.%s" % (where, key) if where else key
            if key in value:
                _check(doc, path, value[key], sub.spec if isinstance(sub, Optional) else sub)
            elif not isinstance(sub, Optional):
                raise SchemaError("%s: no key '%s'" % (doc, path))
    elif isinstance(spec, list):
        if not isinstance(value, list):
            raise SchemaError("%s: %s is not an array" % (doc, where))
        for i, item in enumerate(value):
            _check(doc, "%s[%d]" % (where, i), item, spec[0])
    elif not _type_ok(value, spec):
        raise SchemaError("%s: '%s' is %r, not %s" % (doc, where, value,
                                                      "a number" if spec is float else spec.__name__))


def read(doc, obj):
    """OBJ (a parsed JSON object) checked against the description DOC; returned as is."""
    _check(doc.name, "", obj, doc.keys)
    return obj


class CsvDoc(object):
    """A CSV file's description: its name and the columns a reader needs."""

    def __init__(self, name, columns):
        self.name = name
        self.columns = list(columns)


def read_csv(doc, f):
    """The rows of the CSV in F (an open file or a string) as dicts, after
    checking that the header has every column of DOC."""
    rows = csv.DictReader(io.StringIO(f) if isinstance(f, str) else f)
    header = rows.fieldnames or []
    missing = [c for c in doc.columns if c not in header]
    if missing:
        raise SchemaError("%s: no column%s %s" % (doc.name, "s" if len(missing) > 1 else "",
                                                 ", ".join(missing)))
    return list(rows)


# ---- tmcheck --json (docs/json.md) ----------------------------------------
# What an incomplete trace lost (both tools; docs/analysis.md, "Incomplete traces").
INCOMPLETE = {"reason": str, "end_chunk": bool, "signal": int, "dropped_events": Nullable(int),
              "writer_errors": int, "last_record_s": Nullable(float)}
# A data object or a triage group's common members.
TMCHECK_FOLD = {"object": str, "aborts": int, "oncpu_wasted_ns": float, "share": float,
                "descheduled_attempts": int, "descheduled_ns": float,
                "fields": [{"name": str, "aborts": int, "culprit_site": int}], "more_fields": int}
TMCHECK = Doc("tmcheck --json", {
    "file": str, "synced": bool, "events": int, "transactions": int, "attempts": int,
    "commits": int, "aborts": int, "dropped_events": int, "skipped_chunks": int,
    "temporal_inconsistencies": int, "grammar_violations": int,
    "out_of_place_events": {"count": int, "percent": float},
    "late_starts": int, "premature_ends": int, "open_attempts": int,
    # null when the trace has no accesses recorded (TMTRACE_EVENTS=tx)
    "conflict_free_aborts": Nullable(int),
    # only when the trace carries ground truth (injected skew)
    "clock_error_ns": Optional({"events": int, "p50": float, "p99": float, "max": float}),
    "consistent": bool, "complete": bool, "incomplete": Optional(INCOMPLETE),
    # the tracer's own effect and the time off the CPU, apart from every share
    "tracer": {"level": str, "share": float, "warn": bool},
    "descheduled_attempts": int, "descheduled_wall_ns": float, "descheduled_off_cpu_ns": float,
    "oncpu_wasted_ns": float,
    # where in the transaction each site's aborts were found (format version 4's ABORT_PC) and, with
    # TMTRACE_ABORT_STACK, the frames above (ABORT_STACK): the access first, then outwards
    "sites": [{"site": int, "name": str, "aborts": int,
               "abort_locations": [{"pc": str, "location": str, "aborts": int}],
               "abort_stacks": [{"frames": [str], "aborts": int}]}],
    # data objects and triage groups (docs/analysis.md, "Groups and triage")
    "data": [TMCHECK_FOLD],
    "triage": [dict(TMCHECK_FOLD, victim_site=int, victim_name=str, **{
        "class": str, "label": str, "culprit_site": int, "culprit_name": str, "word_known": bool,
        "advice": str})]})

# ---- tmcheck --compare --json (docs/json.md) ------------------------------
_COMPARE_SIDE = {"aborts": int, "oncpu_wasted_ns": float}
_COMPARE_ROW = {"name": str, "presence": str, "before": _COMPARE_SIDE, "after": _COMPARE_SIDE}
TMCHECK_COMPARE = Doc("tmcheck --compare --json", {
    "before": str, "after": str,
    "sites": [dict(_COMPARE_ROW, before=dict(_COMPARE_SIDE, commits_per_s=float),
                   after=dict(_COMPARE_SIDE, commits_per_s=float))],
    "data": [_COMPARE_ROW], "groups": [_COMPARE_ROW]})

# ---- tmsync --json (docs/json.md) -----------------------------------------
TMSYNC = Doc("tmsync --json", {
    "input": str, "output": str, "model": str, "events": int, "skipped_chunks": int,
    "complete": bool, "incomplete": Optional(INCOMPLETE),
    "cpus": [{"cpu": int, "model": str, "source": str, "used": int, "rejected": int,
              "rejected_width": int, "rejected_outlier": int, "drift_ppm": float,
              "offset_ns": float, "rms_ns": float, "max_ns": float, "segments": int,
              # the TSCs of the samples rejected as wide brackets and as outliers
              "rejected_width_tsc": [int], "rejected_outlier_tsc": [int]}]})

# ---- tmbench's result line (docs/json.md) ---------------------------------
TMBENCH = Doc("tmbench's JSON line", {
    "workload": str, "backend": str, "threads": int, "seconds": float, "ops": int,
    "ops_per_s": float, "commits": int,
    "aborts": Nullable(int),            # null on a backend that cannot count them
    # the tracer's figures: libtmtrace builds only
    "writer_events": Optional(int), "writer_cpu_s": Optional(float), "trace_bytes": Optional(int),
    "check": str, "check_msg": Optional(str)})
# `tmbench stress` adds its own counts.
TMBENCH_STRESS = TMBENCH.extended("tmbench stress's JSON line", {
    "tx_counted": int, "opacity_violations": int, "bad_audits": int, "invariant_checks": int})

# ---- tmexport --chrome: the events tmplot reads (docs/json.md) -------------
CHROME_ATTEMPT = Doc("tmexport --chrome attempt (ph X)", {
    "name": str, "tid": int, "ts": float, "dur": float,
    "args": {"outcome": str, "path": str, "abort_reason": Optional(str)}})   # abort_reason: aborts only
CHROME_ARROW = Doc("tmexport --chrome arrow end (ph f)", {
    "args": {"victim_site": str, "culprit_site": str}})

# ---- CSV ------------------------------------------------------------------
# tmbench/overhead --csv: one row per run (kind calibration, run) and per median
OVERHEAD_CSV = CsvDoc("tmbench/overhead --csv", [
    "kind", "workload", "threads", "level", "rep", "ops", "seconds", "ns_per_op", "commits", "aborts",
    "abort_rate_pct"])
TMCHECK_CONFLICTS_CSV = CsvDoc("tmcheck --csv conflicts.csv",
                               ["victim_site", "victim_name", "culprit_site", "culprit_name", "count"])
SAMPLES_CSV = CsvDoc("tmexport --samples-csv",
                     ["cpu", "phase", "tsc", "ref_ns", "nominal_ns", "model_ns", "residual_ns"])
# validate/run writes results.csv and intrusion.csv with these columns ...
VALIDATE_RESULT_COLUMNS = [
    "workload", "threads", "scenario", "model", "right_model", "events", "dropped_events",
    "temporal_before", "temporal_after", "grammar_before", "grammar_after",
    "out_of_place_pct_before", "out_of_place_pct_after",
    "late_starts_before", "late_starts_after", "premature_ends_before", "premature_ends_after",
    "cf_aborts_before", "cf_aborts_after",
    "err_raw_p99_ns", "err_p50_ns", "err_p99_ns", "err_max_ns", "fit_rms_ns_max", "error"]
VALIDATE_INTRUSION_COLUMNS = [
    "workload", "threads", "level", "rep", "seconds", "ops", "ns_per_op", "commits", "aborts",
    "abort_rate_pct"]
# ... and tmplot needs these of them.
VALIDATE_RESULTS_CSV = CsvDoc("validate results.csv", [
    "scenario", "threads", "model", "temporal_before", "temporal_after", "grammar_before",
    "grammar_after", "out_of_place_pct_before", "out_of_place_pct_after", "err_p50_ns", "err_p99_ns"])
VALIDATE_INTRUSION_CSV = CsvDoc("validate intrusion.csv", [
    "workload", "level", "ns_per_op", "abort_rate_pct"])
