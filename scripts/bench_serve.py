"""Load-test ``cvdp-gym serve`` on loopback: latency percentiles, throughput, status counts.

Starts one real server (uvicorn, 127.0.0.1, a free port) per configuration, in this
process, on the bundled problems and the real toolchain, with a fresh grade cache; then
``--requests`` POST /v1/grade from ``--clients`` concurrent asyncio clients. A fraction
``--uncached`` of the answers is unique (a comment added: a real simulation each); the rest
repeat a handful of answers (cache hits after their first grade). A 429 is counted, not
retried. Every 2xx verdict is checked against the verdict the answer must get (``wrong``
counts those that differ), and after the burst one more unique answer must be graded
(``after``: ``ok``, the queue recovered). Prints one table row per configuration.

  python scripts/bench_serve.py                           # 2,000 requests, 64 clients
  python scripts/bench_serve.py --requests 500 --clients 32 --uncached 0.02
"""

from __future__ import annotations

import argparse
import asyncio
import random
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cvdp_gym.data import bundled_candidates, load_dataset
from cvdp_gym.execution.cache import GradeCache
from cvdp_gym.grading import Grader
from cvdp_gym.service.app import ServiceConfig, create_app

#: (label, workers, queue) of the configurations compared.
CONFIGS = [("workers=2 queue=64", 2, 64), ("workers=2 queue=8", 2, 8), ("workers=1 queue=1024", 1, 1024)]
PROBLEMS = ["cvdp_gym_edge_detector_0001", "cvdp_gym_gray_converter_0001", "cvdp_gym_priority_encoder_0001"]


def start(config: ServiceConfig) -> tuple[uvicorn.Server, threading.Thread, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(config), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{port}"


def bodies(n: int, uncached: float, rng: random.Random) -> list[tuple[dict, str]]:
    """``n`` requests, each with the verdict it must get (the reference passes; each
    candidate gets its recorded failure class)."""
    data = load_dataset("bundled")
    pool = []
    for pid in PROBLEMS:
        pool.append((pid, data[pid].reference, "passed"))
        pool += [(c.problem_id, c.files, c.expected_class) for c in bundled_candidates() if c.problem_id == pid][:2]
    out = []
    for i in range(n):
        pid, files, expected = rng.choice(pool)
        if rng.random() < uncached:
            files = {p: t + f"\n// bench {i} {time.time_ns()}\n" for p, t in files.items()}
        out.append(({"problem_id": pid, "files": files}, expected))
    return out


async def load(url: str, items: list[tuple[dict, str]], clients: int) -> tuple[list[float], dict[str, int], float]:
    latencies: list[float] = []
    counts = {"2xx": 0, "429": 0, "5xx": 0, "other": 0, "wrong": 0}
    queue: asyncio.Queue = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(http: httpx.AsyncClient) -> None:
        while not queue.empty():
            body, expected = queue.get_nowait()
            t0 = time.perf_counter()
            reply = await http.post("/v1/grade", json=body)
            latencies.append(time.perf_counter() - t0)
            code = reply.status_code
            counts["2xx" if 200 <= code < 300 else "429" if code == 429 else "5xx" if code >= 500 else "other"] += 1
            if 200 <= code < 300 and reply.json()["verdict"] != expected:
                counts["wrong"] += 1

    start = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as http:
        await asyncio.gather(*(client(http) for _ in range(clients)))
    return latencies, counts, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--uncached", type=float, default=0.02, help="fraction of unique answers (each simulated)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"{args.requests} requests, {args.clients} clients, {args.uncached:.0%} unique answers, loopback")
    print(f"{'configuration':<22} {'p50 ms':>8} {'p99 ms':>9} {'req/s':>7} {'2xx':>5} {'429':>5} {'5xx':>4} {'other':>5} "
          f"{'wrong':>5} {'after':>5} {'wall s':>7}")
    for label, workers, queue in CONFIGS:
        items = bodies(args.requests, args.uncached, random.Random(args.seed))
        with tempfile.TemporaryDirectory() as tmp:
            grader = Grader(cache=GradeCache(Path(tmp) / "grades.sqlite"))
            server, thread, url = start(ServiceConfig(grader, load_dataset("bundled"), workers=workers, queue=queue))
            try:
                latencies, counts, wall = asyncio.run(load(url, items, args.clients))
                # After the burst (429s included), a new answer is graded again: the queue recovered.
                body, expected = bodies(1, 1.0, random.Random(args.seed + 1))[0]
                after = httpx.post(f"{url}/v1/grade", json=body, timeout=600)
                recovered = "ok" if after.status_code == 200 and after.json()["verdict"] == expected else str(after.status_code)
            finally:
                server.should_exit = True
                thread.join(timeout=60)
        q = statistics.quantiles(latencies, n=100)
        print(f"{label:<22} {q[49] * 1000:>8.1f} {q[98] * 1000:>9.1f} {len(latencies) / wall:>7.1f} "
              f"{counts['2xx']:>5} {counts['429']:>5} {counts['5xx']:>4} {counts['other']:>5} {counts['wrong']:>5} {recovered:>5} {wall:>7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
