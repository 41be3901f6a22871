"""Chat messages for CVDP problems, presented the way the official benchmark presents them.

Single-shot: the official tool's system prompt (folder layout, category guidance, and the
JSON schema when several files are expected) and a user message that quotes every context
file and then the request. A comprehension problem (cid006/cid008/cid009/cid010) is asked
for the official JSON answer, ``{"response": "<your answer here>"}``, with both official
schemas in the system prompt, as the official tool asks. Agentic: the problem's own system message (or a default that
describes the bash tool) and the prompt.
"""

from __future__ import annotations

import json

from cvdp_gym.data.benchmarks.catalog import BENCHMARKS
from cvdp_gym.data.problems import CVDP, SCORING_HARNESS, Problem
from cvdp_gym.tasks.posing import is_task_problem

FOLDERS = """You are a helpful assistance.
Consider that you have a folder structure like the following:

    - rtl/*   : Contains files which are RTL code.
    - verif/* : Contains files which are used to verify the correctness of the RTL code.
    - docs/*  : Contains files used to document the project, like Block Guides, RTL Plans and Verification Plans.

When generating files, return the file name in the correct place at the folder structure.
"""

CATEGORY_GUIDANCE = {
    "cid002": "You are solving an 'RTL Code Completion' problem. To solve this problem correctly, you should only respond with the RTL code generated according to the requirements.",
    "cid003": "You are solving a 'Specification to RTL Translation' problem. To solve this problem correctly, you should only respond with the RTL code translated from the specification.",
    "cid004": "You are solving an 'RTL Code Modification' problem. To solve this problem correctly, you should only respond with the modified RTL code according to the requirements.",
    "cid005": "You are solving a 'Specification to RTL Translation: Module Instantiation and Component Reuse' problem. To solve this problem correctly, you should only respond with the RTL code translated from the specification and with proper module instantiation and component reuse.",
    "cid006": "You are solving an 'RTL Correspondence' problem. To solve this problem correctly, you should only respond with a verbatim quote from the specification (if the context is RTL) that corresponds to the RTL code snippet or verbatim RTL source code (if the context is specification) that corresponds to the specification snippet.",
    "cid007": "You are solving an 'RTL Lint Improvement or Power-Performance Optimization' problem. To solve this problem correctly, you should only respond with improved RTL code to address lint issues or optimize for power/performance.",
    "cid008": "You are solving a 'Testbench Correspondence' problem. To solve this problem correctly, you should only respond with the verbatim testbench code that corresponds to the test plan snippet (if the context is testbench code) or verbatim test plan that corresponds to the testbench code snippet (if the context is testbench code).",
    "cid009": "You are solving a 'Question & Answer on RTL' problem. To solve this problem correctly, you should only respond with a detailed answer to the question about RTL.",
    "cid010": "You are solving a 'Question & Answer on Testbench' problem. To solve this problem correctly, you should only respond with a detailed answer to the question about the testbench.",
    "cid016": "You are solving an 'RTL Debugging and Bug Fixing' problem. To solve this problem correctly, you should only respond with the RTL code that is debugged and fixed to address the bug.",
}

MULTI_FILE_SCHEMA = '{ "code": [{ "<name>" : "<code>"}] }'
RESPONSE_SCHEMA = '{ "response": "<response>" }'
JSON_NOTE = (
    "\nThe response should be in JSON format, including double-quotes around keys and "
    "values, and proper escaping of quotes within values, and escaping of newlines."
)
#: The last line of a comprehension problem's user message.
RESPONSE_REQUEST = 'Provide your response using the format: { "response": "<your answer here>" }\n'

