module gray_counter #(parameter int WIDTH = 8) (
    input  logic             clk,
    input  logic             rst,
    input  logic             en,
    output logic [WIDTH-1:0] bin_o,
    output logic [WIDTH-1:0] gray_o
);
  logic [WIDTH-1:0] gray_as_bin;
  logic [WIDTH-1:0] gray_as_bin_next;

  // Decode the Gray register back to binary, one bit at a time.
  always_comb begin
    gray_as_bin[WIDTH-1] = gray_o[WIDTH-1];
    for (int i = WIDTH - 2; i >= 0; i--) gray_as_bin[i] = gray_as_bin[i+1] ^ gray_o[i];
  end
  assign gray_as_bin_next = gray_as_bin + 1'b1;

  always_ff @(posedge clk) begin
    if (rst) begin
      bin_o  <= '0;
      gray_o <= '0;
    end else if (en) begin
      bin_o  <= bin_o + 1'b1;
      gray_o <= gray_as_bin_next ^ (gray_as_bin_next >> 1);
    end
  end
endmodule
