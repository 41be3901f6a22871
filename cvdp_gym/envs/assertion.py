"""``RTL-Assertion-v0``: the model writes SVA properties for a design, rewarded by the bugs they catch."""

from __future__ import annotations

from typing import Any

from cvdp_gym.envs.single_shot import SingleShotEnv
from cvdp_gym.grading.rewards import RewardFn
from cvdp_gym.tasks.names import ASSERTION


class AssertionEnv(SingleShotEnv):
    """
    ## Description

    Assertion generation: each problem of the dataset that has a reference design is posed as
    "write SystemVerilog assertions that check this design against its specification"
    (:mod:`cvdp_gym.tasks.posing`); the model sees the specification and the
    design's header (its ports and parameters), never its body. ``step`` extracts the
    properties (``properties.sv``: concurrent ``assert property`` statements and the helper
    declarations they need, placed at the end of the design's top module) and checks them
    with open formal, Yosys 0.40's SAT solver (:mod:`cvdp_gym.tasks.assertion_flow`,
    :mod:`cvdp_gym.tasks.assertions`). The properties may read only the design's ports and
    their own helper declarations (:mod:`cvdp_gym.tasks.assertions.ports_only`, pyslang,
    before anything runs): a name inside the design, a hierarchical name into it or a module
    instance is ``reach_in`` (reward 0), with the name and its line. A restatement of the design
    needs its text or its internal names; from the specification and the ports, a property
    that catches a bug encodes the specified behaviour. Then every supported property must hold on the reference (proved by induction, or no
    counterexample within ``depth`` cycles after reset) and not be vacuous (its antecedent is
    reachable); the answer earns the fraction of seeded bugs (mutants shown not equivalent,
    drawn per run, never shown) on which some property fails.

    Open formal is not a commercial tool: the properties are lowered to immediate assertions
    Yosys proves, so only a subset of SVA is supported: boolean expressions with ``$past``,
    ``$rose``, ``$fell``, ``$stable``, ``$onehot``, ``$onehot0``, ``$countones``, fixed delays
    ``##N``, ``|->`` and ``|=>``, ``disable iff`` (sampled at the clock edges of the
    property's window, where SVA aborts asynchronously). Delay ranges, repetition, ``throughout``,
    ``within``, ``intersect``, ``until``, ``s_eventually``, ``first_match``, declared sequences,
    ``cover``/``assume`` and a second clock are reported unsupported with the reason (such a
    property earns nothing; it never passes silently). Registers no reset covers start from
    any defined value (every bit 0 or 1, never X); the reset is asserted in the first cycle only.

    Also as a refinement or agentic episode: ``gymnasium.make("RTL-Refine-v0",
    task="assertion", reward="kills")``, ``gymnasium.make("RTL-Agentic-v0", task="assertion",
    reward="kills")`` (the specification in ``docs/specification.md``, no design; the
    properties written to ``verif/properties.sv``).

    ## Action Space

    The model's answer, a ``str``: the properties in a fenced code block.

    ## Observation Space

    ``reset``: the task prompt (the specification, the design's header, the supported subset);
    ``step``: ``""``.

    ## Rewards

    ``kills`` by default (:mod:`cvdp_gym.grading.rewards`): the fraction of the drawn bugs the
    properties catch, in [0, 1]; 0.0 when they read a name inside the design (``reach_in``),
    do not build with the design, one fails on the reference, all are vacuous or unsupported.

    ## Starting State

    As :class:`~cvdp_gym.envs.single_shot.SingleShotEnv`; the problem ids end in ``.assertion``.

    ## Episode End

    The episode ends if any one of the following occurs:

    1. Termination: an answer was given (one step, whatever the grade).

    It is never truncated.

    ## Info

    The keys of :class:`~cvdp_gym.envs.single_shot.SingleShotEnv`. ``passed``: the properties
    hold on the reference and catch every drawn bug. ``tests``: one per drawn bug.
    ``official``:

    | Key | Type | Description |
    |-----|------|-------------|
    | `task` | **str** | `assertion`. |
    | `kill_rate` | **float** | Bugs caught / bugs drawn (0.0 after a false alarm). |
    | `killed` | **int** | Bugs caught. |
    | `mutants` | **list[dict]** | Per drawn bug: `kind`, `killed`. |
    | `properties` | **list[dict]** | Per property: `label`, `supported`, `reason` (why not), `reference` (`proved`, `bounded`, `fails`, `error`, `undecided`), `vacuous`. |
    | `reference` | **dict** | `passed` (the properties hold meaningfully on the reference), `why`. |
    | `clock`, `reset` | **str or None** | The clock the properties are sampled on and the reset asserted in the first cycle. |
    | `draw` | **dict** | As in `RTL-Testbench-v0`. |
    | `findings` | **list[str]** | Only for a refused answer (`reach_in`, or a name declared nowhere): the name and its line. |

    ## Arguments

    ```python
    >>> import gymnasium as gym
    >>> import cvdp_gym  # registers the environments
    >>> env = gym.make("RTL-Assertion-v0", cache=False)
    >>> observation, info = env.reset(seed=0)
    >>> info["problem"]["id"].endswith(".assertion"), info["problem"]["targets"]
    (True, ['properties.sv'])
    >>> observation, reward, terminated, truncated, info = env.step("I would test every state.")
    >>> reward, terminated, info["failure_class"]
    (0.0, True, 'format_error')
    >>> env.close()

    ```

    The arguments of :class:`~cvdp_gym.envs.base.CVDPEnvBase`, with ``task='assertion'`` and
    ``reward='kills'`` (the fraction of the drawn bugs caught) as defaults; ``harness_seed`` fixes
    which bugs are drawn (and makes the verdict cacheable).

    ## Vectorized environment

    As :class:`~cvdp_gym.envs.single_shot.SingleShotEnv`: grading blocks ``step``, so run
    environments side by side in processes (``gym.make_vec(..., vectorization_mode="async")``).

    ## Version History

    * v0: Initial version release (issue 38); the design's body hidden and the properties kept
      to its ports (issue 45).
    """

    def __init__(self, dataset: Any = None, *, reward: str | RewardFn = "kills", task: str = ASSERTION, **kwargs: Any) -> None:
        super().__init__(dataset, reward=reward, task=task, **kwargs)
