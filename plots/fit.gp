# fit.gp - one CPU's clock model: top, its (TSC, reference) samples as the
# offset of the reference from the TSC read at nominal frequency, with the
# fitted model; bottom, the residuals of the samples against the model.
# Input (-e): in = TSV samples with columns t_s (seconds since the first
# sample), dev_us (reference - nominal TSC time, µs, relative to the first
# sample), model_us (the model at the same TSC), resid_ns, phase (0 pre,
# 1 post, 2 in-run), used (1 kept by the fit, 0 rejected); out; ttl; w, h.
load dir."/common.gp"
if (!exists("w")) w = 1200
if (!exists("h")) h = 850
set key top left noenhanced box opaque
sel(p, want, v) = (int(p) == want ? v : NaN)
do for [ext in "png svg"] {
    eval(ext eq "png" ? term_png(w, h) : term_svg(w, h))
    set output out.".".ext
    set multiplot layout 2,1 title ttl noenhanced font ",14"
    set title "samples and fitted model" noenhanced
    set xlabel "time since the first sample (s)"
    set ylabel "reference - TSC at nominal rate (µs)"
    plot in using 1:(sel($5, 0, $2)) with points pt 7 ps 0.5 lc rgb c_lin title "pre-run samples", \
         "" using 1:(sel($5, 1, $2)) with points pt 7 ps 0.5 lc rgb c_pw title "post-run samples", \
         "" using 1:(sel($5, 2, $2)) with points pt 9 ps 0.7 lc rgb c_all title "in-run samples", \
         "" using 1:(sel($6, 0, $2)) with points pt 6 ps 1.0 lc rgb "#000000" title "rejected", \
         "" using 1:3 with lines lw 2 lc rgb c_raw title "fitted model"
    set title "residuals (sample - model)" noenhanced
    set ylabel "residual (ns)"
    plot in using 1:(sel($6, 1, $4)) with points pt 7 ps 0.5 lc rgb c_lin title "used samples", \
         "" using 1:(sel($6, 0, $4)) with points pt 6 ps 1.0 lc rgb "#000000" title "rejected", \
         0 with lines dt 2 lc rgb "#555555" notitle
    unset multiplot
    set output
}
