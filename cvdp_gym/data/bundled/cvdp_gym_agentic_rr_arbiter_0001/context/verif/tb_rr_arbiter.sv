// Directed self-checking testbench for rr_arbiter (N = 4).
// Run: iverilog -g2012 -o tb.vvp rtl/rr_arbiter.sv verif/tb_rr_arbiter.sv && vvp tb.vvp
`timescale 1ns/1ps
module tb_rr_arbiter;
    localparam N = 4;

    logic         clk = 1'b0;
    logic         rst;
    logic [N-1:0] req;
    logic         hold;
    logic [N-1:0] gnt;
    logic [1:0]   gnt_idx;
    logic         gnt_valid;
    integer       errors = 0;

    rr_arbiter #(.N(N)) dut (
        .clk(clk), .rst(rst), .req(req), .hold(hold),
        .gnt(gnt), .gnt_idx(gnt_idx), .gnt_valid(gnt_valid)
    );

    always #5 clk = ~clk;

    // Apply inputs after a falling edge, check before the next rising edge.
    task automatic step(input [N-1:0] r, input h, input [N-1:0] exp_gnt, input [1:0] exp_idx);
        begin
            req  = r;
            hold = h;
            #1;
            if (gnt !== exp_gnt || gnt_idx !== exp_idx || gnt_valid !== (r != 0)) begin
                $display("ERROR: req=%b hold=%b -> gnt=%b idx=%0d valid=%b, expected gnt=%b idx=%0d valid=%b",
                         r, h, gnt, gnt_idx, gnt_valid, exp_gnt, exp_idx, (r != 0));
                errors = errors + 1;
            end
            @(negedge clk);
        end
    endtask

    initial begin
        rst = 1'b1; req = '0; hold = 1'b0;
        @(negedge clk); @(negedge clk);
        rst = 1'b0;
        // The example sequence from docs/specification.md
        step(4'b1010, 1'b0, 4'b0010, 2'd1);
        step(4'b1010, 1'b0, 4'b1000, 2'd3);
        step(4'b1010, 1'b1, 4'b0010, 2'd1);
        step(4'b1010, 1'b0, 4'b0010, 2'd1);
        step(4'b0000, 1'b0, 4'b0000, 2'd0);
        step(4'b0011, 1'b0, 4'b0001, 2'd0);
        // All requesting: strict rotation 1, 2, 3, 0
        step(4'b1111, 1'b0, 4'b0010, 2'd1);
        step(4'b1111, 1'b0, 4'b0100, 2'd2);
        step(4'b1111, 1'b0, 4'b1000, 2'd3);
        step(4'b1111, 1'b0, 4'b0001, 2'd0);
        if (errors == 0) $display("PASS: all checks passed");
        else             $display("FAIL: %0d errors", errors);
        $finish;
    end
endmodule
