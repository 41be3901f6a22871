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
    output logic [DATA_WIDTH-1:0]   rd_data,
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

    // Insert code here for the write pointer, read pointer, registered
    // read data and occupancy counter (all cleared by rst), and for the
    // full / empty status flags.

endmodule
