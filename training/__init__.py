"""Training: self-play, the value network, the replay buffer and the learner.

TensorFlow is imported lazily, and always through ``import_tensorflow()``, which keeps its start-up
banners ("oneDNN custom operations are on ...", "All log messages before absl::InitializeLog() ...")
out of every command's output, in worker processes too.
"""
from __future__ import annotations

import os
import sys
import tempfile

# Lines TensorFlow's C++ runtime and absl print while TensorFlow is imported (not errors).
_BANNERS = ("All log messages before absl::InitializeLog()", "oneDNN custom operations are on",
            "This TensorFlow binary is optimized to use available CPU instructions",
            "To enable the following instructions", "Unable to register cuDNN factory",
            "Unable to register cuFFT factory", "Unable to register cuBLAS factory",
            "computation placer already registered", "TF-TRT Warning", "cuda_dnn.cc", "cuda_fft.cc",
            "cuda_blas.cc", "Could not find cuda drivers", "failed call to cuInit",
            "cudart_stub.cc", "could not open file to read NUMA node")


def quiet_environment() -> None:
    """Environment variables that turn TensorFlow's C++ logging down (set before it loads; inherited
    by spawned worker processes)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_CPP_MAX_VLOG_LEVEL", "-1")
    os.environ.setdefault("ABSL_MIN_LOG_LEVEL", "3")


def import_tensorflow():
    """``import tensorflow`` (and keras) with the start-up banners filtered out of stderr; any
    other line written during the import is passed on. Returns the module."""
    loaded = sys.modules.get("tensorflow")
    if loaded is not None and "keras" in sys.modules:
        return loaded
    quiet_environment()
    try:
        sys.stderr.flush()
    except (AttributeError, ValueError):
        pass
    saved = None
    capture = tempfile.TemporaryFile()
    try:
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
    except OSError:
        saved = None
    try:
        import tensorflow as tf  # lazy: TensorFlow
        # lazy: TensorFlow
        import keras  # noqa: F401
    finally:
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        text = capture.read().decode("utf-8", "replace")
        capture.close()
        rest = [line for line in text.splitlines()
                if line.strip() and not any(b in line for b in _BANNERS)]
        if rest:
            sys.stderr.write("\n".join(rest) + "\n")
    try:
        from absl import logging as absl_logging  # lazy: TensorFlow
        absl_logging.set_verbosity(absl_logging.ERROR)
    except ImportError:
        pass
    tf.get_logger().setLevel("ERROR")
    return tf


quiet_environment()
