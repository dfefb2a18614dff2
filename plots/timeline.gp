# timeline.gp - one lane per thread, one box per transaction attempt, from
# its start to its commit or abort, coloured by outcome and path.
# Input (-e): in = TSV with columns start_us, end_us, lane, kind (0 STM
# commit, 1 STM abort, 2 hardware commit, 3 hardware abort); nlanes; out;
# ttl; w, h. Lanes are numbered 1..nlanes (thread ids).
load dir."/common.gp"
if (!exists("w")) w = 1400
if (!exists("h")) h = 200 + 60 * nlanes
set title ttl noenhanced font ",14"
set xlabel "time since the first event shown (µs)"
set ylabel "thread"
set yrange [0.4:nlanes + 0.6]
set ytics 1
set grid xtics ytics
set style fill solid 0.9 noborder
set key outside right top noenhanced
kind_colour(k) = (k == 0 ? 0x27ae60 : k == 1 ? 0xc0392b : k == 2 ? 0x2e86c1 : 0xe67e22)
array names[4] = ["STM commit", "STM abort", "hardware commit", "hardware abort"]
box(k, want, x) = (k == want ? x : NaN)
do for [ext in "png svg"] {
    eval(ext eq "png" ? term_png(w, h) : term_svg(w, h))
    set output out.".".ext
    plot for [k=0:3] in using (box($4, k, ($1 + $2) / 2)):3:1:2:($3 - 0.35):($3 + 0.35) \
         with boxxyerror lc rgb kind_colour(k) \
         title names[k + 1]
    set output
}
