# common.gp - settings every tmplot figure shares: fonts, grid, colours, and
# the loop that renders one figure as PNG (pngcairo) and SVG. Loaded by the
# other scripts; never sets data or titles of its own.
set encoding utf8
set grid ytics lc rgb "#dddddd" lw 1 lt 1
set border 3 lc rgb "#444444"
set tics nomirror
set key noenhanced
set datafile separator "\t"
set datafile missing "-"
set datafile columnheaders
# Colours: fixed per meaning across all figures.
c_raw = "#c0392b"; c_lin = "#2e86c1"; c_pw = "#27ae60"
c_off = "#7f8c8d"; c_tx = "#2e86c1"; c_all = "#e67e22"
# term(ext, w, h): the terminal of one output kind.
term_png(w, h) = sprintf("set terminal pngcairo size %d,%d enhanced font 'DejaVu Sans,11' background rgb 'white'", w, h)
term_svg(w, h) = sprintf("set terminal svg size %d,%d enhanced font 'DejaVu Sans,11' background rgb 'white'", w, h)
