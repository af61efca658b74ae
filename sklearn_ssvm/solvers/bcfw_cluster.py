"""One BCFW fit on a dask cluster: CoCoA-style rounds of local passes, an exact distributed gap.

Each partition of the examples lives on a worker with its dual blocks (label-space state and
atoms, as in :mod:`~sklearn_ssvm.solvers.bcfw`) and a copy of the weights ``v = A alpha``. A
round broadcasts the previous round's summed change of ``v``, every partition runs
``local_passes`` sequential BCFW passes over its own blocks, and returns the change of ``v`` its
steps made; the driver adds the changes. The changes travel sparse: a round's steps touch only
the weights of its examples' features (CoNLL-2000 over 2 partitions: 6% of the entries).

The partitions' steps do not see each other's within a round, so each solves its local
subproblem with the curvature scaled by the number of partitions ``K`` (CoCoA+'s safe bound,
Ma et al. 2015: ``||sum_k A d_k||^2 <= K sum_k ||A d_k||^2``): adding the changes then never
increases the dual objective, and the dual point stays a product of simplices. In the kernel
this is BCFW at ``lambda / K``: its steps are the exact line searches of that bound, and its
weights move ``K`` times the true change.

A certificate is a distributed reduction: every partition renormalises its atoms and returns
its exact part of ``v`` (summed on the driver, so that ``v = A alpha`` to rounding), then, at
the ``w`` of that ``v``, its sums of hinge losses, block gaps and dual losses. The gap is the
sum of the block gaps, exact on the cluster as on one machine.

A lost worker loses its partitions' dual blocks with it: the fit then raises a ``RuntimeError``
that says so (refit), never a model certified from a partial dual point.
"""
import copy
import operator

import numpy as np

from .._kernels.bcfw import PassDual, PassWeights, state_from_atoms
from ..penalties import as_penalty
from ..structures._problem import label_space
from . import capabilities
from ._common import Clock, generator
from .base import Solver
from .bcfw import (SAMPLINGS, STEPS, ActiveSets, BCFWResult, DualState, _pass_order, _Steps,
                   weights)
from .result import history_record

__all__ = ["BCFWCluster", "bcfw_cluster", "current_client"]


class _Change:
    """A sparse change of ``v``: ``v[indices] += values``. A round's steps touch the weights of
    the features its examples have (CoNLL-2000, 2 partitions: 6% of the entries), so the
    changes travel as these and not as dense vectors."""

    def __init__(self, dense):
        self.indices = np.flatnonzero(dense)
        self.values = dense[self.indices]

    def add_to(self, v):
        v[self.indices] += self.values  # the indices are distinct
        return v


class _Partition:
    """A partition's examples and dual blocks, kept in a worker's memory between rounds, and
    its copy of the weights ``v``."""

    def __init__(self, problem, n_total, seed, room, n_params):
        self.problem = problem
        self.n_total = n_total  # each block's share of the mean loss is 1 / n_total
        self.state = DualState.at_labels(problem)
        self.atoms = ActiveSets.at_labels(problem, capacity=room)
        self.estimates = np.full(problem.n_samples, np.inf)
        self.rng = np.random.default_rng(seed)
        self.v = np.zeros(n_params)

    def block_n(self):
        return np.full(self.problem.n_samples, float(self.n_total))


def _new_partition(problem, n_total, seed, room, n_params):
    return _Partition(problem, n_total, seed, room, n_params)


def _local_round(part, update, c, n_partitions, passes, step, sampling, max_active):
    """``passes`` BCFW passes over the partition's blocks at ``lambda = c / K`` from ``v``: the
    partition's copy plus ``update``, the previous round's summed changes (a ``_Change``), or
    ``update`` itself (an array: the exact ``v`` of a certificate). Returns the partition (a
    new object: dask keeps task results immutable) and its change of ``v`` (a ``_Change``)."""
    problem = part.problem
    new = copy.copy(part)
    new.state, new.atoms = part.state.copy(), part.atoms.copy()
    new.estimates = part.estimates.copy()
    # the driver's v + delta, entry by entry the same additions: the same bits
    v = update.add_to(part.v.copy()) if isinstance(update, _Change) else update.copy()
    new.v = v
    local = v.copy()
    W, theta = problem.split_coef(local)
    no_box = (np.zeros((0, problem.n_codes)),) * 2 + (np.zeros(0),) * 2
    gram, gram_off = problem.gram
    steps = _Steps((problem.packed(), gram, gram_off,
                    PassWeights(W, theta, W, theta, *no_box, c / n_partitions, 0.0,
                                np.bool_(False)),
                    PassDual(new.state.M, new.state.Q, new.state.ell_blocks, new.block_n())),
                   new.atoms, max_active, DualState.zeros_like(new.state, rows=False))
    store = (STEPS[step], False, 0.0, 0.0)
    for _ in range(passes):
        first, uniforms = _pass_order(sampling, new.estimates, new.rng)
        steps.sequential_pass(first, uniforms, sampling, new.estimates, -1.0, store, 0)
    new.atoms = steps.atoms
    return new, _Change((local - v) / n_partitions)


