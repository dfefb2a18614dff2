"""stats - the statistics the benchmark scripts report.

Owns: the geometric mean of ratios, the ratios of paired runs, the share of
pairs of runs one configuration wins, the split of a program's times into
its two outcomes, and the bootstrap confidence intervals
of a median, of a ratio of two medians, of the geomean of such ratios and of
that share (each sample resampled with replacement on its own, from a seeded
generator, so that a report can be repeated exactly).
Never: runs anything or decides a verdict (the scripts compare the figures
with their targets).
"""
import bisect
import math
import random
import statistics


def geomean(values):
    """The geometric mean of the values that are not None (or 0), or None."""
    vals = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def median_ratio(num, den):
    """median(NUM) / median(DEN), or None when either is empty or DEN's median is 0."""
    if not num or not den:
        return None
    d = statistics.median(den)
    return statistics.median(num) / d if d else None


def bootstrap_ratio_ci(num, den, level=0.95, rounds=2000, seed=1):
    """The LEVEL bootstrap interval (percentile method) of
    median(NUM) / median(DEN): (low, high), or None when a sample is empty.
    Why the percentile method: run times are skewed and few (tens of runs),
    and the ratio of medians has no usable closed form."""
    return bootstrap_geomean_ratio_ci([(num, den)], level, rounds, seed)


def paired_ratios(num, den):
    """NUM[k] / DEN[k] for every key k of both dicts (a repetition's run of
    each of two configurations), in key order; a pair whose DEN is 0 or
    either value None is left out. Interleaved runs that share a repetition
    ran seconds apart, so the ratio of a pair cancels whatever slowed the
    whole machine for a while, which a ratio of medians carries into its
    interval."""
    return [num[k] / den[k] for k in sorted(set(num) & set(den))
            if num[k] is not None and den[k] is not None and den[k] != 0]


def bootstrap_median_ci(xs, level=0.95, rounds=2000, seed=1):
    """The LEVEL bootstrap interval of median(XS): (low, high), or None when XS is empty."""
    return bootstrap_ratio_ci(xs, [1.0], level, rounds, seed)


def bootstrap_geomean_ratio_ci(pairs, level=0.95, rounds=2000, seed=1):
    """The LEVEL bootstrap interval (percentile method) of the geomean over
    PAIRS [(num, den)] of median(num) / median(den), each sample resampled
    on its own in every round: (low, high), or None when a sample is empty."""
    if not pairs or any(not num or not den for num, den in pairs):
        return None

    def statistic(samples):
        rs = [median_ratio(num, den) for num, den in samples]
        if None in rs:
            return None
        # one ratio stands as it is (0 included: an abort rate may be 0)
        return rs[0] if len(rs) == 1 else geomean(rs)
    return _percentile_ci([s for pair in pairs for s in pair], lambda flat: statistic(list(zip(flat[::2], flat[1::2]))),
                          level, rounds, seed)


def share_faster(xs, ys):
    """The share of the pairs (x, y), x from XS and y from YS, in which x is
    the smaller (a shorter time), ties counting half: the Mann-Whitney U over
    len(XS) * len(YS), the chance that a run of one beats a run of the other.
    0.5 when neither is faster. None when either is empty. Why beside the
    ratio of medians: a program whose times fall in two modes (STAMP's bayes
    at 2 threads) puts its median in either mode from one set of runs to the
    next, and the ratio of medians with it, where this share stays near 0.5."""
    if not xs or not ys:
        return None
    ys = sorted(ys)
    wins = sum((len(ys) - bisect.bisect_right(ys, x)) + 0.5 * (bisect.bisect_right(ys, x) - bisect.bisect_left(ys, x))
               for x in xs)
    return wins / (len(xs) * len(ys))


def two_outcome_split(xs):
    """The time that parts XS (positive, the runs of every configuration
    together) into a program's two outcomes: two means on the logarithms
    (the slow outcome takes a multiple of the fast one's time), started from
    the quartiles (from the extremes, one slow outlier would make a group of
    its own), the split halfway between them on that scale. None with fewer
    than two distinct values. Why: STAMP's bayes at 2 threads learns in
    either about 20 or about 45 ms by the order its threads take their
    tasks; within each outcome runtimes compare, the ratio of medians across
    both does not (share_faster)."""
    logs = sorted(math.log(x) for x in xs if x > 0)
    if len(logs) < 2 or logs[0] == logs[-1]:
        return None
    lo, hi = logs[len(logs) // 4], logs[(3 * len(logs)) // 4]
    if lo == hi:
        lo, hi = logs[0], logs[-1]
    for _ in range(100):
        cut = (lo + hi) / 2.0
        k = bisect.bisect_right(logs, cut)
        nlo, nhi = statistics.fmean(logs[:k]), statistics.fmean(logs[k:])
        if (nlo, nhi) == (lo, hi):
            break
        lo, hi = nlo, nhi
    return math.exp((lo + hi) / 2.0)


def bootstrap_share_faster_ci(xs, ys, level=0.95, rounds=2000, seed=1):
    """The LEVEL bootstrap interval (percentile method) of share_faster(XS,
    YS): (low, high), or None when a sample is empty."""
    if not xs or not ys:
        return None
    return _percentile_ci([xs, ys], lambda s: share_faster(s[0], s[1]), level, rounds, seed)


def _percentile_ci(samples, statistic, level, rounds, seed):
    """The LEVEL percentile interval of STATISTIC over ROUNDS resamplings of
    SAMPLES (a list of lists, each resampled with replacement on its own); a
    round whose statistic is None is left out. (low, high), or None."""
    rng = random.Random(seed)
    got = []
    for _ in range(rounds):
        v = statistic([[rng.choice(xs) for _ in xs] for xs in samples])
        if v is not None:
            got.append(v)
    if not got:
        return None
    got.sort()
    tail = (1.0 - level) / 2.0
    lo = got[int(math.floor(tail * (len(got) - 1)))]
    hi = got[int(math.ceil((1.0 - tail) * (len(got) - 1)))]
    return lo, hi
