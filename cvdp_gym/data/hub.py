"""Download files of a Hugging Face dataset: CVDP's JSONL files (``nvidia/cvdp-benchmark-dataset``,
named by CVDP's plug-in, :mod:`cvdp_gym.benchmarks.cvdp.data`) and, with ``suffixes``, a training
set's files.

Files are cached by ``huggingface_hub`` (``cache_dir`` or ``HF_HOME``), so a file is
fetched once. A token comes from the argument, ``HF_TOKEN`` or the user's saved login.
Offline (no network, or ``HF_HUB_OFFLINE=1`` with nothing cached) it fails with a
``HubUnavailable`` that says what to do instead.
"""

from __future__ import annotations

from pathlib import Path

from cvdp_gym.errors import HubUnavailable


def _advice(what: str, repo_id: str) -> str:
    return (
        f"{what}. Download the dataset once on a machine with access "
        f"(e.g. `huggingface-cli download {repo_id} --repo-type dataset`) "
        "and pass its path as the dataset instead."
    )


def download(
    pattern: str,
    *,
    repo_id: str,
    revision: str | None = None,
    token: str | None = None,
    cache_dir: str | Path | None = None,
    suffixes: tuple[str, ...] = (".jsonl",),
) -> list[Path]:
    """Fetch the dataset's files ending in one of ``suffixes`` (JSONL by default) whose name
    contains ``pattern`` (or equals it: then the file list is not asked for, so a file already
    in the cache is found offline).

    Returns local paths in the hub cache.
    """
    try:
        from huggingface_hub import hf_hub_download, list_repo_files
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise HubUnavailable(
            _advice("huggingface_hub is not installed (pip install 'cvdp-gym[hub]')", repo_id)
        ) from exc

    try:
        if pattern.endswith(suffixes):
            names = [pattern]
        else:
            names = [
                name
                for name in list_repo_files(
                    repo_id, repo_type="dataset", revision=revision, token=token
                )
                if name.endswith(suffixes) and pattern in name
            ]
        if not names:
            raise HubUnavailable(f"no {' or '.join(suffixes)} file in {repo_id} matches {pattern!r}")
        return [
            Path(
                hf_hub_download(
                    repo_id,
                    name,
                    repo_type="dataset",
                    revision=revision,
                    token=token,
                    cache_dir=cache_dir,
                )
            )
            for name in names
        ]
    except HubUnavailable:
        raise
    except Exception as exc:  # httpx/requests connection errors, HTTP errors, offline mode
        raise HubUnavailable(
            _advice(f"cannot reach the Hugging Face hub for {repo_id} ({type(exc).__name__}: {exc})", repo_id)
        ) from exc
