"""Marginal inference in pairwise MRFs: TRW over the marginal polytope by Barrier Frank-Wolfe.

Approximate marginals and a certified upper bound on the log-partition function using only MAP
calls (Krishnan, Lacoste-Julien & Sontag, "Barrier Frank-Wolfe for Marginal Inference", NIPS
2015; spec 004). ``TRWBarrierFW(...).fit(mrf)`` is the entry point; ``TRWLocalPolytope`` is the
local-polytope (TRBP) baseline.
"""
from ._estimator import TRWBarrierFW, TRWLocalPolytope
from ._exact import brute_force_marginals, grid_marginals, marginal_error
from ._graphcut import bmmf_topk, graphcut_map, graphcut_max_marginals, project_submodular
from ._mrf import PairwiseMRF, grid_edges, random_complete_graph, random_grid, random_rbm
from ._oracles import (AlphaExpansionMAP, AutoMAP, BestOfMAP, BruteForceMAP, GraphCutMAP, ICMMAP,
                       MAPResult, MaxProductMAP, MILPMAP, TreeMAP, TRWSMAP, TRWSThenMILPMAP)
from ._solvers import (TRWFrankWolfe, frank_wolfe_trw, rescale_weights, trbp_log_partition,
                       trw_barrier_fw, trw_local_polytope, update_delta)
from ._spanning import (edge_mutual_information, entropy_coefficients, initial_rho,
                        matrix_tree_rho, max_weight_spanning_tree, sampled_spanning_tree_probs,
                        spanning_tree_edge_probs, trw_objective)

__all__ = ["PairwiseMRF", "TRWBarrierFW", "TRWLocalPolytope", "TRWFrankWolfe",
           "frank_wolfe_trw", "trw_barrier_fw", "trw_local_polytope", "trbp_log_partition",
           "initial_rho",
           "update_delta", "rescale_weights",
           "MAPResult", "TRWSMAP", "TRWSThenMILPMAP", "AlphaExpansionMAP", "AutoMAP", "BestOfMAP",
           "BruteForceMAP",
           "GraphCutMAP", "ICMMAP", "MaxProductMAP",
           "MILPMAP", "TreeMAP", "bmmf_topk", "graphcut_map", "graphcut_max_marginals",
           "project_submodular",
           "brute_force_marginals", "grid_marginals", "marginal_error",
           "grid_edges", "random_complete_graph", "random_grid", "random_rbm",
           "edge_mutual_information", "entropy_coefficients", "matrix_tree_rho",
           "max_weight_spanning_tree", "sampled_spanning_tree_probs", "spanning_tree_edge_probs",
           "trw_objective"]
