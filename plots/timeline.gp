# timeline.gp - one lane per thread, one box per transaction attempt, from
# its start to its commit or abort, coloured by outcome and path.
# Input (-e): in = TSV with columns start_us, end_us, lane, kind (0 STM
# commit, 1 STM abort, 2 hardware commit, 3 hardware abort); lane_lo,
# lane_hi; out;
# ttl; w, h. Lanes are the thread ids lane_lo..lane_hi.
load dir."/common.gp"
if (!exists("w")) w = 1400
if (!exists("h")) h = 200 + 60 * (lane_hi - lane_lo + 1)
set title ttl noenhanced font ",14"
set xlabel "time since the first event shown (µs)"
set ylabel "thread (tracer id)"
set yrange [lane_lo - 0.6:lane_hi + 0.6]
set ytics 1
set grid xtics ytics
set style fill solid 0.9 border rgb "white"
set key outside right top noenhanced
kind_colour(k) = (k == 0 ? 0x27ae60 : k == 1 ? 0xc0392b : k == 2 ? 0x2e86c1 : 0xe67e22)
array names[4] = ["STM commit", "STM abort", "hardware commit", "hardware abort"]
if (!exists("minw")) minw = 0
box(k, want, x) = (k == want ? x : NaN)
do for [ext in "png svg"] {
    eval(ext eq "png" ? term_png(w, h) : term_svg(w, h))
    set output out.".".ext
    # Boxes get a minimum width so that short aborted attempts stay visible;
    # every abort is also marked above its lane.
    plot for [k=0:2:2] in using (box($4, k, ($1 + $2) / 2)):3:1:($2 > $1 + minw ? $2 : $1 + minw):($3 - 0.35):($3 + 0.35) \
         with boxxyerror lc rgb kind_colour(k) title names[k + 1], \
         for [k=1:3:2] in using (box($4, k, ($1 + $2) / 2)):3:1:($2 > $1 + minw ? $2 : $1 + minw):($3 - 0.35):($3 + 0.35) \
         with boxxyerror fs solid 1.0 noborder lc rgb kind_colour(k) title names[k + 1], \
         in using (int($4) % 2 == 1 ? $1 : NaN):($3 + 0.45) with points pt 11 ps 1.2 lc rgb "#000000" title "abort"
    set output
}
