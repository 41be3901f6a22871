// PWM generator, revision 2.
// Double-buffered period/duty, enable, polarity and end-of-period strobe.
module pwm_gen #(
    parameter CNT_W = 8
) (
    input  logic             clk,
    input  logic             rst,        // synchronous, active high
    input  logic             en,
    input  logic             polarity,
    input  logic [CNT_W-1:0] period,
    input  logic [CNT_W-1:0] duty,
    output logic             pwm_out,
    output logic             period_end
);

    logic [CNT_W-1:0] cnt;
    logic [CNT_W-1:0] period_act;
    logic [CNT_W-1:0] duty_act;
    logic             last

    assign last = (cnt == period_act - 1'b1);

    always_ff @(posedge clk) begin
        if (rst || !en) begin
            cnt        <= '0;
            period_act <= period;
            duty_act   <= duty;
        end else if (last) begin
            cnt        <= '0;
            period_act <= period;
            duty_act   <= duty;
        end else begin
            cnt <= cnt + 1'b1;
        end
    end

    assign pwm_out    = en ? ((cnt < duty_act) ^ polarity) : polarity;
    assign period_end = en && last;

endmodule
