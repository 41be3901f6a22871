"""The reference-equivalence grader's machinery (``flows.reference`` runs it).

- ``settings``: the grader's options (``extra["equivalence"]``) and the stimulus seed;
- ``ports``: the interface, clocks and resets of a design, read with pyslang;
- ``sources``: the reference's modules renamed apart; the per-run names;
- ``stimulus``: the seeded per-cycle input vectors (resets, corners, random);
- ``testbench``: the generated differential test bench, its script and its reading;
- ``formal``: the Yosys miter, bounded check and induction;
- ``verdict``: both stages folded into one ``HarnessResult``.
"""
