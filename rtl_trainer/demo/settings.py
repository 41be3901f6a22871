"""The demo's sizes (``DemoSettings``) and the training config every stage starts from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rtl_trainer.config import TrainConfig

FAMILY = "qwen3_instruct"
#: What the teacher and the weak student learn from; the compact vocabulary covers both.
TEACHER_SOURCE = "reference"
STUDENT_SOURCE = "3*candidate:functional_bug+reference"
SFT_SOURCES = (TEACHER_SOURCE, STUDENT_SOURCE)


@dataclass
class DemoSettings:
    """Sizes chosen so the whole demo runs in minutes on a 2-core CPU."""

    #: Problems with answers short enough for a tiny model on a CPU (all Icarus, single-shot).
    ids: tuple[str, ...] = (
        "cvdp_gym_alu_flags_0001",
        "cvdp_gym_edge_detector_0001",
        "cvdp_gym_gray_converter_0001",
        "cvdp_gym_priority_encoder_0001",
        "cvdp_gym_sync_fifo_0001",
        "cvdp_gym_traffic_light_0001",
    )
    teacher_sft_steps: int = 160
    student_sft_steps: int = 150
    distill_steps: int = 24
    rl_steps: int = 24
    groups_per_step: int = 6
    group_size: int = 8
    max_prompt_tokens: int = 64
    max_tokens: int = 640  # the longest answer is about 510 tokens
    sft_lr: float = 3e-3
    #: RL/distillation: small steps after a warm-up. A fresh Adam moves every weight by
    #: about the learning rate from its first step, which wrecks a tiny SFT'd model at 1e-4.
    rl_lr: float = 8e-5
    rl_warmup_steps: int = 4
    kl_penalty_coef: float = 1.0
    #: ``--seeds``: more distillation runs per seed at these λ (method ``distill-klC``), to
    #: see whether the teacher's term is weighted too lightly or too heavily.
    seeds_kl_coefs: tuple[float, ...] = ()
    #: ``--seeds``: also pure on-policy distillation per seed (the teacher's KL alone, no
    #: reward: ``reward_coef`` 0), method ``distill-kl-only``.
    seeds_kl_only: bool = False
    eval_samples: int = 8
    #: A wall-clock limit, so a verdict that reaches it depends on the machine: the slowest
    #: reference simulates in about a second on an idle 2-core machine but took 5 s on a busy
    #: one, half the 10 s this was, and a correct answer timed out is a failed one. At 30 s
    #: only a sampled infinite loop reaches it, on every machine; it costs 30 s of one grading
    #: thread when one does.
    grade_timeout_s: float = 30.0
    #: Sampling temperature of rollouts and evaluations: below 1 a tiny model derails less
    #: often (0.6 halves the student's build errors against 0.7, and its distillation gain
    #: more than doubled); the loss reweights the samples to the temperature-1 policy.
    temperature: float = 0.6
    seed: int = 0
    #: The same figures on any machine: one torch thread whatever its cores and, on x86, the
    #: AVX2 kernels whatever its chip (``fix_cpu_math``), on the CPU even where a GPU is
    #: (it rounds otherwise). One thread costs little here: the models are tiny, and the
    #: simulator wants the other core.
    cpu_threads: int = 1
    device: str = "cpu"
    # ``--with-curriculum``: RL with uniform vs adaptive problem sampling from the weak
    # student (fewer problems per step than there are, so the sampler has a choice), and
    # the weak student's pass@1 on CVDP-Refine-v0 after 1 and after ``refine_attempts`` answers.
    curriculum_steps: int = 12
    curriculum_groups_per_step: int = 3
    refine_attempts: int = 3
    refine_eval_samples: int = 4


def base_config(out: Path, s: DemoSettings) -> TrainConfig:
    return TrainConfig(
        backend="local",
        renderer=FAMILY,
        teacher_renderer=FAMILY,
        env="CVDP-SingleShot-v0",
        dataset="bundled",
        ids=list(s.ids),
        exclude_simulators=["verilator"],
        full_finetune=True,
        max_prompt_tokens=s.max_prompt_tokens,
        max_tokens=s.max_tokens,
        temperature=s.temperature,
        sft_strip_comments=True,
        groups_per_step=s.groups_per_step,
        group_size=s.group_size,
        grade_workers=2,
        grade_timeout_s=s.grade_timeout_s,
        cpu_threads=s.cpu_threads,
        save_every=0,
        seed=s.seed,
        run_dir=str(out),
    )
