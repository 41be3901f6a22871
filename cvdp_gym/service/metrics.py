"""The service's Prometheus counters, kept by hand (text exposition format 0.0.4)."""

from __future__ import annotations

import threading
from collections import Counter

#: Upper bounds of the grading-seconds histogram (seconds; +Inf is implied).
BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class Metrics:
    """Counters of requests and grades; thread-safe; ``render()`` is the /metrics text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[tuple[str, str, int]] = Counter()
        self.verdicts: Counter[str] = Counter()
        self.cache_hits = 0
        self.cache_misses = 0
        self.rejected = 0
        self.queue_depth = 0  # admitted, waiting for a grading slot
        self.running = 0
        self._buckets = [0] * len(BUCKETS)
        self._seconds_sum = 0.0
        self._seconds_count = 0

    def request(self, method: str, route: str, status: int) -> None:
        with self._lock:
            self.requests[(method, route, status)] += 1

    def graded(self, seconds: float, verdict: str, cached: bool) -> None:
        with self._lock:
            self.verdicts[verdict] += 1
            if cached:
                self.cache_hits += 1
            else:
                self.cache_misses += 1
            self._seconds_sum += seconds
            self._seconds_count += 1
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    self._buckets[i] += 1

    def render(self) -> str:
        with self._lock:
            lines = [
                "# HELP cvdp_gym_requests_total HTTP requests by method, route and status.",
                "# TYPE cvdp_gym_requests_total counter",
            ]
            for (method, route, status), n in sorted(self.requests.items()):
                lines.append(f'cvdp_gym_requests_total{{method="{method}",route="{_escape(route)}",status="{status}"}} {n}')
            lines += ["# HELP cvdp_gym_grades_total Answers graded, by verdict.", "# TYPE cvdp_gym_grades_total counter"]
            for verdict, n in sorted(self.verdicts.items()):
                lines.append(f'cvdp_gym_grades_total{{verdict="{_escape(verdict)}"}} {n}')
            lines += [
                "# HELP cvdp_gym_grade_seconds Time to grade one answer (queue wait included).",
                "# TYPE cvdp_gym_grade_seconds histogram",
            ]
            for bound, n in zip(BUCKETS, self._buckets, strict=True):
                lines.append(f'cvdp_gym_grade_seconds_bucket{{le="{bound}"}} {n}')
            lines += [
                f'cvdp_gym_grade_seconds_bucket{{le="+Inf"}} {self._seconds_count}',
                f"cvdp_gym_grade_seconds_sum {self._seconds_sum:.6f}",
                f"cvdp_gym_grade_seconds_count {self._seconds_count}",
                "# HELP cvdp_gym_cache_hits_total Answers answered from the result cache.",
                "# TYPE cvdp_gym_cache_hits_total counter",
                f"cvdp_gym_cache_hits_total {self.cache_hits}",
                "# HELP cvdp_gym_cache_misses_total Answers graded afresh.",
                "# TYPE cvdp_gym_cache_misses_total counter",
                f"cvdp_gym_cache_misses_total {self.cache_misses}",
                "# HELP cvdp_gym_rejected_total Grading requests refused with 429 (queue full).",
                "# TYPE cvdp_gym_rejected_total counter",
                f"cvdp_gym_rejected_total {self.rejected}",
                "# HELP cvdp_gym_queue_depth Grading jobs admitted and waiting for a slot.",
                "# TYPE cvdp_gym_queue_depth gauge",
                f"cvdp_gym_queue_depth {self.queue_depth}",
                "# HELP cvdp_gym_grading_in_progress Grading jobs running now.",
                "# TYPE cvdp_gym_grading_in_progress gauge",
                f"cvdp_gym_grading_in_progress {self.running}",
            ]
        return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
