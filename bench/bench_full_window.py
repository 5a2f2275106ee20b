"""Self-play rate with a full replay window, normalised in the same run.

    python -m bench.bench_full_window [--game 'reversi(size=6)'] [--minutes 8] [--learner async]

Trains one network of GAME for MINUTES with the default config and the given learner
(``async``, ``thread`` or ``inline``), in this process, then measures in the same process the
default network's ``tf.function`` states per CPU-second at batch 256 (the reference rate).
Reports, over the games counted once the replay window was full (game number > replay_games),
examples per wall-second and per CPU-second of the process, and the machine-normalised figure:
examples per CPU-second divided by the ``tf.function`` states per CPU-second.
"""
import argparse
import json
import tempfile
from pathlib import Path



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--game", default="reversi(size=6)")
    ap.add_argument("--minutes", type=float, default=8.0)
    ap.add_argument("--learner", default="async", choices=("async", "thread", "inline"))
    ap.add_argument("--out", default=None, help="run directory (default: a temporary one)")
    args = ap.parse_args()
    from descent.config import default_config_path, load_config
    from training.run import run_training, training_config
    cfg = load_config(default_config_path(args.game))
    window = training_config(cfg)["training"]["replay_games"]
    budget = args.minutes * 60.0
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(args.out or tmp)
        run_training(args.game, cfg, 1, budget, [("final", budget)], 1, run, 0, threads=1,
                     progress=False, echo=lambda *_: None,
                     runtime={"learner": args.learner, "inference": "onnx"})
        from training.logfiles import read_history     # log.jsonl and its archives
        recs = read_history(run / "member_00")
    full = [r for r in recs if r["game"] > window]
    import games
    from training.network import Inference, build_model
    from bench.bench_training import _raw_rates
    info = games.load(args.game)
    net = cfg["network"]
    tf_rate = _raw_rates(Inference(build_model(info.planes_shape, net["filters"], net["blocks"],
                                               net["head_units"])), info.planes_shape, [256], 3.0)[256]
    out = {"game": args.game, "minutes": args.minutes, "learner": args.learner, "games": len(recs),
           "window_games": window, "full_window_games": len(full),
           "tf_function_256_states_per_cpu_s": round(tf_rate)}
    if full:
        ex = sum(r["examples"] for r in full)
        cpu = sum(r["examples"] / r["examples_per_cpu_s"] for r in full)
        wall = sum(r["seconds"] for r in full)
        out.update({"examples_per_wall_s": round(ex / wall), "examples_per_cpu_s": round(ex / cpu),
                    "cpu_per_wall": round(cpu / wall, 2),
                    "trained_games": sum(bool(r.get("trained", True)) for r in full),
                    "normalised_cpu": round(ex / cpu / tf_rate, 3)})
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
