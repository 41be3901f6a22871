"""The training objective: advantages, the distillation KL term, and Tinker datums.

``advantages`` turns group rewards (and teacher logprobs) into per-token advantages,
``datums`` packs them into ``tinker.types.Datum`` values for ``cross_entropy``,
``importance_sampling`` and ``ppo`` and checks them, and ``align`` maps a teacher's
logprobs onto a student's tokens when their tokenizers differ.
"""

from rtl_trainer.losses.advantages import (
    broadcast_advantage,
    constant_group,
    group_advantages,
    kl_penalty,
)
from rtl_trainer.losses.align import (
    AlignedLogprobs,
    AlignmentPlan,
    TeacherAligner,
    decode_with_offsets,
    encode_with_offsets,
    map_logprobs_by_spans,
    same_vocab,
    teacher_completion_logprobs,
)
from rtl_trainer.losses.datums import (
    LOSS_FN_INPUTS,
    ActionSegment,
    ObservationSegment,
    Segment,
    Turn,
    check_data,
    check_datum,
    multi_turn_datum,
    pack_turns,
    rollout_datum,
    sft_datum,
    split_turns,
    with_added_advantages,
)

__all__ = [
    "LOSS_FN_INPUTS",
    "ActionSegment",
    "AlignedLogprobs",
    "AlignmentPlan",
    "ObservationSegment",
    "Segment",
    "TeacherAligner",
    "Turn",
    "broadcast_advantage",
    "check_data",
    "check_datum",
    "constant_group",
    "decode_with_offsets",
    "encode_with_offsets",
    "group_advantages",
    "kl_penalty",
    "map_logprobs_by_spans",
    "multi_turn_datum",
    "pack_turns",
    "rollout_datum",
    "same_vocab",
    "sft_datum",
    "split_turns",
    "teacher_completion_logprobs",
    "with_added_advantages",
]
