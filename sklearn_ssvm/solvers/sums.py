"""The sums over the examples that the exact-sum solvers take, on threads or on a dask cluster.

BMRM (spec 003 §2.1) and AGM (spec 001) ask one thing of the data at every iterate: a sum over
the examples (the mean loss, its gradient, the mean hinge of a certificate). How that sum runs
is one axis, :class:`ExampleSums`, with two pieces: :class:`ThreadSums` (one process, the
``n_jobs`` threads) and :class:`ClusterSums` (the partitions of the examples on the workers of a
dask cluster, each packed once and kept there). The solvers see the axis only (:func:`open_sums`).

Both add in one fixed order: chunks of :data:`CHUNK` consecutive examples, each chunk's terms
added in token order (``_kernels/reduce.py``), the chunks' sums combined along the dyadic tree
over their indices. A sum is carried as *nodes* of that tree (``first`` chunk, ``size``, the
sums): a chunk is a leaf, two siblings join into their parent (:func:`_merged`, the same
additions wherever it runs), and :func:`_assemble` combines what is left. Within a part no
intermediate node is made: its chunks' sums are combined row by row along the same tree
(``tree_rows``, ``tree_columns``), into the nodes a partition sends (:meth:`_Part.nodes`) or,
on one process, into the gradient directly: the additions of the joins. Threads and workers
only change where the sums are computed and joined: the iterates are the same to the bit for
any number of threads, workers or partitions.
"""
import time
from abc import ABC, abstractmethod
from concurrent.futures import CancelledError, ThreadPoolExecutor

import numpy as np

from .._kernels.reduce import (add_sparse_rows, chunk_columns, chunk_sums, gradient_terms,
                               tree_columns, tree_rows)
from .._kernels.threads import n_threads, run_chunks
from ._common import dense_oracles
from .smooth import full_gradient

__all__ = ["CHUNK", "ClusterSums", "ExampleSums", "ThreadSums", "open_sums", "partition_chunks"]

#: examples per chunk: the leaves of the tree along which every sum is added. A chunk's rows
#: of the gradient are added in a buffer of its own features, which stays in the cache
#: (CoNLL-2000: about 6,000 features, 1 MB)
CHUNK = 256

#: times a cluster's sum is tried again after a worker was lost (the partitions re-sent),
#: waiting ``RETRY_WAIT`` seconds times the attempt's number first
RETRIES = 3
RETRY_WAIT = 1.0

#: features per block of the threads' row-by-row tree sums: a block's pending rows stay in the
#: cache (CoNLL-2000: 256 x 7 x 22 floats, 315 kB)
COLUMN_BLOCK = 256


