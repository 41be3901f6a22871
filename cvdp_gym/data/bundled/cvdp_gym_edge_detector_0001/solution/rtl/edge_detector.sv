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

    // Registered edge pulses
    always_ff @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            rise_pulse <= 1'b0;
            fall_pulse <= 1'b0;
        end else begin
            rise_pulse <= sig_in & ~sig_d;
            fall_pulse <= ~sig_in & sig_d;
        end
    end

    assign any_edge = rise_pulse | fall_pulse;

endmodule
