module sat_adder #(parameter WIDTH = 8) (
    input clk,
    input rst,
    input valid_i,
    input [WIDTH-1:0] a_i,
    input [WIDTH-1:0] b_i,
    output reg [WIDTH-1:0] sum_o,
    output reg sat_o,
    output reg valid_o
);
  reg [WIDTH:0] total;
  reg last_valid;

  always @(*) total = a_i + b_i;

  always @(posedge clk) begin
    if (rst) begin
      sum_o = 0;
      sat_o <= 0;
      valid_o <= 0;
      last_valid <= 0;
    end else begin
      valid_o <= valid_i;
      last_valid <= valid_i;
      if (valid_i) begin
        sat_o <= total[WIDTH];
        sum_o <= total[WIDTH] ? {WIDTH{1'b1}} : total;
      end
    end
  end
endmodule
