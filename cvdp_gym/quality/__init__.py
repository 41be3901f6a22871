"""Design quality beside correctness: area, timing, power and warnings from open tools.

``metrics`` (what one design measures), ``liberty`` (the standard-cell libraries),
``asic`` (Yosys + ABC to a liberty, OpenSTA for timing and power), ``fpga`` (Yosys
``synth_ice40`` + nextpnr), ``scores`` (ratios to the reference, capped, and the reward),
``cache`` (a design measured once), ``stage`` (the quality stage of a graded answer).
"""
