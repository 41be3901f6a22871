// Traffic light controller with a pedestrian crossing request.
module traffic_light #(
    parameter GREEN_CYCLES  = 8,
    parameter YELLOW_CYCLES = 3,
    parameter RED_CYCLES    = 5
) (
    input  logic clk,
    input  logic rst,          // synchronous, active high
    input  logic ped_req,      // pedestrian button, one or more cycles
    output logic light_green,
    output logic light_yellow,
    output logic light_red,
    output logic walk
);

    typedef enum logic [1:0] {
        GREEN  = 2'd0,
        YELLOW = 2'd1,
        RED    = 2'd2
    } state_t;

    state_t     state;
    logic [7:0] timer;         // cycles spent in the current state
    logic       ped_pending;   // request waiting for the next red phase

    always_ff @(posedge clk) begin
        if (rst) begin
            state       <= GREEN;
            timer       <= 8'd0;
            ped_pending <= 1'b0;
            walk        <= 1'b0;
        end else begin
            case (state)
                GREEN: begin
                    if (ped_req) ped_pending <= 1'b1;
                    if (timer == GREEN_CYCLES - 1) begin
                        state <= YELLOW;
                        timer <= 8'd0;
                    end else begin
                        timer <= timer + 8'd1;
                    end
                end
                YELLOW: begin
                    if (timer == YELLOW_CYCLES - 1) begin
                        state       <= RED;
                        timer       <= 8'd0;
                        walk        <= ped_pending | ped_req;
                        ped_pending <= 1'b0;
                    end else begin
                        if (ped_req) ped_pending <= 1'b1;
                        timer <= timer + 8'd1;
                    end
                end
                RED: begin
                    // Requests during red are ignored.
                    if (timer == RED_CYCLES - 1) begin
                        state <= GREEN;
                        timer <= 8'd0;
                        walk  <= 1'b0;
                    end else begin
                        timer <= timer + 8'd1;
                    end
                end
                default: begin
                    state <= GREEN;
                    timer <= 8'd0;
                    walk  <= 1'b0;
                end
            endcase
        end
    end

    assign light_green  = (state == GREEN);
    assign light_yellow = (state == YELLOW);
    assign light_red    = (state == RED);

endmodule
