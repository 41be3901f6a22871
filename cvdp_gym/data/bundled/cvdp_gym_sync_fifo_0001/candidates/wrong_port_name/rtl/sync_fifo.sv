// Parameterized synchronous FIFO (single clock, registered read port).
module sync_fifo #(
    parameter DATA_WIDTH = 8,   // width of one entry
    parameter DEPTH      = 8    // number of entries, power of two, >= 2
) (
    input  logic                    clk,
    input  logic                    rst,      // synchronous, active high
    input  logic                    wr_en,
    input  logic [DATA_WIDTH-1:0]   wr_data,
    input  logic                    rd_en,
    output logic [DATA_WIDTH-1:0]   data_out,
    output logic                    full,
    output logic                    empty,
    output logic [$clog2(DEPTH):0]  count
);

    localparam AW = $clog2(DEPTH);

    logic [DATA_WIDTH-1:0] mem [0:DEPTH-1];
    logic [AW-1:0]         wr_ptr;
    logic [AW-1:0]         rd_ptr;
    logic                  do_write;
    logic                  do_read;

    // A request is only accepted when it can be served.
    assign do_write = wr_en && !full;
    assign do_read  = rd_en && !empty;

    // Storage array
    always_ff @(posedge clk) begin
        if (do_write) begin
            mem[wr_ptr] <= wr_data;
        end
    end

    // Write pointer (wraps naturally because DEPTH is a power of two)
    always_ff @(posedge clk) begin
        if (rst) begin
            wr_ptr <= '0;
        end else if (do_write) begin
            wr_ptr <= wr_ptr + 1'b1;
        end
    end

    // Read pointer and registered read data
    always_ff @(posedge clk) begin
        if (rst) begin
            rd_ptr  <= '0;
            data_out <= '0;
        end else if (do_read) begin
            data_out <= mem[rd_ptr];
            rd_ptr  <= rd_ptr + 1'b1;
        end
    end

    // Occupancy counter
    always_ff @(posedge clk) begin
        if (rst) begin
            count <= '0;
        end else begin
            case ({do_write, do_read})
                2'b10:   count <= count + 1'b1;
                2'b01:   count <= count - 1'b1;
                default: count <= count;
            endcase
        end
    end

    assign empty = (count == 0);
    assign full  = (count == DEPTH);

endmodule
