// PWM generator, revision 1.
// The counter runs from 0 to period-1; the output is high while cnt < duty.
module pwm_gen #(
    parameter CNT_W = 8
) (
    input  logic             clk,
    input  logic             rst,       // synchronous, active high
    input  logic [CNT_W-1:0] period,
    input  logic [CNT_W-1:0] duty,
    output logic             pwm_out
);

    logic [CNT_W-1:0] cnt;

    always_ff @(posedge clk) begin
        if (rst) begin
            cnt <= '0;
        end else if (cnt >= period - 1'b1) begin
            cnt <= '0;
        end else begin
            cnt <= cnt + 1'b1;
        end
    end

    assign pwm_out = (cnt < duty);

endmodule
