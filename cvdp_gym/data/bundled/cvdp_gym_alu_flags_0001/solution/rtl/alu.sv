// Combinational ALU with eight operations and status flags.
module alu #(
    parameter WIDTH = 8
) (
    input  logic [WIDTH-1:0] a,
    input  logic [WIDTH-1:0] b,
    input  logic [2:0]       op,
    output logic [WIDTH-1:0] result,
    output logic             zero,
    output logic             carry,
    output logic             overflow
);

    localparam SW = $clog2(WIDTH);

    logic [SW-1:0] shamt;

    assign shamt = b[SW-1:0];

    always_comb begin
        carry    = 1'b0;
        overflow = 1'b0;
        case (op)
            3'b000: begin
                {carry, result} = {1'b0, a} + {1'b0, b};
                overflow = (a[WIDTH-1] == b[WIDTH-1]) && (result[WIDTH-1] != a[WIDTH-1]);
            end
            3'b001: begin
                {carry, result} = {1'b0, a} - {1'b0, b};
                overflow = (a[WIDTH-1] != b[WIDTH-1]) && (result[WIDTH-1] != a[WIDTH-1]);
            end
            3'b010:  result = a & b;
            3'b011:  result = a | b;
            3'b100:  result = a ^ b;
            3'b101:  result = a << shamt;
            3'b110:  result = a >> shamt;
            3'b111:  result = $signed(a) >>> shamt;
            default: result = '0;
        endcase
    end

    assign zero = (result == '0);

endmodule
