"""``cvdp-gym check``: run reference solutions (and named candidates) through the harnesses.

Each job is one (problem, candidate) pair with the verdict it should get. Results are
appended to a JSONL file as they finish, so an interrupted check resumes where it stopped.
On Ctrl-C the queued jobs are cancelled and the running sandboxes killed at once (see
``cvdp_gym.interrupt``); what had finished stays in the file.

Comprehension problems have no harness: :func:`comprehension_checks` scores each reference
answer against itself, as the official golden mode does, and as a JSON answer.

A repository-context problem's reference is its golden patch applied to its repository's
checked-out files (the runner's ``RepoStore``), made when the job runs; a repository that
cannot be found makes that job ``unsupported``, with where it was looked for.

A benchmark problem (VerilogEval, RTLLM) runs its reference through the benchmark's own flow;
the reference of a labelled defect (``Problem.defect``) may fail without counting as a
mismatch, and :func:`cvdp_gym.check.consistency.findings` says where a benchmark's files disagree.

A training set's problem (``grader="reference"``: the ``training`` plug-in, :mod:`cvdp_gym.benchmarks.training`)
runs its reference against itself, which must pass, and one broken copy of it
(:func:`broken_copy`: an operator swapped or a constant changed, its interface untouched),
which must be caught (``test_failure``): "the reference is equivalent to itself and a broken
copy is caught". A broken copy may still compute the same thing (an equivalent mutant),
so a miss is a finding to read, not proof of a grader bug; :func:`training_notes` says which
references nobody checked (RTLCoder's).

A job whose harness draws at random (``harness.randomness``) runs with ``seeds`` seeds
(``cvdp_gym.seeds.seed_list``): it matches only when every run gets the expected verdict,
and it is ``flaky`` when the runs disagree. Every result records its seed; ``seed``
reproduces a run.
"""

from cvdp_gym.check.jobs import (
    BROKEN,
    REFERENCE,
    CheckJob,
    broken_copy,
    build_jobs,
    load_candidates,
)
from cvdp_gym.check.notes import ReferenceCheck, comprehension_checks, training_notes
from cvdp_gym.check.outcomes import CheckOutcome, read_done
from cvdp_gym.check.run import CheckInterrupted, run_jobs

__all__ = [
    "BROKEN",
    "REFERENCE",
    "CheckInterrupted",
    "CheckJob",
    "CheckOutcome",
    "ReferenceCheck",
    "broken_copy",
    "build_jobs",
    "comprehension_checks",
    "load_candidates",
    "read_done",
    "run_jobs",
    "training_notes",
]
