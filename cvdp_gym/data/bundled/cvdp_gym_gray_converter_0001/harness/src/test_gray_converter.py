import cocotb
from cocotb.triggers import Timer


def to_gray(value: int) -> int:
    return value ^ (value >> 1)


def from_gray(value: int) -> int:
    result = 0
    while value:
        result ^= value
        value >>= 1
    return result


@cocotb.test()
async def test_encode_exhaustive(dut):
    """gray_o must be the reflected Gray code of bin_i for every input value."""
    width = int(dut.WIDTH.value)
    dut.gray_i.value = 0
    for value in range(2**width):
        dut.bin_i.value = value
        await Timer(1, unit="ns")
        got = int(dut.gray_o.value)
        exp = to_gray(value)
        assert got == exp, f"WIDTH={width}: bin_i={value:0{width}b} -> gray_o={got:0{width}b}, expected {exp:0{width}b}"


@cocotb.test()
async def test_decode_exhaustive(dut):
    """bin_o must be the binary value of gray_i for every input value."""
    width = int(dut.WIDTH.value)
    dut.bin_i.value = 0
    for value in range(2**width):
        dut.gray_i.value = value
        await Timer(1, unit="ns")
        got = int(dut.bin_o.value)
        exp = from_gray(value)
        assert got == exp, f"WIDTH={width}: gray_i={value:0{width}b} -> bin_o={got:0{width}b}, expected {exp:0{width}b}"


@cocotb.test()
async def test_round_trip_and_adjacency(dut):
    """Both paths at once: decode(encode(x)) == x, and consecutive codes differ in one bit."""
    width = int(dut.WIDTH.value)
    previous = None
    for value in range(2**width):
        dut.bin_i.value = value
        dut.gray_i.value = to_gray(value)
        await Timer(1, unit="ns")
        gray = int(dut.gray_o.value)
        back = int(dut.bin_o.value)
        assert back == value, f"WIDTH={width}: round trip of {value} returned {back}"
        if previous is not None:
            assert bin(gray ^ previous).count("1") == 1, (
                f"WIDTH={width}: codes for {value - 1} and {value} differ in more than one bit"
            )
        previous = gray
