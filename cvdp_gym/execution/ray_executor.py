"""Grading jobs as Ray tasks, spread over the CPUs of a Ray cluster.

Each job is one task asking for ``cpus_per_job`` CPUs (a harness run is single-threaded
simulation plus its compile), so Ray's scheduler packs them onto nodes by free CPUs. A task
whose worker or node dies is retried elsewhere by Ray (``max_retries``); its result is the
same whichever node ran it, and the caller receives exactly one result per job. Cancelling
first interrupts the task (``KeyboardInterrupt``: the sandbox's own cleanup kills it), then
kills its worker after ``CANCEL_GRACE_S`` (the sandbox dies with it).

Ray runs its workers at niceness 15 by default (``RAY_worker_niceness``), so on a machine
with any other load a grading task, its sandbox and its simulator get the CPU last, behind
every process at the default niceness (a ``processes`` worker among them). A local
instance this executor starts, and ``ray_local``'s clusters, run them at 0
(``WORKER_NICENESS``) unless the variable is set; a cluster started with ``ray start``
takes it from that command's environment.

Every node needs the project and its toolchain (``cvdp-gym toolchain install`` on each node,
or ``CVDP_GYM_TOOLCHAIN`` pointing at a shared copy). ``check_nodes`` runs a probe on every
node and names each one that cannot grade, with the command that fixes it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError, Future
from typing import Any

from cvdp_gym.errors import MissingDependencyError, NodeToolchainError, WorkerLost
from cvdp_gym.execution.executors import CANCEL_GRACE_S
from cvdp_gym.execution.jobs import RunnerSpec, probe_job

#: Ray's setting for its workers' niceness (Ray's default: 15), and the value ours run at.
NICENESS_ENV = "RAY_worker_niceness"
WORKER_NICENESS = "0"


@contextlib.contextmanager
def _worker_niceness() -> Iterator[None]:
    """``NICENESS_ENV`` set while ``ray.init`` may start a local instance (its raylet reads it
    from the environment it inherits), unless the caller set it; the environment is restored."""
    if NICENESS_ENV in os.environ:
        yield
        return
    os.environ[NICENESS_ENV] = WORKER_NICENESS
    try:
        yield
    finally:
        os.environ.pop(NICENESS_ENV, None)


def _run_job(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    return fn(*args)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise MissingDependencyError("the ray executor needs Ray: pip install 'cvdp-gym[ray]'") from exc
    return ray


class RayExecutor:
    """Jobs as Ray tasks. ``address``: None (``RAY_ADDRESS``, or a local instance), ``auto``
    or ``HOST:PORT``. Connects once per process; ``close`` disconnects only if it connected."""

    name = "ray"

    def __init__(self, address: str | None = None, *, cpus_per_job: float = 1.0, max_retries: int = 3) -> None:
        ray = _import_ray()
        self._ray = ray
        self._owns_connection = not ray.is_initialized()
        if self._owns_connection:
            with _worker_niceness():
                ray.init(address=address, log_to_driver=False, configure_logging=False, include_dashboard=False)
        self.cpus_per_job = cpus_per_job
        self._task = ray.remote(num_cpus=cpus_per_job, max_retries=max_retries, retry_exceptions=False)(_run_job)
        self._refs: dict[Future[Any], Any] = {}
        self._lock = threading.Lock()
        self._checked: set[RunnerSpec] = set()
        self._check_lock = threading.Lock()

    @property
    def capacity(self) -> int:
        """Jobs the cluster runs at once (its CPUs now, divided by the CPUs a job asks for)."""
        cpus = self._ray.cluster_resources().get("CPU", 1.0)
        return max(1, int(cpus // self.cpus_per_job))

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        ref = self._task.remote(fn, args)
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()
        with self._lock:
            self._refs[future] = ref
        ref.future().add_done_callback(lambda done: self._settle(future, done))
        return future

    def _settle(self, future: Future[Any], done: Future[Any]) -> None:
        """Translate Ray's outcome: the job's own exception, a cancel, or a lost worker."""
        ray = self._ray
        with self._lock:
            self._refs.pop(future, None)
        if future.done():
            return
        try:
            future.set_result(done.result())
        except ray.exceptions.TaskCancelledError:
            future.set_exception(CancelledError())
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if isinstance(exc.cause, BaseException) else exc
            future.set_exception(cause)
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError, ray.exceptions.ObjectLostError) as exc:
            future.set_exception(WorkerLost(f"Ray lost the job after its retries: {exc}"))
        except BaseException as exc:
            future.set_exception(exc)

    def cancel(self, future: Future[Any]) -> None:
        with self._lock:
            ref = self._refs.get(future)
        if ref is None:
            return
        ray = self._ray
        try:
            ray.cancel(ref, force=False, recursive=True)
        except Exception:
            return

        def force() -> None:
            if not future.done():
                try:
                    ray.cancel(ref, force=True)
                except Exception:
                    return

        timer = threading.Timer(CANCEL_GRACE_S, force)
        timer.daemon = True
        timer.start()

    def check_nodes(self, spec: RunnerSpec) -> list[dict[str, str]]:
        """Probe every live node with CPUs; raise ``NodeToolchainError`` naming each node that
        cannot grade with ``spec`` (and why). Runs once per spec."""
        with self._check_lock:
            if spec in self._checked:
                return []
            found = self._probe(spec)
            self._checked.add(spec)
            return found

    def _probe(self, spec: RunnerSpec) -> list[dict[str, str]]:
        ray = self._ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        probe = ray.remote(num_cpus=0, max_retries=0)(_run_job)
        nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]
        refs = {
            n["NodeID"]: probe.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
            ).remote(probe_job, (spec,))
            for n in nodes
        }
        found, problems = [], []
        for node_id, ref in refs.items():
            try:
                found.append({"node": node_id, **ray.get(ref, timeout=300)})
            except ray.exceptions.RayTaskError as exc:
                cause = exc.cause if isinstance(exc.cause, BaseException) else exc
                problems.append(f"node {node_id[:12]}: {cause}")
            except Exception as exc:
                problems.append(f"node {node_id[:12]}: {type(exc).__name__}: {exc}")
        if problems:
            raise NodeToolchainError(
                f"{len(problems)} of {len(nodes)} Ray node(s) cannot grade:\n  " + "\n  ".join(problems)
            )
        return found

    def close(self) -> None:
        with self._lock:
            futures = list(self._refs)
        for future in futures:
            self.cancel(future)
        if self._owns_connection and self._ray.is_initialized():
            self._ray.shutdown()
