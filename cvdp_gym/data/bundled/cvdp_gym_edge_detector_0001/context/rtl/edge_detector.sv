// Synchronous edge detector with one-cycle registered pulse outputs.
module edge_detector (
    input  logic clk,
    input  logic rst_n,       // asynchronous, active low
    input  logic sig_in,      // already synchronous to clk
    output logic rise_pulse,
    output logic fall_pulse,
    output logic any_edge
);

    logic sig_d;              // sig_in delayed by one clock

    always_ff @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            sig_d <= 1'b0;
        end else begin
            sig_d <= sig_in;
        end
    end

    // Insert code here for the registered rise_pulse and fall_pulse outputs
    // (same asynchronous active-low reset as sig_d) and the combinational
    // any_edge output.

endmodule
