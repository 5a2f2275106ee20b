#!/bin/bash
# Calibrate Minibal_+ with the shipped breakthrough 6x6 network against Fairy-Stockfish (Debian's
# fairy-stockfish 11.1) at the given strengths, each "SKILL:NODES"; resumable: rerun to continue
# (calibrate replays its game logs). From the repository root:
#   bash results/engine-calibration/run.sh 20:1000 20:10000 ...
# A strength that is too weak (Minibal_+ wins even at 1 iteration) or too strong ends with an error
# line saying so; the loop goes on with the next.
NET=checkpoints/shipped/breakthrough_rows-6_cols-6/final.weights.h5
for s in "$@"; do
  skill=${s%%:*}; nodes=${s##*:}
  nice -n 10 .venv/bin/descent calibrate 'breakthrough(rows=6,cols=6)' \
    --algorithm "minibal_plus:net=$NET" \
    --against "uci:/usr/games/fairy-stockfish,Skill Level=$skill,nodes=$nodes" \
    --range 1:1000 --max-games 80 --near-games 24 --seed 0 \
    --run "results/engine-calibration/skill${skill}_nodes${nodes}" || true
done
