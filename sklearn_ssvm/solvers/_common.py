"""Helpers shared by solvers: threads, progress bars, timing, Ctrl-C at safe points."""
import signal
import threading
import time
from contextlib import contextmanager

import joblib
import numpy as np
from tqdm.auto import tqdm

from .._kernels.threads import use_threads


def kernel_threads(n_jobs):
    """Run batched kernels on ``n_jobs`` threads, in scikit-learn's meaning: None is 1 unless
    ``joblib.parallel_config(n_jobs=...)`` says otherwise, -1 all cores, -2 all but one.

    Returns a context manager (``_kernels.threads.use_threads``).
    """
    return use_threads(joblib.effective_n_jobs(n_jobs))


class Clock:
    """Wall and CPU seconds since creation."""

    def __init__(self):
        self.wall0 = time.perf_counter()
        self.cpu0 = time.process_time()

    def wall(self):
        return time.perf_counter() - self.wall0

    def cpu(self):
        return time.process_time() - self.cpu0


class ProgressBar:
    """A fit's progress: with ``verbose >= 1`` a tqdm bar over the passes (or epochs,
    iterations), with ``verbose >= 2`` also one line per certificate check
    (:meth:`log`: the objective, the gap, the seconds so far)."""

    def __init__(self, total, verbose, desc):
        self.verbose, self.desc, self.clock = verbose, desc, Clock()
        self.bar = tqdm(total=total, disable=not verbose, desc=desc, unit="pass",
                        leave=verbose > 1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def update(self, n=1):
        self.bar.update(n)

    def set_postfix(self, **values):
        self.bar.set_postfix(**values)

    def close(self):
        self.bar.close()

    def log(self, step, **values):
        """Write ``desc step: name value, ..., seconds`` above the bar (``verbose >= 2``)."""
        if self.verbose >= 2:
            text = ", ".join(f"{name} {value:.6g}" for name, value in values.items())
            tqdm.write(f"{self.desc} {step}: {text}, {self.clock.wall():.1f} s")


class _Interrupts:
    """Process-wide: whether a SIGINT asked the running fit to stop, and who handles SIGINT."""

    stop = threading.Event()
    mode = None  # None: Python's own handling; "safe" or "plain" inside the outermost block


def stop_requested():
    """Whether Ctrl-C asked the running fit to stop at its next safe point (solvers poll it
    once per pass or iteration)."""
    return _Interrupts.stop.is_set()


@contextmanager
def interruptible(safe=True):
    """Ctrl-C inside the block: with ``safe``, the first SIGINT asks the solvers to stop at
    their next safe point (:func:`stop_requested`; the estimator keeps the iterate reached) and
    a second one raises ``KeyboardInterrupt`` at once; without, Python's own behaviour (for
    drivers of many fits, whose partial results are not a model). The outermost block decides;
    outside the main thread, or under a SIGINT handler someone else installed, nothing changes.
    Yields ``stop_requested``.
    """
    own = (_Interrupts.mode is None and threading.current_thread() is threading.main_thread()
           and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    if not own:
        yield stop_requested
        return

    def request_stop(signum, frame):
        if _Interrupts.stop.is_set():
            raise KeyboardInterrupt
        _Interrupts.stop.set()

    _Interrupts.stop.clear()
    _Interrupts.mode = "safe" if safe else "plain"
    previous = signal.signal(signal.SIGINT, request_stop) if safe else None
    try:
        yield stop_requested
    finally:
        if safe:
            signal.signal(signal.SIGINT, previous)
        _Interrupts.stop.clear()  # a later fit, or one outside any block, starts afresh
        _Interrupts.mode = None


def dense_oracles(problem):
    """Whether ``problem`` runs its oracles from Python with dense statistics (graphs,
    ``structures.graph.GraphProblem``) instead of the compiled label-space kernels."""
    return getattr(problem, "dense_oracles", False)


def generator(random_state):
    """The numpy ``Generator`` of a solver's ``random_state``: None, an int seed, a
    ``Generator``, or scikit-learn's ``RandomState`` instance (a seed is drawn from it, so the
    instance advances as scikit-learn's estimators advance theirs)."""
    if isinstance(random_state, np.random.RandomState):
        random_state = random_state.randint(2**31)
    return np.random.default_rng(random_state)


#: how much a zeroed point may raise the objective, relative to it (and at most by the gap)
ZEROING_SLACK = 1e-3


def sparsified(coef, primal, dual, strong, tol, primal_of):
    """Zero the entries of ``coef`` below the largest threshold whose point keeps the objective
    ``primal_of(point)`` within ``min(gap, ZEROING_SLACK |primal|)`` of ``primal`` (and the
    certified gap within ``tol``: pass ``inf`` for a run that did not converge); returns the
    point and its objective.

    Solvers that average iterates (AGM's model points, the stochastic solvers' epochs) leave
    tiny entries where an l1 penalty's optimum has zeros. A primal objective ``lambda_2``-
    strongly convex (the elastic net's L2 part) puts the optimum within ``r = sqrt(2 gap /
    lambda_2)`` of ``coef``, so only entries below ``r`` can be zeros of it: the thresholds
    run from ``1e-6 r`` to ``r``, one exact primal evaluation each, and stop at the first that
    costs too much. The slack lets a near-optimal point lose the tiny entries whose removal
    costs a second-order rise; a loose certificate (a gap much larger than the objective's
    excess) cannot buy a worse model.
    """
    gap = primal - dual
    if not (0.0 < gap < np.inf and strong > 0):
        return coef, primal
    limit = min(primal + min(gap, ZEROING_SLACK * abs(primal)), dual + tol)
    zeros = np.count_nonzero(coef == 0.0)
    for threshold in np.sqrt(2.0 * gap / strong) * np.logspace(-6, 0, 7):
        trial = np.where(np.abs(coef) > threshold, coef, 0.0)
        n_zeros = np.count_nonzero(trial == 0.0)
        if n_zeros == zeros:
            continue
        value = primal_of(trial)
        if value > limit:
            break
        coef, primal, zeros = trial, value, n_zeros
    return coef, primal
