// Self-checking testbench for crc8 with the default parameters.
// Run: iverilog -g2012 -o tb.vvp rtl/crc8.sv verif/tb_crc8.sv && vvp tb.vvp
`timescale 1ns/1ps
module tb_crc8;
    logic       clk = 1'b0;
    logic       rst, start, data_valid;
    logic [7:0] data_in;
    logic [7:0] crc;
    integer     errors = 0;

    crc8 dut (
        .clk(clk), .rst(rst), .start(start), .data_valid(data_valid),
        .data_in(data_in), .crc(crc)
    );

    always #5 clk = ~clk;

    localparam logic [8*9-1:0] CHECK = "123456789";   // CHECK[71:64] is "1"

    task automatic send_check_string(input bit start_with_first_byte);
        begin
            @(negedge clk);
            if (!start_with_first_byte) begin
                start = 1'b1; data_valid = 1'b0;
                @(negedge clk);
            end
            for (int i = 0; i < 9; i++) begin
                start      = start_with_first_byte && (i == 0);
                data_valid = 1'b1;
                data_in    = CHECK[8*(8-i) +: 8];
                @(negedge clk);
            end
            start = 1'b0; data_valid = 1'b0;
            if (crc !== 8'hF4) begin
                $display("ERROR: CRC of \"123456789\" (start %s first byte) = %h, expected f4",
                         start_with_first_byte ? "with" : "before", crc);
                errors = errors + 1;
            end
        end
    endtask

    initial begin
        rst = 1'b1; start = 1'b0; data_valid = 1'b0; data_in = 8'h00;
        repeat (2) @(negedge clk);
        rst = 1'b0;
        send_check_string(1'b0);
        send_check_string(1'b1);
        if (errors == 0) $display("PASS: all checks passed");
        else             $display("FAIL: %0d errors", errors);
        $finish;
    end
endmodule
