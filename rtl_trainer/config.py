"""Run configuration: one dataclass, loadable from a JSON/YAML file, overridable from the CLI.

``TrainConfig`` is a plain dataclass (``config.json`` in a run directory is ``asdict`` of
it); each field carries its help in ``metadata["help"]``, the one place a setting is
described. ``parse_field_value`` reads a field's value from text by the field's type (for
``rtl-train --set``); ``validate`` checks a whole config. Bad settings raise ``ConfigError``
(a ``ValueError``).
"""

from __future__ import annotations

import difflib
import functools
import json
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from cvdp_gym.execution.executor_factory import parse_executor
from cvdp_gym.grading.backed import check_verdict
from rtl_trainer.errors import ConfigError
from rtl_trainer.teacher_rules import parse_rules

PRICE_KEYS = ("train", "prefill", "sample", "teacher_prefill")
#: Where a run's metrics can go (``log_to``); ``jsonl`` (metrics.jsonl) is always written.
TRACKERS = ("jsonl", "wandb", "mlflow")
CHECKPOINT_UPLOADS = ("none", "final", "all")


@dataclass
class TrainConfig:
    """Everything a run needs; ``config.json`` in the run directory is this, serialised.

    Each field's ``metadata["help"]`` (``field_help(name)``) is the one place a setting is
    described: ``rtl-train`` builds its options and ``--set`` from the fields.
    """

    mode: str = field(default="distill", metadata={"help": "rl, distill or sft (set by the rtl-train command)."})
    backend: str = field(default="local", metadata={"help": "'local' (transformers + peft, in process) or 'tinker' (the hosted service)."})
    student: str = field(default="", metadata={"help": "Model to train: a Tinker model name, a local model directory, or a saved state."})
    teacher: str | None = field(default=None, metadata={"help": "Teacher for distillation: a model name, a model directory or a saved state."})
    renderer: str | None = field(default=None, metadata={"help": "Chat template family of the student; None: chosen from the model name."})
    teacher_renderer: str | None = field(default=None, metadata={"help": "Chat template family of the teacher; None: chosen from its name."})
    teachers: list[dict[str, Any]] | None = field(default=None, metadata={"help": "Several teachers (distill): rules, first match wins, each {model, renderer?, name?, problems?: [glob on the problem id], categories?: [cid003], difficulty?: [easy]}; problems no rule matches go to teacher. The KL to each is logged as teacher_kl/NAME."})
    env: str = field(default="CVDP-SingleShot-v0", metadata={"help": "CVDP-SingleShot-v0, CVDP-Refine-v0 (answers with grader feedback) or CVDP-Agentic-v0 (or their RTL-... names)."})
    dataset: str = field(default="bundled", metadata={"help": "'bundled', a CVDP JSONL path, 'hf[:PATTERN]', or a benchmark: verilog-eval-v2[:TASK][?shots=N], verilog-eval-v1, rtllm-v2, rtllm-v1.1 (or the path of a copy)."})
    benchmark_dir: str | None = field(default=None, metadata={"help": "A copy of the benchmark the dataset names (None: its environment variable, then the fetched copy)."})
    ids: list[str] | None = field(default=None, metadata={"help": "Only these problem ids (None: all)."})
    categories: list[str] | None = field(default=None, metadata={"help": "Only these categories (cid003 or 3)."})
    difficulty: list[str] | None = field(default=None, metadata={"help": "Only these difficulties."})
    exclude_simulators: list[str] = field(default_factory=list, metadata={"help": "Skip problems whose harness uses these simulators, e.g. [verilator] (slow harnesses)."})
    decontaminate_against: list[str] | None = field(default=None, metadata={"help": "Evaluation datasets the training set must not overlap, e.g. [bundled, verilog-eval-v2, rtllm-v2] (anything dataset takes; a benchmark's files found by its environment variable or `cvdp-gym benchmarks fetch`, or the path of a copy): before it loads a model, the run stops with an error naming the training problems that are near-copies of one of their problems (cvdp-gym decontaminate's default thresholds, with decontaminate_rouge_l for the specification). None: no check."})
    decontaminate_rouge_l: float = field(default=0.5, metadata={"help": "decontaminate_against: a training problem whose specification has a ROUGE-L above this with an evaluation problem's is a copy (CodeV-R1's threshold, 0.5); reference code ROUGE-L above 0.8 or a 10-gram overlap above 0.5 also count (1.0 turns this test off, not those)."})
    reward: str | None = field(default=None, metadata={"help": "Reward: shaped (the default), partial, binary, quality (the shaping plus the design-quality score of a passing answer against the problem's reference: area, delay and power on the ASIC flow; turns quality on with its defaults) or kills (the fraction of seeded bugs a test bench or assertions catch: the default for RTL-Testbench-v0, RTL-Assertion-v0 and task testbench or assertion)."})
    task: str = field(default="design", metadata={"help": "What each problem asks for: design (as its benchmark poses it), testbench (a self-checking test bench, rewarded by the seeded bugs it catches; testbench-cocotb: in cocotb) or assertion (SVA properties, checked with Yosys's formal); RTL-Testbench-v0 and RTL-Assertion-v0 set it themselves. The tasks take the problems with a reference design."})
    quality: str | None = field(default=None, metadata={"help": "Measure every passing answer's design against its reference (info['quality']; the quality reward's part): asic (Yosys + ABC to quality_liberty, OpenSTA) or fpga (Yosys synth_ice40 + nextpnr-ice40). None: off, unless reward is quality."})
    quality_liberty: str = field(default="nangate45", metadata={"help": "The ASIC flow's standard-cell library: nangate45, sky130hd (cvdp-gym quality fetch NAME) or a .lib path."})
    quality_clock_ns: float = field(default=10.0, metadata={"help": "The clock period designs are timed at (ns)."})
    steps: int = field(default=20, metadata={"help": "Optimiser steps."})
    groups_per_step: int = field(default=4, metadata={"help": "Problems (groups) per step."})
    group_size: int = field(default=4, metadata={"help": "Samples per problem; a group shares one problem."})
    max_tokens: int = field(default=1024, metadata={"help": "Most tokens sampled per turn."})
    max_prompt_tokens: int | None = field(default=None, metadata={"help": "Keep only the last N prompt tokens (tiny models); None: all."})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature (1.0 keeps the behaviour log-probs exact)."})
    learning_rate: float = field(default=1e-4, metadata={"help": "Adam learning rate."})
    lr_schedule: str = field(default="constant", metadata={"help": "constant, or linear (decays to 10% at the last step)."})
    lr_warmup_steps: int = field(default=0, metadata={"help": "Steps of linear learning-rate warm-up (from lr/N: Adam's first steps on a fresh optimizer are sign-sized)."})
    lora_rank: int = field(default=32, metadata={"help": "LoRA rank."})
    full_finetune: bool = field(default=False, metadata={"help": "Train every weight instead of a LoRA adapter (tiny models built from a config)."})
    cpu_threads: int | None = field(default=None, metadata={"help": "backend local: fix the float math on CPU, so a seeded run gives the same figures on any machine: this many torch threads whatever the cores (torch's default is one per core, and another count rounds sums differently), and on x86 the AVX2 kernels whatever the chip offers. None: the machine's defaults."})
    loss_fn: str = field(default="auto", metadata={"help": "auto (default: importance_sampling on-policy, ppo off-policy), importance_sampling or ppo."})
    ppo_clip: float = field(default=0.2, metadata={"help": "ppo: the ratio is clipped to [1 - ppo_clip, 1 + ppo_clip]."})
    max_steps_off_policy: int = field(default=0, metadata={"help": "Sample the next N steps' rollouts while this step trains (0: strictly on-policy); throughput at the cost of staleness, which the clipped ppo loss bounds."})
    num_minibatches: int = field(default=1, metadata={"help": "Split each step's groups into N minibatches: each goes to forward_backward as soon as its groups are graded (and, distilling, teacher-scored) while the others still grade, and one optim_step follows the last, so the update is the whole step's (groups_per_step must be divisible by N; 1: train once the whole step is graded)."})
    kl_penalty_coef: float = field(default=0.0, metadata={"help": "λ of the reverse-KL penalty −λ·(log p_student − log p_teacher) per token (distill; rtl-train distill uses 1.0 unless set)."})
    reward_coef: float = field(default=1.0, metadata={"help": "Weight of the environment's reward in the advantage (reward − group mean); 0 with distill is pure on-policy distillation (the teacher's KL alone, as tinker-cookbook's), 1 adds both."})
    kl_discount_factor: float = field(default=0.0, metadata={"help": "Discount for summing future KL terms (0: per-token only)."})
    normalize_advantages_std: bool = field(default=False, metadata={"help": "Divide group advantages by the group's reward std."})
    drop_constant_groups: bool = field(default=False, metadata={"help": "Leave out groups whose rewards are all equal (no RL signal)."})
    max_turns: int = field(default=8, metadata={"help": "Turns per agentic episode."})
    problem_sampler: str = field(default="uniform", metadata={"help": "Which problems each step draws (rtl_trainer.loop.curriculum): uniform, difficulty or adaptive."})
    curriculum_threshold: float = field(default=0.5, metadata={"help": "difficulty: the pass rate that advances a stage."})
    curriculum_window: int = field(default=32, metadata={"help": "difficulty: the latest samples of the stage that rate counts."})
    adaptive_patience: int = field(default=2, metadata={"help": "adaptive: constant (all-pass/all-fail) groups in a row before a skip."})
    adaptive_skip_steps: int = field(default=4, metadata={"help": "adaptive: steps a constant problem sits out."})
    adaptive_mixed_weight: float = field(default=3.0, metadata={"help": "adaptive: draw weight of problems whose last group was mixed."})
    refine_max_attempts: int = field(default=3, metadata={"help": "CVDP-Refine-v0: answers per episode."})
    refine_feedback: str = field(default="interface", metadata={"help": "CVDP-Refine-v0: the grader's feedback between answers: compile, interface or tests."})
    refine_episode_reward: str = field(default="final", metadata={"help": "CVDP-Refine-v0: how attempts make the reward: final, best or final_minus_cost."})
    rollout_timeout_s: float = field(default=600.0, metadata={"help": "Seconds to wait for one group's samples or one verdict (single turn), or for a whole episode (multi-turn), before it counts as failed."})
    grade_workers: int = field(default=2, metadata={"help": "Answers graded in parallel (threads executor)."})
    teacher_workers: int = field(default=4, metadata={"help": "Teacher scoring requests in flight while grading runs."})
    grade_timeout_s: float = field(default=300.0, metadata={"help": "Wall-time limit per harness service, seconds (a sampled infinite loop costs at most this)."})
    grade_cache: bool = field(default=True, metadata={"help": "Reuse verdicts of identical answers (SQLite, by content hash)."})
    grade_sandbox: str = field(default="bubblewrap", metadata={"help": "Where answers are graded: bubblewrap (default) or docker (harnesses in containers of their image)."})
    grade_toolchain: str = field(default="root", metadata={"help": "root (the pinned Icarus 13 root, default) or host (the machine's own simulators)."})
    grade_executor: str = field(default="threads", metadata={"help": "Where simulations run: threads (grade_workers threads here), processes[:N] or ray[:ADDRESS] (one Ray task per answer on the cluster's CPUs; see the README)."})
    grade_seed: int | None = field(default=None, metadata={"help": "The seed every grading runs with (harnesses that draw at random, the verification tasks' seeded bugs): fixed, each answer to a problem is graded on the same draw and its verdict cached; None: a fresh draw per answer, not cached."})
    grade_verdict: str = field(default="testbench", metadata={"help": "What earns the pass: testbench (the problem's own test bench) or testbench+reference (the test bench and equivalence with the problem's reference design, checked only after the test bench passed: a reward a weak test bench cannot give to a wrong design; answers it cannot decide are excluded). Needs problems with a reference (VerilogEval, RTLLM, CVDP with reference solutions, training sets)."})
    grade_deadline_s: float | None = field(default=None, metadata={"help": "Seconds an answer may take to be graded after it is sampled (so the step waits at most this long after its last sample); late ones are dropped (see late_answers). None: wait for every verdict."})
    late_answers: str = field(default="drop", metadata={"help": "Answers past grade_deadline_s: drop (a slow verdict says nothing about the answer) or timeout (scored as a harness timeout: format credit only)."})
    max_infra_frac: float = field(default=0.5, metadata={"help": "Stop the run (after saving) when more than this share of a step's answers could not be graded for reasons not theirs (sandbox would not start, lost worker), even after one re-grade (a broken harness is not counted: it is excluded, never re-graded); such answers are left out of their group either way. 1.0: never stop."})
    save_every: int = field(default=5, metadata={"help": "Save a checkpoint every N steps and after the last (0: only after the last)."})
    prices: dict[str, float] | None = field(default=None, metadata={"help": "USD per million tokens for a per-step cost estimate in metrics.jsonl: any of train, prefill, sample, teacher_prefill (the service bills hourly, not per step)."})
    eval_every: int = field(default=0, metadata={"help": "Evaluate the weights after every N steps on the run's problems (rl, distill): their pass rate and mean reward go into that step's metrics as eval/pass_rate and eval/mean_reward (0: no periodic eval)."})
    eval_samples: int = field(default=1, metadata={"help": "Samples per problem in the periodic eval (eval_every), at the run's temperature."})
    seed: int = field(default=0, metadata={"help": "Seed for problem order and sampling."})
    run_dir: str = field(default="runs/train", metadata={"help": "Run directory (config.json, metrics.jsonl, checkpoints.jsonl, rollouts/)."})
    log_to: str = field(default="jsonl", metadata={"help": "Where metrics go, comma-separated: jsonl, wandb, mlflow (e.g. jsonl,wandb). metrics.jsonl is always written, whatever this says: --resume and rtl-train plot read it. wandb and mlflow need their extras (pip install 'cvdp-gym[wandb]' or '[mlflow]')."})
    wandb_project: str | None = field(default=None, metadata={"help": "W&B project; None: WANDB_PROJECT, else rtl-train. WANDB_MODE=offline logs without an account (wandb sync uploads it later)."})
    mlflow_tracking_uri: str | None = field(default=None, metadata={"help": "MLflow tracking URI (a server, sqlite:///mlflow.db, or a file: store, which MLflow 3 opens only with MLFLOW_ALLOW_FILE_STORE=true); None: MLFLOW_TRACKING_URI, else MLflow's default."})
    mlflow_experiment: str | None = field(default=None, metadata={"help": "MLflow experiment name; None: MLFLOW_EXPERIMENT_NAME, else rtl-train."})
    log_samples: int = field(default=16, metadata={"help": "Answers per step, with their grades, sent to W&B / MLflow as a table (0: none); rollouts/ in the run directory keeps every answer."})
    log_checkpoints: str = field(default="none", metadata={"help": "Checkpoints uploaded to W&B / MLflow as artifacts: none, final (the last step's) or all. Local checkpoints only; each is the model's (or adapter's) full state."})
    sft_source: str = field(default="reference", metadata={"help": "sft: reference, or candidate:NAME (a bundled known-wrong candidate); COUNT*SOURCE+... mixes them."})
    sft_strip_comments: bool = field(default=False, metadata={"help": "sft: train on reference solutions without comments (shorter)."})
    batch_size: int = field(default=8, metadata={"help": "Examples per step (sft)."})

    @classmethod
    def from_file(cls, path: str | Path) -> TrainConfig:
        """Read a JSON or YAML config; unknown keys are an error that names them."""
        text = Path(path).read_text(encoding="utf-8")
        data = yaml.safe_load(text) if str(path).endswith((".yaml", ".yml")) else json.loads(text)
        return cls.from_dict(data or {})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown config keys: {', '.join(unknown)}")
        return cls(**data)

    def merged(self, overrides: dict[str, Any]) -> TrainConfig:
        """A copy with the given (non-None) values replaced."""
        data = asdict(self)
        data.update({k: v for k, v in overrides.items() if v is not None})
        return TrainConfig.from_dict(data)

    @property
    def chosen_reward(self) -> str:
        """``reward``, else ``kills`` for a verification task (by ``task`` or ``env``) and ``shaped`` otherwise."""
        verifies = self.task != "design" or self.env in ("RTL-Testbench-v0", "RTL-Assertion-v0")
        return self.reward or ("kills" if verifies else "shaped")

    def validate(self) -> None:
        if self.mode not in ("rl", "distill", "sft"):
            raise ConfigError(f"mode must be rl, distill or sft, not {self.mode!r}")
        if self.task not in ("design", "testbench", "testbench-cocotb", "assertion"):
            raise ConfigError(f"task must be design, testbench, testbench-cocotb or assertion, not {self.task!r}")
        if not self.student:
            raise ConfigError("a student model is required (--student)")
        if self.mode == "distill" and not (self.teacher or self.teachers):
            raise ConfigError("distillation needs a teacher (--teacher, or teachers rules)")
        parse_rules(self.teachers)
        if self.loss_fn not in ("auto", "importance_sampling", "ppo"):
            raise ConfigError(f"loss_fn must be auto, importance_sampling or ppo, not {self.loss_fn!r}")
        if self.reward_coef < 0:
            raise ConfigError(f"reward_coef must be >= 0, not {self.reward_coef}")
        if self.mode == "rl" and self.reward_coef == 0:
            raise ConfigError("rl with reward_coef 0 has nothing to learn from (no reward, no teacher)")
        if self.max_steps_off_policy < 0:
            raise ConfigError("max_steps_off_policy must be >= 0")
        if self.cpu_threads is not None and self.cpu_threads < 1:
            raise ConfigError(f"cpu_threads must be >= 1 (or None for the machine's defaults), not {self.cpu_threads}")
        unknown_prices = sorted(set(self.prices or {}) - set(PRICE_KEYS))
        if unknown_prices:
            raise ConfigError(f"unknown price keys {unknown_prices}; use {list(PRICE_KEYS)}")
        if self.lr_schedule not in ("constant", "linear"):
            raise ConfigError(f"lr_schedule must be constant or linear, not {self.lr_schedule!r}")
        if self.grade_sandbox not in ("bubblewrap", "docker"):
            raise ConfigError(f"grade_sandbox must be bubblewrap or docker, not {self.grade_sandbox!r}")
        if self.grade_toolchain not in ("root", "host"):
            raise ConfigError(f"grade_toolchain must be root or host, not {self.grade_toolchain!r}")
        try:
            parse_executor(self.grade_executor)
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        try:
            check_verdict(self.grade_verdict)
        except ValueError as exc:
            raise ConfigError(f"grade_verdict: {exc}") from exc
        if self.quality not in (None, "asic", "fpga"):
            raise ConfigError(f"quality must be asic or fpga (or None: off), not {self.quality!r}")
        if self.quality_clock_ns <= 0:
            raise ConfigError(f"quality_clock_ns must be > 0, not {self.quality_clock_ns}")
        if self.grade_deadline_s is not None and self.grade_deadline_s <= 0:
            raise ConfigError("grade_deadline_s must be > 0 (or None to wait for every verdict)")
        if self.late_answers not in ("drop", "timeout"):
            raise ConfigError(f"late_answers must be drop or timeout, not {self.late_answers!r}")
        if not 0.0 <= self.decontaminate_rouge_l <= 1.0:
            raise ConfigError(f"decontaminate_rouge_l must be in [0, 1], not {self.decontaminate_rouge_l}")
        if not 0.0 <= self.max_infra_frac <= 1.0:
            raise ConfigError(f"max_infra_frac must be in [0, 1], not {self.max_infra_frac}")
        if self.problem_sampler not in ("uniform", "difficulty", "adaptive"):
            raise ConfigError(f"problem_sampler must be uniform, difficulty or adaptive, not {self.problem_sampler!r}")
        if not 0.0 <= self.curriculum_threshold <= 1.0 or self.curriculum_window < 1:
            raise ConfigError("curriculum_threshold must be in [0, 1] and curriculum_window >= 1")
        if self.adaptive_patience < 1 or self.adaptive_skip_steps < 0 or self.adaptive_mixed_weight <= 0:
            raise ConfigError("adaptive_patience must be >= 1, adaptive_skip_steps >= 0, adaptive_mixed_weight > 0")
        unknown_trackers = sorted(set(self.trackers) - set(TRACKERS))
        if unknown_trackers or not self.trackers:
            raise ConfigError(f"log_to must name some of {', '.join(TRACKERS)} (comma-separated), not {self.log_to!r}")
        if self.log_checkpoints not in CHECKPOINT_UPLOADS:
            raise ConfigError(f"log_checkpoints must be none, final or all, not {self.log_checkpoints!r}")
        if self.log_samples < 0:
            raise ConfigError("log_samples must be >= 0")
        if self.eval_every < 0 or self.eval_samples < 1:
            raise ConfigError("eval_every must be >= 0 and eval_samples >= 1")
        if self.group_size < 1 or self.groups_per_step < 1 or self.steps < 0:
            raise ConfigError("group_size and groups_per_step must be >= 1, steps >= 0")
        if self.num_minibatches < 1:
            raise ConfigError(f"num_minibatches must be >= 1, not {self.num_minibatches}")
        if self.groups_per_step % self.num_minibatches:
            raise ConfigError(
                f"groups_per_step ({self.groups_per_step}) must be divisible by num_minibatches "
                f"({self.num_minibatches}): each minibatch trains on the same number of groups"
            )

    @property
    def trackers(self) -> list[str]:
        """``log_to`` as a list, in order, without repeats (``jsonl`` may be left out: it is
        always written)."""
        names = [n.strip().lower() for n in self.log_to.split(",") if n.strip()]
        return list(dict.fromkeys(names))

    @property
    def loss(self) -> str:
        """The loss to use: ``loss_fn``, or for ``auto`` the clipped ``ppo`` on stale
        (off-policy) samples, as Tinker's docs recommend, and ``importance_sampling`` on-policy."""
        if self.loss_fn != "auto":
            return self.loss_fn
        return "ppo" if self.max_steps_off_policy > 0 else "importance_sampling"

    def warnings(self) -> list[str]:
        """Settings that run but are probably not what was meant."""
        notes = []
        if self.max_steps_off_policy > 0 and self.loss_fn == "importance_sampling":
            notes.append(
                "importance_sampling on off-policy samples (max_steps_off_policy > 0) has unbounded "
                "ratios p_new/p_old; the clipped ppo loss (loss_fn auto or ppo) is meant for stale samples"
            )
        if self.mode != "sft" and self.temperature != 1.0:
            notes.append(
                f"sampling at temperature {self.temperature}: the samples are reweighted to the "
                "temperature-1 policy by importance ratios, which adds variance"
            )
        return notes

    def lr_at(self, step: int) -> float:
        """The learning rate of ``step`` under ``lr_schedule`` and ``lr_warmup_steps``."""
        lr = self.learning_rate
        if self.lr_schedule == "linear" and self.steps > 1:
            lr *= 1.0 - 0.9 * step / (self.steps - 1)
        if step < self.lr_warmup_steps:
            lr *= (step + 1) / self.lr_warmup_steps
        return lr

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_NULL = {"", "null", "none", "~"}


