import cocotb
from fifo_helpers import check_status, setup, step


@cocotb.test()
async def test_reset_state(dut):
    """After reset the FIFO is empty and rd_data is zero."""
    depth = int(dut.DEPTH.value)
    await setup(dut)
    check_status(dut, 0, depth, "after reset")
    assert int(dut.rd_data.value) == 0, f"rd_data={int(dut.rd_data.value)} after reset, expected 0"


@cocotb.test()
async def test_fill_and_drain(dut):
    """Fill to full, try an extra write, drain in order, try an extra read."""
    depth = int(dut.DEPTH.value)
    width = int(dut.DATA_WIDTH.value)
    mask = (1 << width) - 1
    await setup(dut)
    values = [(0x5A + 37 * i) & mask for i in range(depth)]
    for i, v in enumerate(values):
        await step(dut, wr_en=1, wr_data=v)
        check_status(dut, i + 1, depth, f"after write {i}")
    # Write into a full FIFO must be refused.
    await step(dut, wr_en=1, wr_data=mask)
    check_status(dut, depth, depth, "after write while full")
    for i, v in enumerate(values):
        await step(dut, rd_en=1)
        got = int(dut.rd_data.value)
        assert got == v, f"read {i}: rd_data={got:#x}, expected {v:#x}"
        check_status(dut, depth - i - 1, depth, f"after read {i}")
    # Read from an empty FIFO is refused and rd_data holds its value.
    await step(dut, rd_en=1)
    check_status(dut, 0, depth, "after read while empty")
    got = int(dut.rd_data.value)
    assert got == values[-1], f"rd_data changed to {got:#x} on a refused read, expected {values[-1]:#x}"


@cocotb.test()
async def test_pointer_wrap(dut):
    """Several passes through the storage array keep the order intact."""
    depth = int(dut.DEPTH.value)
    width = int(dut.DATA_WIDTH.value)
    mask = (1 << width) - 1
    await setup(dut)
    nxt = 1
    for _ in range(3):
        batch = [(nxt + i) & mask for i in range(depth - 1)]
        nxt += depth - 1
        for v in batch:
            await step(dut, wr_en=1, wr_data=v)
        for v in batch:
            await step(dut, rd_en=1)
            got = int(dut.rd_data.value)
            assert got == v, f"rd_data={got:#x}, expected {v:#x} after pointer wrap"
        check_status(dut, 0, depth, "after batch")


@cocotb.test()
async def test_simultaneous_read_write(dut):
    """Accepted read + write in one cycle keeps count; boundary cases are refused."""
    depth = int(dut.DEPTH.value)
    width = int(dut.DATA_WIDTH.value)
    mask = (1 << width) - 1
    await setup(dut)
    # Empty: only the write is accepted.
    await step(dut, wr_en=1, wr_data=0x11 & mask, rd_en=1)
    check_status(dut, 1, depth, "read+write while empty")
    assert int(dut.rd_data.value) == 0, "a read from an empty FIFO must not update rd_data"
    # One entry: both accepted, count stays at 1.
    model = [0x11 & mask]
    for i in range(2 * depth):
        v = (0x23 + 5 * i) & mask
        await step(dut, wr_en=1, wr_data=v, rd_en=1)
        model.append(v)
        exp = model.pop(0)
        got = int(dut.rd_data.value)
        assert got == exp, f"simultaneous op {i}: rd_data={got:#x}, expected {exp:#x}"
        check_status(dut, 1, depth, f"simultaneous op {i}")
    # Fill to full, then read+write: only the read is accepted.
    while len(model) < depth:
        v = (0x70 + len(model)) & mask
        await step(dut, wr_en=1, wr_data=v)
        model.append(v)
    check_status(dut, depth, depth, "filled")
    await step(dut, wr_en=1, wr_data=mask, rd_en=1)
    exp = model.pop(0)
    assert int(dut.rd_data.value) == exp, "read while full returned the wrong entry"
    check_status(dut, depth - 1, depth, "read+write while full")
