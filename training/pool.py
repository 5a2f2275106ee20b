"""Process pools that end cleanly: ``spawn`` workers, closed and joined when the work is done.

``multiprocessing.Pool``'s own context manager *terminates* its workers on exit; a pool ended that
way leaves its queues' semaphores to the resource tracker, which then warns at interpreter exit
("There appear to be N leaked semaphore objects"). Every pool of the package comes from here.
"""
from __future__ import annotations

import contextlib
import multiprocessing as mp


@contextlib.contextmanager
def spawn_pool(processes: int, **kwargs):
    """A ``spawn`` pool of ``processes`` workers: closed and joined after the ``with`` block (the
    workers finish and exit), terminated and joined when the block raises or is abandoned."""
    pool = mp.get_context("spawn").Pool(processes, **kwargs)
    try:
        yield pool
    except BaseException:
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()
