"""What decontamination compares, and how: the specification and the reference code of a
problem, their tokens, word n-grams and ROUGE-L.

- **Specification words**: the official CVDP normalisation of
  :func:`cvdp_gym.grading.comprehension.ngrams` (lower-cased, ``[^\\w\\s]`` deleted, split on
  whitespace), so ``4-bit`` is one word ``4bit``.
- **Code tokens**: Verilog comments (``//`` to the end of the line, ``/* ... */``) removed,
  lower-cased, then every run of word characters (identifiers, keywords, numbers) and every
  other non-space character on its own (``<=`` is ``<``, ``=``): a copy with renamed signals
  still shares its keywords, operators and structure.
- **n-gram overlap**: the share of the evaluation text's distinct n-grams (n consecutive
  words or tokens) that the training text also has: how much of the test problem the
  training item reveals. 0 where the evaluation text has fewer than n tokens.
- **ROUGE-L**: the F-measure of the longest common subsequence (LCS) of the two token lists,
  ``2·LCS / (len(a) + len(b))`` (precision and recall weighted equally, as ``rouge_score``'s
  ``rougeL`` F-measure that CodeV-R1's filter reports); 0 where both are empty. The LCS is
  computed bit-parallel (Hyyrö 2004): one pass over one text with the other's positions as
  the bits of a Python integer.

Evaluation problems carry boilerplate their benchmark wraps every problem in (VerilogEval's
in-context example and answer instructions); :func:`specification` leaves it out (each
benchmark's own ``Benchmark.specification``), since every
problem of that benchmark shares it, so it says nothing about one problem.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Sequence

from cvdp_gym.data.benchmarks.catalog import BENCHMARKS
from cvdp_gym.data.problems import Problem
from cvdp_gym.grading.comprehension import ngrams

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_CODE_TOKEN = re.compile(r"\w+|[^\w\s]")


def specification(problem: Problem) -> str:
    """The problem's specification: its user prompt, less the text its benchmark puts around
    every problem (:meth:`cvdp_gym.data.benchmark.Benchmark.specification`: VerilogEval's
    in-context examples, rules and answer instructions)."""
    bench = BENCHMARKS.get(problem.benchmark)
    return bench.specification(problem) if bench is not None else problem.prompt


def reference_code(problem: Problem) -> str:
    """The reference design's text (every reference file, in order), or "" where there is none.
    A VerilogEval v1 reference is the body after the prompt's module header: the header is
    put back in front, so the code is the whole module as other sets write it."""
    if not problem.reference:
        return ""
    code = "\n".join(problem.reference.values())
    header = problem.extra.get("header")
    return f"{header}{code}" if isinstance(header, str) else code


def spec_words(text: str) -> list[str]:
    """A specification's words, normalised as the official CVDP n-grams are."""
    return [word for (word,) in ngrams(text, 1)]


def code_tokens(text: str) -> list[str]:
    """Verilog's tokens for comparison: comments removed, lower-cased, words and single symbols."""
    return _CODE_TOKEN.findall(_COMMENTS.sub(" ", text).lower())


def ngram_set(tokens: Sequence[int], n: int) -> set[int]:
    """The distinct n-grams of ``tokens`` (token numbers), each as the hash of its tuple: a
    64-bit key that is the same in every process (CPython salts the hashes of strings, not
    of integers), so an index built here can be searched in a worker process."""
    return {hash(tuple(tokens[i : i + n])) for i in range(len(tokens) - n + 1)}


def ngram_overlap(train: set[int], evaluation: set[int]) -> float:
    """The share of the evaluation text's n-grams the training text has (0 if it has none)."""
    return len(train & evaluation) / len(evaluation) if evaluation else 0.0


def match_masks(tokens: Iterable[Hashable]) -> dict[Hashable, int]:
    """For each distinct token, the integer whose bit i is set where ``tokens[i]`` is it."""
    masks: dict[Hashable, int] = {}
    for position, token in enumerate(tokens):
        masks[token] = masks.get(token, 0) | (1 << position)
    return masks


def lcs_length(masks: dict[Hashable, int], length: int, other: Iterable[Hashable]) -> int:
    """The LCS length of a text of ``length`` tokens (given as its ``match_masks``) and
    ``other``: bit i of ``v`` is 0 once the LCS of the prefixes has grown at position i."""
    v = (1 << length) - 1
    for u in map(masks.get, other):
        if u:
            u &= v
            v = (v + u) | (v - u)
    return length - (v & ((1 << length) - 1)).bit_count()


def rouge_l_from_lcs(lcs: int, length_a: int, length_b: int) -> float:
    """ROUGE-L F-measure (equal weights) of two texts whose LCS is ``lcs`` tokens long."""
    total = length_a + length_b
    return 2.0 * lcs / total if total else 0.0


def rouge_l(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """ROUGE-L F-measure of two token lists."""
    if len(a) < len(b):
        a, b = b, a  # the loop runs over the shorter one
    return rouge_l_from_lcs(lcs_length(match_masks(a), len(a), b), len(a), len(b))
