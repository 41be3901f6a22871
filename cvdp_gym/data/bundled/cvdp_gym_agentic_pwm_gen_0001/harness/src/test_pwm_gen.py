import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge, Timer


class PwmModel:
    def __init__(self, width):
        self.mask = (1 << width) - 1
        self.cnt = 0
        self.pa = 0
        self.da = 0

    def outputs(self, en, pol):
        if not en:
            return pol, 0
        last = self.cnt == ((self.pa - 1) & self.mask)
        return int(self.cnt < self.da) ^ pol, int(last)

    def edge(self, rst, en, period, duty):
        last = self.cnt == ((self.pa - 1) & self.mask)
        if rst or not en or last:
            self.cnt, self.pa, self.da = 0, period, duty
        else:
            self.cnt += 1


class Env:
    def __init__(self, dut):
        self.dut = dut
        self.width = int(dut.CNT_W.value)
        self.model = PwmModel(self.width)
        self.inp = {"rst": 1, "en": 0, "polarity": 0, "period": 4, "duty": 2}

    async def start(self):
        cocotb.start_soon(Clock(self.dut.clk, 10, unit="ns").start())
        await self.cycle(rst=1)
        await self.cycle(rst=1)
        self.inp["rst"] = 0

    async def cycle(self, where="", expect=None, **changes):
        """Apply input changes, check the combinational outputs, clock once."""
        self.inp.update(changes)
        for k, v in self.inp.items():
            getattr(self.dut, k).value = v
        await Timer(1, unit="ns")
        i = self.inp
        if not i["rst"]:
            exp = self.model.outputs(i["en"], i["polarity"])
            got = (int(self.dut.pwm_out.value), int(self.dut.period_end.value))
            assert got == exp, (
                f"{where}: inputs {i}, cnt={self.model.cnt} period_act={self.model.pa} "
                f"duty_act={self.model.da}: (pwm_out, period_end)={got}, expected {exp}"
            )
            if expect is not None:
                assert got == expect, f"{where}: (pwm_out, period_end)={got}, documented {expect}"
        await FallingEdge(self.dut.clk)
        self.model.edge(i["rst"], i["en"], i["period"], i["duty"])


@cocotb.test()
async def test_documented_example(dut):
    """The example waveform of the specification (period 4, duty 1 -> 3 in cycle 2)."""
    env = Env(dut)
    await env.start()
    await env.cycle("setup", en=0, period=4, duty=1, polarity=0)
    table = [(1, 0), (0, 0), (0, 0), (0, 1), (1, 0), (1, 0), (1, 0), (0, 1)]
    for c, exp in enumerate(table):
        await env.cycle(f"example cycle {c}", expect=exp, en=1, duty=3 if c >= 2 else 1)


@cocotb.test()
async def test_duty_levels_and_polarity(dut):
    """0 %, partial and 100 % duty with both polarities."""
    env = Env(dut)
    await env.start()
    for pol in (0, 1):
        for period, duty in ((5, 0), (5, 2), (5, 5), (3, 7), (9, 8)):
            await env.cycle("reload", en=0, polarity=pol, period=period, duty=duty)
            for c in range(2 * period + 1):
                await env.cycle(f"pol={pol} period={period} duty={duty} cycle {c}", en=1)


@cocotb.test()
async def test_mid_period_updates(dut):
    """Changing period/duty in the middle of a period only affects the next period."""
    env = Env(dut)
    await env.start()
    await env.cycle("setup", en=0, period=8, duty=6, polarity=0)
    for c in range(3):
        await env.cycle(f"first period {c}", en=1)
    await env.cycle("change mid period", period=3, duty=1)
    for c in range(12):
        await env.cycle(f"after change {c}")
    await env.cycle("change again", period=6, duty=4)
    for c in range(14):
        await env.cycle(f"after second change {c}")


@cocotb.test()
async def test_enable_and_random(dut):
    """Random enable, polarity and settings against the model."""
    env = Env(dut)
    await env.start()
    rng = random.Random(555 + env.width)
    top = (1 << env.width) - 1
    for c in range(400):
        changes = {}
        if rng.random() < 0.03:
            changes["en"] = 1 - env.inp["en"]
        if rng.random() < 0.2 and env.inp["en"] == 0:
            changes["en"] = 1
        if rng.random() < 0.05:
            changes["polarity"] = rng.randint(0, 1)
        if rng.random() < 0.1:
            p = rng.randint(2, min(12, top))
            changes["period"] = p
            changes["duty"] = rng.randint(0, p + 1)
        if rng.random() < 0.01:
            changes["rst"] = 1
        elif env.inp["rst"]:
            changes["rst"] = 0
        await env.cycle(f"random {c}", **changes)