def n_chunks(n):
    """Chunks of :data:`CHUNK` examples covering ``n`` examples."""
    return -(-n // CHUNK)


def partition_chunks(total, n_partitions):
    """``n_partitions`` ranges of chunks covering ``range(total)``, their bounds at multiples of
    a power of two (so that each joins into few nodes) within 1/16 of an even share."""
    n_partitions = max(1, min(n_partitions, total))
    step = 1
    while 2 * step * 16 * n_partitions <= total:
        step *= 2
    bounds = [0] + [min(total, int(round(k * total / n_partitions / step)) * step)
                    for k in range(1, n_partitions)] + [total]
    return [(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]


class _Part:
    """Consecutive whole chunks of the examples, packed, and their sums at given weights.

    ``first_chunk`` places its chunks in the whole data's tree; ``n_total`` is the number of
    examples of the whole data (each term's share is ``1 / n_total``). Each chunk's features
    are listed once (``features``), its emission rows are the rows ``row_off[c]..row_off[c+1]-1``
    of one buffer, and each non-zero of the token matrix knows its row in its chunk's
    (``slots``).
    """

    def __init__(self, problem, first_chunk, n_total):
        self.problem = problem
        self.first_chunk = first_chunk
        self.scale = -1.0 / n_total
        self.n_chunks = n_chunks(problem.n_samples)
        self.chunk_tokens = problem.tok_offsets[::CHUNK].copy()
        if self.chunk_tokens.shape[0] == self.n_chunks:  # the last chunk is not full
            self.chunk_tokens = np.append(self.chunk_tokens, problem.tok_offsets[-1])
        nnz = problem.indptr[self.chunk_tokens]
        self.slots = np.empty(problem.indptr[-1], dtype=np.int64)
        self.features = [None] * self.n_chunks

        def index(c):  # numpy's sorts and searches release the GIL
            self.features[c] = np.unique(problem.indices[nnz[c]:nnz[c + 1]])
            self.slots[nnz[c]:nnz[c + 1]] = np.searchsorted(
                self.features[c], problem.indices[nnz[c]:nnz[c + 1]])
        _on_threads(index, self.n_chunks)
        self.row_off = np.concatenate([[0], np.cumsum([f.shape[0] for f in self.features])])
        self.row_features = (np.concatenate(self.features) if self.features
                             else np.zeros(0, dtype=np.int64))
        # where each block of features starts in each chunk's rows (``tree_columns``)
        blocks = np.arange(0, problem.n_features + COLUMN_BLOCK, COLUMN_BLOCK)
        self.starts = np.array([off + np.searchsorted(features, blocks) for off, features
                                in zip(self.row_off, self.features)]).reshape(-1, blocks.size)
        self.rows = None  # the emission rows' buffer, made at the first gradient and kept

    def smoothed(self, coef, smoothing, gradient):
        """The chunks' sums of the smoothed losses at ``coef``: ``(small, emission)``, row ``c``
        of ``small`` chunk ``c``'s sum of the losses and, with ``gradient``, of the expected
        losses and the pairwise part of the gradient; ``emission`` (None without ``gradient``)
        its emission part, ``(rows, touched)``: chunk ``c``'s rows ``row_off[c]..`` on its
        features, those no active token touched flagged off (zero rows)."""
        p = self.problem
        values, M, Q = p.smoothed_losses(coef, smoothing.code, smoothing.mu, smoothing.K)
        if not gradient:
            return self._sums(values)[:, None], None
        ell = np.empty(p.n_samples)
        active = np.empty(p.tok_offsets[-1], dtype=np.bool_)
        pairs = np.empty((self.n_chunks, p.n_pair))
        _on_threads(lambda c: gradient_terms(p.packed(), M, Q, p.sample_weight, self.scale, CHUNK,
                                             ell, active, pairs, c, c + 1), self.n_chunks)
        if self.rows is None:
            self.rows = np.empty((self.row_off[-1], p.n_codes))
        touched = np.empty(self.row_off[-1], dtype=np.bool_)

        def rows(c):
            span = slice(self.row_off[c], self.row_off[c + 1])
            chunk_columns(p.indptr, p.data, self.slots, self.chunk_tokens[c],
                          self.chunk_tokens[c + 1], active, M, self.rows[span], touched[span])
        _on_threads(rows, self.n_chunks)
        return np.column_stack([self._sums(values), self._sums(ell), pairs]), (self.rows, touched)

    def hinge(self, coef):
        """The chunks' sums of the structured hinge losses at ``coef``: ``(small, None)``."""
        _, values, true_scores, _ = self.problem.run_oracle(coef, True)
        return self._sums(values - true_scores)[:, None], None

    def columns(self, emission, c0, c1, out_rows, out):
        """``out[out_rows[f]] = `` the tree sum of feature ``f``'s emission rows over the chunks
        ``c0..c1-1`` (an aligned node; see :func:`~sklearn_ssvm._kernels.reduce.tree_columns`),
        over blocks of features on the threads of ``use_threads``."""
        rows, touched = emission
        run_chunks(tree_columns, self.starts.shape[1] - 1, self.row_features, self.starts,
                   touched, rows, COLUMN_BLOCK, _span(c1 - c0).bit_length() + 1, c0, c1,
                   out_rows, out)

    def nodes(self, small, emission, total):
        """The sums as the nodes of the tree over the ``total`` chunks of the whole data that
        the joins of the part's leaves make (:func:`_merged`), each node's emission rows (``W``)
        those of the features some active token of its chunks touched, summed row by row."""
        nodes = _merged([{"first": self.first_chunk + c, "size": 1, "small": small[c]}
                         for c in range(self.n_chunks)], [], total)
        if emission is not None:
            for node in nodes:
                c0 = node["first"] - self.first_chunk
                c1 = min(c0 + node["size"], self.n_chunks)
                span = slice(self.row_off[c0], self.row_off[c1])
                present = np.zeros(self.problem.n_features, dtype=np.bool_)
                present[self.row_features[span][emission[1][span]]] = True  # no sort
                features = np.flatnonzero(present).astype(self.row_features.dtype)
                out_rows = np.full(self.problem.n_features, -1, dtype=np.int64)
                out_rows[features] = np.arange(features.shape[0])
                node["W"] = (features, np.empty((features.shape[0], self.problem.n_codes)))
                self.columns(emission, c0, c1, out_rows, node["W"][1])
        return nodes

    def _sums(self, x):
        out = np.empty(self.n_chunks)
        chunk_sums(x, self.problem.sample_weight, CHUNK, out)
        return out


def _on_threads(function, n):
    """``function(c)`` for ``c`` in ``range(n)``, on the threads of ``use_threads``."""
    threads = min(n_threads(), n)
    if threads <= 1:
        for c in range(n):
            function(c)
        return
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(function, range(n)))


def _span(n):
    """The smallest power of two ``>= n``: the size of the tree over ``n`` chunks."""
    return 1 << max(n - 1, 0).bit_length()


def _joined(a, b):
    """The parent node of the sibling nodes ``a`` (left) and ``b``: their sums added, the
    emission rows of either (absent: zero, which adds exactly)."""
    node = {"first": a["first"], "size": 2 * a["size"], "small": a["small"] + b["small"]}
    if "W" in a:
        node["W"] = add_sparse_rows(*a["W"], *b["W"])
    return node


def _merged(left, right, total):
    """The nodes of two consecutive ranges of chunks (lists of nodes, in order), siblings
    joined into their parents: a step of the tree reduction, on a thread or a worker, with the
    additions :func:`_assemble` would make. A last node whose right sibling lies past the
    ``total`` chunks stands for its parent (an empty subtree adds nothing)."""
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


def _reduced(lists, merge):
    """The nodes of consecutive ranges (``lists``), reduced pairwise, neighbours with
    neighbours: ``merge(pairs)`` joins each level's pairs."""
    while len(lists) > 1:
        odd = lists[len(lists) - len(lists) % 2:]
        lists = merge(list(zip(lists[::2], lists[1::2]))) + odd
    return lists[0]


def _assemble(nodes, n_total, shape):
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
    grad = np.zeros(F * C + P)
    grad[F * C:] = small[2:]
    if len(nodes) == 1:
        rows, values = nodes[0]["W"]
        grad[:F * C].reshape(F, C)[rows] = values
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
        smoothing weights (the dual point's loss term). ``coef`` (n_params,); ``smoothing``: the
        smoother (``solvers.smooth.Smoothing``; mu 0 with ``NONE``: the max oracle)."""

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
    """The sums in this process, on the threads of ``use_threads`` (``n_jobs``): the chunks'
    sums computed on the threads, then combined along the tree row by row into the gradient
    (:meth:`_Part.columns`, blocks of features on the threads): the additions of the nodes'
    joins, with no node made. Graph structures, whose oracles run from Python, sum their
    dense per-example gradients."""

    def __init__(self, problem):
        self.problem = problem
        self.part = None if dense_oracles(problem) else _Part(problem, 0, problem.n_samples)

    def _combined(self, small, emission):
        p = self.problem
        sums = np.empty(small.shape[1])
        tree_rows(np.arange(small.shape[0]), small, sums)
        if emission is None:
            return sums[0] / p.n_samples
        grad = np.empty(p.n_params)
        grad[p.n_features * p.n_codes:] = sums[2:]
        self.part.columns(emission, 0, self.part.n_chunks, np.arange(p.n_features),
                          grad[:p.n_features * p.n_codes].reshape(p.n_features, p.n_codes))
        return sums[0] / p.n_samples, grad, sums[1] / p.n_samples

    def smoothed(self, coef, smoothing, gradient=True):
        p = self.problem
        if self.part is None:
            fg = full_gradient(p, coef, smoothing)
            return (fg.value, fg.grad, fg.dual_loss) if gradient else fg.value
        return self._combined(*self.part.smoothed(coef, smoothing, gradient))

    def hinge(self, coef):
        if self.part is None:
            return self.problem.weighted_mean(self.problem.hinge_losses(coef))
        return self._combined(*self.part.hinge(coef))


def _new_part(problem, first_chunk, n_total):
    return _Part(problem, first_chunk, n_total)


def _part_smoothed(part, coef, total, smoothing, gradient):
    return part.nodes(*part.smoothed(coef, smoothing, gradient), total)


def _part_hinge(part, coef, total):
    return part.nodes(*part.hinge(coef), total)


class ClusterSums(ExampleSums):
    """The sums on a dask cluster: the examples in ``n_partitions`` ranges of whole chunks
    (:func:`partition_chunks`), each sent once to a worker and packed there; a sum sends
    ``coef`` out (a copy to each worker that holds a partition), each partition sums its
    chunks into nodes, and the partitions' nodes are reduced pairwise on the workers
    (:func:`_merged`, ``log2(n_partitions)`` rounds) before the driver combines what is left
    along the tree.

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
        self.parts = None  # sent with the first sum, inside its retries

    def _send(self):
        p = self.problem
        subsets = []
        for lo, hi in self.ranges:
            idx = np.arange(lo * CHUNK, min(hi * CHUNK, p.n_samples))
            sub = p.subset(idx)
            sub.sample_weight = p.sample_weight[idx]  # the whole data's, not renormalised
            subsets.append(sub)
        # every scatter takes a fresh key (hash=False: see solvers.bcfw_cluster)
        self.parts = [self.client.submit(_new_part, sub, lo, p.n_samples, pure=False)
                      for sub, (lo, _) in zip(self.client.scatter(subsets, hash=False),
                                              self.ranges)]
        from distributed import wait
        wait(self.parts)
        holders = self.client.who_has(self.parts)
        self.holders = [(holders.get(part.key) or (None,))[0] for part in self.parts]

    def _gather(self, function, coef, *args):
        total = n_chunks(self.problem.n_samples)
        submit = self.client.submit
        for attempt in range(RETRIES + 1):
            try:
                if attempt:  # the partitions again, once the cluster has replaced the worker
                    time.sleep(RETRY_WAIT * attempt)
                if attempt or self.parts is None:
                    self._send()
                # a copy on each partition's worker, from here: a worker fetching it from
                # another waits until that one's running sum lets go of the GIL
                shared = {worker: self.client.scatter(coef, hash=False, workers=worker and
                                                      [worker]) for worker in set(self.holders)}
                lists = [submit(function, part, shared[worker], total, *args, pure=False)
                         for part, worker in zip(self.parts, self.holders)]
                return _reduced(lists, lambda pairs: [  # on the workers
                    submit(_merged, a, b, total, pure=False) for a, b in pairs]).result()
            except Exception as exc:  # a lost worker surfaces as one of several dask errors
                if attempt == RETRIES:
                    raise RuntimeError(f"ClusterSums: a task failed or a worker was lost "
                                       f"{RETRIES + 1} times in a row ({type(exc).__name__}: "
                                       f"{exc}).") from exc

    def smoothed(self, coef, smoothing, gradient=True):
        p = self.problem
        return _assemble(self._gather(_part_smoothed, coef, smoothing, gradient), p.n_samples,
                         (p.n_features, p.n_codes, p.n_pair))

    def hinge(self, coef):
        return _assemble(self._gather(_part_hinge, coef), self.problem.n_samples, None)

    def close(self):
        self.parts = None  # the futures released, the partitions freed on the workers

    def __exit__(self, kind, exc, traceback):
        self.close()
        if exc is not None and _lost_worker(exc):  # one raised outside a sum's retries
            raise RuntimeError(f"ClusterSums: a worker was lost mid-fit ({kind.__name__}: "
                               f"{exc}); fit again.") from exc


def _lost_worker(exc):
    """Whether ``exc`` is how dask reports a lost worker or a failed task: its own errors,
    or a worker's address missing from its tables (``KeyError``), a closed connection."""
    return (type(exc).__module__.split(".")[0] in ("distributed", "dask", "tornado")
            or isinstance(exc, (KeyError, OSError, CancelledError)))


def open_sums(problem, cluster=False, n_partitions=None):
    """The :class:`ExampleSums` of a fit: on the threads of this process, or with ``cluster``
    (True: the current dask client; or a ``distributed.Client``) on that cluster, in
    ``n_partitions`` partitions (None: one per worker)."""
    if not cluster:
        return ThreadSums(problem)
    from .bcfw_cluster import current_client
    return ClusterSums(current_client() if cluster is True else cluster, problem, n_partitions)
