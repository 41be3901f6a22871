"""NeMo-Gym's entrypoint of the ``cvdp_gym`` resources server: ``cvdp-gym serve`` on the
host and port NeMo-Gym gives this server, with the options of its config.

``ng_run`` starts this file with ``NEMO_GYM_CONFIG_DICT`` (the whole resolved config, YAML)
and ``NEMO_GYM_CONFIG_PATH`` (this server instance's name) in its environment. The
instance's ``host`` and ``port`` are where NeMo-Gym's agents will call ``/verify``; the
``cvdp_gym_*`` keys choose what ``cvdp-gym serve`` grades and how (see configs/).
"""

from __future__ import annotations

import os
import shutil
import sys

import yaml

#: Config keys and the ``cvdp-gym serve`` options they set.
OPTIONS = {
    "cvdp_gym_dataset": "--dataset",
    "cvdp_gym_workers": "--workers",
    "cvdp_gym_queue": "--queue",
    "cvdp_gym_reward": "--default-reward",
    "cvdp_gym_timeout": "--timeout",
    "cvdp_gym_deadline": "--deadline",
    "cvdp_gym_sandbox": "--sandbox",
    "cvdp_gym_executor": "--executor",
    "cvdp_gym_cache": "--cache",
}


def serve_command(global_config: dict, instance: str) -> list[str]:
    """The ``cvdp-gym serve`` command line for server ``instance`` of ``global_config``."""
    try:
        (server,) = global_config[instance]["resources_servers"].values()
    except (KeyError, TypeError, ValueError):
        raise SystemExit(f"{instance!r} is not one resources server in NeMo-Gym's config") from None
    if not server.get("port"):
        raise SystemExit(f"NeMo-Gym gave {instance!r} no port")
    program = shutil.which("cvdp-gym") or "cvdp-gym"
    argv = [program, "serve", "--host", str(server.get("host") or "127.0.0.1"), "--port", str(server["port"])]
    for key, option in OPTIONS.items():
        if server.get(key) not in (None, ""):
            argv += [option, str(server[key])]
    return argv


def main() -> None:
    config = yaml.safe_load(os.environ["NEMO_GYM_CONFIG_DICT"])
    argv = serve_command(config, os.environ["NEMO_GYM_CONFIG_PATH"])
    print("starting:", " ".join(argv), file=sys.stderr, flush=True)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main()
