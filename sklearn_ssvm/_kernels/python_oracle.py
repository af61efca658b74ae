"""Oracles that run in Python, called from the compiled kernels (graphs: graph cuts, integer
programs, message passing over each example's own graph).

A problem registers its oracle once and packs the key (``graph_oracle.GraphOracles.key``); a
kernel meeting a ``GRAPH`` example whose oracle is not compiled calls
:func:`python_graph_oracle`, which hands the example's unary scores and
pairwise weights to the registered oracle in object mode (the GIL taken back for the call) and
scores the labeling it writes. The registry holds the oracles weakly: a problem that is gone
takes its oracle with it.
"""
import itertools
import weakref

from numba import njit, objmode

from .labelings import GRAPH, label_loss, labeling_score

_ORACLES = {}
_KEYS = itertools.count()


def register(oracle):
    """Register ``oracle(i, U, theta, augment, y_out)``, an object that writes example ``i``'s
    best labeling at unary scores ``U`` and pairwise weights ``theta`` (loss-augmented with
    ``augment``) to ``y_out``, and return its key; the key is released with the object."""
    key = next(_KEYS)
    _ORACLES[key] = weakref.ref(oracle)
    weakref.finalize(oracle, _ORACLES.pop, key, None)
    return key


def call(key, i, U, theta, augment, y_out):
    """Run the oracle registered under ``key``."""
    oracle = _ORACLES[key]()
    if oracle is None:
        raise RuntimeError("the oracle registered under this key is gone")
    oracle(i, U, theta, bool(augment), y_out)


@njit(cache=True)
def python_graph_oracle(key, i, U, theta, y_true, losses, augment, graph, y_out):
    """The oracle of ``GRAPH`` example ``i`` (registered under ``key``): writes its labeling to
    ``y_out`` and returns ``<U, S(y)> + <theta, q(y)>`` (plus the loss with ``augment``), the
    value the compiled oracles return."""
    with objmode():
        call(key, i, U, theta, augment, y_out)
    value = labeling_score(GRAPH, U, theta, y_out, graph)
    if augment:
        value += label_loss(GRAPH, y_true, y_out, losses)
    return value
