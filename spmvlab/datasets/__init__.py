"""Test and benchmark matrices: seeded synthetic generators and the real data sets.

Everything below is importable from ``spmvlab.datasets``; the modules are:

* :mod:`.synthetic` -- :func:`uniform` (exact nonzero count, uniform positions),
  :func:`gaussian_weights` (dense normal "weights"), :func:`prune` (exact fraction zeroed),
  :func:`power_law` (power-law row lengths), and the random graphs :func:`erdos_renyi`,
  :func:`watts_strogatz`, :func:`barabasi_albert` (symmetric adjacency patterns);
* :mod:`._gallery`  -- structured generators :func:`banded`, :func:`stencil`, :func:`block`
  and the named gallery :func:`gallery`, :data:`GALLERY`, :data:`GALLERY_SIZES`,
  :func:`gallery_names`;
* :mod:`.shapes`    -- :data:`LLM_SHAPES`, :data:`LLAMA2_7B_LAYERS`;
* :mod:`._paths`    -- :func:`data_dir` (``$SPMVLAB_DATA``), :func:`cache_dir`;
* :mod:`._suitesparse` -- :func:`suitesparse_names`, :func:`suitesparse`,
  :func:`download_suitesparse`, :data:`SUITESPARSE_URL`;
* :mod:`._weights`  -- :func:`weights_names`, :func:`weights`;
* :mod:`.load`      -- :func:`load_matrix` (a path, a SuiteSparse or a weights name -> CSR),
  :func:`load_dense` (a .npy file or a weights name as stored, e.g. to prune it).

The modules named after a function (``suitesparse``, ``weights``, ``gallery``) carry a leading
underscore so that the package attribute is always the function.

Generators take ``seed`` (default 0; an int or a ``np.random.Generator``) and return canonical
scipy CSR (sorted indices, no explicit zeros, int32 indices unless a count needs int64).
scipy.sparse has no float16, so (as in ``reference._common.canonical_csr``) a matrix asked for
in float16 is a float32 matrix holding exactly float16 values.

Importing the package is cheap: no data is read and nothing heavy is imported.
"""
from ._gallery import GALLERY, GALLERY_SIZES, banded, block, gallery, gallery_names, stencil
from ._paths import cache_dir, data_dir
from ._suitesparse import SUITESPARSE_URL, download_suitesparse, suitesparse, suitesparse_names
from ._weights import weights, weights_names
from .load import load_dense, load_matrix
from .shapes import LLAMA2_7B_LAYERS, LLM_SHAPES
from .synthetic import (
    barabasi_albert, erdos_renyi, gaussian_weights, power_law, prune, uniform, watts_strogatz,
)

__all__ = [
    "LLM_SHAPES", "LLAMA2_7B_LAYERS", "SUITESPARSE_URL",
    "data_dir", "cache_dir",
    "uniform", "gaussian_weights", "prune", "power_law",
    "erdos_renyi", "watts_strogatz", "barabasi_albert",
    "banded", "stencil", "block", "GALLERY", "GALLERY_SIZES", "gallery", "gallery_names",
    "suitesparse_names", "suitesparse", "download_suitesparse",
    "weights_names", "weights", "load_matrix", "load_dense",
]
