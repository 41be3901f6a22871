// Byte-wise CRC-8 (MSB first, no reflection, no final XOR).
module crc8 #(
    parameter logic [7:0] POLY = 8'h07,
    parameter logic [7:0] INIT = 8'h00
) (
    input  logic       clk,
    input  logic       rst,
    input  logic       start,
    input  logic       data_valid,
    input  logic [7:0] data_in,
    output logic [7:0] crc_out
);

    function automatic logic [7:0] next_crc(input logic [7:0] c, input logic [7:0] d);
        logic [7:0] x;
        x = c ^ d;
        for (int i = 0; i < 8; i++) begin
            if (x[7]) begin
                x = (x << 1) ^ POLY;
            end else begin
                x = x << 1;
            end
        end
        return x;
    endfunction

    always_ff @(posedge clk) begin
        if (rst) begin
            crc_out <= INIT;
        end else if (start && data_valid) begin
            crc_out <= next_crc(INIT, data_in);
        end else if (start) begin
            crc_out <= INIT;
        end else if (data_valid) begin
            crc_out <= next_crc(crc_out, data_in);
        end
    end

endmodule
