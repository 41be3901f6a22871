// Parameterized priority encoder: the highest-numbered active request wins.
module priority_encoder #(
    parameter N = 8                       // number of request lines, >= 2
) (
    input  logic [N-1:0]         req,
    output logic [$clog2(N)-1:0] idx,
    output logic                 valid
);

    always_comb begin
        idx = '0;
        for (int i = N - 1; i >= 0; i--) begin
            if (req[i]) begin
                idx = i;
            end
        end
    end

    assign valid = (idx != 0);

endmodule
