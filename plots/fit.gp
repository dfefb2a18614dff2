# fit.gp - one CPU's clock model: top, its (TSC, reference) samples as the
# difference between the reference clock and the TSC read at its nominal
# rate, with the model tmsync fitted; bottom, the residuals of the samples
# against the model.
# Input (-e): in = TSV samples with columns t_s (seconds since the first
# sample of the trace), dev_us (reference - nominal TSC time, µs, relative to
# the CPU's first sample), model_us (the model, same scale), resid_ns, phase
# (0 pre, 1 post, 2 in-run); rlim = residual axis half-range (ns); nout =
# residuals outside it; out; ttl; w, h.
load dir."/common.gp"
if (!exists("w")) w = 1200
if (!exists("h")) h = 850
if (!exists("nout")) nout = 0
set key top left noenhanced box opaque
sel(p, want, v) = (int(p) == want ? v : NaN)
do for [ext in "png svg"] {
    eval(ext eq "png" ? term_png(w, h) : term_svg(w, h))
    set output out.".".ext
    set multiplot layout 2,1 title ttl noenhanced font ",14"
    set title "samples and fitted model" noenhanced
    set xlabel "time since the first sample (s)"
    set ylabel "reference − TSC at nominal rate (µs)"
    plot in using 1:(sel($5, 0, $2)) with points pt 7 ps 0.5 lc rgb c_lin title "pre-run samples", \
         "" using 1:(sel($5, 1, $2)) with points pt 7 ps 0.5 lc rgb c_pw title "post-run samples", \
         "" using 1:(sel($5, 2, $2)) with points pt 5 ps 0.7 lc rgb c_all title "in-run samples", \
         "" using 1:3 with lines lw 2 lc rgb c_raw title "fitted model"
    set title (nout > 0 ? sprintf("residuals (sample − model); %d outside the axis", nout) : "residuals (sample − model)") noenhanced
    set ylabel "residual (ns)"
    set yrange [-rlim:rlim]
    plot in using 1:(sel($5, 0, $4)) with points pt 7 ps 0.5 lc rgb c_lin title "pre-run", \
         "" using 1:(sel($5, 1, $4)) with points pt 7 ps 0.5 lc rgb c_pw title "post-run", \
         "" using 1:(sel($5, 2, $4)) with points pt 5 ps 0.7 lc rgb c_all title "in-run", \
         0 with lines dt 2 lc rgb "#555555" notitle
    set yrange [*:*]
    unset multiplot
    set output
}
