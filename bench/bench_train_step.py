"""The learner's training step, with and without XLA: CPU milliseconds per step.

    python -m bench.bench_train_step [--threads 1] [--batches 128,512] [--repeats 5]

Builds the default network for reversi(size=6) planes and times the training step of
``training.network.make_train_step`` (a ``tf.function``: forward, MSE loss, backward, Adam) against
the same step compiled with ``jit_compile=True``, on random 0/1 planes, median of REPEATS runs of
100 steps each, CPU time of this process.
"""
import argparse
import statistics
import time

import numpy as np



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batches", default="128,512")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    from training import import_tensorflow
    tf = import_tensorflow()
    from training.network import build_model, configure_threads, make_optimizer
    configure_threads(args.threads)
    shape = (6, 6, 2)

    def step_fn(jit: bool):
        model = build_model(shape)
        opt = make_optimizer(model, 1e-3)

        @tf.function(reduce_retracing=True, jit_compile=jit)
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.reshape(model(x, training=True), [-1]) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return step

    rng = np.random.default_rng(0)
    for b in (int(x) for x in args.batches.split(",")):
        x = (rng.random((b, *shape)) < 0.3).astype(np.float32)
        y = rng.uniform(-1, 1, b).astype(np.float32)
        for jit in (False, True):
            step = step_fn(jit)
            for _ in range(20):
                step(x, y)
            runs = []
            for _ in range(args.repeats):
                t = time.process_time()
                for _ in range(100):
                    float(step(x, y))
                runs.append((time.process_time() - t) * 10.0)     # ms per step
            ms = statistics.median(runs)
            print(f"batch {b:4d} {'XLA ' if jit else 'plain'}: {ms:6.2f} ms of CPU per step, "
                  f"{b / ms * 1000:8.0f} examples per CPU-second", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
