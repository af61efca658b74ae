"""The sums over the examples that the exact-sum solvers take, on threads or on a dask cluster.

BMRM (spec 003 §2.1) and AGM (spec 001) ask one thing of the data at every iterate: a sum over
the examples (the mean loss, its gradient, the mean hinge of a certificate). How that sum runs
is one axis, :class:`ExampleSums`, with two pieces: :class:`ThreadSums` (one process, the
``n_jobs`` threads) and :class:`ClusterSums` (the partitions of the examples on the workers of a
dask cluster, each packed once and kept there). The solvers see the axis only (:func:`open_sums`).

Both add in one fixed order (``_kernels/reduce.py``): chunks of :data:`CHUNK` consecutive
examples, each chunk's terms in example order, the chunks combined along the dyadic tree over
their indices. A cluster's partitions are ranges of whole subtrees of that tree, each worker
returns its subtrees' sums and the driver combines them along the same tree: the iterates are
the same to the bit for any number of threads, workers or partitions.
"""
from abc import ABC, abstractmethod

import numpy as np

from .._kernels.reduce import chunk_sums, gradient_terms, tree_columns, tree_rows
from .._kernels.threads import CHUNKS_PER_THREAD, n_threads, run_chunks, run_ranges
from ._common import dense_oracles
from .smooth import full_gradient

__all__ = ["CHUNK", "ClusterSums", "ExampleSums", "ThreadSums", "open_sums", "partition_chunks"]

#: examples per chunk: the leaves of the tree along which every sum is added
CHUNK = 64

#: times a cluster's sum is tried again after a worker was lost (the partitions re-sent)
RETRIES = 2


