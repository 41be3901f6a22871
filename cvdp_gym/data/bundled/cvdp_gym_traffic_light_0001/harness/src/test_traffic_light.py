import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

GREEN, YELLOW, RED = 0, 1, 2
NAMES = {GREEN: "GREEN", YELLOW: "YELLOW", RED: "RED"}


class Model:
    def __init__(self, g, y, r):
        self.len = {GREEN: g, YELLOW: y, RED: r}
        self.state, self.timer, self.pending, self.walk = GREEN, 0, 0, 0

    def edge(self, ped_req):
        last = self.timer == self.len[self.state] - 1
        if self.state == GREEN:
            self.pending |= ped_req
            if last:
                self.state, self.timer = YELLOW, 0
            else:
                self.timer += 1
        elif self.state == YELLOW:
            if last:
                self.walk = self.pending | ped_req
                self.pending = 0
                self.state, self.timer = RED, 0
            else:
                self.pending |= ped_req
                self.timer += 1
        else:
            if last:
                self.walk = 0
                self.state, self.timer = GREEN, 0
            else:
                self.timer += 1


async def reset_dut(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    dut.ped_req.value = 0
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    p = (int(dut.GREEN_CYCLES.value), int(dut.YELLOW_CYCLES.value), int(dut.RED_CYCLES.value))
    return Model(*p)


def check(dut, m, where):
    lights = (int(dut.light_green.value), int(dut.light_yellow.value), int(dut.light_red.value))
    exp = (int(m.state == GREEN), int(m.state == YELLOW), int(m.state == RED))
    assert lights == exp, f"{where}: (green, yellow, red)={lights}, expected {exp} ({NAMES[m.state]}, cycle {m.timer})"
    walk = int(dut.walk.value)
    assert walk == m.walk, f"{where}: walk={walk}, expected {m.walk} ({NAMES[m.state]}, cycle {m.timer})"


async def run(dut, m, reqs, tag):
    for i, req in enumerate(reqs):
        dut.ped_req.value = req
        await FallingEdge(dut.clk)
        m.edge(req)
        check(dut, m, f"{tag} cycle {i}")


@cocotb.test()
async def test_phase_lengths(dut):
    """Without requests the phases last exactly the configured number of cycles."""
    m = await reset_dut(dut)
    check(dut, m, "after reset")
    period = sum(m.len.values())
    await run(dut, m, [0] * (2 * period + 3), "no requests")


@cocotb.test()
async def test_request_last_yellow_cycle(dut):
    """A request in the last yellow cycle gives walk for the whole next red phase."""
    m = await reset_dut(dut)
    g, y, r = m.len[GREEN], m.len[YELLOW], m.len[RED]
    # Reach the last cycle of yellow (g + y - 1 edges after reset).
    await run(dut, m, [0] * (g + y - 1), "approach")
    assert m.state == YELLOW and m.timer == y - 1
    await run(dut, m, [1], "press in last yellow cycle")
    assert m.walk == 1
    await run(dut, m, [0] * (r + g + y + r), "served")


@cocotb.test()
async def test_request_during_green_and_red(dut):
    """Green requests are served once; red requests are ignored."""
    m = await reset_dut(dut)
    g, y, r = m.len[GREEN], m.len[YELLOW], m.len[RED]
    await run(dut, m, [0, 0, 1, 0] + [0] * (g + y - 4), "green request")
    await run(dut, m, [1] * r, "presses during red")
    await run(dut, m, [0] * (g + y + r + 2), "no carry-over")


@cocotb.test()
async def test_random_requests(dut):
    """Random button presses against the cycle-accurate model."""
    m = await reset_dut(dut)
    rng = random.Random(2025)
    await run(dut, m, [int(rng.random() < 0.08) for _ in range(250)], "random")
