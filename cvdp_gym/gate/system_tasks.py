"""The system tasks and functions each kind of answer may call: allowlists, not denylists.

A simulator offers hundreds of system tasks (Icarus alone: ``$finish_and_return``,
``$fopenr``, ``$ivl_*``...), and each one a list of forbidden names forgot is a way to end
the test bench's simulation, reach a file or read the process. So each kind of answer gets
the short list of what it needs, and anything else is ``reach_in``, named with its line:

- a **design** (:data:`DESIGN`): printing, the language's math, conversion and query
  functions, time, random numbers, the severity tasks that only print (``$error``,
  ``$warning``, ``$info``), waveform dumps, and files by literal name under
  :mod:`cvdp_gym.gate.reach_in`'s rules (``$readmem*`` of its own data, descriptors it opened
  itself). Nothing that ends the simulation (the harness or test bench ends it), runs a
  command, reads plusargs or annotates timing;
- a **test bench** (:data:`BENCH`): what a self-checking bench needs: printing, math, time,
  random numbers, ending its own simulation (``$finish``, ``$stop``, ``$fatal``) and a
  waveform dump (a plain literal name in its own sealed run's folder); no file read or
  descriptor of any name, no process;
- **properties** (:data:`PROPERTIES`): the sampled-value and bit-vector functions of SVA.
"""

from __future__ import annotations

__all__ = ["BENCH", "DESIGN", "KINDS", "PROPERTIES", "allowed"]

_RADIXES = ("", "b", "h", "o")
_PRINT = frozenset(
    f"${base}{radix}" for base in ("display", "write", "strobe", "monitor") for radix in _RADIXES
) | {"$monitoron", "$monitoroff", "$error", "$warning", "$info"}
_STRINGS = frozenset({"$sformat", "$sformatf", "$sscanf", "$swrite", "$swriteb", "$swriteh", "$swriteo", "$psprintf"})
_MATH = frozenset({
    "$signed", "$unsigned", "$cast", "$bits", "$clog2", "$size", "$high", "$low", "$left", "$right",
    "$increment", "$dimensions", "$unpacked_dimensions", "$countbits", "$countones", "$onehot",
    "$onehot0", "$isunknown", "$typename", "$ln", "$log10", "$exp", "$sqrt", "$pow", "$floor", "$ceil",
    "$sin", "$cos", "$tan", "$asin", "$acos", "$atan", "$atan2", "$hypot", "$sinh", "$cosh", "$tanh",
    "$asinh", "$acosh", "$atanh", "$itor", "$rtoi", "$bitstoreal", "$realtobits", "$shortrealtobits",
    "$bitstoshortreal", "$abs", "$min", "$max",
})
_TIME = frozenset({"$time", "$stime", "$realtime", "$printtimescale", "$timeformat"})
_RANDOM = frozenset({
    "$random", "$urandom", "$urandom_range", "$dist_uniform", "$dist_normal", "$dist_exponential",
    "$dist_poisson", "$dist_chi_square", "$dist_t", "$dist_erlang",
})
_SAMPLED = frozenset({"$past", "$rose", "$fell", "$stable", "$changed", "$sampled"})
_DUMPS = frozenset({"$dumpfile", "$dumpvars", "$dumpon", "$dumpoff", "$dumpall", "$dumplimit", "$dumpflush"})
#: Files by name and descriptor, each call checked by :mod:`cvdp_gym.gate.reach_in`'s rules.
_FILES = frozenset(
    {"$fopen", "$fclose", "$fflush", "$readmemb", "$readmemh", "$writememb", "$writememh"}
    | {"$fgets", "$fgetc", "$ungetc", "$fscanf", "$fread", "$fseek", "$ftell", "$rewind", "$feof", "$ferror"}
    | {f"$f{base}{radix}" for base in ("display", "write", "strobe", "monitor") for radix in _RADIXES}
)

#: What a design answer may call.
DESIGN = _PRINT | _STRINGS | _MATH | _TIME | _RANDOM | _SAMPLED | _DUMPS | _FILES
#: What a Verilog test bench may call: no file read of any name, no process; a waveform dump
#: only (a plain literal name in its own run's folder, which nothing reads and no later run sees).
BENCH = _PRINT | _STRINGS | _MATH | _TIME | _RANDOM | _SAMPLED | _DUMPS | {"$finish", "$stop", "$fatal"}
#: What properties may call.
PROPERTIES = _MATH | _SAMPLED
#: Each kind of answer's list, by name.
KINDS = {"design": DESIGN, "bench": BENCH, "properties": PROPERTIES}


def allowed(name: str, kind: str = "design") -> bool:
    """Whether an answer of ``kind`` may call the system task or function ``name``."""
    return name in KINDS[kind]
