module gray_counter #(parameter int WIDTH = 8) (
    input  logic             clk,
    input  logic             rst,
    input  logic             en,
    output logic [WIDTH-1:0] bin_o,
    output logic [WIDTH-1:0] gray_o
);
  always_ff @(posedge clk) begin
    if (rst) bin_o <= '0;
    else if (en) bin_o <= bin_o + 1'b1
  end
  assign gray_o = bin_o ^ (bin_o >> 1);
endmodule
