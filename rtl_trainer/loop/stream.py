"""Streaming minibatches (``num_minibatches``): a step's groups train as they are graded.

The rollouts hand each group over as soon as its answers are settled, and ``GroupStream``
passes them on in the step's order (each as soon as it and the groups before it are in);
every ``groups_per_step / num_minibatches`` of them become datums and a ``forward_backward``
submitted at once, while the other groups still grade (``Minibatches``). Taking them in
order, not as they finish, keeps the minibatches (and so the rounding of the gradient sums)
the same whatever order grading finishes in: a seeded run trains the same weights on a
slow machine and a fast one; a slow first group holds the others back. The losses are sums
over tokens and gradients accumulate until the step's single ``optim_step``, so the update
is the whole batch's; group advantages are per group, so the split changes nothing but the
order of the additions. What the calls report is combined as one call's would be
(``combine_metrics``), and the datum statistics (teacher KL, ...) add up over the whole
step (``objective.DatumStats``).
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field

from tinker import types

from rtl_trainer.backends.base import TrainingClient
from rtl_trainer.loop.objective import DatumStats
from rtl_trainer.rollouts import Group

#: Token counts that weigh a call's ``:mean`` metrics (the local backend's means are per
#: acting token, or per unit of weight for ``cross_entropy``), in order of preference.
_MEAN_WEIGHTS = ("action_tokens:sum", "weights:sum")


class GroupStream:
    """One step's groups in their order (``Group.index``), each as soon as it and every group
    before it finished grading: the rollouts ``put`` them (from any thread, in any order),
    the collection ``close``\\ s the stream when it returns or fails, and the trainer
    iterates until then (after a failure, what arrived follows in order)."""

    _END = object()

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()

    def put(self, group: Group) -> None:
        self._queue.put(group)

    def close(self) -> None:
        self._queue.put(self._END)

    def __iter__(self) -> Iterator[Group]:
        waiting: dict[int, list[Group]] = {}  # index -> groups arrived ahead of their turn
        turn = 0
        while (item := self._queue.get()) is not self._END:
            assert isinstance(item, Group)
            waiting.setdefault(item.index, []).append(item)
            while turn in waiting:
                yield from waiting.pop(turn)
                turn += 1
        for index in sorted(waiting):
            yield from waiting[index]


def combine_metrics(outputs: list[types.ForwardBackwardOutput]) -> dict[str, float]:
    """What one ``forward_backward`` over all the calls' datums would report: ``:sum``
    adds, ``:min``/``:max`` fold, ``:mean`` (and a metric without a reduction suffix) is
    weighted by each call's acting tokens where the backend reports them (exact for the
    local backend), else by its datums (as the Tinker SDK folds its own chunks)."""
    if len(outputs) == 1:
        return dict(outputs[0].metrics)
    key = next((k for k in _MEAN_WEIGHTS if all(k in o.metrics for o in outputs)), None)
    weights = [float(o.metrics[key]) if key else float(len(o.loss_fn_outputs)) for o in outputs]
    combined: dict[str, float] = {}
    for name in outputs[0].metrics:
        if not all(name in o.metrics for o in outputs):
            continue
        values = [float(o.metrics[name]) for o in outputs]
        reduction = name.rpartition(":")[2] if ":" in name else "mean"
        if reduction == "sum":
            combined[name] = sum(values)
        elif reduction == "min":
            combined[name] = min(values)
        elif reduction == "max":
            combined[name] = max(values)
        elif sum(weights) > 0:
            combined[name] = sum(v * w for v, w in zip(values, weights, strict=True)) / sum(weights)
        else:
            combined[name] = sum(values) / len(values)
    return combined


@dataclass
class Minibatches:
    """One step's ``forward_backward`` calls, a minibatch of groups at a time, and the one
    ``optim_step`` after the last (``finish``).

    ``make_data`` turns groups into datums and their statistics (it waits on teacher scores
    and recomputed log-probs: ``score_s`` adds that time up). ``submitted_at`` keeps when
    each call was submitted (``time.monotonic()``), for the overlap metrics.
    """

    training: TrainingClient
    make_data: Callable[[list[Group]], tuple[list[types.Datum], DatumStats]]
    loss: str
    loss_config: Mapping[str, float] | None = None
    datums: list[types.Datum] = field(default_factory=list)
    stats: DatumStats = field(default_factory=DatumStats)
    score_s: float = 0.0
    submitted_at: list[float] = field(default_factory=list)
    _calls: list[Future[types.ForwardBackwardOutput]] = field(default_factory=list)

    def add(self, groups: list[Group]) -> None:
        """Datums of ``groups``, submitted as one ``forward_backward`` (none when no group
        gives a datum: all left out, or dropped as constant)."""
        started = time.monotonic()
        datums, stats = self.make_data(groups)
        self.score_s += time.monotonic() - started
        self.stats += stats
        if not datums:
            return
        self.datums += datums
        self._calls.append(self.training.forward_backward(datums, self.loss, self.loss_config))
        self.submitted_at.append(time.monotonic())

    def finish(self, adam: types.AdamParams) -> dict[str, float]:
        """Submit the step's ``optim_step`` (if anything was trained), wait for every call
        and return their combined metrics as ``train/...``."""
        if not self._calls:
            return {}
        step = self.training.optim_step(adam)
        outputs = [call.result() for call in self._calls]
        step.result()
        return {f"train/{k}": v for k, v in combine_metrics(outputs).items()}

    def overlap_metrics(self, graded_at: float) -> dict[str, float]:
        """``stream/minibatches`` (``forward_backward`` calls), ``stream/early_minibatches``
        (those submitted before the step's last verdict) and ``time/train_overlap`` (from
        the first call to that verdict: training that ran while groups still graded)."""
        early = [t for t in self.submitted_at if t < graded_at]
        return {
            "stream/minibatches": len(self.submitted_at),
            "stream/early_minibatches": len(early),
            "time/train_overlap": graded_at - min(early) if early else 0.0,
        }
