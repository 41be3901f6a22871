read_verilog -sv /code/rtl/gray_counter.sv
hierarchy -check -top gray_counter
check -noinit -initdrv -assert
proc; opt; fsm; opt; memory; opt
techmap; opt
synth -top gray_counter
clean
stat
write_verilog -noattr /code/rundir/netlist.v