DEFAULT_AGENTIC_SYSTEM = """You are an expert hardware design engineer working in a Linux workspace that holds a hardware project:
- rtl/   : RTL code
- verif/ : testbenches
- docs/  : specifications and plans

Use the `execute_bash` tool to run shell commands in the workspace: list and read files (ls, cat, grep), write or edit files (cat with a heredoc, sed), compile and simulate (iverilog -g2012 -o sim.out <files>; vvp sim.out). Work step by step: read the documentation and the existing code, make the change, compile and test it, and fix what fails.

When the work is done, reply without a tool call and summarise what you changed; the files in the workspace are then evaluated. You may instead end with a unified diff (a Linux patch) of your changes."""


def single_shot_system_prompt(problem: Problem) -> str:
    prompt = FOLDERS
    guidance = CATEGORY_GUIDANCE.get(problem.category)
    if guidance:
        prompt += f"\n{guidance}\n"
    if problem.scoring != SCORING_HARNESS:
        prompt += "\nProvide the response in one of the following JSON schemas: \n"
        prompt += f"{MULTI_FILE_SCHEMA}\nor\n{RESPONSE_SCHEMA}" + JSON_NOTE
    elif len(problem.targets) > 1:
        prompt += f"\nProvide the response in the following JSON schema: {MULTI_FILE_SCHEMA}" + JSON_NOTE
    return prompt


def single_shot_user_prompt(problem: Problem) -> str:
    text = ""
    for path, content in problem.context.items():
        text += f"\nConsider the following content for the file {path}:\n```\n{content}\n```"
    text += f"\nProvide me one answer for this request: {problem.prompt}\n"
    if len(problem.targets) == 1:
        text += (
            "Please provide your response as plain text without any JSON formatting. "
            f"Your response will be saved directly to: {problem.targets[0]}.\n"
        )
    elif problem.targets:
        text += f"Name the files as: {list(problem.targets)}.\n"
    elif problem.scoring != SCORING_HARNESS:
        text += RESPONSE_REQUEST
    return text


def single_shot_messages(problem: Problem) -> list[dict[str, str]]:
    """System and user messages for a single-shot answer to ``problem`` (another benchmark's
    problem: its own messages, as its scripts build them, :mod:`cvdp_gym.data.benchmarks`)."""
    if problem.benchmark != CVDP or is_task_problem(problem):
        system = [{"role": "system", "content": problem.system_message}] if problem.system_message else []
        return [*system, {"role": "user", "content": problem.prompt}]
    return [
        {"role": "system", "content": single_shot_system_prompt(problem)},
        {"role": "user", "content": single_shot_user_prompt(problem)},
    ]


def agentic_messages(problem: Problem, system_message: str | None = None) -> list[dict[str, str]]:
    """System and user messages opening an agentic episode on ``problem``."""
    system = system_message or problem.system_message or DEFAULT_AGENTIC_SYSTEM
    return [{"role": "system", "content": system}, {"role": "user", "content": problem.prompt}]


def agent_task(problem: Problem, system_message: str | None = None) -> str:
    """The task as one text for a command-line agent, which brings its own system prompt:
    the episode's system message (the workspace and its rules), then the problem's prompt."""
    return "\n\n".join(m["content"] for m in agentic_messages(problem, system_message) if m["content"])


def comprehension_answer_text(answer: str) -> str:
    """A comprehension answer written as the prompt asks for it: ``{"response": answer}``."""
    return json.dumps({"response": answer})


def answer_text(problem: Problem, files: dict[str, str]) -> str:
    """Files written as the single-shot prompt asks for them: as the problem's benchmark asks
    (``Benchmark.answer_text``: VerilogEval v2 spec-to-RTL answers between ``[BEGIN]`` and
    ``[DONE]``, v1 completions as they are), else one fenced block for a single target, the
    official JSON shape (``{"code": [{path: text}, ...]}``) for several."""
    bench = BENCHMARKS.get(problem.benchmark)
    shaped = bench.answer_text(problem, files) if bench is not None else None
    if shaped is not None:
        return shaped
    if len(problem.targets) == 1:
        return "```systemverilog\n" + files[problem.targets[0]].rstrip("\n") + "\n```"
    return json.dumps({"code": [{path: files[path]} for path in problem.targets]})
