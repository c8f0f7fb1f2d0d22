"""Matrix shapes of real models: :data:`LLM_SHAPES` and :data:`LLAMA2_7B_LAYERS`."""
from __future__ import annotations

#: The 31 (rows, cols) weight shapes of the MACKO paper's appendix D (rows = out features).
LLM_SHAPES: tuple[tuple[int, int], ...] = (
    (4096, 4096), (8192, 8192), (8192, 29568), (32000, 5120), (32000, 8192), (28672, 8192),
    (5120, 5120), (5120, 13824), (3584, 20480), (4096, 11008), (13824, 5120), (18944, 3584),
    (14336, 4096), (4096, 14336), (8192, 28672), (11008, 4096), (32000, 4096), (20480, 3584),
    (3584, 18944), (21504, 7168), (7168, 7168), (28672, 7168), (7168, 28672), (27648, 9216),
    (9216, 9216), (36864, 9216), (9216, 36864), (36864, 12288), (12288, 12288),
    (49152, 12288), (12288, 49152),
)

#: Llama-2-7B: the linear layers of one transformer block (name -> (rows, cols)), repeated
#: ``n_blocks`` times.
LLAMA2_7B_LAYERS: dict = {
    "n_blocks": 32,
    "layers": {
        "q": (4096, 4096), "k": (4096, 4096), "v": (4096, 4096), "o": (4096, 4096),
        "gate": (11008, 4096), "up": (11008, 4096), "down": (4096, 11008),
    },
}
