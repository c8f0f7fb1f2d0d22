"""Row matching (EC-SpMV paper, Algorithm 2): pair every row with its most similar row, greedily.

The similarity of rows i and j is the number of columns in which both hold an entry: the
(i, j) entry of the pattern product ``P @ P.T`` where ``P`` is the 0/1 pattern of the matrix.
Greedy matching then takes the rows one at a time; a row that is still unselected is paired
with the unselected row of highest similarity, and both leave the pool. Finding the maximum
weight matching exactly costs far more (the paper cites an O(n^2.5 log(nN)) algorithm); the
greedy one is what the paper uses, and what :mod:`reference.block_extraction` calls once per
extraction round.

Readable and meant for small matrices: the similarity of a chunk of rows is computed as a
dense block (``similarity_rows``) and the pool is scanned once per row (O(rows^2) time).

Choices the paper leaves open (this module is the specification):

* **Order.** Rows are taken in increasing index order (Algorithm 2 pops rows from a list of
  unselected rows without saying from which end). So when row i is taken, every unselected
  row has a larger index, and every pair ``(i, j)`` has ``i < j``.
* **Ties.** Among the unselected rows of highest similarity, the lowest index wins.
* **No overlap.** A row whose highest similarity to the pool is 0 (including every empty row)
  stays single: it leaves the pool unpaired. Algorithm 2 as printed would pair it with an
  arbitrary row; a pair sharing no column can never give a block, and leaving the other row
  in the pool lets it pair with a row it does overlap.
* **Similarity.** The count of shared columns, as Algorithm 2's description says (Section
  4.3 also speaks of a "ratio" of shared columns; the count is used, not a normalised
  ratio such as Jaccard, which would change which pair wins). A row is never its own match:
  the diagonal is ignored.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._common import check_input

__all__ = ["pattern", "used_columns", "similarity", "similarity_rows", "match_rows"]

#: rows per dense block of the similarity matrix (bounds memory: CHUNK x rows int64)
CHUNK = 256


def pattern(A) -> sp.csr_matrix:
    """The 0/1 pattern of ``A`` (any scipy.sparse matrix or dense 2-D array) as an int64 CSR
    matrix: 1 where ``A`` stores a nonzero entry (NaN counts, stored zeros do not)."""
    csr = sp.csr_matrix(check_input(A), copy=True)    # the boundary; never A's own arrays
    csr.eliminate_zeros()
    csr.sum_duplicates()
    ones = np.ones(csr.indices.size, dtype=np.int64)
    return sp.csr_matrix((ones, csr.indices, csr.indptr), shape=csr.shape)


def similarity_rows(P: sp.csr_matrix, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of the similarity matrix, dense int64 [stop - start, rows]: entry
    (i - start, j) is the number of columns shared by rows i and j (the diagonal is set to 0)."""
    W = (P[start:stop] @ P.T).toarray().astype(np.int64)
    k = np.arange(stop - start)
    W[k, start + k] = 0
    return W


def used_columns(P: sp.csr_matrix) -> sp.csr_matrix:
    """``P`` with only the columns that hold an entry (in order): the same similarities, and
    ``P.T`` no longer has a row per column of a wide matrix (a 3 x 2**31 pattern's transpose
    in CSR would need 16 GiB of row pointers)."""
    used, inverse = np.unique(P.indices, return_inverse=True)
    return sp.csr_matrix((P.data, inverse.reshape(-1), P.indptr), shape=(P.shape[0], used.size))


def similarity(A) -> np.ndarray:
    """The whole similarity matrix ``P @ P.T`` of ``A``'s pattern, dense int64 [rows, rows],
    diagonal 0 (for small matrices: tests and worked examples)."""
    P = used_columns(pattern(A))
    return similarity_rows(P, 0, P.shape[0])


def match_rows(A, chunk: int = CHUNK) -> np.ndarray:
    """Greedy row matching of ``A``'s pattern: int64 [n_pairs, 2], one ``(i, j)`` per pair with
    ``i < j``, in the order the pairs were formed (by increasing ``i``). Rows in no pair stay
    single (see the module docstring for the order, ties and rows with no overlap)."""
    P = used_columns(pattern(A))
    n = P.shape[0]
    unselected = np.ones(n, dtype=bool)
    pairs = []
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        W = similarity_rows(P, start, stop)
        for i in range(start, stop):
            if not unselected[i]:
                continue                             # already matched by an earlier row
            unselected[i] = False
            candidates = np.where(unselected, W[i - start], -1)
            j = int(np.argmax(candidates)) if n else 0  # the first maximum: the lowest index
            if candidates[j] > 0:
                pairs.append((i, j))
                unselected[j] = False
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)
