"""The design domain of a problem, for the report's per-domain breakdown.

CVDP ids name the design: ``cvdp_copilot_<design>_<NNNN>``, ``cvdp_agentic_<design>_<NNNN>``
(ours: ``cvdp_gym_[agentic_]<design>_<NNNN>``). A problem's domain is the first rule of
:data:`RULES` whose pattern matches, tried on, in order:

1. the design name of the id (``_`` read as a word break: ``apb_dsp_op`` → ``apb dsp op``);
2. the prompt, when the caller has it (some CVDP ids are obfuscated, e.g.
   ``cvdp_agentic_starlight_phoenix_comet_6246``); only its first :data:`PROMPT_CHARS`
   characters, where the task names what to build;
3. the target module's port names (:data:`PORT_RULES`: ``awvalid`` → bus interface).

Nothing matched: :data:`OTHER`. The rules are ordered so that the more specific reading wins:
line codes and error-correcting codes before protocols (``hamming_code_tx_and_rx`` is coding,
not a UART), protocols before arithmetic (``apb_dsp_op`` is an APB peripheral), a clock
divider before an arithmetic divider, counters before code converters (``gray_counter``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "ARITHMETIC", "BUS", "CODING", "CONTROL", "CONVERTERS", "COUNTERS", "DOMAINS", "MEMORY", "OTHER", "PORT_RULES",
    "PROMPT_CHARS", "RULES", "design_name", "domain_of", "module_ports",
]

BUS = "bus interfaces & protocols"
MEMORY = "memory & FIFOs"
ARITHMETIC = "arithmetic & DSP"
CODING = "crypto & coding"
CONTROL = "control & FSMs"
COUNTERS = "counters & timers"
CONVERTERS = "encoders & converters"
OTHER = "other"
#: Domains in report order.
DOMAINS = (BUS, MEMORY, ARITHMETIC, CODING, CONTROL, COUNTERS, CONVERTERS, OTHER)
#: Characters of the prompt the rules read.
PROMPT_CHARS = 600


def _words(*patterns: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(patterns) + r")\b", re.IGNORECASE)


#: (domain, pattern) in precedence order; the first match wins.
RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (CODING, _words(r"aes\d*", "des", r"sha\d*", "md5", r"crc\d*", "ecc", "hamming", "parity", "ldpc", "viterbi",
                    "reed solomon", "scrambler", "descrambler", r"\d+b\d+b", "manchester", "lfsr", "prbs", "cipher",
                    "encrypt\\w*", "decrypt\\w*", "hash", "checksum", "secded")),
    (BUS, _words(r"axi\d*", "axis", "axi4 ?lite", "apb", "ahb", "wishbone", "wb", "avalon", "spi", "i2c", "i3c", r"uart\w*",
                 "usb", "pcie", "ethernet", "mdio", "jtag", "can bus", "lin", "ps2", "ir", "receiver", "transmitter",
                 "serializer", "deserializer", "serdes", "bridge", "handshake", "interconnect", "crossbar")),
    (MEMORY, _words("fifo", "lifo", "ram", "sram", "dram", "dpram", "rom", "cache", "memory", "mem", "buffer", "regfile",
                    "register file", "cam", "stack", "queue")),
    (COUNTERS, _words("clock divider", "clk div", "clk divider", "freq(?:uency)? divider", "prescaler")),
    (ARITHMETIC, _words(r"\w*adder", "add", "subtractor", r"\w*multiplier", "mult", "mul", "alu", "divider", "div",
                        "fir", "iir", "fft", "ifft", "dft", "mac", "cordic", "sqrt", "square root", r"\w*filter",
                        "fixed point", "floating point", "fp", "float", r"\d*qam", "modulator", "demodulator", "nco",
                        "dds", "correlator", "convolution", "dot product", "matrix", "accumulator", r"\w*shifter",
                        "comparator", "dsp", "sat", "saturat\\w*", "arithmetic", "gcd", "lcm", "cic")),
    (CONTROL, _words("fsm", r"\w*controller", "control", "traffic light", r"\w*arbiter", "scheduler", "state machine",
                     "vending", "elevator", r"\w*detector", "debouncer?", "sequencer", "handshaker", "lock")),
    (COUNTERS, _words(r"\w*counter", "timer", "pwm", "watchdog", "stopwatch", "rtc", "clock", "pulse gen\\w*",
                      "one shot")),
    (CONVERTERS, _words("gray", r"\w*encoder", r"\w*decoder", "bcd", "binary", "bin2\\w+", "\\w+2bin", r"\w*converter",
                        "mux", "demux", "multiplexer", "demultiplexer", "one hot", "onehot", "thermometer",
                        "seven segment", "7 ?seg\\w*")),
)
#: Port-name rules (read when neither the name nor the prompt matched).
PORT_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (BUS, re.compile(r"^(?:s_|m_|s\d+_|m\d+_)?(?:aw|ar|w|r|b|t)(?:valid|ready)$|^p(?:sel|enable|ready|addr|wdata)$"
                     r"|^h(?:ready|trans|sel|addr|burst)$|^(?:cyc|stb)(?:_[io])?$|^(?:sclk|mosi|miso|scl|sda|[rt]xd)$",
                     re.IGNORECASE)),
    (MEMORY, re.compile(r"^(?:full|empty|almost_full|almost_empty|(?:wr|rd)_?en|we|re)(?:_[io])?$", re.IGNORECASE)),
)
_ID = re.compile(r"^cvdp_(?:copilot|agentic|gym)_(?:agentic_)?(?P<design>.+?)(?:_\d+)?$")
_MODULE = re.compile(r"\bmodule\s+(?P<name>\w+)\s*(?:#\s*\((?:[^()]|\([^()]*\))*\)\s*)?\((?P<ports>[^;]*)\)\s*;", re.S)
_KEYWORDS = frozenset(["input", "output", "inout", "wire", "reg", "logic", "signed", "unsigned", "var", "tri", "parameter"])


def design_name(problem_id: str) -> str:
    """The design part of an id (``cvdp_copilot_apb_dsp_op_0002`` → ``apb dsp op``)."""
    match = _ID.match(problem_id)
    name = match.group("design") if match else re.sub(r"_\d+$", "", problem_id)
    return name.replace("_", " ").replace("-", " ")


def _first(text: str) -> str | None:
    return next((domain for domain, pattern in RULES if pattern.search(text)), None)


def module_ports(verilog: str, module: str | None = None) -> list[str]:
    """The port names of ``module`` (else the first module) in Verilog text: enough for :data:`PORT_RULES`."""
    for match in _MODULE.finditer(re.sub(r"//[^\n]*|/\*.*?\*/", "", verilog, flags=re.S)):
        if module is None or match.group("name") == module:
            ports = re.sub(r"\[[^\]]*\]", " ", match.group("ports"))
            return [w for w in re.findall(r"[A-Za-z_]\w*", ports) if w not in _KEYWORDS]
    return []


def domain_of(problem_id: str, prompt: str | None = None, ports: Iterable[str] = ()) -> str:
    """The design domain of a problem: by its id's design name, else its prompt, else its ports."""
    found = _first(design_name(problem_id))
    if found is None and prompt:
        found = _first(prompt[:PROMPT_CHARS].replace("_", " "))
    if found is None:
        names = list(ports)
        found = next((domain for domain, pattern in PORT_RULES if any(pattern.match(p) for p in names)), None)
    return found or OTHER
