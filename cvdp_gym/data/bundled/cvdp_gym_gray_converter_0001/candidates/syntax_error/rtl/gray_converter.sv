// Bidirectional binary <-> reflected Gray code converter.
module gray_converter #(
    parameter WIDTH = 4
) (
    input  logic [WIDTH-1:0] bin_i,
    input  logic [WIDTH-1:0] gray_i,
    output logic [WIDTH-1:0] gray_o,
    output logic [WIDTH-1:0] bin_o
);

    // Encode: each Gray bit is the XOR of two neighbouring binary bits.
    assign gray_o = bin_i ^ (bin_i >> 1)

    // Decode: running XOR from the MSB downwards.
    always_comb begin
        bin_o[WIDTH-1] = gray_i[WIDTH-1];
        for (int i = WIDTH - 2; i >= 0; i--) begin
            bin_o[i] = bin_o[i+1] ^ gray_i[i];
        end
    end

endmodule
