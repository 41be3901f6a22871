module sat_adder #(parameter int WIDTH = 8) (
    input  logic             clk,
    input  logic             rst,
    input  logic             valid_i,
    input  logic [WIDTH-1:0] a_i,
    input  logic [WIDTH-1:0] b_i,
    output logic [WIDTH-1:0] sum_o,
    output logic             sat_o,
    output logic             valid_o
);
  logic [WIDTH:0] total;

  assign total = {1'b0, a_i} + {1'b0, b_i};

  always_ff @(posedge clk) begin
    if (rst) begin
      sum_o   <= '0;
      sat_o   <= 1'b0;
      valid_o <= 1'b0;
    end else begin
      valid_o <= valid_i;
      if (valid_i) begin
        sat_o <= total[WIDTH];
        sum_o <= total[WIDTH] ? '1 : total;
      end
    end
  end
endmodule
