"""The public API, pinned: every package's ``__all__``, the registered environment ids, the
documented ``info`` keys of each environment, and a lazy ``import cvdp_gym``.

A change here is an API change: make it on purpose, with a Version History line in the
environment's docstring where ``info`` changes (model: tinker-cookbook's
``tests/downstream_compat/test_package_exports.py``).
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import gymnasium as gym
import pytest

import cvdp_gym
import rtl_trainer

#: ``__all__`` of each package (and of the modules that are a package's public face).
PINNED_ALL = {
    "cvdp_gym": [
        "AgenticEnv", "AssertionEnv", "CvdpGymError", "Dataset", "ENV_IDS", "GradeResult", "Grader", "Problem",
        "RefineEnv", "SingleShotEnv", "TestbenchEnv", "__version__", "extract_files", "load_dataset", "make_reward",
        "parse_tool_calls", "run_harness",
    ],
    "cvdp_gym.cli": ["app"],
    "cvdp_gym.cli.eval": ["eval_command"],
    "cvdp_gym.data": ["Dataset", "DatasetError", "Problem", "bundled_candidates", "load_dataset"],
    "cvdp_gym.agents": [
        "AgentLaunch", "AgentPlayer", "AgentRecipe", "AgentRun", "CommandAgent", "Exchange", "LaunchContext", "ModelProxy",
        "play_agent", "run_agent",
    ],
    "cvdp_gym.errors": [
        "AgentInstallError", "ArgumentTypeError", "ConfigError", "CvdpGymError", "DatasetError", "DebugError", "GradingError", "HarnessError",
        "HubUnavailable", "JsonlError", "MissingDependencyError", "MissingPathError", "NodeToolchainError",
        "OneLineError", "PatchError", "RecordError", "RepoUnavailable", "RequestFailed", "ResponsesFileError",
        "RootBuildError", "RunDirError", "SandboxDied", "SandboxUnavailable", "UnavailableError", "UnknownProblemError",
        "UnsafePathError", "UsageError", "WorkerLost", "WorkspaceError", "one_line",
    ],
    "cvdp_gym.eval": [
        "ChatClient", "ChatSettings", "Evaluator", "ResponsesFileError", "aggregate", "build_report",
        "default_ks", "eval_endpoint", "eval_responses", "pass_at_k", "pass_at_k_official", "print_report",
        "read_responses", "write_report",
    ],
    "cvdp_gym.execution": ["GradeCache", "GradeExecutor", "ProcessExecutor", "ThreadExecutor", "make_executor"],
    "cvdp_gym.grading": [
        "FORMAT_ERROR", "GradeResult", "Grader", "GraderSettings", "INTERFACE_ERROR", "JudgeSettings", "LLMJudge",
        "REWARDS", "Stage", "make_reward",
    ],
    "cvdp_gym.harness": [
        "CandidateError", "FAILURE_CLASSES", "HarnessResult", "HarnessRunner", "RunOptions",
        "ServiceResult", "TestCounts", "run_harness",
    ],
    "cvdp_gym.jsonl": [
        "JsonlError", "OneLineError", "decode_line", "iter_json", "one_line", "parse_json", "read_objects",
    ],
    "cvdp_gym.parity": [
        "AGREE", "Answer", "DISAGREE", "LEFT_OUT", "ParityRow", "agreement", "answers_from_file", "bundled_answers",
        "official_datasets", "run_parity", "summary_json",
    ],
    "cvdp_gym.parsers": [
        "BASH_TOOL_NAME", "ComprehensionAnswer", "Extraction", "FINISH_NAMES", "FORMATS", "HarmonyMessage", "ParsedTurn",
        "ToolCall", "extract_files", "final_text", "format_tool_call", "format_tool_response",
        "is_harmony", "parse_assistant_message", "parse_comprehension_answer", "parse_harmony", "parse_tool_calls", "render_message",
        "render_tool_call", "render_tool_result",
    ],
    "cvdp_gym.parsers.toolcalls": [
        "BASH_LANGS", "BASH_TOOL_NAME", "FINISH_NAMES", "FORMATS", "ParsedTurn", "ToolCall",
        "format_tool_call", "format_tool_response", "parse_assistant_message", "parse_tool_calls",
    ],
    "cvdp_gym.report": ["SECTIONS", "write_html_report"],
    "cvdp_gym.sandbox": [
        "BubblewrapSandbox", "Limits", "Mount", "SANDBOXES", "Sandbox", "SandboxResult",
        "SandboxUnavailable", "make_sandbox",
    ],
    "cvdp_gym.toolchain": [
        "CVDP_SIM", "GENERATIONS", "ICARUS12", "KINDS", "RootBuildError", "SIMULATORS", "SimEnv", "Tool", "Toolchain",
        "default_kind", "detect", "doctor_rows", "install", "root_dir", "toolchain_dir",
    ],
    "rtl_trainer.backends": ["STATE_FILE", "is_saved_state", "load_tokenizer", "make_service"],
    "rtl_trainer.backends.local": [
        "DEFAULT_TARGET_MODULES", "LOSS_FN_INPUTS", "LocalSamplingClient", "LocalServiceClient",
        "LocalTrainingClient", "OPTIMIZER_FILE",
    ],
    "rtl_trainer.demo": [
        "DemoSettings", "base_config", "build_models", "eval_stage", "run_curriculum_demo", "run_demo", "run_seeds",
        "run_two_teachers_demo", "sft_stage", "train_stage",
    ],
    "rtl_trainer.errors": [
        "BackendUnavailableError", "CheckpointError", "CheckpointExistsError", "CheckpointNotFoundError",
        "ConfigError", "InfrastructureError", "InvalidCheckpointError", "ModelError", "OutputExistsError",
        "RenderingError", "RequestError", "RtlTrainerError", "TrackingError", "UnsupportedRequestError",
        "UnsupportedTokenizerError",
    ],
    "rtl_trainer.export": [
        "DTYPES", "EXPORT_FILE", "FORMATS", "RunCheckpoint", "export_local", "export_run", "export_tinker",
        "find_checkpoint",
    ],
    "rtl_trainer.losses": [
        "ActionSegment", "AlignedLogprobs", "AlignmentPlan", "LOSS_FN_INPUTS", "ObservationSegment",
        "Segment", "TeacherAligner", "Turn", "broadcast_advantage", "check_data", "check_datum",
        "constant_group", "decode_with_offsets", "encode_with_offsets", "group_advantages", "kl_penalty",
        "map_logprobs_by_spans", "multi_turn_datum", "pack_turns", "rollout_datum", "same_vocab",
        "sft_datum", "split_turns", "teacher_completion_logprobs", "with_added_advantages",
    ],
    "rtl_trainer.rendering": [
        "FAMILIES", "GenericRenderer", "GptOssRenderer", "OFFLINE_TOKENIZERS", "Qwen3CoderRenderer",
        "Qwen3InstructRenderer", "Qwen3Renderer", "Renderer", "cache_dir", "extends", "get_renderer",
        "offline_tokenizer", "renderer_family",
    ],
    "rtl_trainer.tracking": ["JsonlLogger", "Logger", "SAMPLE_COLUMNS", "TRACKING_FILE", "Tracking"],
    "rtl_trainer.rollouts": [
        "EnvPool", "GRADING_FAILED", "Group", "LATE", "Rollout", "RolloutTiming", "Turn", "collect_multi_turn",
        "collect_single_turn", "run_episode",
    ],
}

#: The ``info`` keys each environment documents, by moment (see each class's Info table;
#: tests/test_env_docs.py checks those tables against real episodes).
PINNED_INFO = {
    "CVDP-SingleShot-v0": {
        "reset": ["messages", "problem"],
        "step": [
            "credit", "excluded", "extraction", "failure_class", "infra_failure", "late", "log_tail", "official", "passed",
            "problem", "quality", "reason", "reference_check", "reward", "scores", "scoring", "stages", "tests",
        ],
        "last step": [],
    },
    "CVDP-Refine-v0": {
        "reset": ["messages", "problem"],
        "step": [
            "attempt", "attempt_reward", "attempts", "excluded", "extraction", "failure_class", "feedback",
            "infra_failure", "late", "log_tail", "official", "passed", "problem", "quality", "reason", "reference_check",
            "reward", "stages", "tests", "tool_messages",
        ],
        "last step": ["best_attempt", "end_reason"],
    },
    "CVDP-Agentic-v0": {
        "reset": ["messages", "problem", "tool_format", "tools"],
        "step": [
            "assistant_message", "commands_run", "cwd", "format", "malformed_calls", "problem", "shaping",
            "tool_messages", "turn",
        ],
        "last step": [
            "dropped", "end_reason", "excluded", "extraction", "failure_class", "graded_files", "infra_failure", "late",
            "log_tail", "official", "passed", "patch", "quality", "reason", "reference_check", "reward", "stages", "tests",
        ],
    },
}


def all_modules() -> list[str]:
    names = []
    for package in (cvdp_gym, rtl_trainer):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if ".bundled" not in info.name and not info.name.endswith("__main__"):
                names.append(info.name)
    return names


@pytest.mark.parametrize("module", sorted(PINNED_ALL))
def test_all_is_pinned(module):
    assert sorted(importlib.import_module(module).__all__) == sorted(PINNED_ALL[module])


def test_every_all_resolves():
    """Every name any module lists in ``__all__`` exists (lazy names included)."""
    missing = []
    for name in all_modules():
        module = importlib.import_module(name)
        missing += [f"{name}.{attr}" for attr in getattr(module, "__all__", ()) if not hasattr(module, attr)]
    assert not missing


def test_environment_ids_are_registered():
    assert cvdp_gym.ENV_IDS == (
        "CVDP-SingleShot-v0", "CVDP-Agentic-v0", "CVDP-Refine-v0", "RTL-SingleShot-v0", "RTL-Agentic-v0", "RTL-Refine-v0",
        "RTL-Testbench-v0", "RTL-Assertion-v0",
    )
    assert gym.spec("RTL-Testbench-v0").entry_point == "cvdp_gym.envs.testbench:TestbenchEnv"
    assert gym.spec("RTL-Assertion-v0").entry_point == "cvdp_gym.envs.assertion:AssertionEnv"
    for name in ("SingleShot", "Agentic", "Refine"):  # the neutral names are the same classes
        assert gym.spec(f"RTL-{name}-v0").entry_point == gym.spec(f"CVDP-{name}-v0").entry_point
    for env_id in cvdp_gym.ENV_IDS:
        spec = gym.spec(env_id)
        assert spec.entry_point.startswith("cvdp_gym.envs.")
        assert getattr(cvdp_gym, spec.entry_point.rpartition(":")[2]).__module__ == spec.entry_point.partition(":")[0]


@pytest.mark.parametrize("env_id", sorted(PINNED_INFO))
def test_documented_info_keys_are_pinned(env_id):
    from tests.cvdp_gym.envs.test_env_docs import ENVS, info_keys

    for moment, keys in PINNED_INFO[env_id].items():
        assert sorted(info_keys(ENVS[env_id], moment)) == keys, moment


def test_import_is_lazy_and_leaks_nothing():
    """``import cvdp_gym`` registers the environments and loads none of the subpackages;
    a curated name loads on first use."""
    code = (
        "import sys, cvdp_gym; "
        "loaded = sorted(m for m in sys.modules if m.startswith('cvdp_gym.')); "
        "assert loaded == ['cvdp_gym.errors'] or loaded == [], loaded; "
        "assert not hasattr(cvdp_gym, 'register') and not hasattr(cvdp_gym, 'registry'); "
        "cvdp_gym.Grader; assert 'cvdp_gym.grading.grader' in sys.modules; "
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    with pytest.raises(AttributeError):
        cvdp_gym.no_such_name  # noqa: B018