def _local_weights(part, c, step):
    """Renormalise the partition's atoms (incremental updates drift; Frank-Wolfe steps keep
    none) and return its exact part ``A_k alpha_k`` of ``v``."""
    problem = part.problem
    if step != "fw":
        state_from_atoms(problem.packed(), part.atoms.labels, part.atoms.weights, part.atoms.count,
                         part.state.M, part.state.Q, part.state.ell_blocks, part.block_n())
    # the partition's own v is A_k alpha_k / n_k (unweighted): rescaled to the global 1 / n
    return weights(problem, part.state, c) * (problem.n_samples / part.n_total)


def _local_certificate(part, w):
    """The partition's sums at ``w``: hinge losses, block gaps, dual losses; and its block
    gaps, which become its gap estimates."""
    problem = part.problem
    _, values, true_scores, expected = problem.run_oracle(w, True, part.state.M, part.state.Q)
    gaps = (values - expected) / part.n_total - part.state.ell_blocks
    part.estimates = gaps.copy()
    return np.array([np.sum(values - true_scores), gaps.sum(), part.state.ell_blocks.sum()])


def bcfw_cluster(client, problem, penalty, *, n_partitions=None, local_passes=1,
                 max_iter=100, tol=1e-2, gap_check=1, step="pairwise", sampling="gap",
                 max_active=64, random_state=None):
    """Minimise ``(c/2) ||w||^2 + mean_i H~_i(w)`` by BCFW on a dask cluster (see the module).

    ``client``: the cluster's ``distributed.Client``. ``problem``: the packed training data
    (``structure.prepare(X, Y)``) of a compiled structure, without sample weights; its partitions
    are sent to the workers once. ``penalty``: the L2 penalty (``alpha`` or ``ElasticNet(alpha)``).
    ``n_partitions`` (int or None: one per worker): partitions of the examples (contiguous
    shares); ``local_passes``: BCFW passes each partition runs per round; ``max_iter``: rounds at
    most; ``tol``: target exact duality gap, on the objective's scale; ``gap_check``: rounds
    between exact certificates (and after the last). ``step`` (``"pairwise"``, ``"fw"``,
    ``"away"``): the local steps, and ``sampling`` (``"gap"``, ``"uniform"``, ``"perm"``): how each
    partition picks its blocks (see :func:`~sklearn_ssvm.solvers.bcfw.bcfw`); ``max_active``: cap
    on each block's atoms (None: no cap); ``random_state`` (int, Generator or None) seeds the
    partitions' samplers.

    Returns a BCFWResult: ``coef`` the certified weights, with the exact gap of the dual point on
    the cluster; the dual blocks stay on the workers (``state`` and ``active_sets`` are None).
    Raises ValueError for what ``capabilities.SOLVERS["bcfw-cluster"]`` refuses (graphs, the
    elastic net, sample weights), with its declared message, before anything is sent;
    RuntimeError when a worker is lost (or a task fails) mid-fit: the dual blocks of its
    partitions are gone with it, and no certified model can be returned from the rest."""
    penalty = as_penalty(penalty)
    asked = {"elastic_net": penalty.l1 > 0, "sample_weight": problem.weighted}
    capabilities.check("bcfw-cluster", problem, [option for option, on in asked.items() if on])
    capabilities.check_penalty("bcfw-cluster", penalty)  # nor a proximal centre
    if step not in STEPS:
        raise ValueError(f"step must be one of {tuple(STEPS)}, got {step!r}.")
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}.")
    problem = label_space(problem)
    n = problem.n_samples
    if n_partitions is None:
        n_partitions = max(1, len(client.scheduler_info()["workers"]))
    n_partitions = int(min(n_partitions, n))
    rng = generator(random_state)
    seeds = rng.integers(0, 2**63 - 1, size=n_partitions)
    bounds = np.linspace(0, n, n_partitions + 1).astype(int)
    room = 8 if max_active is None else min(8, max_active)
    c = penalty.c
    clock = Clock()
    history = []
    v = np.zeros(problem.n_params)
    cert = None
    converged = False
    try:
        # scattered as a list: the partitions spread over the workers, each sent once. Every
        # scatter takes a fresh key (hash=False): a content-hashed key is shared by equal data
        # (the next fit of a grid, a zero change), and re-scattering it while the last owner's
        # release is in flight makes the scheduler drop it ("lost dependencies", dask #3703)
        subsets = client.scatter([problem.subset(np.arange(lo, hi))
                                  for lo, hi in zip(bounds[:-1], bounds[1:])], hash=False)
        parts = [client.submit(_new_partition, subset, n, seed, room, problem.n_params,
                               pure=False) for subset, seed in zip(subsets, seeds)]
        # scattered to one worker, which the others fetch from: a broadcast's replication
        # retries a lost worker for minutes, where a lost copy fails the round's tasks at once
        update = client.scatter(_Change(v), hash=False)
        for it in range(1, max_iter + 1):
            rounds = [client.submit(_local_round, part, update, c, n_partitions,
                                    local_passes, step, sampling, max_active, pure=False)
                      for part in parts]
            parts = [client.submit(operator.getitem, r, 0, pure=False) for r in rounds]
            changes = client.gather([client.submit(operator.getitem, r, 1, pure=False)
                                     for r in rounds])
            delta = np.zeros(problem.n_params)
            for change in changes:
                change.add_to(delta)
            v = v + delta
            update = client.scatter(_Change(delta), hash=False)
            record = history_record(iter=it, oracle_calls=it * local_passes * n)
            if it % gap_check == 0 or it == max_iter:
                v = np.sum(client.gather([client.submit(_local_weights, part, c, step, pure=False)
                                          for part in parts]), axis=0)
                update = shared_w = client.scatter(v, hash=False)
                sums = np.sum(client.gather([client.submit(_local_certificate, part, shared_w,
                                                           pure=False) for part in parts]),
                              axis=0)
                primal = penalty.value(v) + sums[0] / n
                dual = sums[2] - penalty.conjugate(c * v)
                cert = (primal, dual, sums[1])
                record.update(objective=primal, dual_objective=dual, gap=sums[1])
                converged = sums[1] <= tol
            record.update(time=clock.wall(), cpu_time=clock.cpu())
            history.append(record)
            if converged:
                break
    except Exception as exc:  # a lost worker surfaces as one of several dask errors
        raise RuntimeError(f"bcfw_cluster: a task failed or a worker was lost mid-fit "
                           f"({type(exc).__name__}: {exc}); the dual blocks of its partitions "
                           f"are gone, so no certified model can be returned. Refit.") from exc
    primal, dual, gap = cert
    return BCFWResult(coef=v, objective=primal, dual_objective=dual, duality_gap=gap,
                      converged=converged, n_iter=it,
                      n_oracle_calls=it * local_passes * n + (it // gap_check) * n,
                      history=history)


def current_client():
    """The dask client this process works with (``distributed.Client.current()``: the one of
    a ``client.as_current()`` block, else the latest made), or a clear error: without
    ``distributed`` installed, or without a running client."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise ImportError("A fit on a dask cluster needs dask.distributed: "
                          "pip install 'sklearn_ssvm[distributed]'.") from exc
    try:
        return Client.current()
    except ValueError as exc:
        raise ValueError("A fit on a dask cluster runs on the current dask client, and none "
                         "is running: create one first (distributed.Client(address), or "
                         "distributed.Client() for a local cluster).") from exc


class BCFWCluster(Solver):
    """:func:`bcfw_cluster` behind the :class:`~sklearn_ssvm.solvers.base.Solver` protocol.

    ``client`` (distributed.Client or None): the cluster's client; None: :func:`current_client`
    when ``solve`` starts. ``**settings``: the other keyword arguments of :func:`bcfw_cluster`
    (``n_partitions``, ``max_iter``, ``tol``, ``step``, ...). A fit starts cold: the dual blocks
    of a previous fit stayed on the workers of its round (``capabilities.warm_start`` is False)."""

    capabilities = capabilities.register("bcfw-cluster", capabilities.Capabilities(
        name="BCFWStructuredSVM(cluster=True)",
        options=("elastic_net", "away", "averaging", "bounds", "box", "sample_weight"),
        penalty_codes=("l2",),
        refused={("graph", None): capabilities.PYTHON_ORACLES,
                 ("binary_graph", None): capabilities.PYTHON_ORACLES,
                 (None, "elastic_net"): "CoCoA+'s safe aggregation scales the curvature of "
                                        "the squared norm; the soft-threshold's dual has "
                                        "other pieces",
                 (None, "averaging"): "the partitions' steps form no one sequence to "
                                      "number",
                 (None, "bounds"): "a round's local weights move K times the true change, "
                                   "and a box's projection does not commute with that scaling",
                 (None, "sample_weight"): "its partitions give every block the share 1 / n"},
        certificate="exact duality gap (eq. (5)), summed over the partitions on the cluster",
        warm_start=False, path="grid (cold)"))

    def _solve(self, problem, penalty, warm):
        if warm is not None:
            raise ValueError(f"{self.capabilities.name} does not continue a previous fit: "
                             f"its dual blocks stay on the workers. Fit without warm=.")
        settings = dict(self.settings)
        client = settings.pop("client", None)
        return bcfw_cluster(current_client() if client is None else client, problem, penalty,
                            **settings)