@functools.cache
def field_types() -> dict[str, Any]:
    """Each ``TrainConfig`` field's type (``str | None``, ``list[str]``, ...)."""
    return typing.get_type_hints(TrainConfig)


def field_help(name: str) -> str:
    """The help text of a ``TrainConfig`` field (what ``rtl-train`` shows for its option)."""
    return next(f.metadata.get("help", "") for f in fields(TrainConfig) if f.name == name)


def parse_field_value(name: str, text: str) -> Any:
    """``text`` as a value of field ``name``, by the field's type: strings as given, numbers
    and booleans parsed, lists and dicts as JSON or YAML (``[a, b]``, ``{train: 1.5}``),
    ``null``/``none``/empty for an optional field. A ``ConfigError`` names the field on an
    unknown name or a value of the wrong kind."""
    hints = field_types()
    if name not in hints:
        close = difflib.get_close_matches(name, hints, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(f"unknown TrainConfig field {name!r}{hint}")
    kind = hints[name]
    args = typing.get_args(kind)
    if type(None) in args:
        if text.strip().lower() in _NULL:
            return None
        (kind,) = [a for a in args if a is not type(None)]
    try:
        return _parse(kind, text)
    except ConfigError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def _parse(kind: Any, text: str) -> Any:
    if kind is str:
        return text
    if kind is bool:
        word = text.strip().lower()
        if word in _TRUE | _FALSE:
            return word in _TRUE
        raise ConfigError(f"expected true or false, got {text!r}")
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"expected an integer, got {text!r}") from None
    if kind is float:
        try:
            return float(text)
        except ValueError:
            raise ConfigError(f"expected a number, got {text!r}") from None
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        raise ConfigError(f"{text!r} is not JSON or YAML") from None
    if origin is list and args == (str,):
        if not isinstance(value, list) or any(isinstance(v, (list, dict, bool)) or v is None for v in value):
            raise ConfigError(f"expected a list of strings, e.g. [a, b], got {text!r}")
        return [str(v) for v in value]
    if origin is list and typing.get_origin(args[0]) is dict:
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise ConfigError(f"expected a list of mappings, e.g. [{{model: M, problems: ['*fifo*']}}], got {text!r}")
        return value
    if origin is dict and args == (str, float):
        if not isinstance(value, dict) or any(
            not isinstance(v, (int, float)) or isinstance(v, bool) for v in value.values()
        ):
            raise ConfigError(f"expected a mapping of names to numbers, e.g. {{train: 1.5}}, got {text!r}")
        return {str(k): float(v) for k, v in value.items()}
    raise ConfigError(f"cannot parse a {kind} from the command line")  # a new field type: extend _parse
