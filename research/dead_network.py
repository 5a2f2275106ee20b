"""Why havannah's value networks died, and what learning rate keeps them alive.

The havannah(base=4) networks of the first ladder run (Adam at the default 1e-3) gave one value to
every position. Their targets are small: havannah's terminal evaluation is multiplicative depth,
``b * P^(-p/P)``, so most replay targets lie within +-0.2 (standard deviation about 0.06). This
script retrains fresh networks of the config's architecture on a fixed sample of that run's replay
window, at several learning rates and initial seeds, and measures on held-out examples the spread
(standard deviation) of the network's outputs, their correlation with the targets and the mean
squared error against the targets' variance (a dead network: spread 0, error = variance). A control
trains at 1e-3 on the same examples with the targets scaled by 5.

The sample (``research/data/havannah_base4_examples.npz``: bit-packed input planes and float32 targets
of 20,000 examples drawn uniformly from the run's last 100 games) is made once from a replay folder
with ``--make-sample REPLAY_DIR``; it loads without pickles.

    python -m research.dead_network                       # research/results_dead_network.json
    python -m research.dead_network --report
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

SPEC = "havannah(base=4)"
SAMPLE = os.path.join(HERE, "data", "havannah_base4_examples.npz")
DEFAULT_JSON = os.path.join(HERE, "results_dead_network.json")
CONFIG = os.path.join(os.path.dirname(HERE), "configs", "havannah.toml")


def make_sample(replay_dir: str, n: int, path: str) -> None:
    import games
    from training.replay import ReplayBuffer
    info = games.load(SPEC)
    rb = ReplayBuffer(replay_dir, 100, info.planes_shape)   # reads a copy: load() drops stray files
    ids = sorted(rb.files())
    rb.load(ids[-1])
    x, y = rb.sample(1.0, 0, np.random.default_rng(0))
    idx = np.random.default_rng(1).choice(len(y), min(n, len(y)), replace=False)
    x, y = x[idx].astype(np.uint8), y[idx].astype(np.float32)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp.npz"
    np.savez_compressed(tmp, planes=np.packbits(x.reshape(len(x), -1), axis=1), y=y,
                        shape=np.array(x.shape[1:], np.int64), games=np.array([ids[0], ids[-1]]))
    os.replace(tmp, path)
    print(f"{path}: {len(y)} examples of games {ids[0]}-{ids[-1]}, {os.path.getsize(path)} bytes")


def load_sample(path: str):
    with np.load(path, allow_pickle=False) as f:
        shape = tuple(int(v) for v in f["shape"])
        bits = np.unpackbits(f["planes"], axis=1)[:, :int(np.prod(shape))]
        return bits.reshape(-1, *shape).astype(np.float32), f["y"].astype(np.float32)


def train_one(x, y, tr, te, lr: float, seed: int, steps: int, scale: float = 1.0) -> dict:
    import games
    from descent.config import load_config
    from training.architecture import Architecture
    from training.network import build_model, make_optimizer, make_train_step
    cfg = load_config(CONFIG)
    arch = Architecture.from_meta(cfg["network"], ValueError, "network")
    model = build_model(games.load(SPEC).planes_shape, arch, seed=seed)
    step = make_train_step(model, make_optimizer(model, lr))
    yy = np.clip(y * scale, -1.0, 1.0).astype(np.float32)
    rng = np.random.default_rng(1000 + seed)
    t0 = time.perf_counter()
    for _ in range(steps):
        b = rng.choice(tr, 128)
        step(x[b], yy[b])
    pred = model.predict(x[te], verbose=0, batch_size=1024).ravel().astype(np.float64)
    spread = float(pred.std())
    corr = float(np.corrcoef(pred, yy[te])[0, 1]) if spread > 0 else None
    return {"lr": lr, "seed": seed, "steps": steps, "target_scale": scale, "net_spread": spread,
            "target_spread": float(yy[te].std()), "corr": corr,
            "mse": float(np.mean((pred - yy[te]) ** 2)), "target_var": float(yy[te].var()),
            "dead": spread < 1e-4 * float(yy[te].std()), "seconds": round(time.perf_counter() - t0, 1)}


def report(data: dict) -> str:
    out = ["| learning rate | targets | seed | output spread | target spread | correlation | MSE / variance | dead |",
           "|---|---|---|---|---|---|---|---|"]
    for r in data["runs"]:
        corr = "-" if r["corr"] is None else f"{r['corr']:.2f}"
        out.append(f"| {r['lr']:g} | x{r['target_scale']:g} | {r['seed']} | {r['net_spread']:.4f} | "
                   f"{r['target_spread']:.4f} | {corr} | {r['mse'] / r['target_var']:.2f} | "
                   f"{'yes' if r['dead'] else 'no'} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--make-sample", metavar="REPLAY_DIR", help="write the sample from a replay folder (a copy)")
    ap.add_argument("--examples", type=int, default=20000)
    ap.add_argument("--sample", default=SAMPLE)
    ap.add_argument("--lrs", default="1e-3,3e-4")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--steps", type=int, default=1500, help="minibatches of 128 per network")
    ap.add_argument("--json", default=DEFAULT_JSON)
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args(argv)
    if args.make_sample:
        make_sample(args.make_sample, args.examples, args.sample)
        return 0
    if args.report:
        with open(args.json) as f:
            print(report(json.load(f)))
        return 0
    x, y = load_sample(args.sample)
    te = np.random.default_rng(2).choice(len(y), len(y) // 5, replace=False)
    tr = np.setdiff1d(np.arange(len(y)), te)
    runs = [(float(lr), int(s), 1.0) for lr in args.lrs.split(",") for s in args.seeds.split(",")]
    runs.append((1e-3, 0, 5.0))                       # the control: the same targets, scaled
    data = {"game": SPEC, "examples": len(y), "held_out": len(te), "runs": [],
            "meta": {"python": sys.version.split()[0], "platform": platform.platform(),
                     "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d")}}
    from training import fileio
    for lr, seed, scale in runs:
        data["runs"].append(train_one(x, y, tr, te, lr, seed, args.steps, scale))
        r = data["runs"][-1]
        print(f"lr {lr:g} seed {seed} x{scale:g}: spread {r['net_spread']:.4f} corr {r['corr']} "
              f"dead {r['dead']} ({r['seconds']} s)", flush=True)
        fileio.write_json(args.json, data)
    print(report(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
