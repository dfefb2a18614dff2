# fit.gp - one CPU's clock model: top, its (TSC, reference) samples as the
# difference between the reference clock and the TSC read at its nominal
# rate, with the model tmsync fitted; bottom, the residuals of the samples
# against the model. The samples the fit used are drawn by phase; those it
# left out apart: rejected as wide brackets, rejected as residual outliers,
# and in-run samples that a linear model does not fit, with tmsync's counts.
# Input (-e): in = TSV samples with columns t_s (seconds since the first
# sample of the trace), dev_us (reference - nominal TSC time, µs, relative to
# the CPU's first sample), model_us (the model, same scale), resid_ns, phase
# (0 pre, 1 post, 2 in-run), verdict (0 used, 1 not fitted, 2 rejected: wide
# bracket, 3 rejected: outlier); known = 1 when the verdicts come from
# tmsync, 0 when not known (all drawn as used); n_used, n_wide, n_outlier,
# n_unfit = the counts; rlim = residual axis half-range (ns); nout = samples
# outside it; out; ttl; w, h.
load dir."/common.gp"
if (!exists("w")) w = 1400
if (!exists("h")) h = 850
if (!exists("nout")) nout = 0
if (!exists("known")) known = 0
set key outside right top noenhanced box opaque
# a used sample of phase `want`; a sample with verdict `want`
sel(p, want, v) = (int(p) == want && int(column(6)) == 0 ? v : NaN)
ver(want, v) = (int(column(6)) == want ? v : NaN)
counts = known ? sprintf("samples and fitted model: %d used, %d rejected (%d wide brackets, %d outliers), %d not fitted", \
                          n_used, n_wide + n_outlier, n_wide, n_outlier, n_unfit) \
               : "samples and fitted model (rejected samples not known: the trace was synchronised before)"
c_rej = "#8e44ad"; c_unfit = "#aaaaaa"
do for [ext in "png svg"] {
    eval(ext eq "png" ? term_png(w, h) : term_svg(w, h))
    set output out.".".ext
    set multiplot layout 2,1 title ttl noenhanced font ",14"
    set title counts noenhanced
    set xlabel "time since the first sample (s)"
    set ylabel "reference − TSC at nominal rate (µs)"
    plot in using 1:(sel($5, 0, $2)) with points pt 7 ps 0.5 lc rgb c_lin title "pre-run samples", \
         "" using 1:(sel($5, 1, $2)) with points pt 7 ps 0.5 lc rgb c_pw title "post-run samples", \
         "" using 1:(sel($5, 2, $2)) with points pt 5 ps 0.7 lc rgb c_all title "in-run samples", \
         "" using 1:(ver(1, $2)) with points pt 4 ps 0.7 lc rgb c_unfit title "in-run, not fitted (linear model)", \
         "" using 1:(ver(2, $2)) with points pt 2 ps 1.2 lw 2 lc rgb c_rej title "rejected: wide bracket", \
         "" using 1:(ver(3, $2)) with points pt 6 ps 1.2 lw 2 lc rgb c_rej title "rejected: residual outlier", \
         "" using 1:3 with lines lw 2 lc rgb c_raw title "fitted model"
    set title (nout > 0 ? sprintf("residuals (sample − model); %d outside the axis", nout) : "residuals (sample − model)") noenhanced
    set ylabel "residual (ns)"
    set yrange [-rlim:rlim]
    plot in using 1:(sel($5, 0, $4)) with points pt 7 ps 0.5 lc rgb c_lin title "pre-run", \
         "" using 1:(sel($5, 1, $4)) with points pt 7 ps 0.5 lc rgb c_pw title "post-run", \
         "" using 1:(sel($5, 2, $4)) with points pt 5 ps 0.7 lc rgb c_all title "in-run", \
         "" using 1:(ver(1, $4)) with points pt 4 ps 0.7 lc rgb c_unfit title "not fitted", \
         "" using 1:(ver(2, $4)) with points pt 2 ps 1.2 lw 2 lc rgb c_rej title "rejected: wide bracket", \
         "" using 1:(ver(3, $4)) with points pt 6 ps 1.2 lw 2 lc rgb c_rej title "rejected: outlier", \
         0 with lines dt 2 lc rgb "#555555" notitle
    set yrange [*:*]
    unset multiplot
    set output
}
