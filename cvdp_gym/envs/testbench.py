"""``RTL-Testbench-v0``: the model writes a self-checking test bench, rewarded by the bugs it catches."""

from __future__ import annotations

from typing import Any

from cvdp_gym.envs.single_shot import SingleShotEnv
from cvdp_gym.grading.rewards import RewardFn
from cvdp_gym.tasks.names import TESTBENCH


class TestbenchEnv(SingleShotEnv):
    """
    ## Description

    Verification as a task: each problem of the dataset that has a reference design
    (VerilogEval, RTLLM, ChipBench, CVDP problems with a reference, the training sets) is
    posed as "write a self-checking test bench for the design this specification
    describes" (:mod:`cvdp_gym.tasks.posing`). The model sees the specification and
    the design's module header, never the design. ``step`` extracts ``tb.sv`` (module ``tb``)
    and grades it (:mod:`cvdp_gym.tasks.testbench_flow`): it must compile with the
    reference and pass on it (a false alarm earns nothing), and it earns the fraction of
    seeded bugs it fails: mutants of the reference (operators, constants, conditions, resets,
    widths, case items, state transitions) that the equivalence grader shows are not
    equivalent rewrites, drawn per run from the problem's pool and never shown. A bench that
    reaches into the design by hierarchical names, opens files or defines the design itself
    is ``reach_in`` and earns nothing. Coverage of the reference (Verilator line and toggle)
    is reported, never rewarded, for problems posed with ``coverage=True``
    (``task="testbench?coverage=1"``, as ``cvdp-gym eval --task testbench`` poses them;
    about 4.5 s an answer).

    ``task="testbench-cocotb"`` asks for a cocotb bench instead (``test_tb.py``: ``@cocotb.test()``
    coroutines, run by cocotb 2.0.1 on Icarus with the run's seed; it may use only the design's
    ports and import only cocotb and a few pure standard modules:
    :mod:`cvdp_gym.tasks.cocotb_bench_rules`).

    Also as a refinement or agentic episode: ``gymnasium.make("RTL-Refine-v0",
    task="testbench", reward="kills")`` (the feedback names the false alarm or how many bugs
    were missed, never which), ``gymnasium.make("RTL-Agentic-v0", task="testbench",
    reward="kills")`` (the specification in ``docs/specification.md``, the bench written to
    ``verif/tb.sv``).

    ## Action Space

    The model's answer, a ``str``: the test bench in a fenced code block.

    ## Observation Space

    ``reset``: the task prompt (the specification, the module header, the rules above);
    ``step``: ``""``.

    ## Rewards

    ``kills`` by default (:mod:`cvdp_gym.grading.rewards`): the fraction of the drawn bugs the
    bench fails, in [0, 1]; 0.0 when it does not compile, fails the reference, or is
    ``reach_in``. ``partial`` adds the usual shaping (0.1 for code, 0.3 for compiling).

    ## Starting State

    As :class:`~cvdp_gym.envs.single_shot.SingleShotEnv`; the problem ids end in
    ``.testbench``.

    ## Episode End

    The episode ends if any one of the following occurs:

    1. Termination: an answer was given (one step, whatever the grade).

    It is never truncated.

    ## Info

    The keys of :class:`~cvdp_gym.envs.single_shot.SingleShotEnv`. ``passed``: the bench passes
    the reference and catches every drawn bug. ``tests``: one per drawn bug (``passed``:
    caught). ``official``:

    | Key | Type | Description |
    |-----|------|-------------|
    | `task` | **str** | `testbench`. |
    | `kill_rate` | **float** | Bugs caught / bugs scored (0.0 after a false alarm). |
    | `killed` | **int** | Bugs caught. |
    | `mutants` | **list[dict]** | Per scored bug: `kind`, `killed`, `why` (the bench's failing line). |
    | `unscored` | **int** | Drawn bugs the bench does not compile with (not counted). |
    | `reference` | **dict** | The run on the reference: `built`, `passed`, `why`. |
    | `draw` | **dict** | `drawn`, `kinds`, and the pool members skipped as `equivalent_skipped` / `undecided_skipped`. |
    | `coverage` | **dict** | The reference's Verilator coverage under the bench: `line`, `toggle` as `[hit, total]`, their fractions, or `reason` when not measured. |
    | `findings` | **list[str]** | With `reach_in`: what the bench may not do. |

    ## Arguments

    ```python
    >>> import gymnasium as gym
    >>> import cvdp_gym  # registers the environments
    >>> env = gym.make("RTL-Testbench-v0", cache=False)
    >>> observation, info = env.reset(seed=0)
    >>> info["problem"]["id"].endswith(".testbench"), info["problem"]["targets"]
    (True, ['tb.sv'])
    >>> observation, reward, terminated, truncated, info = env.step("I would test every state.")
    >>> reward, terminated, info["failure_class"]
    (0.0, True, 'format_error')
    >>> env.close()

    ```

    The arguments of :class:`~cvdp_gym.envs.base.CVDPEnvBase`, with ``task='testbench'`` and
    ``reward='kills'`` (the fraction of the drawn bugs caught) as defaults; ``harness_seed`` fixes
    which bugs are drawn (and makes the verdict cacheable).

    ## Vectorized environment

    As :class:`~cvdp_gym.envs.single_shot.SingleShotEnv`: grading blocks ``step``, so run
    environments side by side in processes (``gym.make_vec(..., vectorization_mode="async")``).

    ## Version History

    * v0: Initial version release (issue 38).
    """

    __test__ = False  # not a pytest class, whatever its name says

    def __init__(self, dataset: Any = None, *, reward: str | RewardFn = "kills", task: str = TESTBENCH, **kwargs: Any) -> None:
        super().__init__(dataset, reward=reward, task=task, **kwargs)
