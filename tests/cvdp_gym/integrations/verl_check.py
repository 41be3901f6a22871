"""Run in the veRL venv (``scripts/verl_env.py``) by ``test_verl.py``: veRL 0.9.1's own code
drives cvdp-gym on bundled problems, and the outcomes are printed as one JSON line.

    python verl_check.py WORKDIR ANSWERS.json

``ANSWERS.json``: ``{"single": {"problem": id, "answers": {name: text}}, "agentic":
{"problem": id, "turns": {name: [assistant texts]}}}``. What runs, all veRL's:

- the rows ``write_dataset`` wrote, read by ``RLHFDataset`` and batched by its ``collate_fn``
  into a ``DataProto``, the answers tokenized as a rollout's ``responses``;
- ``RewardLoopWorker`` (what veRL's reward workers run on Ray) from a full trainer config
  (``_generated_ppo_trainer.yaml``) naming ``pkg://cvdp_gym.integrations.verl`` /
  ``compute_score``: ``load_reward_manager`` -> ``get_custom_reward_fn`` ->
  ``NaiveRewardManager.run_single`` -> our function;
- ``AgentLoopWorker`` (rollout worker) with the agent loop file ``write_agent_loop_config``
  wrote: ``generate_sequences`` on the agentic rows instantiates ``CVDPAgentLoop`` as veRL
  does (hydra, from the registry), and its ``_postprocess`` makes ``rm_scores``. The LLM
  server is scripted (``TokenOutput``, veRL's type): it answers the given turns' tokens. The
  reference turns are played once more with a ``response_length`` their first turn fills.

The tokenizer is a byte-level one built here (every byte a token: decoding gives the text
back exactly) with a ChatML template, the model config a tiny Qwen2's (no weights: nothing
generates).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
import verl
from omegaconf import OmegaConf
from verl import DataProto
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.workers.rollout.replica import TokenOutput

from cvdp_gym.integrations.verl import write_agent_loop_config, write_dataset

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
PROMPT_LENGTH, RESPONSE_LENGTH = 16384, 32768
#: A response length the reference's first turn (about 700 tokens) fills.
SHORT_RESPONSE = 600


def byte_tokenizer(folder: Path) -> Path:
    """A byte-level BPE with no merges (exact round trip), ChatML specials, a tiny Qwen2 config."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config

    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[byte] = chr(byte)
        else:
            chars[byte], extra = chr(256 + extra), extra + 1
    vocab = {char: i for i, char in enumerate(chars.values())}
    model = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    model.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    model.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=model, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"], chat_template=CHATML,
    )
    tokenizer.save_pretrained(folder)
    Qwen2Config(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                num_attention_heads=2, num_key_value_heads=1, architectures=["Qwen2ForCausalLM"]).save_pretrained(folder)
    return folder


def trainer_config(work: Path, model: Path, train: Path, agent_loops: Path) -> Any:
    """veRL's full PPO trainer config with the keys docs/verl.md's recipe sets."""
    config = OmegaConf.load(Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml")
    overrides = {
        "data.train_files": str(train), "data.val_files": str(train),
        "data.max_prompt_length": PROMPT_LENGTH, "data.max_response_length": RESPONSE_LENGTH,
        "data.cache_dir": str(work / "rlhf"), "data.dataloader_num_workers": 0,
        "actor_rollout_ref.model.path": str(model),
        "actor_rollout_ref.rollout.name": "vllm",
        "actor_rollout_ref.rollout.prompt_length": PROMPT_LENGTH,
        "actor_rollout_ref.rollout.response_length": RESPONSE_LENGTH,
        "actor_rollout_ref.rollout.multi_turn.enable": True,
        "actor_rollout_ref.rollout.multi_turn.max_assistant_turns": 4,
        "actor_rollout_ref.rollout.agent.agent_loop_config_path": str(agent_loops),
        "reward.custom_reward_function.path": "pkg://cvdp_gym.integrations.verl",
        "reward.custom_reward_function.name": "compute_score",
        "reward.custom_reward_function.reward_kwargs": {"reward": "shaped", "cache": False},
    }
    for key, value in overrides.items():
        OmegaConf.update(config, key, value, force_add=True)
    return config


def rows(config: Any, tokenizer: Any, path: Path) -> DataProto:
    """The Parquet rows as veRL's trainer batches them (``RLHFDataset`` + ``collate_fn``)."""
    dataset = RLHFDataset(data_files=[str(path)], tokenizer=tokenizer, config=config.data)
    return DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))


