// UART transmitter: 8 data bits, LSB first, optional even parity, 1 stop bit.
module uart_tx #(
    parameter CLKS_PER_BIT = 16,
    parameter PARITY_EN    = 0
) (
    input  logic       clk,
    input  logic       rst,
    input  logic       tx_start,
    input  logic [7:0] tx_data,
    output logic       tx,
    output logic       busy,
    output logic       done
);

    typedef enum logic [2:0] {
        S_IDLE,
        S_START,
        S_DATA,
        S_PARITY,
        S_STOP
    } state_t;

    state_t     state;
    logic [7:0] shreg;
    logic [2:0] bit_idx;
    logic       parity;
    logic       tick;

    baud_gen #(
        .CLKS_PER_BIT(CLKS_PER_BIT)
    ) u_baud_gen (
        .clk (clk),
        .rst (rst),
        .en  (busy),
        .tick(tick)
    );

    always_ff @(posedge clk) begin
        if (rst) begin
            state   <= S_IDLE;
            shreg   <= '0;
            bit_idx <= '0;
            parity  <= 1'b0;
            tx      <= 1'b1;
            busy    <= 1'b0;
            done    <= 1'b0;
        end else begin
            done <= 1'b0;
            case (state)
                S_IDLE: begin
                    if (tx_start) begin
                        shreg  <= tx_data;
                        parity <= ^tx_data;
                        tx     <= 1'b0;          // start bit
                        busy   <= 1'b1;
                        state  <= S_START;
                    end
                end
                S_START: begin
                    if (tick) begin
                        tx      <= shreg[0];
                        shreg   <= shreg >> 1;
                        bit_idx <= '0;
                        state   <= S_DATA;
                    end
                end
                S_DATA: begin
                    if (tick) begin
                        if (bit_idx == 3'd7) begin
                            if (PARITY_EN != 0) begin
                                tx    <= parity;
                                state <= S_PARITY;
                            end else begin
                                tx    <= 1'b1;   // stop bit
                                state <= S_STOP;
                            end
                        end else begin
                            tx      <= shreg[0];
                            shreg   <= shreg >> 1;
                            bit_idx <= bit_idx + 1'b1;
                        end
                    end
                end
                S_PARITY: begin
                    if (tick) begin
                        tx    <= 1'b1;           // stop bit
                        state <= S_STOP;
                    end
                end
                S_STOP: begin
                    if (tick) begin
                        tx    <= 1'b1;
                        busy  <= 1'b0;
                        done  <= 1'b1;
                        state <= S_IDLE;
                    end
                end
                default: begin
                    state <= S_IDLE;
                    tx    <= 1'b1;
                    busy  <= 1'b0;
                end
            endcase
        end
    end

endmodule
