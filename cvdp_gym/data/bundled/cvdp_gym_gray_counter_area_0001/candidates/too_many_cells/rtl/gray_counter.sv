module gray_counter #(parameter int WIDTH = 8) (
    input  logic             clk,
    input  logic             rst,
    input  logic             en,
    output logic [WIDTH-1:0] bin_o,
    output logic [WIDTH-1:0] gray_o
);
  logic [WIDTH-1:0] bin_next;
  assign bin_next = bin_o + 1'b1;
  always_ff @(posedge clk) begin
    if (rst) begin
      bin_o  <= '0;
      gray_o <= '0;
    end else if (en) begin
      bin_o  <= bin_next;
      gray_o <= bin_next ^ (bin_next >> 1);
    end
  end
endmodule
