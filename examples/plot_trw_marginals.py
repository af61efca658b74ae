"""
TRW marginals: marginal polytope vs local polytope (Krishnan et al. 2015, Fig. 1(e)/(f))
========================================================================================

On random 10-node complete graphs (spin model, fields U[-1, 1], couplings U[-theta, theta]),
the error of the marginals and of the log-partition upper bound against the coupling strength,
for TRW over the local polytope (damped TRBP) and over the marginal polytope (TRW-Barrier-FW
with exact MAP), before and after optimising the edge appearance probabilities rho.

    python examples/plot_trw_marginals.py [output.png] [--n-instances 20]

Takes about a minute with 20 instances per coupling (the documentation's gallery runs 8).
"""
import argparse

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sklearn_ssvm.marginals import (TRWBarrierFW, TRWLocalPolytope,  # noqa: E402
                                    brute_force_marginals, marginal_error,
                                    random_complete_graph)

parser = argparse.ArgumentParser()
parser.add_argument("output", nargs="?", default="trw_marginals.png")
parser.add_argument("--n-instances", type=int, default=20)
args = parser.parse_args()

couplings = [0.5, 1, 2, 3, 4, 5, 6, 7, 8]
methods = {
    "L (rho0)": lambda: TRWLocalPolytope(n_rho_iter=0, tol=1e-6),
    "L (opt rho)": lambda: TRWLocalPolytope(n_rho_iter=10, tol=1e-6),
    "M (rho0)": lambda: TRWBarrierFW(n_rho_iter=0),
    "M (opt rho)": lambda: TRWBarrierFW(n_rho_iter=10),
}
err_mu = {m: [] for m in methods}
err_lz = {m: [] for m in methods}
rng = np.random.default_rng(0)
for theta in couplings:
    per = {m: ([], []) for m in methods}
    for _ in range(args.n_instances):
        mrf = random_complete_graph(10, theta, random_state=rng)
        log_z, mu = brute_force_marginals(mrf)
        for name, make in methods.items():
            est = make().fit(mrf)
            bound = getattr(est, "log_partition_upper_", None)
            if bound is None:
                bound = est.trw_objective_
            per[name][0].append(marginal_error(mrf, est.marginals_, mu))
            per[name][1].append(bound - log_z)
    for name in methods:
        err_mu[name].append(np.mean(per[name][0]))
        err_lz[name].append(np.mean(per[name][1]))
    print(f"theta={theta:g}: " + ", ".join(f"{m} {err_mu[m][-1]:.3f}/{err_lz[m][-1]:.2f}"
                                           for m in methods), flush=True)

fig, axes = plt.subplots(1, 2, figsize=(10, 4))
styles = {"L (rho0)": "C0--", "L (opt rho)": "C0-", "M (rho0)": "C3--", "M (opt rho)": "C3-"}
for name in methods:
    axes[0].plot(couplings, err_mu[name], styles[name], marker="o", label=name)
    axes[1].plot(couplings, err_lz[name], styles[name], marker="o", label=name)
axes[0].set(xlabel="coupling theta", ylabel="marginal error zeta_mu", title="(e) marginals")
axes[1].set(xlabel="coupling theta", ylabel="log Z bound - log Z", yscale="log",
            title="(f) log-partition bound")
axes[0].legend()
fig.tight_layout()
fig.savefig(args.output, dpi=100)
print("wrote", args.output)
