"""What the way out of the sandbox costs, and how long the shipped agents take per episode.

Two tables:

1. The latency of one chat request to a scripted model on 127.0.0.1, three ways side by
   side: straight from the host, through the proxy's unix socket from the host, and from
   inside a bubblewrap sandbox through the relay and the proxy (as an agent sends it). Each
   way sends ``--requests`` requests one after another (a fresh connection each, as the
   relay sees them); p50 and p95 are printed.
2. Per shipped agent: ``--episodes`` episodes of the bundled CRC-8 problem against the
   scripted model that writes the reference, each timed (the agent's own run and the whole
   episode with grading), with its reward.

  python scripts/bench_agents.py
  python scripts/bench_agents.py --requests 200 --episodes 3 --agents codex
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gymnasium as gym

import cvdp_gym  # noqa: F401  (registers the environments)
from cvdp_gym.agents import CommandAgent, ModelProxy, run_agent
from cvdp_gym.agents.episode import play_agent
from cvdp_gym.agents.registry import AGENTS
from cvdp_gym.agents.scripted import ScriptedModel, writing_steps
from cvdp_gym.data import load_dataset
from cvdp_gym.sandbox.workspace import Workspace

CRC8 = "cvdp_gym_agentic_crc8_0001"
BODY = {"model": "m", "messages": [{"role": "user", "content": "Write the design."}]}

#: Runs inside the sandbox: N requests through the relay, each time printed in ms.
_IN_SANDBOX = r'''python3 - <<'PY'
import json, os, time, urllib.request
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
body = json.dumps(BODY).encode()
times = []
for _ in range(N):
    started = time.perf_counter()
    request = urllib.request.Request(url, data=body, headers={"content-type": "application/json"})
    urllib.request.urlopen(request, timeout=30).read()
    times.append((time.perf_counter() - started) * 1000)
print("TIMES " + json.dumps(times))
PY'''


def percentiles(times_ms: list[float]) -> tuple[float, float]:
    ordered = sorted(times_ms)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def time_requests(client: httpx.Client, url: str, n: int) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        client.post(url, json=BODY, headers={"connection": "close"}).raise_for_status()
        times.append((time.perf_counter() - started) * 1000)
    return times


def latency_table(n: int) -> None:
    rows = []
    with ScriptedModel([]) as model, tempfile.TemporaryDirectory() as folder:
        with httpx.Client(timeout=30) as direct:
            rows.append(("host -> model", time_requests(direct, model.url + "/chat/completions", n)))
        with ModelProxy(model.url, Path(folder) / "model.sock") as proxy, httpx.Client(
            transport=httpx.HTTPTransport(uds=str(proxy.socket_path)), timeout=30
        ) as via_proxy:
            rows.append(("host -> proxy -> model", time_requests(via_proxy, "http://sandbox/v1/chat/completions", n)))
        with Workspace({}) as workspace:
            command = _IN_SANDBOX.replace("BODY", json.dumps(BODY)).replace("N)", f"{n})")
            run = run_agent(workspace, CommandAgent(command), endpoint=model.url, model="m", prompt="", time_limit_s=300)
        times = json.loads(run.output.split("TIMES ", 1)[1].splitlines()[0])
        rows.append(("sandbox -> relay -> proxy -> model", times))
    print(f"\none chat request, {n} in a row, a connection each (ms)")
    print(f"{'way':38} {'p50':>8} {'p95':>8}")
    for label, times in rows:
        p50, p95 = percentiles(times)
        print(f"{label:38} {p50:8.2f} {p95:8.2f}")


def agents_table(names: list[str], episodes: int) -> None:
    problem = load_dataset("bundled")[CRC8]
    print(f"\n{episodes} episode(s) of {CRC8} per agent, the scripted model writing the reference (s)")
    print(f"{'agent':16} {'reward':>7} {'requests':>9} {'agent s (p50)':>14} {'episode s (p50)':>16}")
    for name in names:
        recipe = AGENTS[name]()
        agent_s, episode_s, rewards, requests = [], [], set(), set()
        for _ in range(episodes):
            env = gym.make("CVDP-Agentic-v0", dataset="bundled")
            env.reset(options={"problem_id": CRC8})
            started = time.monotonic()
            with ScriptedModel(writing_steps(problem.reference, recipe.finish_command)) as model:
                _, reward, _, _, info = play_agent(env, recipe, endpoint=model.url, model="scripted", time_limit_s=600)
            episode_s.append(time.monotonic() - started)
            env.close()
            agent_s.append(info["agent"]["wall_s"])
            rewards.add(round(reward, 3))
            requests.add(info["agent"]["requests"])
        shown = ",".join(map(str, sorted(rewards)))
        print(f"{name:16} {shown:>7} {','.join(map(str, sorted(requests))):>9} {statistics.median(agent_s):14.2f} {statistics.median(episode_s):16.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--agents", nargs="*", default=sorted(AGENTS))
    args = parser.parse_args()
    latency_table(args.requests)
    agents_table(args.agents, args.episodes)


if __name__ == "__main__":
    main()