def with_responses(batch: DataProto, tokenizer: Any, texts: list[str]) -> DataProto:
    """``batch`` (one row) repeated once per text, each text a rollout's response tokens."""
    chat = tokenizer.apply_chat_template(list(batch.non_tensor_batch["raw_prompt"][0]), add_generation_prompt=True, tokenize=False)
    prompt = tokenizer.encode(chat, add_special_tokens=False)
    responses = [[*tokenizer.encode(t, add_special_tokens=False), tokenizer.eos_token_id] for t in texts]
    width = max(len(r) for r in responses)
    n = len(texts)
    prompts = torch.tensor([prompt] * n)
    padded = torch.tensor([r + [tokenizer.pad_token_id] * (width - len(r)) for r in responses])
    response_mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in responses])
    tensors = {
        "prompts": prompts, "responses": padded, "input_ids": torch.cat([prompts, padded], dim=1),
        "attention_mask": torch.cat([torch.ones_like(prompts), response_mask], dim=1),
    }
    non_tensors = {k: np.array([v[0]] * n, dtype=object) for k, v in batch.non_tensor_batch.items()}
    return DataProto.from_single_dict({**tensors, **non_tensors})


class ScriptedServer:
    """An LLM server that answers the n-th request with the n-th scripted turn (as veRL's
    ``TokenOutput``) and keeps the prompts it was sent."""

    def __init__(self, tokenizer: Any, turns: list[str]) -> None:
        self.tokenizer, self.turns, self.prompts = tokenizer, list(turns), []

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **_: Any) -> TokenOutput:
        self.prompts.append(self.tokenizer.decode(prompt_ids))
        text = self.turns[len(self.prompts) - 1]
        return TokenOutput(token_ids=[*self.tokenizer.encode(text, add_special_tokens=False), self.tokenizer.eos_token_id])


async def main() -> None:
    """Async, as veRL's Ray actors are: its workers keep the event loop they are made on."""
    work, answers = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
    model = byte_tokenizer(work / "model")
    single = write_dataset(work / "train.parquet", "bundled", ids=[answers["single"]["problem"]])
    agentic = write_dataset(work / "agentic.parquet", "bundled", agentic=True, ids=[answers["agentic"]["problem"]])
    config = trainer_config(work, model, single, write_agent_loop_config(work / "agent_loops.yaml", {"tool_format": "qwen", "cache": False}))
    out: dict[str, Any] = {"verl": verl.__version__}

    reward_worker = RewardLoopWorker(config)
    tokenizer = reward_worker.input_tokenizer
    names = list(answers["single"]["answers"])
    batch = with_responses(rows(config, tokenizer, single), tokenizer, [answers["single"]["answers"][n] for n in names])
    results = await reward_worker.compute_score_batch(batch)
    out["single"] = {name: result for name, result in zip(names, results, strict=True)}
    out["reward_manager"] = type(reward_worker.reward_manager).__name__

    prompts = rows(config, tokenizer, agentic)
    out["agentic"] = {}
    short = OmegaConf.merge(config, {"actor_rollout_ref": {"rollout": {"response_length": SHORT_RESPONSE}}})
    plays = [(name, turns, config) for name, turns in answers["agentic"]["turns"].items()]
    plays.append(("short", answers["agentic"]["turns"]["reference"], short))  # no room after turn 1
    for name, turns, played_config in plays:  # one trajectory at a time: one script each
        server = ScriptedServer(tokenizer, turns)
        output = await AgentLoopWorker(played_config, llm_client=server).generate_sequences(prompts)
        keys = output.meta_info["reward_extra_keys"]
        out["agentic"][name] = {
            "reward_score": float(output.batch["rm_scores"][0].sum()),
            "reward_extra_info": {k: _plain(output.non_tensor_batch[k][0]) for k in keys},
            "end_reason": output.non_tensor_batch["end_reason"][0],
            "num_turns": int(output.non_tensor_batch["__num_turns__"][0]),
            "generated": int(output.batch["response_mask"][0].sum()),
            "requests": len(server.prompts),
            "last_prompt_tail": server.prompts[-1][-300:],
        }
    print(json.dumps(out, default=_plain))


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


if __name__ == "__main__":
    asyncio.run(main())
