"""The papers' figures and tables, one module each (``fig7_macko``, ``table4_gs``, ...), with
the shared pieces of a paper's experiments (``_dtans``, ``_gs``, ``ec_common``) and the papers'
numbers (``paper_values``).

Run one as a script, ``python experiments/<name>.py`` (``--help`` lists its flags), or all
through ``python -m spmvlab.figures``; ``spmvlab.experiment`` is their shared command line.
The package is installed with the project (``pip install -e .``), so an experiment imports
another as ``from experiments import fig7_macko``.
"""
