import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge


def frame_bits(byte: int, parity_en: int):
    bits = [0] + [(byte >> i) & 1 for i in range(8)]
    if parity_en:
        bits.append(bin(byte).count("1") & 1)
    bits.append(1)
    return bits


async def reset_dut(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    dut.tx_start.value = 0
    dut.tx_data.value = 0
    for _ in range(3):
        await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0


def outputs(dut):
    return int(dut.tx.value), int(dut.busy.value), int(dut.done.value)


async def send_and_check(dut, byte, cpb, parity_en, hold_start=False, scramble=None):
    """Request a frame at the next rising edge and check tx/busy/done every cycle
    until the done pulse. Must be called right after a falling edge."""
    bits = frame_bits(byte, parity_en)
    dut.tx_data.value = byte
    dut.tx_start.value = 1
    await FallingEdge(dut.clk)  # request accepted at the rising edge in between
    if not hold_start:
        dut.tx_start.value = 0
    for cycle in range(len(bits) * cpb):
        if scramble is not None:
            dut.tx_data.value = scramble(cycle)
        exp_tx = bits[cycle // cpb]
        tx, busy, done = outputs(dut)
        where = f"byte {byte:#04x}, bit {cycle // cpb}, cycle {cycle % cpb} of {cpb}"
        assert tx == exp_tx, f"{where}: tx={tx}, expected {exp_tx}"
        assert busy == 1, f"{where}: busy={busy}, expected 1"
        assert done == 0, f"{where}: done={done}, expected 0"
        await FallingEdge(dut.clk)
    tx, busy, done = outputs(dut)
    assert (tx, busy, done) == (1, 0, 1), (
        f"byte {byte:#04x}: end of frame: tx={tx} busy={busy} done={done}, expected 1 0 1"
    )


@cocotb.test()
async def test_reset_idle(dut):
    """After reset the line idles high and nothing is busy."""
    await reset_dut(dut)
    for _ in range(5):
        assert outputs(dut) == (1, 0, 0), f"idle outputs {outputs(dut)}, expected (1, 0, 0)"
        await FallingEdge(dut.clk)


@cocotb.test()
async def test_single_frames(dut):
    """Several bytes, each checked cycle by cycle."""
    cpb = int(dut.CLKS_PER_BIT.value)
    par = int(dut.PARITY_EN.value)
    await reset_dut(dut)
    for byte in (0x55, 0x01, 0x80, 0xA7):
        await send_and_check(dut, byte, cpb, par)
        await FallingEdge(dut.clk)
        assert outputs(dut) == (1, 0, 0), f"after done pulse outputs {outputs(dut)}, expected (1, 0, 0)"
        await FallingEdge(dut.clk)


@cocotb.test()
async def test_requests_ignored_while_busy(dut):
    """tx_start and tx_data changes during a frame do not disturb it."""
    cpb = int(dut.CLKS_PER_BIT.value)
    par = int(dut.PARITY_EN.value)
    await reset_dut(dut)
    dut.tx_data.value = 0x3A
    dut.tx_start.value = 1
    await FallingEdge(dut.clk)
    bits = frame_bits(0x3A, par)
    for cycle in range(len(bits) * cpb):
        dut.tx_start.value = cycle % 2
        dut.tx_data.value = (0xFF - cycle) & 0xFF
        tx = int(dut.tx.value)
        exp = bits[cycle // cpb]
        assert tx == exp, f"frame 0x3a disturbed at cycle {cycle}: tx={tx}, expected {exp}"
        await FallingEdge(dut.clk)
    dut.tx_start.value = 0
    assert outputs(dut) == (1, 0, 1), f"end of frame outputs {outputs(dut)}, expected (1, 0, 1)"


@cocotb.test()
async def test_back_to_back(dut):
    """With tx_start held high, frames follow each other with one idle cycle."""
    cpb = int(dut.CLKS_PER_BIT.value)
    par = int(dut.PARITY_EN.value)
    await reset_dut(dut)
    dut.tx_data.value = 0xC3
    dut.tx_start.value = 1
    await FallingEdge(dut.clk)
    for frame, byte in enumerate((0xC3, 0x0F)):
        bits = frame_bits(byte, par)
        for cycle in range(len(bits) * cpb):
            if cycle == 0:
                dut.tx_data.value = 0x0F  # only captured by the next accepted request
            tx, busy, done = outputs(dut)
            exp = bits[cycle // cpb]
            assert tx == exp and busy == 1 and done == 0, (
                f"frame {frame} cycle {cycle}: tx={tx} busy={busy} done={done}, expected tx={exp} busy=1 done=0"
            )
            await FallingEdge(dut.clk)
        assert outputs(dut) == (1, 0, 1), f"frame {frame}: idle/done cycle outputs {outputs(dut)}, expected (1, 0, 1)"
        await FallingEdge(dut.clk)
    dut.tx_start.value = 0
