"""How the HTTP grading service (``cvdp-gym serve``) admits and bounds its work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from cvdp_gym.errors import ConfigError


@dataclass(frozen=True)
class ServiceOptions:
    """``--workers``, ``--queue``, ``--max-body``, ``--deadline``, ``--shutdown-grace``,
    ``--per-client``, ``--default-reward``."""

    workers: Annotated[int, typer.Option(help="Answers graded at once.")] = 2
    queue: Annotated[int, typer.Option(help="Grading jobs that may wait beyond --workers; one more is answered 429 with Retry-After.")] = 64
    max_body: Annotated[int, typer.Option(help="Largest request body, bytes (413 beyond).")] = 4 * 1024 * 1024
    deadline: Annotated[float, typer.Option(help="Longest a grade may take, seconds (a request's deadline_s is capped by it); then it is cancelled and scored timeout.")] = 600.0
    shutdown_grace: Annotated[float, typer.Option(help="On SIGTERM/Ctrl-C, seconds the answers being graded have to finish; those still running then are answered 503 and their sandboxes killed.")] = 30.0
    per_client: Annotated[int, typer.Option(help="Grading jobs one client (its X-Client-Id header, else its address) may have in at once; 0: no limit beyond --queue.")] = 0
    default_reward: Annotated[str, typer.Option(help="The reward of a request that names none (NeMo-Gym's rows never do): shaped, partial, binary, quality (turns --quality asic on) or kills (the verification tasks': the fraction of seeded bugs caught).")] = "shaped"

    def validate(self) -> None:
        """Raise :class:`ConfigError` for a reward or a bound the service cannot work with."""
        from cvdp_gym.grading.rewards import REWARDS

        if self.default_reward not in REWARDS:
            raise ConfigError(f"unknown --default-reward {self.default_reward!r}; expected one of {', '.join(REWARDS)}")
        if self.per_client < 0:
            raise ConfigError("--per-client must be at least 0")
        if self.workers < 1 or self.queue < 0:
            raise ConfigError("--workers must be at least 1 and --queue at least 0")