def n_chunks(n):
    """Chunks of :data:`CHUNK` examples covering ``n`` examples."""
    return -(-n // CHUNK)


def dyadic_blocks(lo, hi):
    """The aligned subtrees ``[a, a + 2^k)`` that cover the chunks ``lo..hi-1``, in order."""
    lo, hi = int(lo), int(hi)
    blocks = []
    while lo < hi:
        size = lo & -lo if lo else 1 << (hi.bit_length() - 1)
        while lo + size > hi:
            size //= 2
        blocks.append((lo, lo + size))
        lo += size
    return blocks


def partition_chunks(total, n_partitions):
    """``n_partitions`` ranges of chunks covering ``range(total)``, their bounds at multiples of
    a power of two (so that each is a few subtrees of the tree) within 1/16 of an even share."""
    n_partitions = max(1, min(n_partitions, total))
    step = 1
    while 2 * step * 16 * n_partitions <= total:
        step *= 2
    bounds = [0] + [min(total, int(round(k * total / n_partitions / step)) * step)
                    for k in range(1, n_partitions)] + [total]
    return [(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]


class _Part:
    """Consecutive whole chunks of the examples, packed with their token matrix by columns: the
    sums of its chunks as one node of the tree (a subtree on a worker, the root on one
    process), which :func:`_assemble` combines with the others'.

    ``first_chunk`` places its chunks in the whole data's tree; ``n_total`` is the number of
    examples of the whole data (each term's share is ``1 / n_total``).
    """

    def __init__(self, problem, first_chunk, n_total):
        self.problem = problem
        self.first_chunk = first_chunk
        self.scale = -1.0 / n_total
        self.n_chunks = n_chunks(problem.n_samples)
        columns = problem.token_matrix().tocsc()
        columns.sort_indices()
        self.colptr = columns.indptr.astype(np.int64)
        self.tokens = columns.indices.astype(np.int64)
        self.values = columns.data
        self.chunk_tokens = problem.tok_offsets[::CHUNK].copy()
        if self.chunk_tokens.shape[0] == self.n_chunks:  # the last chunk is not full
            self.chunk_tokens = np.append(self.chunk_tokens, problem.tok_offsets[-1])

    def _feature_bounds(self):
        """Ranges of features of about equal non-zeros, several per thread."""
        k = n_threads() * CHUNKS_PER_THREAD if n_threads() > 1 else 1
        cuts = np.searchsorted(self.colptr, np.linspace(0, self.colptr[-1], k + 1)[1:-1])
        return np.unique(np.concatenate([[0], cuts, [self.colptr.shape[0] - 1]]))

    def smoothed(self, coef, smoothing, gradient, W=None):
        """The node of the smoothed losses at ``coef``: ``small`` holds the sum of the losses
        and, with ``gradient``, of the expected losses and the pairwise part of the gradient;
        ``W`` its emission part (written to ``W``, or a new array)."""
        p = self.problem
        values, M, Q = p.smoothed_losses(coef, smoothing.code, smoothing.mu, smoothing.K)
        if not gradient:
            return self._node(self._sums(values)[:, None])
        ell = np.empty(p.n_samples)
        active = np.empty(p.tok_offsets[-1], dtype=np.bool_)
        pairs = np.empty((self.n_chunks, p.n_pair))
        run_chunks(gradient_terms, self.n_chunks, p.packed(), M, Q, p.sample_weight, self.scale,
                   CHUNK, ell, active, pairs)
        W = np.empty((p.n_features, p.n_codes)) if W is None else W
        run_ranges(tree_columns, self._feature_bounds(), self.colptr, self.tokens, self.values,
                   self.chunk_tokens, self.first_chunk, active, M, W)
        node = self._node(np.column_stack([self._sums(values), self._sums(ell), pairs]))
        node["W"] = W
        return node

    def hinge(self, coef):
        """The node of the structured hinge losses at ``coef`` (their sum in ``small``)."""
        _, values, true_scores, _ = self.problem.run_oracle(coef, True)
        return self._node(self._sums(values - true_scores)[:, None])

    def _sums(self, x):
        out = np.empty(self.n_chunks)
        chunk_sums(x, self.problem.sample_weight, CHUNK, out)
        return out

    def _node(self, rows):
        """The node of this part's chunks' ``rows``: their sum along the tree."""
        small = np.empty(rows.shape[1])
        tree_rows(self.first_chunk + np.arange(self.n_chunks), np.ascontiguousarray(rows), small)
        return {"first": self.first_chunk, "size": _span(self.n_chunks), "small": small}

    def sparse(self, node):
        """``node`` with its emission rows kept only where this part has features (what a
        worker sends back)."""
        if "W" in node:
            rows = np.flatnonzero(np.diff(self.colptr))
            node = {**node, "W": (rows, node["W"][rows])}
        return node


def _span(n):
    """The smallest power of two ``>= n``: the size of the subtree a part's chunks fill."""
    return 1 << max(n - 1, 0).bit_length()


def _joined(a, b):
    """The parent node of the sibling nodes ``a`` (left) and ``b``: their sums added, the
    emission rows of either (absent: zero, which adds exactly)."""
    node = {"first": a["first"], "size": 2 * a["size"], "small": a["small"] + b["small"]}
    if "W" in a:
        (ra, va), (rb, vb) = a["W"], b["W"]
        rows = np.union1d(ra, rb)
        values = np.zeros((rows.shape[0], va.shape[1]))
        values[np.searchsorted(rows, ra)] = va
        values[np.searchsorted(rows, rb)] += vb
        node["W"] = (rows, values)
    return node


def _merged(left, right, total):
    """The nodes of two consecutive ranges of chunks (lists of nodes, in order), siblings
    joined into their parents: a step of the tree reduction over the partitions, on a worker,
    with the additions :func:`_assemble` would make. A last node whose right sibling lies past
    the ``total`` chunks stands for its parent (an empty subtree adds nothing)."""
    root = _span(total)
    stack = []
    for node in [*left, *right]:
        stack.append(node)
        while True:
            top = stack[-1]
            if (len(stack) >= 2 and stack[-2]["size"] == top["size"]
                    and stack[-2]["first"] + top["size"] == top["first"]
                    and stack[-2]["first"] % (2 * top["size"]) == 0):
                stack.pop()
                stack[-1] = _joined(stack[-1], top)
            elif (top["size"] < root and top["first"] % (2 * top["size"]) == 0
                  and top["first"] + top["size"] >= total):
                stack[-1] = {**top, "size": 2 * top["size"]}
            else:
                break
    return stack


def _assemble(nodes, n_total, shape, grad=None):
    """The sums of the nodes ``nodes`` (in chunk order) combined along the tree: ``value``, or
    ``(value, grad, dual_loss)``, the means over ``n_total`` examples; ``shape = (n_features,
    n_codes, n_pair)``."""
    firsts = np.array([node["first"] for node in nodes])
    small = np.empty(nodes[0]["small"].shape[0])
    tree_rows(firsts, np.array([node["small"] for node in nodes]), small)
    value = small[0] / n_total
    if "W" not in nodes[0]:
        return value
    F, C, P = shape
    grad = np.empty(F * C + P) if grad is None else grad
    grad[F * C:] = small[2:]
    if len(nodes) == 1 and not isinstance(nodes[0]["W"], tuple):
        if nodes[0]["W"].base is not grad:
            grad[:F * C] = nodes[0]["W"].ravel()
    else:  # one dense row per node, combined along the tree
        blocks = np.zeros((len(nodes), F * C))
        for block, node in zip(blocks, nodes):
            rows, values = node["W"]
            block.reshape(F, C)[rows] = values
        tree_rows(firsts, blocks, grad[:F * C])
    return value, grad, small[1] / n_total


class ExampleSums(ABC):
    """The sums over the examples of a packed problem at given weights: one axis of how a fit
    runs, with one piece per way (threads, a dask cluster). The results do not depend on the
    piece, nor on its number of threads or workers.

    A context manager: leaving it releases what the piece holds (a cluster's partitions).
    """

    @abstractmethod
    def smoothed(self, coef, smoothing, gradient=True):
        """The mean smoothed loss ``mean_i w_i f_i(coef)`` (a float); with ``gradient``,
        ``(value, grad, dual_loss)``: its gradient and the mean expected task loss under the
        smoothing weights (the dual point's loss term).

        Parameters
        ----------
        coef : ndarray of shape (n_params,)
        smoothing : Smoothing
            The smoother (``solvers.smooth.Smoothing``; mu 0 with ``NONE``: the max oracle).
        gradient : bool
        """

    @abstractmethod
    def hinge(self, coef):
        """The mean structured hinge ``mean_i w_i H~_i(coef)`` (a float)."""

    def close(self):
        """Release what the sums hold."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ThreadSums(ExampleSums):
    """The sums in this process, on the threads of ``use_threads`` (``n_jobs``). Graph
    structures, whose oracles run from Python, sum their dense per-example gradients."""

    def __init__(self, problem):
        self.problem = problem
        self.part = None if dense_oracles(problem) else _Part(problem, 0, problem.n_samples)

    def smoothed(self, coef, smoothing, gradient=True):
        if self.part is None:
            fg = full_gradient(self.problem, coef, smoothing)
            return (fg.value, fg.grad, fg.dual_loss) if gradient else fg.value
        p = self.problem
        grad = np.empty(p.n_params)
        W = p.split_coef(grad)[0]
        out = self.part.smoothed(coef, smoothing, gradient, W)
        return _assemble([out], p.n_samples, (p.n_features, p.n_codes, p.n_pair), grad)

    def hinge(self, coef):
        if self.part is None:
            return self.problem.weighted_mean(self.problem.hinge_losses(coef))
        return _assemble([self.part.hinge(coef)], self.problem.n_samples, None)


def _new_parts(blocks, n_total):
    return [_Part(problem, first, n_total) for problem, first in blocks]


def _parts_smoothed(parts, coef, total, smoothing, gradient):
    return _merged([part.sparse(part.smoothed(coef, smoothing, gradient)) for part in parts], [],
                   total)


def _parts_hinge(parts, coef, total):
    return _merged([part.hinge(coef) for part in parts], [], total)


class ClusterSums(ExampleSums):
    """The sums on a dask cluster: the examples in ``n_partitions`` ranges of whole chunks
    (:func:`partition_chunks`), each sent once to a worker and packed there; a sum sends
    ``coef`` out (to one worker, which the others fetch from), each partition sums its
    subtrees, and the partitions' nodes are reduced pairwise on the workers (:func:`_merged`,
    ``log2(n_partitions)`` rounds) before the driver combines what is left along the tree.

    A lost worker loses its partitions only: they hold no state of the fit, so they are sent
    again from the driver's copy and the sum is computed again (:data:`RETRIES` times), the same
    to the bit; past that, a ``RuntimeError`` says so.
    """

    def __init__(self, client, problem, n_partitions=None):
        self.client, self.problem = client, problem
        n = problem.n_samples
        if n_partitions is None:
            n_partitions = max(1, len(client.scheduler_info()["workers"]))
        self.ranges = partition_chunks(n_chunks(n), int(n_partitions))
        self.parts = None
        self._send()

    def _send(self):
        p = self.problem
        payloads = []
        for lo, hi in self.ranges:
            blocks = []
            for a, b in dyadic_blocks(lo, hi):
                idx = np.arange(a * CHUNK, min(b * CHUNK, p.n_samples))
                sub = p.subset(idx)
                sub.sample_weight = p.sample_weight[idx]  # the whole data's weights, not renormalised
                blocks.append((sub, a))
            payloads.append(blocks)
        # every scatter takes a fresh key (hash=False: see solvers.bcfw_cluster)
        self.parts = [self.client.submit(_new_parts, payload, p.n_samples, pure=False)
                      for payload in self.client.scatter(payloads, hash=False)]

    def _gather(self, function, coef, *args):
        total = n_chunks(self.problem.n_samples)
        submit = self.client.submit
        for attempt in range(RETRIES + 1):
            try:
                shared = self.client.scatter(coef, hash=False)
                level = [submit(function, part, shared, total, *args, pure=False)
                         for part in self.parts]
                while len(level) > 1:  # a tree reduction: pairs of neighbours, on the workers
                    level = ([submit(_merged, a, b, total, pure=False)
                              for a, b in zip(level[::2], level[1::2])]
                             + level[len(level) - len(level) % 2:])
                return level[0].result()
            except Exception as exc:  # a lost worker surfaces as one of several dask errors
                if attempt == RETRIES:
                    raise RuntimeError(f"ClusterSums: a task failed or a worker was lost "
                                       f"{RETRIES + 1} times in a row ({type(exc).__name__}: "
                                       f"{exc}).") from exc
                self._send()

    def smoothed(self, coef, smoothing, gradient=True):
        p = self.problem
        return _assemble(self._gather(_parts_smoothed, coef, smoothing, gradient), p.n_samples,
                         (p.n_features, p.n_codes, p.n_pair))

    def hinge(self, coef):
        return _assemble(self._gather(_parts_hinge, coef), self.problem.n_samples, None)

    def close(self):
        self.parts = None  # the futures released, the partitions freed on the workers


def open_sums(problem, cluster=False, n_partitions=None):
    """The :class:`ExampleSums` of a fit: on the threads of this process, or with ``cluster``
    (True: the current dask client; or a ``distributed.Client``) on that cluster, in
    ``n_partitions`` partitions (None: one per worker)."""
    if not cluster:
        return ThreadSums(problem)
    from .bcfw_cluster import current_client
    return ClusterSums(current_client() if cluster is True else cluster, problem, n_partitions)
