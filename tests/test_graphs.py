"""spmvlab.datasets random graphs: erdos_renyi, watts_strogatz, barabasi_albert (simple
undirected graphs as symmetric adjacency patterns, seeded, the models' defining properties)."""
from __future__ import annotations

import numpy as np
import pytest

from spmvlab import datasets as ds
from spmvlab.errors import OptionError, ShapeError

from test_datasets import _assert_canonical

GRAPHS = [(ds.erdos_renyi, (500, 6.0)), (ds.watts_strogatz, (500, 6)), (ds.watts_strogatz, (501, 5)),
          (ds.barabasi_albert, (500, 3)), (ds.barabasi_albert, (500, 2.5))]


def _pattern(A):
    B = A.copy()
    B.data[:] = 1
    return B


@pytest.mark.parametrize("gen,args", GRAPHS)
def test_simple_undirected(gen, args):
    A = gen(*args, seed=3)
    n = args[0]
    assert A.shape == (n, n)
    _assert_canonical(A)                      # no repeated edge: strictly increasing columns
    P = _pattern(A)
    assert (P != P.T).nnz == 0                # symmetric pattern
    assert not A.diagonal().any()             # no self loops
    assert A.indices.dtype == np.int32


@pytest.mark.parametrize("gen,args", GRAPHS)
def test_seeded(gen, args):
    A, B, C = gen(*args, seed=7), gen(*args, seed=7), gen(*args, seed=8)
    assert np.array_equal(A.indptr, B.indptr) and np.array_equal(A.indices, B.indices)
    assert np.array_equal(A.data, B.data)
    assert not (np.array_equal(A.indptr, C.indptr) and np.array_equal(A.indices, C.indices))
    D = gen(*args, seed=7, dtype=np.float64)
    assert D.dtype == np.float64 and np.array_equal(D.indices, A.indices)


def test_erdos_renyi_degrees_are_binomial():
    n, d = 4000, 10.0
    deg = np.diff(ds.erdos_renyi(n, d, seed=1).indptr)
    assert abs(deg.mean() - d) < 0.3                       # sd of the mean ~ 0.07
    assert 0.8 * d < deg.var() < 1.2 * d                    # Poisson-like: var ~ mean
    assert ds.erdos_renyi(1, 3.0).nnz == 0
    full = ds.erdos_renyi(20, 50.0)                         # p capped at 1: the complete graph
    assert full.nnz == 20 * 19


def test_erdos_renyi_pairs_cover_the_triangle():
    """Pair index -> (i, j) is exact: over many seeds every pair of a small graph appears."""
    seen = np.zeros((12, 12), bool)
    for s in range(40):
        seen |= _pattern(ds.erdos_renyi(12, 5.0, seed=s)).toarray().astype(bool)
    assert seen.sum() == 12 * 11


@pytest.mark.parametrize("n,k", [(40, 4), (41, 6), (40, 5), (100, 1)])
def test_watts_strogatz_without_rewiring_is_the_ring(n, k):
    P = _pattern(ds.watts_strogatz(n, k, p=0.0)).toarray().astype(bool)
    want = np.zeros((n, n), bool)
    u = np.arange(n)
    for j in range(1, k // 2 + 1):
        want[u, (u + j) % n] = want[(u + j) % n, u] = True
    if k % 2:
        e = u[::2]
        want[e, (e + (k + 1) // 2) % n] = want[(e + (k + 1) // 2) % n, e] = True
    assert np.array_equal(P, want)
    if k % 2 and n % 2 == 0:
        assert P.sum() == n * k                              # mean degree exactly k


@pytest.mark.parametrize("p", [0.2, 1.0])
def test_watts_strogatz_rewiring(p):
    n, k = 2000, 10
    A = ds.watts_strogatz(n, k, p=p, seed=2)
    assert A.nnz == n * k                                    # rewiring keeps the edge count
    rows = np.repeat(np.arange(n), np.diff(A.indptr))
    gap = np.abs(rows - A.indices)
    ring = np.minimum(gap, n - gap) <= k // 2
    kept = ring.mean()
    # a ring edge survives unless it is rewired (prob p); a rewired one lands on the ring
    # again only by chance (~k/n)
    assert abs(kept - (1 - p)) < 0.05
    assert np.diff(A.indptr).min() >= k // 2                 # a node keeps its own k/2 ends


def test_barabasi_albert_attachment():
    n, m = 3000, 4
    A = ds.barabasi_albert(n, m, seed=5)
    M = m + 1
    lower = np.array([np.count_nonzero(A.indices[A.indptr[v]:A.indptr[v + 1]] < v) for v in range(n)])
    assert np.all(lower[M:] == m)                            # each new node: m earlier targets
    assert np.array_equal(lower[:M], [0] + [1] * m)          # the starting star
    deg = np.diff(A.indptr)
    assert A.nnz == 2 * (m + m * (n - M))
    assert deg.max() > 8 * deg.mean()                        # hubs (uniform attachment: ~3x)
    assert deg[:n // 10].mean() > 3 * deg[-n // 10:].mean()  # older nodes gather edges


def test_barabasi_albert_half_integer_m():
    n = 4000
    A = ds.barabasi_albert(n, 2.5, seed=1)
    lower = np.array([np.count_nonzero(A.indices[A.indptr[v]:A.indptr[v + 1]] < v) for v in range(4, n)])
    assert set(lower) == {2, 3} and abs(lower.mean() - 2.5) < 1e-3
    assert abs(np.diff(A.indptr).mean() - 5.0) < 0.01


def test_barabasi_albert_degree_proportional():
    """Targets are chosen in proportion to degree (1000 seeds, m = 1): start 0-1 (ends 1, 0);
    node 2 joins 0 or 1 with probability 1/2 each; node 3 picks among the ends 1, 0, 2, t2,
    so 0 and 1 with probability 3/8 each and 2 with 1/4."""
    rows = [ds.barabasi_albert(4, 1, seed=s).tolil().rows for s in range(1000)]
    t2 = np.array([min(r[2]) for r in rows])                # node 2's one earlier neighbour
    t3 = np.array([min(r[3]) for r in rows])                # node 3's (its only neighbour)
    assert abs(np.mean(t2 == 0) - 0.5) < 0.05               # sd 0.016
    assert abs(np.mean(t3 == 0) - 0.375) < 0.05
    assert abs(np.mean(t3 == 2) - 0.25) < 0.05


def test_graph_errors():
    with pytest.raises(OptionError, match="avg_degree"):
        ds.erdos_renyi(10, 0)
    with pytest.raises(OptionError, match="k"):
        ds.watts_strogatz(10, 5)
    with pytest.raises(OptionError, match="p"):
        ds.watts_strogatz(10, 2, p=1.5)
    with pytest.raises(ShapeError, match="n"):
        ds.barabasi_albert(3, 3)
    with pytest.raises(OptionError, match="m"):
        ds.barabasi_albert(10, -1)
