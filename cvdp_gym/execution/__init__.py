"""Where grading work runs, apart from what decides a verdict (``cvdp_gym.grading``).

This layer runs jobs and keeps results; it never judges one:

- ``executors``: the ``GradeExecutor`` interface, and executors on threads or worker
  processes of this machine (``worker``: the process a ``ProcessExecutor`` feeds);
- ``ray_executor``: jobs as Ray tasks over a cluster (``ray_local``: a loopback cluster for
  tests and benchmarks);
- ``executor_factory``: an executor from a spec string (``threads[:N]``, ``processes[:N]``,
  ``ray[:ADDRESS]``);
- ``jobs``: jobs as plain functions of picklable arguments, and the runner each worker
  builds once from a ``RunnerSpec``;
- ``cache``: the SQLite cache of results, keyed by content hash.

It sits between the harness (what a job runs) and grading (which sends its stages here as
a job, ``grading.grade_job``, and decides what a run means).
"""

from cvdp_gym.execution.cache import GradeCache
from cvdp_gym.execution.executor_factory import make_executor
from cvdp_gym.execution.executors import GradeExecutor, ProcessExecutor, ThreadExecutor

__all__ = ["GradeCache", "GradeExecutor", "ProcessExecutor", "ThreadExecutor", "make_executor"]
