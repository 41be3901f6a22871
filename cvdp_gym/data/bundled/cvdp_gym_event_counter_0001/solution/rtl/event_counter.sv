// 8-bit up/down event counter with synchronous load and wrap indication.
module event_counter (
    input  logic       clk,
    input  logic       rst,      // synchronous, active high
    input  logic       en,
    input  logic       dir,      // 1: count up, 0: count down
    input  logic       load,
    input  logic [7:0] load_val,
    output logic [7:0] count,
    output logic       wrap
);

    always_ff @(posedge clk) begin
        if (rst) begin
            count <= 8'd0;
        end else if (load) begin
            count <= load_val;
        end else if (en) begin
            if (dir) begin
                count <= count + 8'd1;
            end else begin
                count <= count - 8'd1;
            end
        end
    end

    assign wrap = !rst && !load && en &&
                  ((dir && (count == 8'hFF)) || (!dir && (count == 8'h00)));

endmodule
